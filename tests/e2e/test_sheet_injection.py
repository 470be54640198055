"""The label sheet guards against formulas (OWASP "CSV injection", issue 43): an agent whose
answers a spreadsheet would run as formulas, through the real CLI (run, sample --sheet,
review); no cell of the sheet starts with a formula trigger, and the quote the guard adds comes
off when the filled sheet is read back."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from tests.e2e.journal_cli import chaoseval, command

# A tiny scenario any agent that repeats its code passes (lint's solvable and non-trivial
# steps run on it before the trials, as 'run --scenarios' does).
SCENARIO = """\
id: echo-code
description: The agent repeats the code it was given.
domain: demo
instruction: "Reply with the code {code}."
tables:
  codes: [{code: CODE-7}]
givens:
  code: CODE-7
tools:
  lookup_code: {kind: lookup, table: codes, key: code, description: Look up a code.}
checks:
  - name: answer holds the code
    answer_contains: ["{code}"]
solution:
  steps:
    - {id: c, call: lookup_code, args: {code: "{code}"}}
  answer: "The code is $c.code."
difficulty: 0
"""
HOSTILE = [
    '=HYPERLINK("http://x","y")',
    "@SUM(1)",
    "-2+3",
    "\t=1+1",
    "+cmd|' /C calc'!A0",
    "\r=2",
    " =1+1",
]
# Each trial answers one hostile text (by its index), the code after it so the judge passes it.
AGENT = f"""\
import json, os, re
code = re.search(r"CODE-\\d+", os.environ["CHAOSEVAL_INSTRUCTION"]).group(0)
i = int(os.environ["CHAOSEVAL_TRIAL_ID"].rsplit("/", 1)[1])
print(json.dumps({{"answer": {HOSTILE!r}[i] + " " + code}}))
"""
TRIGGERS = tuple("=+-@\t\r")


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    here = tmp_path_factory.mktemp("injection")
    (here / "echo.yaml").write_text(SCENARIO)
    (here / "hostile.py").write_text(AGENT)
    path = here / "run.jsonl"
    args = command("run", "--agent", f"exec:{sys.executable} hostile.py", "--scenarios",
                   "echo.yaml", "-n", str(len(HOSTILE)), "--journal", str(path), "--no-report",
                   "--no-progress", "--sandbox", "none")  # fmt: skip
    out = chaoseval(args, here)
    assert out.returncode == 0, out.stderr
    return path


def test_no_cell_of_the_sheet_starts_a_formula_and_the_review_round_trips(
    journal: Path, tmp_path: Path
) -> None:
    sheet = tmp_path / "labels.csv"
    out = chaoseval(command("sample", str(journal), "-n", str(len(HOSTILE)), "--sheet",
                            str(sheet)), tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = list(csv.reader(sheet.open(newline="", encoding="utf-8")))
    header, body = rows[0], rows[1:]
    assert len(body) == len(HOSTILE)
    for row in rows:
        for cell in row:
            assert not cell.startswith(TRIGGERS), cell
            assert not cell.lstrip(" \n").startswith(TRIGGERS), cell
    answers = {r[0]: r[header.index("answer")] for r in body}
    # The hostile text is there, behind the quote (a CR written as its escape).
    assert answers["echo-code/clean/0"] == "'" + HOSTILE[0] + " CODE-7"
    assert answers["echo-code/clean/3"] == "'\t=1+1 CODE-7"
    assert answers["echo-code/clean/5"] == "\\x0d=2 CODE-7"

    # The reviewer types notes a spreadsheet would run, guarded as the sheet guards them, and
    # leaves the guarded answers as they are.
    notes = {"echo-code/clean/0": "'=refunded twice", "echo-code/clean/2": "'-2 items short",
             "echo-code/clean/4": "'@ann to check"}  # fmt: skip
    verdicts = {"echo-code/clean/0": "failed", "echo-code/clean/2": "passed",
                "echo-code/clean/4": "passed"}  # fmt: skip
    for r in body:
        if r[0] in notes:
            r[header.index("note")] = notes[r[0]]
            r[header.index("reviewer_verdict")] = verdicts[r[0]]
    with sheet.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([header, *body])
    done = chaoseval(command("review", str(journal), str(sheet), "--reviewer", "ann"), tmp_path)
    assert done.returncode == 0, done.stderr
    reviews = journal.with_name(journal.name + ".d") / ".reviews.jsonl"
    got = {x["trial_id"]: x for x in map(json.loads, reviews.read_text().splitlines())}
    assert {t: x["note"] for t, x in got.items()} == {t: n[1:] for t, n in notes.items()}
    assert {t: x["verdict"] for t, x in got.items()} == verdicts
    report = chaoseval(command("report", str(journal), "--format", "json"), tmp_path)
    audit = json.loads(report.stdout)["analysis"]["audit"]
    assert audit["cells"]["clean"]["passes"] == {**audit["cells"]["clean"]["passes"],
                                                 "reviewed": 3, "overturned": 1}  # fmt: skip
