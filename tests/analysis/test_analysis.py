"""Degradation with paired intervals and adjusted p-values, slices, vetoes, process metrics."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic import manifest_for

from chaoseval.analysis.aggregate import by_scenario_cell
from chaoseval.analysis.build import analysis_json, analyze
from chaoseval.analysis.degradation import Comparison, adjust_family, compare_counts
from chaoseval.analysis.process import References, process_metrics
from chaoseval.analysis.stats import TestResult
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import ModelSettings, ReferenceRun, ToolCall, TrialRecord, Veto
from chaoseval.model.trajectory import Trajectory
from chaoseval.seams.agent import load_agent
from chaoseval.store.journal import Journal, read_journal

# --- synthetic journals -----------------------------------------------------------------------


def record(
    scenario: str, cell: str, index: int, status: str = "passed", **kw: object
) -> TrialRecord:
    fields: dict = dict(
        run_id="r",
        trial_id=f"{scenario}/{cell}/{index}",
        scenario=scenario,
        cell=cell,
        index=index,
        seed=index,
        world_seed=0,
        agent="synthetic",
        model=ModelSettings(),
        status=status,
        root_cause=None if status == "passed" else kw.pop("root_cause", "wrong_answer"),
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    fields.update(kw)
    return TrialRecord(**fields)


def journal(counts: dict[str, dict[str, tuple[int, int]]], path: str = "j.jsonl") -> Journal:
    """``counts[cell][task] = (n, c)``: c passed trials then n - c failed ones."""
    records = []
    for cell, tasks in counts.items():
        for task, (n, c) in tasks.items():
            for i in range(n):
                records.append(record(task, cell, i, "passed" if i < c else "failed"))
    manifest = manifest_for(counts, agent="synthetic", run_id="r")
    return Journal(Path(path), manifest, records)


# The DESIGN worked example as the clean cell (n = 5, c = 5, 4, 2, 0).
CLEAN = {"A": (5, 5), "B": (5, 4), "C": (5, 2), "D": (5, 0)}
HURT = {"A": (5, 3), "B": (5, 2), "C": (5, 0), "D": (5, 0)}


def test_small_paired_comparison_exact_values() -> None:
    cmp = compare_counts(HURT, CLEAN, "pass^k", 2, n_resamples=2000, seed=1)
    # clean pass^2 = (1 + 12/20 + 2/20 + 0) / 4 = 17/40; hurt = (6/20 + 2/20 + 0 + 0) / 4 = 1/10.
    assert Fraction(cmp.b).limit_denominator(1000) == Fraction(17, 40)
    assert Fraction(cmp.a).limit_denominator(1000) == Fraction(1, 10)
    assert cmp.difference is not None
    assert Fraction(cmp.difference.estimate).limit_denominator(1000) == Fraction(-13, 40)
    # Per-task differences -7/10, -1/2, -1/10, 0: three non-zero, all negative; the exact
    # sign-flip test finds 2 of 2^3 patterns as extreme.
    assert cmp.test is not None and cmp.test.method == "exact sign-flip"
    assert Fraction(cmp.test.p_value) == Fraction(1, 4)
    # Four tasks cannot reject anything at 5% (smallest p = 2/16): the interval that inverts the
    # test is every possible difference, and says so rather than excluding 0 at p = 1/4.
    assert (cmp.difference.low, cmp.difference.high) == (-1.0, 1.0)
    doc = cmp.to_json()  # each arm under its own name
    assert (doc["perturbed"], doc["clean"]) == (cmp.a, cmp.b) and "a" not in doc
    assert cmp.tasks == 4 and cmp.excluded == {}
    # Relative degradation: 1/10 over 17/40 = 4/17. Its interval is undefined here: a resample
    # of only task D has a zero clean baseline, and the note says so rather than hiding it.
    assert Fraction(cmp.ratio_estimate).limit_denominator(1000) == Fraction(4, 17)
    assert cmp.ratio is None and "resamples" in (cmp.ratio_note or "")


def test_relative_degradation_interval() -> None:
    clean = {"A": (5, 5), "B": (5, 4), "C": (5, 2)}
    hurt = {"A": (5, 4), "B": (5, 2), "C": (5, 1)}
    cmp = compare_counts(hurt, clean, "mean", n_resamples=2000, seed=3)
    assert cmp.ratio is not None and cmp.ratio_note is None
    assert Fraction(cmp.ratio.estimate).limit_denominator(100) == Fraction(7, 11)
    assert cmp.ratio.low <= 7 / 11 <= cmp.ratio.high <= 1


def test_family_adjustment_exact() -> None:
    hurt = compare_counts(HURT, CLEAN, "pass^k", 2, n_resamples=200)
    same = compare_counts(CLEAN, CLEAN, "pass^k", 2, n_resamples=200)
    adjust_family([hurt, same])
    # p = 1/4 and 1: Holm 2 * 1/4 = 1/2, then max(1/2, 1) = 1; BH 1/4 * 2 / 1 = 1/2 and 1.
    assert (hurt.p_holm, same.p_holm) == (0.5, 1.0)
    assert (hurt.p_bh, same.p_bh) == (0.5, 1.0)
    assert same.test is not None and same.test.p_value == 1.0
    assert not hurt.significant


def test_adjust_family_bh_1995() -> None:
    ps = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344]
    ps += [0.0459, 0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.000]
    fam = [
        Comparison("mean", None, 0, 0, 1, {}, None, None, None, TestResult(p, "t", 1, 0))
        for p in ps
    ]
    adjust_family(fam)
    assert [c.p_bh is not None and c.p_bh <= 0.05 for c in fam] == [True] * 4 + [False] * 11
    assert fam[3].p_bh == pytest.approx(0.035625)
    assert [c.p_holm is not None and c.p_holm <= 0.05 for c in fam] == [True] * 3 + [False] * 12


@pytest.mark.parametrize("tasks", [8, 30])
def test_identical_shift_keeps_an_interval_of_nonzero_width(tasks: int) -> None:
    # Every task loses exactly one of five passes (a deterministic agent): the differences do
    # not vary, but the next task's might. The interval keeps a width set by the number of
    # tasks, holds -0.2, and p never goes below 2 / 2^tasks.
    clean = {f"t{i}": (5, 5 - i % 5) for i in range(tasks)}
    hurt = {t: (5, c - 1 if c else 0) for t, (_, c) in clean.items()}
    hurt = {t: v for t, v in hurt.items() if clean[t][1]}
    cmp = compare_counts(hurt, clean, "mean", n_resamples=500)
    d, test = cmp.difference, cmp.test
    assert d is not None and test is not None
    assert d.estimate == pytest.approx(-0.2) and d.low < -0.2 < d.high
    assert d.high - d.low > 0.05
    assert test.p_value >= 2 / 2**cmp.tasks
    # 8 tasks that agree are not proof; 24 are.
    assert cmp.significant == (tasks == 30) or cmp.p_holm is None


def test_tasks_without_k_trials_are_excluded_with_counts() -> None:
    hurt = dict(HURT, C=(1, 0))
    cmp = compare_counts(hurt, CLEAN, "pass^k", 2, arms=("timeout", "clean"), n_resamples=100)
    assert cmp.tasks == 3
    assert cmp.excluded == {"C": "fewer than 2 scored trials (timeout=1, clean=5)"}
    # The metric is on the 3 remaining tasks, not 4 with C silently scored as zero.
    assert cmp.a == pytest.approx((6 / 20 + 2 / 20 + 0) / 3)
    mean = compare_counts(hurt, CLEAN, "mean", n_resamples=100)
    assert mean.tasks == 4 and mean.excluded == {}


def test_task_in_one_arm_only_is_excluded() -> None:
    cmp = compare_counts({**HURT, "E": (5, 5)}, CLEAN, "mean", n_resamples=100)
    assert cmp.excluded == {"E": "only in a"} and cmp.tasks == 4


def test_nothing_to_pair_gives_no_numbers() -> None:
    cmp = compare_counts({"A": (1, 1)}, {"A": (1, 0)}, "pass^k", 2, n_resamples=10)
    assert cmp.difference is None and cmp.test is None and cmp.tasks == 0
    adjust_family([cmp])  # an untestable member does not break the family
    assert cmp.p_holm is None


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=2, max_size=8),
    st.integers(1, 3),
)
def test_paired_difference_matches_summaries(cs: list[tuple[int, int]], k: int) -> None:
    clean = {f"t{i}": (6, a) for i, (a, _) in enumerate(cs)}
    hurt = {f"t{i}": (6, b) for i, (_, b) in enumerate(cs)}
    cmp = compare_counts(hurt, clean, "pass^k", k, n_resamples=200)
    j = journal({"clean": clean, "x": hurt})
    a = analyze(j, [k], n_resamples=200, references=False)
    summary = {c.cell: c.summary for c in a.cells}
    assert cmp.difference is not None
    expected = summary["x"].pass_hat[k] - summary["clean"].pass_hat[k]  # type: ignore[operator]
    assert cmp.difference.estimate == pytest.approx(expected)
    assert cmp.difference.low - 1e-12 <= cmp.difference.estimate <= cmp.difference.high + 1e-12
    assert 0 <= cmp.test.p_value <= 1  # type: ignore[union-attr]


def test_analysis_of_synthetic_journal() -> None:
    j = journal({"clean": CLEAN, "timeout": HURT, "latency": CLEAN})
    a = analyze(j, [1, 2], n_resamples=500, references=False)
    assert a.perturbed == ["timeout", "latency"]
    labels = [c.label for c in a.degradation["timeout"]]
    assert labels == ["mean", "pass@1", "pass@2", "pass^1", "pass^2"]
    t2 = next(c for c in a.degradation["timeout"] if c.label == "pass^2")
    l2 = next(c for c in a.degradation["latency"] if c.label == "pass^2")
    assert (t2.p_holm, l2.p_holm) == (0.5, 1.0)  # the family is the two perturbations
    # Root causes: every failed trial is counted once.
    failed = Counter(r.cell for r in j.records if r.status == "failed")
    assert {c: sum(v.values()) for c, v in a.root_causes.items()} == {
        c: failed.get(c, 0) for c in a.root_causes
    }
    doc = analysis_json(a)
    json.dumps(doc)
    assert doc["degradation"]["timeout"][4]["metric"] == "pass^2"


def test_vetoes_and_process_metrics_from_records() -> None:
    traj = Trajectory()
    traj.add_step("tool", tool="get", args={"id": 1}, result_class="ok")
    traj.add_step("tool", tool="restock", args={}, result_class="ok")
    traj.add_step(
        "tool",
        tool="get",
        args={"id": 2},
        result_class="tool_error",
        error="invalid arguments for get",
    )
    bad = record(
        "s",
        "clean",
        0,
        "failed",
        root_cause="safety_violation",
        vetoes=[Veto(kind="safety", detail="called forbidden tool 'restock'", step=1)],
        trajectory=traj,
    )
    ok_traj = Trajectory()
    ok_traj.add_step("tool", tool="get", args={"id": 1}, result_class="ok")
    ok_traj.add_step("tool", tool="put", args={"id": 1}, result_class="ok")
    good = record("s", "clean", 1, "passed", trajectory=ok_traj)
    calls = [ToolCall(tool="get", args={"id": 1}), ToolCall(tool="put", args={"id": 1})]
    p = process_metrics("clean", [bad, good], References(calls={"s": calls}, steps={"s": 2}))
    assert p.tool_calls == 5
    assert p.legality == pytest.approx(3 / 5)  # the vetoed call and the invalid one are illegal
    # bad: 1 of 3 calls is a reference call; good: 2 of 2.
    assert p.correctness == pytest.approx((1 / 3 + 1) / 2)
    assert p.coverage == pytest.approx((1 / 2 + 1) / 2)
    assert p.path_efficiency == pytest.approx(1.0)  # only passed trials count
    j = journal({"clean": {"z": (1, 1)}})
    j.records[:] = [bad, good]
    a = analyze(j, [1], n_resamples=50, references=False)
    assert [(v.kind, v.trial_id) for v in a.vetoes] == [("safety", "s/clean/0")]
    assert a.by_tool["get"].failed_trials == 1  # its invalid call was the first not-ok one


def _two_trials() -> list[TrialRecord]:
    bad_traj = Trajectory()
    bad_traj.add_step("tool", tool="get", args={"id": 2}, result_class="ok")
    bad = record("s", "clean", 0, "failed", trajectory=bad_traj)
    ok_traj = Trajectory()
    ok_traj.add_step("tool", tool="get", args={"id": 1}, result_class="ok")
    ok_traj.add_step("tool", tool="put", args={"id": 1}, result_class="ok")
    return [bad, record("s", "clean", 1, "passed", trajectory=ok_traj)]


def test_reference_runs_come_from_the_manifest_only() -> None:
    """Scenario "s" exists in no file and no pack: the analysis can only read the manifest."""
    j = journal({"clean": {"s": (2, 1)}})
    j.records[:] = _two_trials()
    calls = [ToolCall(tool="get", args={"id": 1}), ToolCall(tool="put", args={"id": 1})]
    j.manifest.references = {"s": ReferenceRun(steps=2, passed=True, calls=calls)}
    a = analyze(j, [1], n_resamples=50)
    p = a.process["clean"]
    assert a.reference_note is None
    assert p.correctness == pytest.approx((0 + 1) / 2)  # bad: 0 of 1 calls; good: 2 of 2
    assert p.right_tool == pytest.approx(1.0) and p.path_efficiency == pytest.approx(1.0)
    # A reference that did not pass is no yardstick; one that could not run is a warning.
    j.manifest.references = {"s": ReferenceRun(steps=1, passed=False, error="boom")}
    a = analyze(j, [1], n_resamples=50)
    assert a.process["clean"].correctness is None
    assert a.process["clean"].path_efficiency == pytest.approx(0.5)  # the steps still count
    assert a.reference_note == "no reference tool calls for: s"
    assert "reference solution of s could not run: boom" in a.warnings
    # A journal that recorded none (older, or imported) says so instead of running anything.
    j.manifest.references = None
    a = analyze(j, [1], n_resamples=50)
    assert a.process["clean"].correctness is None and a.process["clean"].path_efficiency is None
    assert a.reference_note and "records no reference solutions" in a.reference_note


def test_analysis_imports_no_engine_loader_or_agent() -> None:
    """Analysis is a pure function of journals: it cannot load scenarios or run trials."""
    import ast

    import chaoseval.analysis

    forbidden = ("chaoseval.engine", "chaoseval.agents", "chaoseval.loading", "anyio")
    for path in Path(chaoseval.analysis.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            bad = [n for n in names if n.startswith(forbidden)]
            assert not bad, f"{path.name} imports {bad}"


# --- realistic journals -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def naive_journal(tmp_path_factory: pytest.TempPathFactory) -> Journal:
    path = tmp_path_factory.mktemp("runs") / "naive.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), ["vending-*"]),
            agent=load_agent("naive"),
            agent_name="naive",
            cells=parse_cells(["timeout"]),
            trials=4,
            seed=11,
            ks=[1, 2, 4],
            journal=path,
        )
    )
    return read_journal(path)


def test_analysis_of_a_real_run(naive_journal: Journal) -> None:
    j = naive_journal
    a = analyze(j, n_resamples=1000)
    assert a.ks == [1, 2, 4] and a.perturbed == ["timeout"]
    comps = a.degradation["timeout"]
    assert all(c.tasks + len(c.excluded) == len(a.scenarios) for c in comps)
    # Degradation estimates agree with the per-cell summaries on the same tasks.
    clean, pert = a.cell("clean"), a.cell("timeout")
    assert clean is not None and pert is not None
    p4 = next(c for c in comps if c.label == "pass^4")
    assert p4.difference is not None
    assert p4.difference.estimate == pytest.approx(
        pert.summary.pass_hat[4] - clean.summary.pass_hat[4]  # type: ignore[operator]
    )
    # Slices account for every failed trial and every veto in the journal.
    failed = [r for r in j.records if r.status == "failed"]
    assert sum(sum(c.values()) for c in a.root_causes.values()) == len(failed)
    assert len(a.vetoes) == sum(len(r.vetoes) for r in j.records)
    assert sum(s.calls for s in a.by_tool.values()) == sum(r.steps for r in j.records)
    # The heatmap is the per-scenario change in the primary metric (pass^1: none recorded).
    per = by_scenario_cell(j.records, a.ks)
    for (scenario, cell), v in a.heatmap.items():
        d = per[(scenario, cell)].delta
        assert v == (d.pass_hat.get(1) if d else None)
    # Process metrics: the reference solutions ran, so correctness is measured.
    p = a.process["clean"]
    assert a.reference_note is None
    assert p.correctness is not None and 0 <= p.correctness <= 1
    assert p.legality is not None and 0 <= p.legality <= 1
    assert p.trials == 12 and p.tokens_total == sum(
        r.usage.input_tokens + r.usage.output_tokens for r in j.records if r.cell == "clean"
    )
    # Noise floor per cell, with run sizing.
    noise = {n.cell: n for n in a.noise}
    assert noise["clean"].floor is not None and noise["clean"].floor.tasks == 3
    assert len(noise["clean"].sizing) == 2
    # pass^k curves are non-increasing in k.
    curve = [v for _, v in sorted(a.curves["clean"].items())]
    assert all(x >= y - 1e-12 for x, y in itertools.pairwise(curve))
    json.dumps(analysis_json(a))


def test_analysis_is_deterministic(naive_journal: Journal) -> None:
    one = analysis_json(analyze(naive_journal, n_resamples=300, seed=5, references=False))
    two = analysis_json(analyze(naive_journal, n_resamples=300, seed=5, references=False))
    assert one == two
