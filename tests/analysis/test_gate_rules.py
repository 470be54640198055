"""Gate rules over process metrics and the correct-degradation rate, and their errors."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest
from synthetic import manifest_for

from chaoseval.analysis.build import Analysis, analyze
from chaoseval.analysis.gate import RuleResult, evaluate, parse_rule
from chaoseval.errors import ConfigError
from chaoseval.model.records import (
    CheckResult,
    ContractResult,
    ModelSettings,
    PerturbationSpec,
    Status,
    TrialRecord,
    Usage,
)
from chaoseval.model.trajectory import ModelCallData, Trajectory
from chaoseval.store.journal import read_journal

CELL = "timeout(probability=1)"  # a cell named by its parameters, selected as [timeout]


def _record(cell: str, i: int, calls: int, status: Status, end: str | None) -> TrialRecord:
    """Trial ``i`` of task t0 in ``cell``: ``calls`` tool calls and one model call; ``end`` is
    how it ended under a degradation contract (None: no contract applied)."""
    traj = Trajectory()
    traj.add_step("model", data=ModelCallData(input_tokens=100, output_tokens=10 * i, cost=0.01))
    for _ in range(calls):
        traj.add_step("tool", tool="get", args={}, result_class="ok")
    traj.add_step("answer")
    contracts = [] if end is None else [ContractResult(name="c", held=end == "fell_back")]
    return TrialRecord(
        run_id="r",
        trial_id=f"t0/{cell}/{i}",
        scenario="t0",
        cell=cell,
        perturbations=[] if cell == "clean" else [PerturbationSpec(name="timeout")],
        index=i,
        seed=i,
        world_seed=0,
        agent="a",
        model=ModelSettings(),
        status=status,
        checks=[
            CheckResult(name="normal", passed=end in (None, "recovered") and status == "passed")
        ],
        contracts=contracts,
        trajectory=traj,
        usage=Usage(model_calls=1, input_tokens=100, output_tokens=10 * i, cost=0.01 * (i + 1)),
        sim_seconds=float(10 * i),
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    """Clean: 4 trials of 2 tool calls. Timeout: 4 trials of 8 calls, which ended recovered,
    fell back (the contract held), fell back, failed."""
    records = [_record("clean", i, 2, "passed", None) for i in range(4)]
    ends = ["recovered", "fell_back", "fell_back", "failed"]
    records += [
        _record(CELL, i, 8, "failed" if e == "failed" else "passed", e) for i, e in enumerate(ends)
    ]
    manifest = manifest_for({"clean": {"t0": (4, 4)}, CELL: {"t0": (4, 3)}})
    path = tmp_path_factory.mktemp("gate") / "j.jsonl"
    path.write_text("\n".join(r.model_dump_json() for r in [manifest, *records]) + "\n")
    return analyze(read_journal(path), [1, 2], n_resamples=200)


def _one(a: Analysis, text: str) -> RuleResult:
    return evaluate(a, [parse_rule(text)])[0]


def test_process_rules_parse() -> None:
    r = parse_rule(" mean( tool_calls )  <= 6")
    assert (r.kind, r.agg, r.metric, r.cell, r.op, r.value) == (
        "process", "mean", "tool_calls", None, "<=", 6.0
    )  # fmt: skip
    assert parse_rule("p95(latency)<=30").agg == "p95"
    assert parse_rule("mean(cost)[clean] <= 0.05").cell == "clean"
    g = parse_rule("graceful[timeout] == 1.0")
    assert (g.kind, g.cell, g.value) == ("graceful", "timeout", 1.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("steps <= 6", "needs an aggregate: 'mean(steps)'"),
        ("mean(turns) <= 6", "unknown process metric 'turns'; one of steps, tool_calls"),
        ("median(cost) <= 1", "unknown aggregate 'median'; use mean or p95 or max"),
        ("mean(cost) <= -1", "cost is never negative"),
        ("graceful[timeout] >= 1.5", "a rate is between 0 and 1"),
        ("pass^0 >= 0.5", "k starts at 1"),
        ("degradation[timeout] == 1", "'degradation' is the drop against clean"),
        ("mean(tool_calls) <= six", "cannot parse gate rule"),
    ],
)
def test_bad_rules_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_rule(text)


def test_process_rules_measure_the_run_or_each_cell(analysis: Analysis) -> None:
    overall = _one(analysis, "mean(tool_calls) <= 6")
    assert (overall.passed, overall.measured) == (True, 5.0)  # (4 x 2 + 4 x 8) / 8
    assert "mean(tool_calls)[run] = 5 over 8 trials" in overall.detail
    each = _one(analysis, "mean(tool_calls)[*] <= 6")
    assert (each.passed, each.measured) == (False, 8.0)  # the worst cell is reported
    assert _one(analysis, "mean(tool_calls)[clean] <= 6").measured == 2.0
    # steps count every action: the model call too.
    assert _one(analysis, "mean(steps)[timeout] <= 9").measured == 9.0
    latency = [10.0 * i for i in range(4)] * 2
    p95 = _one(analysis, "p95(latency) <= 30")
    assert p95.measured == pytest.approx(float(np.quantile(latency, 0.95))) == 30.0
    assert p95.passed and not _one(analysis, "p95(latency) < 30").passed
    cost = _one(analysis, "mean(cost)[clean] <= 0.05")
    assert cost.measured == pytest.approx(0.025) and cost.passed
    tokens = _one(analysis, "mean(tokens) >= 100")
    assert tokens.measured == pytest.approx(115.0) and tokens.passed
    # max: a bound every trial keeps (a path's length per case), per cell the worst cell's.
    longest = _one(analysis, "max(steps)[*] <= 9")
    assert (longest.passed, longest.measured) == (True, 9.0)
    assert not _one(analysis, "max(steps)[*] <= 8").passed
    assert _one(analysis, "max(tool_calls)[clean] <= 2").measured == 2.0


def test_graceful_is_the_share_of_contract_trials_that_ended_correctly(analysis: Analysis) -> None:
    g = _one(analysis, "graceful[timeout] == 1.0")
    assert (g.passed, g.measured) == (False, 0.75)
    assert "1 recovered, 2 fell back per contract, 1 not" in g.detail
    assert _one(analysis, "graceful >= 0.75").passed  # pooled over the run
    assert _one(analysis, "graceful[*] >= 0.75").passed  # cells without contract trials skip
    clean = _one(analysis, "graceful[clean] == 1")
    assert not clean.passed and clean.measured is None
    assert "no trial received a fault that a degradation contract names" in clean.detail
    # A selector naming no cell of the matrix is a usage error (exit 2), not a broken rule.
    with pytest.raises(ConfigError, match="no cell is or stacks 'latency'"):
        _one(analysis, "graceful[latency] == 1")


def test_the_report_shows_the_rate_per_cell_and_says_it_enters_pass_hat(
    analysis: Analysis,
) -> None:
    from chaoseval.analysis.build import analysis_json
    from chaoseval.render import render_html, render_markdown, report_tables

    (table,) = [t for t in report_tables(analysis) if t.id == "graceful"]
    assert table.rows == [[CELL, "4", "1", "2", "1", "0.750"]]
    assert "contract verdicts enter the perturbed cell's pass^k" in table.notes[0]
    assert "Correct degradation under contract faults" in render_markdown(analysis)
    assert "Correct degradation under contract faults" in render_html(analysis)
    assert analysis_json(analysis)["graceful"][CELL]["rate"] == 0.75
