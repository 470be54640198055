"""The spot-check loop through the real CLI (issue 43): sample writes a label sheet, review
reads it back beside the journal, report shows the judge's audit and the corrected pass^1."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.e2e.journal_cli import chaoseval, command

SCENARIO = "vending-refund-not-dispensed"


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    here = tmp_path_factory.mktemp("review")
    path = here / "run.jsonl"
    args = command("run", "--agent", "resilient", "-s", SCENARIO, "-n", "6", "-p",
                   "latency:mean=3", "--journal", str(path), "--no-report")  # fmt: skip
    assert chaoseval(args, here).returncode == 0
    return path


def _audit(journal: Path) -> dict | None:
    out = chaoseval(command("report", str(journal), "--format", "json"), journal.parent)
    assert out.returncode in (0, 3), out.stderr
    return json.loads(out.stdout)["analysis"].get("audit")


def _fill(sheet: Path, verdicts: dict[int, str]) -> None:
    rows = list(csv.reader(sheet.open()))
    for i, v in verdicts.items():
        rows[i][2] = v
    with sheet.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)


def test_a_review_round_trip_changes_the_audit_and_the_corrected_interval(
    journal: Path, tmp_path: Path
) -> None:
    assert _audit(journal) is None  # no labels: no audit section
    md = tmp_path / "spot.md"
    drawn = chaoseval(command("sample", str(journal), "-n", "4", "-o", str(md)), tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    sheet = md.with_suffix(".csv")
    rows = list(csv.DictReader(sheet.open()))
    assert len(rows) == 4 and {r["judge_verdict"] for r in rows} == {"passed"}
    # Stratified by cell: two of each cell's six passes, each standing for three.
    assert sorted(r["cell"] for r in rows) == ["clean"] * 2 + ["latency(mean=3)"] * 2
    assert {r["weight"] for r in rows} == {"3"}
    clean = [i for i, r in enumerate(rows, start=1) if r["cell"] == "clean"]
    _fill(sheet, {clean[0]: "failed", clean[1]: "passed"})
    done = chaoseval(command("review", str(journal), str(sheet), "--reviewer", "ann"), tmp_path)
    assert done.returncode == 0, done.stderr
    audit = _audit(journal)
    assert audit is not None and audit["reviewers"] == ["ann"]
    cell = audit["cells"]["clean"]
    assert cell["passes"]["reviewed"] == 2 and cell["passes"]["overturned"] == 1
    corrected = cell["corrected_pass^1"]
    assert cell["judge_pass^1"] == 1.0 and corrected["estimate"] == 0.5
    assert corrected["low"] < 0.5 < corrected["high"] < 1.0
    # pass^k too: one of the task's six trials is known to have failed, so pass^6 is exactly 0;
    # pass^2 falls from the judge's 1 with an interval below it.
    passk = {p["k"]: p for p in cell["corrected_pass^k"]}
    assert passk[6]["judge"] == 1.0
    assert passk[6]["corrected"] == {"estimate": 0.0, "low": 0.0, "high": 0.0}
    assert passk[2]["corrected"]["estimate"] < passk[2]["corrected"]["high"] < 1.0
    md_report = chaoseval(command("report", str(journal), "--format", "markdown"), tmp_path)
    assert "The judge's audit" in md_report.stdout and "1 of 2" in md_report.stdout
    assert "pass^k corrected for the judge's error" in md_report.stdout
    html = chaoseval(command("report", str(journal), "--format", "html"), tmp_path)
    assert "id='audit'" in html.stdout and "id='audit-passk'" in html.stdout
    table = chaoseval(command("report", str(journal)), tmp_path)
    assert "The judge's audit" in table.stdout

    # A second reviewer on the same trials: both kept, the latest counts, kappa shown.
    _fill(sheet, {clean[0]: "passed", clean[1]: "passed"})
    again = chaoseval(command("review", str(journal), str(sheet), "--reviewer", "bob"), tmp_path)
    assert again.returncode == 0, again.stderr
    audit = _audit(journal)
    assert audit is not None and audit["labels"] == 4
    assert audit["cells"]["clean"]["passes"]["overturned"] == 0  # bob's, the latest
    passk = {p["k"]: p for p in audit["cells"]["clean"]["corrected_pass^k"]}
    assert passk[6]["corrected"]["high"] == 1.0  # no known failure left
    assert audit["agreement"] == [{"a": "ann", "b": "bob", "trials": 2, "agree": 1, "kappa": 0.0}]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"trial_id": "vending-refund-not-dispensed/clean/99"}, ":3: no trial"),
        ({"reviewer_verdict": "maybe"}, ":3: verdict 'maybe'"),
        ({"judge_verdict": "failed"}, ":3: vending-refund-not-dispensed/clean/1: the sheet says"),
    ],
)
def test_a_bad_line_is_refused_with_its_number_and_nothing_written(
    journal: Path, tmp_path: Path, bad: dict[str, str], message: str
) -> None:
    sheet = tmp_path / "sheet.csv"
    good = {"trial_id": "vending-refund-not-dispensed/clean/0", "judge_verdict": "passed",
            "reviewer_verdict": "passed"}  # fmt: skip
    second = {**good, "trial_id": "vending-refund-not-dispensed/clean/1", **bad}
    with sheet.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(good))
        w.writeheader()
        w.writerows([good, second])
    reviews = journal.with_name(journal.name + ".d") / ".reviews.jsonl"
    before = reviews.read_bytes() if reviews.exists() else b""
    out = chaoseval(command("review", str(journal), str(sheet), "--reviewer", "x"), tmp_path)
    assert out.returncode == 2
    assert f"{sheet}{message}" in " ".join(out.stderr.split())
    assert (reviews.read_bytes() if reviews.exists() else b"") == before


def test_review_is_refused_while_a_writer_holds_the_journal(journal: Path, tmp_path: Path) -> None:
    from chaoseval.store.lock import JournalLock

    sheet = tmp_path / "sheet.csv"
    sheet.write_text(
        "trial_id,judge_verdict,reviewer_verdict\nvending-refund-not-dispensed/clean/0,passed,passed\n"
    )
    reviews = journal.with_name(journal.name + ".d") / ".reviews.jsonl"
    before = reviews.read_bytes() if reviews.exists() else b""
    with JournalLock(journal):  # as a run writing this journal holds it
        out = chaoseval(command("review", str(journal), str(sheet)), tmp_path)
    assert out.returncode == 2 and "is being written by" in " ".join(out.stderr.split())
    assert (reviews.read_bytes() if reviews.exists() else b"") == before


def test_labels_of_a_sequential_runs_later_rounds_are_left_out_with_a_note(tmp_path: Path) -> None:
    # A sequential run's tables are its first-round trials: a label of a later trial used to
    # count against a stratum that does not hold it (report: ValueError, a traceback).
    path = tmp_path / "seq.jsonl"
    flags = ["--sequential", "-n", "2", "-s", SCENARIO, "-p", "latency:mean=3"]
    args = command("run", "--agent", "naive", *flags, "--journal", str(path), "--no-report")
    assert chaoseval(args, tmp_path).returncode in (0, 1, 3)
    sheet = tmp_path / "seq.csv"
    drawn = chaoseval(command("sample", str(path), "-n", "12", "--status", "any", "--sheet",
                              str(sheet)), tmp_path)  # fmt: skip
    assert drawn.returncode == 0, drawn.stderr
    rows = list(csv.reader(sheet.open()))
    later = sum(int(r[0].rsplit("/", 1)[1]) >= 2 for r in rows[1:])
    assert later, "the sequential run stopped after its first round: no later trial to label"
    _fill(sheet, {i: "failed" for i in range(1, len(rows))})
    done = chaoseval(command("review", str(path), str(sheet), "--reviewer", "ann"), tmp_path)
    assert done.returncode == 0, done.stderr
    audit = _audit(path)
    assert audit is not None
    assert f"{later} label(s) of trials after the sequential run's first round" in " ".join(
        audit["notes"]
    )
