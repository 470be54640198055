"""``chaoseval view`` over real journals, through a real server on 127.0.0.1: the runs list,
a run's page and its filters, a trial beside its clean twin, compare and trends."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import escape
from pathlib import Path

from chaoseval.store.columns import read_trials
from tests.view.conftest import GATE, Served


def test_runs_list_names_agent_date_configuration_statuses_and_gate(
    runs: Path, serve: Callable[[Path], Served]
) -> None:
    view = serve(runs)
    page = view.get("/").text
    assert "release-1/run.jsonl" in page and "release-2/run.jsonl" in page
    assert "naive" in page and "2 task(s) × 2 cell(s) (clean, timeout) × 3 trial(s)" in page
    assert "<code>pass^1 &gt;= 0.5</code>" in page  # the gate the run recorded
    # Each cell's status comes as a fragment (analysis.status's word, in its scope).
    statuses = view.get("/fragment/statuses?j=release-1/run.jsonl").text
    assert re.search(r"timeout: (broken|degraded|inconclusive|held|improved)", statuses), statuses


def test_a_run_page_lists_its_trials_and_its_report(
    runs: Path, serve: Callable[[Path], Served]
) -> None:
    view = serve(runs)
    page = view.get("/run?j=release-1/run.jsonl").text
    assert "12 of 12 trial(s) in the journal match" in page
    assert "data-src='/fragment/report?j=release-1%2Frun.jsonl'" in page
    report = view.get("/fragment/report?j=release-1/run.jsonl").text
    assert "<section id='verdict'>" in report and "Reliability" in report
    # The recorded gate judged again, as `report` judges it.
    assert "Gate (the rules the run recorded" in report
    assert re.search(r"(ok|BROKEN|UNDECIDED) +" + re.escape(escape(GATE[0])), report), report


def test_filters_are_the_query_and_keep_only_matching_trials(
    runs: Path, serve: Callable[[Path], Served]
) -> None:
    view = serve(runs)
    t = read_trials(runs / "release-1" / "run.jsonl")
    failed = [t.trial_id(r) for r in range(len(t)) if t.col["status"][r] == 1]
    assert failed, "the run must have failures for this test"
    cell = failed[0].split("/")[1]
    page = view.get("/run", params={"j": "release-1/run.jsonl", "status": "failed",
                                    "cell": cell}).text  # fmt: skip
    listed = re.findall(r"<tr class='trial'><td><a href='[^']*'>([^<]*)</a>", page)
    assert sorted(listed) == sorted(f for f in failed if f.split("/")[1] == cell)
    cause = t.value("root_cause", next(r for r in range(len(t)) if t.col["status"][r] == 1))
    page = view.get("/run", params={"j": "release-1/run.jsonl", "cause": cause}).text
    causes = re.findall(r"<td class='text'>([a-z_]+)</td><td class='text'>", page)
    assert causes and set(causes) == {cause}
    nothing = view.get("/run", params={"j": "release-1/run.jsonl", "task": "no-such"}).text
    assert "0 of 12 trial(s)" in nothing


def test_a_failed_trial_is_shown_beside_its_clean_twin_with_the_divergence(
    runs: Path, serve: Callable[[Path], Served]
) -> None:
    view = serve(runs)
    t = read_trials(runs / "release-1" / "run.jsonl")
    row = next(r for r in range(len(t)) if t.col["status"][r] == 1)
    trial = t.trial_id(row)
    scenario, _, index = trial.split("/")
    page = view.get("/trial", params={"j": "release-1/run.jsonl", "id": trial}).text
    assert f"{scenario}/clean/{index}" in page  # the twin: same scenario, same trial seed
    assert "First divergence:" in page and "<span class='mark'>first divergence</span>" in page
    assert "fault <b>timeout/" in page  # the fault inline where it touched
    assert "<h3>Checks</h3>" in page and "expected and actual" in page
    record = t.record(row)
    assert any(
        s.tool and f"{s.tool} → {s.result_class}" in page for s in record.trajectory.steps
    )


def test_unknown_runs_and_trials_are_404_pages(runs: Path, serve: Callable[[Path], Served]) -> None:
    view = serve(runs)
    assert view.get("/run?j=../../etc/passwd").status_code == 404
    assert view.get("/run?j=/etc/passwd").status_code == 404
    missing = view.get("/trial", params={"j": "release-1/run.jsonl", "id": "x/clean/0"})
    assert missing.status_code == 404 and "has no trial" in missing.text


def test_compare_two_runs_as_compare_judges_them(
    runs: Path, serve: Callable[[Path], Served]
) -> None:
    view = serve(runs)
    page = view.get(
        "/compare", params={"a": "release-1/run.jsonl", "b": "release-2/run.jsonl"}
    ).text
    assert "paired by task and cell" in page
    statuses = re.search(r"<pre class='counts' id='statuses'>(.*?)</pre>", page, re.S)
    assert statuses and "timeout" in statuses.group(1) and " B " in statuses.group(1)
    assert "<ul class='verdict' id='conclusions'><li>" in page


def test_trends_line_up_runs_of_the_same_agent_and_scenarios(
    runs: Path, serve: Callable[[Path], Served], tmp_path: Path
) -> None:
    view = serve(runs)
    page = view.get("/trends?j=release-2/run.jsonl").text
    rows = re.findall(r"<tr><td><a href='[^']*'>([^<]*)</a>", page)
    assert rows == ["release-1/run.jsonl", "release-2/run.jsonl"]  # oldest first
    assert re.search(r"<td>[01]\.\d{3}</td>", page)  # clean's pass^k
