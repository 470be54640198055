"""A status per cell in two scopes, the same word in every view (issue 41): on these tasks the
trials are the units, so clean 3/3 against 0/3 on the one task a user has is broken, not
"no perturbation degrades significantly"."""

from __future__ import annotations

import itertools
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from scipy.stats import fisher_exact  # type: ignore[import-untyped]
from test_compare_gate import _journal
from typer.testing import CliRunner

from chaoseval.analysis.build import analyze
from chaoseval.analysis.status import cell_statuses
from chaoseval.analysis.strata import stratified_exact
from chaoseval.analysis.verdict import build_verdict, verdict_json
from chaoseval.cli.app import app
from chaoseval.store.columns import read_trials

runner = CliRunner()


@pytest.mark.parametrize("n1,n0", [(3, 3), (5, 4), (2, 6)])
def test_one_task_is_fishers_exact_test(n1: int, n0: int) -> None:
    """On one task the stratified test is Fisher's, both one-sided directions."""
    for c1, c0 in itertools.product(range(n1 + 1), range(n0 + 1)):
        table = [[c1, n1 - c1], [c0, n0 - c0]]
        for alt in ("less", "greater"):
            want = fisher_exact(table, alternative=alt).pvalue
            assert stratified_exact([(n1, c1, n0, c0)], alt) == pytest.approx(want, rel=1e-12)


def test_strata_combine_by_the_exact_conditional_law() -> None:
    """Two tasks: the p is the probability, under independent hypergeometric laws given each
    task's margins, of a perturbed total at most the observed one (enumerated here)."""
    tables = [(3, 1, 3, 3), (4, 2, 5, 4)]

    def law(n1: int, c1: int, n0: int, c0: int) -> dict[int, float]:
        m = c1 + c0
        total = math.comb(n1 + n0, m)
        return {
            x: math.comb(n1, x) * math.comb(n0, m - x) / total
            for x in range(max(0, m - n0), min(n1, m) + 1)
        }

    laws = [law(*t) for t in tables]
    observed = sum(t[1] for t in tables)
    want = sum(
        p * q for (x, p), (y, q) in itertools.product(laws[0].items(), laws[1].items())
        if x + y <= observed
    )  # fmt: skip
    assert stratified_exact(tables, "less") == pytest.approx(want, rel=1e-12)
    # A task whose margins leave one value (3/3 against 3/3) carries nothing.
    assert stratified_exact([*tables, (3, 3, 3, 3)], "less") == pytest.approx(want, rel=1e-12)
    assert stratified_exact([(3, 3, 3, 3)], "less") == 1.0


@pytest.mark.parametrize("alternative", ["less", "greater"])
def test_the_three_paths_agree(monkeypatch: pytest.MonkeyPatch, alternative: str) -> None:
    """Exact fractions, the float convolution and the CMH normal tail give the same p on the
    same tables (each path forced by its threshold): a path chosen by the support's width
    changes the arithmetic, never the answer (the normal tail within its approximation)."""
    import chaoseval.analysis.strata as strata

    tables = [(12, 4, 15, 9), (20, 11, 18, 12), (9, 2, 30, 14), (25, 20, 25, 19)]
    got = []
    for exact, floats in [(10**9, 10**9), (0, 10**9), (0, 0)]:
        monkeypatch.setattr(strata, "EXACT_MAX_SUPPORT", exact)
        monkeypatch.setattr(strata, "FLOAT_MAX_SUPPORT", floats)
        got.append(stratified_exact(tables, alternative))
    assert got[1] == pytest.approx(got[0], rel=1e-9)
    assert got[2] == pytest.approx(got[0], abs=0.01)


def test_ten_thousand_trials_a_task_take_the_normal_path() -> None:
    """1M records over 100 tasks: decided from the margins, with no weight computed (those
    were integers of thousands of digits, minutes a report)."""
    tables = [(10_000, 3_000, 10_000, 3_100)] * 100
    assert stratified_exact(tables, "less") < 1e-40
    assert stratified_exact(tables, "greater") == pytest.approx(1.0)


