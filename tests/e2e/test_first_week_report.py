"""Issue 21, point 7: the report does not contradict itself, and the reference agent's own
slips are a parameter the verdict names.

The commands run as a newcomer types them, in a directory of their own. The matrix is the
demo's resilient agent (seed 7) on the UI and orders scenarios: ``layout_shift`` reaches only
the UI tasks, so the orders tasks' hallucinations are vetoes on tasks the cell did not reach
(the row said 4 where "Vetoes per cell" said 6), and ``latency`` fails only where its clean
twin failed too (the row said "leading root cause (new failures): hallucination" beside "0 with
a passing clean twin").
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from tests.e2e.newcomer import chaoseval, flat

pytestmark = pytest.mark.slow

RUN = (
    "chaoseval run --agent resilient -n 5 --seed 7 -s 'ui-*' -s 'orders-*' -p latency "
    "-p layout_shift --journal out/r.jsonl"
)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("report")
    chaoseval(RUN, where)
    chaoseval("chaoseval report out/r.jsonl -f html -o r.html", where)
    return where


def _text(cell: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()


def verdict_rows(page: str) -> dict[str, list[str]]:
    """The verdict table's rows, by cell label: the text of each column."""
    body = re.search(r"<table class='data verdict'.*?<tbody>(.*?)</tbody>", page, re.S)
    assert body, "no verdict table"
    rows = {}
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S):
        cells = [_text(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        rows[cells[0]] = cells
    return rows


def test_7a_every_veto_count_of_a_cell_is_the_same_number(work: Path) -> None:
    page = (work / "r.html").read_text(encoding="utf-8")
    row = verdict_rows(page)["layout_shift"]
    per_cell = re.search(r"<p class='veto'>Vetoes per cell[^:]*: (.*?)</p>", page, re.S)
    assert per_cell, "no 'Vetoes per cell' line"
    listed = dict(
        part.split(": ", 1) for part in _text(per_cell.group(1)).split(" (and ")[0].split("; ")
    )
    assert row[6] == listed["layout_shift"], (row[6], listed)
    terminal = flat(chaoseval("chaoseval report out/r.jsonl", work).stdout)
    causes = re.search(r"layout_shift [^│]*? (hallucination \d+) ", terminal.split("vetoes", 1)[1])
    assert causes and causes.group(1) == row[6], terminal
    # What is left out of the counts is said, not silently dropped.
    assert "on tasks no fault of their cell reached" in per_cell.group(1)


def test_7b_the_leading_cause_is_of_new_failures_only_when_there_are_some(work: Path) -> None:
    rows = verdict_rows((work / "r.html").read_text(encoding="utf-8"))
    latency = rows["latency"]
    assert latency[7].endswith(", 0 with a passing clean twin"), latency
    assert latency[4].startswith("none new; of all "), latency  # not 'hallucination (N)'
    for label, row in rows.items():  # a cause counted among new failures names how many
        new = int(re.search(r"(\d+) with a passing clean twin", row[7]).group(1))  # type: ignore[union-attr]
        if new:
            assert re.fullmatch(rf"\w+ \(\d+ of {new}\)", row[4]), (label, row)
    report = json.loads(chaoseval("chaoseval report out/r.jsonl -f json", work).stdout)
    cells = {c["label"]: c for c in report["verdict"]["cells"]}
    assert cells["latency"]["leading_root_cause_among"] == "all failures"


def trial_of(line: str) -> str:
    return str(json.loads(line).get("trial_id", ""))


def test_7c_a_gap_shared_by_every_cell_is_said_once(work: Path) -> None:
    # An interrupted run: the last trial of one task missing in every cell, so pass^5 leaves
    # that task out of each cell. Said once, not once per cell (and per metric).
    lines = (work / "out/r.jsonl").read_text(encoding="utf-8").splitlines()
    cut = [line for line in lines if not re.fullmatch(r"ui-checkout/.*/4", trial_of(line))]
    assert len(cut) == len(lines) - 3
    (work / "out/cut.jsonl").write_text("\n".join(cut) + "\n", encoding="utf-8")
    out = flat(chaoseval("chaoseval report out/cut.jsonl", work).stdout)
    assert out.count("with fewer than 5 scored trials") == 1, out
    assert "every cell (3): pass@5/pass^5 exclude 1 task(s)" in out
    # The comparison against clean leaves out the same task: one line a cell (the counts in
    # its reason are the cell's), not one per metric.
    assert out.count("fewer than 5 scored trials (") == 2, out
    # layout_shift's unreached tasks are one line for all metrics, not metrics x tasks.
    assert out.count("orders-lookup-status") <= 3, out


def test_7d_slips_is_a_parameter_and_clean_vetoes_are_the_agents_own(work: Path) -> None:
    said = flat(chaoseval("chaoseval report out/r.jsonl", work).stdout)
    assert re.search(
        r"Vetoes in clean: hallucination \d+; no fault was injected there, so these are the "
        r"agent's own mistakes, not caused by a perturbation \(the reference agent's simulated "
        r"slips: --agent resilient:slips=false turns them off\)",
        said,
    ), said
    run = chaoseval(
        "chaoseval run --agent resilient:slips=false -n 2 --seed 7 -s 'ui-*' -s 'orders-*' "
        "-p latency --journal out/ns.jsonl",
        work,
    )
    records = [json.loads(x) for x in (work / "out/ns.jsonl").read_text().splitlines()]
    assert records[0]["agent"] == "resilient:slips=false"
    clean = [r for r in records[1:] if r["type"] == "trial" and r["cell"] == "clean"]
    assert len(clean) == 32 and all(r["status"] == "passed" for r in clean)
    assert "Vetoes in clean" not in flat(run.stdout)
    trial = clean[0]["trial_id"]
    assert "reproduced exactly" in chaoseval(f"chaoseval replay out/ns.jsonl {trial}", work).stdout
    bad = chaoseval("chaoseval run --agent resilient:slip=false -n 1 -s 'ui-*'", work, code=2)
    assert "unknown parameter 'slip'; did you mean 'slips'?" in flat(bad.stderr + bad.stdout)
    assert "Traceback" not in bad.stderr