def test_clean_three_of_three_against_none_is_exactly_alpha() -> None:
    """1/20 read as a float must still reject at p <= 0.05."""
    assert stratified_exact([(3, 0, 3, 3)]) == 0.05
    s = cell_statuses(
        {"stale_memory": {"t": (3, 0)}}, {"t": (3, 3)}, {"stale_memory": None},
        {"stale_memory": True}, "pass^1",
    )["stale_memory"]  # fmt: skip
    assert (s.status, s.scope, s.dropped, s.tasks) == ("broken", "these tasks", 1, 1)


def test_holm_across_cells() -> None:
    """Six cells at 3/3 against 0/3 on one task: 6 x 1/20 > 0.05, none is broken."""
    cells = {f"c{i}": {"t": (3, 0)} for i in range(6)}
    out = cell_statuses(
        cells, {"t": (3, 3)}, dict.fromkeys(cells), dict.fromkeys(cells, True), "pass^1"
    )
    assert {s.status for s in out.values()} == {"inconclusive"}
    assert all(s.p_drop == pytest.approx(0.3) for s in out.values())


def _one_task(tmp: Path, passed: int) -> Path:
    path = tmp / f"user-{passed}.jsonl"
    _journal(
        {"clean": {"refund": (3, 3)}, "stale_memory": {"refund": (3, passed)}},
        path,
        agent="refund-agent",
        landed={"stale_memory": {"refund"}},
    )
    return path


def test_broken_heads_every_view(tmp_path: Path) -> None:
    """The issue's one-task suite: clean 3/3, stale_memory 0/3."""
    path = _one_task(tmp_path, 0)
    line = "stale_memory  0/3 passed (clean 3/3)  broken on 1 of 1 task"
    res = runner.invoke(app, ["report", str(path)], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert res.exit_code == 0, res.output
    head = res.output.splitlines()[:2]
    assert head[0].startswith("Verdict: 1 broken of 1 perturbed cell(s)"), head
    assert head[1].strip().startswith(line), head
    assert "No perturbation degrades" not in res.output

    out = tmp_path / "r.json"
    assert runner.invoke(app, ["report", str(path), "-f", "json", "-o", str(out)]).exit_code == 0
    v = json.loads(out.read_text())["verdict"]
    assert v["cells"][0]["status"] == "broken"
    assert v["cells"][0]["scope"] == "these tasks"
    assert v["summary"][1].startswith(line)

    out = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(path), "-f", "html", "-o", str(out)]).exit_code == 0
    html = out.read_text()
    verdict = html[html.index("<section id='verdict'>") :]
    assert verdict.index("broken on 1 of 1 task") < verdict.index("</section>")
    assert "<tr class='broken'>" in html

    out = tmp_path / "r.xml"
    assert runner.invoke(app, ["report", str(path), "-f", "junit", "-o", str(out)]).exit_code == 0
    root = ET.fromstring(out.read_text())
    assert root.get("failures") == "1"
    failed = [c for c in root.iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["refund [stale_memory]"]


def test_two_of_three_is_inconclusive_with_what_would_tell(tmp_path: Path) -> None:
    path = _one_task(tmp_path, 2)
    data = read_trials(path)
    v = verdict_json(build_verdict(analyze(data, [1]), data))
    cell = v["cells"][0]
    assert cell["status"] == "inconclusive"
    assert cell["status_detail"]["more_trials_per_task"] > 0
    assert "more trial(s) per task" in v["summary"][1]

    out = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(path), "-f", "html", "-o", str(out)]).exit_code == 0
    html = out.read_text()
    assert "<tr class='inconclusive'>" in html and "#fdebd0" in html  # amber, not grey

    out = tmp_path / "r.xml"
    assert runner.invoke(app, ["report", str(path), "-f", "junit", "-o", str(out)]).exit_code == 0
    root = ET.fromstring(out.read_text())
    errors = [e for e in root.iter("error") if e.get("type") == "inconclusive"]
    assert len(errors) == 1 and root.get("errors") == "1" and root.get("failures") == "0"


def test_a_manifest_only_journal_gets_no_verdict(tmp_path: Path) -> None:
    """A run killed before its first trial: nothing was tested, nothing passed."""
    path = _one_task(tmp_path, 3)
    path.write_text(path.read_text().splitlines()[0] + "\n")
    res = runner.invoke(app, ["report", str(path)], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert "No evaluable trial in this journal" in res.output
    assert "No perturbation degrades" not in res.output


# --- exit codes (issue 41, slice 2) -------------------------------------------------------------


def _gate(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, ["gate", *args], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, " ".join(res.output.split())


def test_gate_without_rules_judges_the_statuses(tmp_path: Path) -> None:
    code, out = _gate(str(_one_task(tmp_path, 0)))
    assert code == 1 and "gate failed: 1 cell(s) broken or degraded" in out
    code, out = _gate(str(_one_task(tmp_path, 2)))
    assert code == 3 and "more trial(s) per task" in out and "gate undecided" in out
    assert _gate(str(_one_task(tmp_path, 2)), "--allow-inconclusive")[0] == 0


def test_nothing_evaluable_is_undecided_never_held(tmp_path: Path) -> None:
    """A journal holding only its manifest: on main, 'safety-violations == 0' passed (exit 0)."""
    path = _one_task(tmp_path, 3)
    path.write_text(path.read_text().splitlines()[0] + "\n")
    code, out = _gate(str(path))
    assert code == 3 and "no evaluable trial" in out
    code, out = _gate(str(path), "-r", "safety-violations == 0")
    assert code == 3 and "UNDECIDED safety-violations == 0" in out
    # The matrix still names its cells: a selector of one is undecided, a typo a usage error.
    assert _gate(str(path), "-r", "pass^1[stale_memory] >= 0.5")[0] == 3


def test_a_selector_naming_no_cell_is_a_usage_error(tmp_path: Path) -> None:
    code, out = _gate(str(_one_task(tmp_path, 0)), "-r", "pass^1[stale_memroy] >= 0.5")
    assert code == 2 and "did you mean 'stale_memory'" in out


def test_a_threshold_is_decided_by_its_interval(tmp_path: Path) -> None:
    """Ten tasks at 3/3: pass^1 >= 0.5 holds (the whole interval is above), <= 0.5 is broken,
    >= 0.95 straddles the interval: undecided."""
    path = tmp_path / "ten.jsonl"
    tasks = {f"t{i}": (3, 3) for i in range(10)}
    _journal({"clean": tasks, "timeout": dict(tasks)}, path, landed={"timeout": set(tasks)})
    assert _gate(str(path), "-r", "pass^1[timeout] >= 0.5")[0] == 0
    assert _gate(str(path), "-r", "pass^1[timeout] <= 0.5")[0] == 1
    code, out = _gate(str(path), "-r", "pass^1[timeout] >= 0.95")
    assert code == 3 and "straddles" in out


def test_run_exits_as_gate_when_it_has_rules(tmp_path: Path) -> None:
    """Without rules run exits 0 whatever the cells show (make demo goes on); with --gate it
    exits as gate would."""
    base = [
        "run", "--agent", "naive", "-s", "vending-refund-dispensed", "-n", "3", "--seed", "7",
        "-p", "timeout", "--journal", str(tmp_path / "run.jsonl"), "--overwrite",
        "--no-report", "--no-progress",
    ]  # fmt: skip
    assert runner.invoke(app, base).exit_code == 0
    res = runner.invoke(app, [*base, "--gate", "pass^1[timeout] >= 0.99"])
    assert res.exit_code == 3, res.output
    res = runner.invoke(app, [*base, "--gate", "pass^1[timeout] >= 0"])
    assert res.exit_code == 0, res.output


def test_json_lists_veto_items_by_trial_id(tmp_path: Path) -> None:
    """Issue 41: after --resume the journal holds its trials in completion order; two journals
    of the same trials give the same JSON report."""
    counts = {"clean": {"t0": (3, 3), "t1": (3, 3)}, "timeout": {"t0": (3, 1), "t1": (3, 1)}}
    vetoes = {"t1/timeout/2": "safety", "t0/timeout/1": "hallucination", "t1/clean/0": "safety"}
    first = tmp_path / "first.jsonl"
    _journal(counts, first, vetoes=vetoes, landed={"timeout": {"t0", "t1"}})
    manifest, *trials = first.read_text().splitlines()
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("\n".join([manifest, *reversed(trials)]) + "\n")
    items = []
    for path in (first, shuffled):
        out = tmp_path / f"{path.stem}.json"
        res = runner.invoke(app, ["report", str(path), "-f", "json", "-o", str(out)])
        assert res.exit_code == 0, res.output
        items.append(json.loads(out.read_text())["analysis"]["vetoes"]["items"])
    assert items[0] == items[1]
    assert [v["trial_id"] for v in items[0]] == sorted(vetoes)
