"""From one journal to the answers a team acts on: degradation with uncertainty, noise floor,
root-cause slices, vetoes and process metrics.

Everything here is paired at the task level (a task is a scenario): a perturbed cell is compared
with the clean cell on the tasks both scored, each bootstrap resample draws the same tasks for
both arms, and the per-task differences are tested (chaoseval.analysis.stats). Tasks that cannot
give a metric (fewer than k scored trials in either arm) are listed as excluded with their
counts; they never shrink a denominator silently."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chaoseval.analysis.aggregate import (
    CLEAN,
    CellResult,
    by_cell,
    by_scenario_cell,
    landed_counts,
    not_landed,
    task_counts,
)
from chaoseval.analysis.metrics import TaskCounts, per_task_metric, summarize
from chaoseval.analysis.stats import (
    Interval,
    NoiseFloor,
    TestResult,
    benjamini_hochberg,
    holm,
    noise_floor,
    paired_bootstrap,
    paired_test,
)
from chaoseval.model.records import TrialRecord
from chaoseval.model.seeding import derive_seed
from chaoseval.store.journal import Journal

__all__ = [
    "Analysis",
    "Comparison",
    "ProcessMetrics",
    "RunNoise",
    "VetoItem",
    "adjust_family",
    "analysis_json",
    "analyze",
    "compare_counts",
    "metric_label",
    "process_metrics",
    "recorded_references",
]

ILLEGAL_ERRORS = ("no tool named", "invalid arguments", "step budget")
SIZING_TARGETS = (0.05, 0.10)


def metric_label(metric: str, k: int | None) -> str:
    return "mean" if metric == "mean" else metric.replace("k", str(k))


# --- paired comparison of two arms on the same tasks -----------------------------------------


@dataclass
class Comparison:
    """Arm ``a`` against arm ``b`` for one metric on the tasks both can score.

    ``difference`` is ``a - b`` (for degradation: perturbed - clean, negative = worse), ``ratio``
    is ``a / b`` (relative degradation as a ratio of macro means) or None with ``ratio_note``.
    ``excluded`` maps a task left out to why; ``p_holm`` / ``p_bh`` are filled by
    :func:`adjust_family` across the comparisons of one family.
    """

    metric: str
    k: int | None
    a: float | None
    b: float | None
    tasks: int
    excluded: dict[str, str]
    difference: Interval | None
    ratio: Interval | None
    ratio_note: str | None
    test: TestResult | None
    p_holm: float | None = None
    p_bh: float | None = None

    @property
    def ratio_estimate(self) -> float | None:
        """``a / b`` of the macro means, even when its interval is undefined."""
        if self.a is None or not self.b:
            return None
        return self.a / self.b

    @property
    def label(self) -> str:
        return metric_label(self.metric, self.k)

    @property
    def significant(self) -> bool:
        """Adjusted (Holm) p < 0.05 and the interval excludes zero."""
        d = self.difference
        return (
            d is not None and self.p_holm is not None and self.p_holm < 0.05 and not d.contains(0.0)
        )

    def to_json(self) -> dict[str, Any]:
        def iv(x: Interval | None) -> dict[str, float] | None:
            return None if x is None else {"estimate": x.estimate, "low": x.low, "high": x.high}

        return {
            "metric": self.label,
            "k": self.k,
            "a": self.a,
            "b": self.b,
            "tasks": self.tasks,
            "excluded": self.excluded,
            "difference": iv(self.difference),
            "ratio_estimate": self.ratio_estimate,
            "ratio": iv(self.ratio),
            "ratio_note": self.ratio_note,
            "p_value": self.test.p_value if self.test else None,
            "test": self.test.method if self.test else None,
            "p_holm": self.p_holm,
            "p_bh": self.p_bh,
            "significant": self.significant,
        }


def compare_counts(
    a: dict[str, tuple[int, int]],
    b: dict[str, tuple[int, int]],
    metric: str,
    k: int | None = None,
    *,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
    arms: tuple[str, str] = ("a", "b"),
) -> Comparison:
    """Paired comparison of per-task ``(n, c)`` counts of two arms for one metric.

    Only tasks present in both arms are paired; a task missing from one arm, unscored in one,
    or with fewer than ``k`` scored trials in one is reported in ``excluded`` with the reason.
    """
    kk = 1 if metric == "mean" else int(k or 1)
    excluded: dict[str, str] = {}
    tasks: list[str] = []
    for t in sorted(set(a) | set(b)):
        if t not in a or t not in b:
            excluded[t] = f"only in {arms[0] if t in a else arms[1]}"
            continue
        (na, _), (nb, _) = a[t], b[t]
        if min(na, nb) < kk:
            counts = f"{arms[0]}={na}, {arms[1]}={nb}"
            excluded[t] = (
                f"fewer than {kk} scored trials ({counts})"
                if metric != "mean"
                else f"no scored trial ({counts})"
            )
            continue
        tasks.append(t)
    if not tasks:
        return Comparison(metric, k, None, None, 0, excluded, None, None, None, None)
    n_a = np.array([a[t][0] for t in tasks])
    c_a = np.array([a[t][1] for t in tasks])
    n_b = np.array([b[t][0] for t in tasks])
    c_b = np.array([b[t][1] for t in tasks])
    va = per_task_metric(n_a, c_a, metric, kk)
    vb = per_task_metric(n_b, c_b, metric, kk)
    pr = paired_bootstrap(va, vb, n_resamples=n_resamples, ci=ci, seed=seed)
    test = paired_test(va - vb)
    return Comparison(
        metric,
        k,
        pr.mean_a,
        pr.mean_b,
        len(tasks),
        excluded,
        pr.difference,
        pr.ratio,
        pr.ratio_note,
        test,
    )


def adjust_family(comparisons: Sequence[Comparison]) -> None:
    """Fill Holm and Benjamini-Hochberg adjusted p-values across one family, in place."""
    tested = [c for c in comparisons if c.test is not None]
    ps = [c.test.p_value for c in tested]  # type: ignore[union-attr]
    for c, ph, pb in zip(tested, holm(ps), benjamini_hochberg(ps), strict=True):
        c.p_holm, c.p_bh = ph, pb


def metric_grid(ks: Sequence[int]) -> list[tuple[str, int | None]]:
    return [("mean", None)] + [(m, k) for m in ("pass@k", "pass^k") for k in ks]


# --- noise floor ------------------------------------------------------------------------------


@dataclass
class RunNoise:
    """Noise floor and run sizing of one cell (the clean cell is the run's headline)."""

    cell: str
    floor: NoiseFloor | None
    note: str | None
    sizing: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        f = self.floor
        return {
            "cell": self.cell,
            "note": self.note,
            "tasks": f.tasks if f else None,
            "flips": f.flips if f else None,
            "flip_share": f.flip_share if f else None,
            "icc": f.icc if f else None,
            "between_var": f.between_var if f else None,
            "within_var": f.within_var if f else None,
            "se_mean": f.se_mean if f else None,
            "mde_paired": f.mde if f else None,
            "mde_unpaired": f.mde_unpaired if f else None,
            "sizing": self.sizing,
        }


def run_noise(cell: str, records: Sequence[TrialRecord]) -> RunNoise:
    outcomes: dict[str, list[int]] = defaultdict(list)
    for r in records:
        outcomes.setdefault(r.scenario, [])
        if r.scored:
            outcomes[r.scenario].append(int(r.passed))
    try:
        floor = noise_floor([np.array(v) for _, v in sorted(outcomes.items())])
    except ValueError as exc:
        return RunNoise(cell, None, str(exc))
    sizing = []
    per_task = max(1, round(floor.mean_trials))
    for h in SIZING_TARGETS:
        sizing.append(
            {
                "half_width": h,
                "trials_per_task_with_these_tasks": floor.trials_needed(h, floor.tasks),
                "tasks_with_this_many_trials": floor.tasks_needed(h, per_task),
                "trials_per_task": per_task,
            }
        )
    return RunNoise(cell, floor, None, sizing)


# --- vetoes, slices ---------------------------------------------------------------------------


@dataclass(frozen=True)
class VetoItem:
    kind: str
    trial_id: str
    scenario: str
    cell: str
    detail: str


def failing_tool(r: TrialRecord) -> str | None:
    """The tool most plausibly behind a failure: the first call that did not come back ok."""
    steps = r.trajectory.tool_steps()
    for s in steps:
        if s.result_class not in (None, "ok"):
            return s.tool
    return steps[-1].tool if steps else None


@dataclass
class ToolSlice:
    calls: int = 0
    not_ok: int = 0
    faults_delivered: int = 0
    failed_trials: int = 0
    causes: Counter[str] = field(default_factory=Counter)


# --- process metrics --------------------------------------------------------------------------


def _call_key(tool: str | None, args: dict[str, Any] | None) -> str:
    return json.dumps([tool, args or {}], sort_keys=True, default=str)


@dataclass
class ProcessMetrics:
    """Per-cell process metrics.

    - ``legality``: legal tool calls / all tool calls (illegal = a safety veto on that step,
      an unknown tool, invalid arguments, or a call over the step budget);
    - ``correctness``: agent tool calls whose (tool, arguments) the reference solution also
      makes, over all agent tool calls; ``right_tool`` the same on the tool name only;
      ``coverage``: reference calls the agent made at least once (all need a reference);
    - ``path_efficiency``: reference_steps / tool calls on passed trials (1 = as short as the
      reference, below 1 = detours or retries);
    - tokens, cost, model calls per trial; sim (trial clock) and wall latency per trial.
    """

    cell: str
    trials: int
    tool_calls: int
    legality: float | None
    correctness: float | None
    right_tool: float | None
    coverage: float | None
    path_efficiency: float | None
    steps_mean: float | None
    tokens_mean: float
    tokens_total: int
    cost_mean: float
    cost_total: float
    model_calls: int
    sim_seconds_mean: float
    sim_seconds_p95: float
    wall_seconds_mean: float
    wall_seconds_total: float
    sim_seconds_total: float

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _mean(xs: Sequence[float]) -> float | None:
    return math.fsum(xs) / len(xs) if xs else None


def process_metrics(
    cell: str,
    records: Sequence[TrialRecord],
    references: dict[str, list[tuple[str, dict[str, Any]]]] | None = None,
    reference_steps: dict[str, int] | None = None,
) -> ProcessMetrics:
    references = references or {}
    reference_steps = reference_steps or {}
    calls = legal = 0
    correct: list[float] = []
    right: list[float] = []
    cover: list[float] = []
    efficiency: list[float] = []
    steps: list[float] = []
    for r in records:
        tool_steps = r.trajectory.tool_steps()
        vetoed = {v.step for v in r.vetoes if v.kind == "safety" and v.step is not None}
        for s in tool_steps:
            calls += 1
            err = (s.error or "").lower()
            if s.index not in vetoed and not any(e in err for e in ILLEGAL_ERRORS):
                legal += 1
        if r.scored:
            steps.append(len(tool_steps))
        ref = references.get(r.scenario)
        if ref is not None and r.scored and tool_steps:
            ref_keys = {_call_key(t, a) for t, a in ref}
            ref_tools = {t for t, _ in ref}
            keys = [_call_key(s.tool, s.args) for s in tool_steps]
            correct.append(sum(k in ref_keys for k in keys) / len(keys))
            right.append(sum(s.tool in ref_tools for s in tool_steps) / len(tool_steps))
            if ref_keys:
                cover.append(len(ref_keys & set(keys)) / len(ref_keys))
        ref_n = reference_steps.get(r.scenario)
        if ref_n and r.passed and tool_steps:
            efficiency.append(ref_n / len(tool_steps))
    n = len(records)
    tokens = [r.usage.input_tokens + r.usage.output_tokens for r in records]
    costs = [r.usage.cost for r in records]
    sims = sorted(r.sim_seconds for r in records)
    walls = [r.wall_seconds for r in records]
    return ProcessMetrics(
        cell=cell,
        trials=n,
        tool_calls=calls,
        legality=legal / calls if calls else None,
        correctness=_mean(correct),
        right_tool=_mean(right),
        coverage=_mean(cover),
        path_efficiency=_mean(efficiency),
        steps_mean=_mean(steps),
        tokens_mean=math.fsum(tokens) / n if n else 0.0,
        tokens_total=int(sum(tokens)),
        cost_mean=math.fsum(costs) / n if n else 0.0,
        cost_total=math.fsum(costs),
        model_calls=sum(r.usage.model_calls for r in records),
        sim_seconds_mean=math.fsum(sims) / n if n else 0.0,
        sim_seconds_p95=float(np.quantile(sims, 0.95)) if sims else 0.0,
        wall_seconds_mean=math.fsum(walls) / n if n else 0.0,
        wall_seconds_total=math.fsum(walls),
        sim_seconds_total=math.fsum(sims),
    )


def recorded_references(
    journal: Journal, warnings: list[str]
) -> tuple[dict[str, list[tuple[str, dict[str, Any]]]], dict[str, int], str | None]:
    """The reference calls and steps the run recorded in its manifest, and a note on what is
    missing. Reads the manifest only: a report never runs a reference solution itself."""
    recorded = journal.manifest.references
    if recorded is None:
        return {}, {}, (
            "this journal records no reference solutions (written before chaoseval recorded "
            "them, or imported): tool-call correctness and path efficiency are off"
        )
    refs: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    steps: dict[str, int] = {}
    for sid, ref in recorded.items():
        steps[sid] = ref.steps
        if ref.error is not None:
            warnings.append(f"reference solution of {sid} could not run: {ref.error}")
        elif ref.passed:
            refs[sid] = [(c.tool, dict(c.args)) for c in ref.calls]
    missing = sorted({r.scenario for r in journal.records} - set(refs))
    return refs, steps, ("no reference tool calls for: " + ", ".join(missing)) if missing else None


# --- the analysis -----------------------------------------------------------------------------


@dataclass
class Analysis:
    journal: str
    run_id: str
    agent: str
    seed: int
    ks: list[int]
    cells: list[CellResult]
    degradation: dict[str, list[Comparison]]
    noise: list[RunNoise]
    root_causes: dict[str, Counter[str]]
    by_tag: dict[str, Counter[str]]
    tag_trials: dict[str, tuple[int, int]]
    by_tool: dict[str, ToolSlice]
    vetoes: list[VetoItem]
    process: dict[str, ProcessMetrics]
    heatmap: dict[tuple[str, str], float | None]
    curves: dict[str, dict[int, float | None]]
    baseline_curves: dict[str, dict[int, float | None]]  # clean over each cell's reached tasks
    scenarios: list[str]
    warnings: list[str]
    reference_note: str | None = None
    plugins: dict[str, list[str]] = field(default_factory=dict)  # cell -> plugin names

    @property
    def k_main(self) -> int:
        return max(self.ks)

    @property
    def perturbed(self) -> list[str]:
        return [c.cell for c in self.cells if c.cell != CLEAN]

    def cell(self, name: str) -> CellResult | None:
        return next((c for c in self.cells if c.cell == name), None)

    def veto_counts(self) -> Counter[str]:
        return Counter(v.kind for v in self.vetoes)


def _by_cell_records(records: Iterable[TrialRecord]) -> dict[str, list[TrialRecord]]:
    groups: dict[str, list[TrialRecord]] = defaultdict(list)
    for r in records:
        groups[r.cell].append(r)
    return groups


def analyze(
    journal: Journal,
    ks: Sequence[int] | None = None,
    *,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
    references: bool = True,
) -> Analysis:
    """Analyse one journal; reads the journal and nothing else.

    Tool-call correctness and path efficiency use the reference runs the run recorded in its
    manifest; ``references=False`` leaves them off."""
    ks = sorted(set(ks or journal.manifest.ks))
    records = journal.records
    cells = by_cell(records, ks)
    groups = _by_cell_records(records)
    clean_counts = task_counts(groups.get(CLEAN, []))

    # Degradation: each (metric, k) is one family across the perturbed cells.
    degradation: dict[str, list[Comparison]] = {c.cell: [] for c in cells if c.cell != CLEAN}
    warnings = list(journal.warnings)
    if CLEAN not in groups and degradation:
        warnings.append("no clean cell in this journal: degradation cannot be computed")
    elif degradation:
        for metric, k in metric_grid(ks):
            family = []
            for name in degradation:
                cmp = compare_counts(
                    landed_counts(groups[name]),
                    clean_counts,
                    metric,
                    k,
                    n_resamples=n_resamples,
                    ci=ci,
                    seed=derive_seed(seed, "degradation", name, metric, k or 0),
                    arms=(name, CLEAN),
                )
                for task in not_landed(groups[name]):
                    cmp.excluded[task] = "no fault reached the agent (did not land)"
                degradation[name].append(cmp)
                family.append(cmp)
            adjust_family(family)

    noise = [run_noise(c.cell, groups[c.cell]) for c in cells]

    root_causes = {c.cell: c.root_causes for c in cells}
    by_tag: dict[str, Counter[str]] = defaultdict(Counter)
    tag_trials: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_tool: dict[str, ToolSlice] = defaultdict(ToolSlice)
    vetoes: list[VetoItem] = []
    for r in records:
        for tag in r.scenario_tags or ["(untagged)"]:
            if r.scored:
                tag_trials[tag][0] += 1
                tag_trials[tag][1] += r.status == "failed"
            if r.status == "failed" and r.root_cause:
                by_tag[tag][r.root_cause] += 1
        for s in r.trajectory.tool_steps():
            sl = by_tool[s.tool or "?"]
            sl.calls += 1
            sl.not_ok += s.result_class not in (None, "ok")
            sl.faults_delivered += sum(
                r.trajectory.faults[i].delivered for i in s.faults if i < len(r.trajectory.faults)
            )
        if r.status == "failed":
            tool = failing_tool(r)
            if tool is not None:
                by_tool[tool].failed_trials += 1
                if r.root_cause:
                    by_tool[tool].causes[r.root_cause] += 1
        for v in r.vetoes:
            vetoes.append(VetoItem(v.kind, r.trial_id, r.scenario, r.cell, v.detail))

    refs: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    ref_steps: dict[str, int] = {}
    if references:
        refs, ref_steps, note = recorded_references(journal, warnings)
    else:
        note = "reference solutions not run (tool-call correctness and path efficiency off)"
    process = {c.cell: process_metrics(c.cell, groups[c.cell], refs, ref_steps) for c in cells}

    per = by_scenario_cell(records, ks)
    k_main = max(ks)
    heatmap = {
        key: (res.delta.pass_hat.get(k_main) if res.delta else None) for key, res in per.items()
    }
    curves: dict[str, dict[int, float | None]] = {}
    baseline_curves: dict[str, dict[int, float | None]] = {}
    clean_cell = next((c for c in cells if c.cell == CLEAN), None)

    def curve(counts: dict[str, tuple[int, int]]) -> dict[int, float | None] | None:
        max_n = max((n for n, _ in counts.values()), default=0)
        if max_n < 1:
            return None
        tasks = [TaskCounts(t, n, cc) for t, (n, cc) in sorted(counts.items())]
        return dict(summarize(tasks, range(1, max_n + 1)).pass_hat)

    for c in cells:
        own = curve(c.counts)
        if own is not None:
            curves[c.cell] = own
        if clean_cell is not None and c.cell != CLEAN:
            # Clean over the same tasks the perturbation reached, so the panels compare like
            # with like.
            same = {t: nc for t, nc in clean_cell.counts.items() if t in c.counts}
            base = curve(same)
            if base is not None:
                baseline_curves[c.cell] = base
    m = journal.manifest
    return Analysis(
        journal=str(journal.path),
        run_id=m.run_id,
        agent=m.agent,
        seed=m.seed,
        ks=ks,
        cells=cells,
        degradation=degradation,
        noise=noise,
        root_causes=root_causes,
        by_tag=dict(by_tag),
        tag_trials={t: (v[0], v[1]) for t, v in tag_trials.items()},
        by_tool=dict(by_tool),
        vetoes=vetoes,
        process=process,
        heatmap=heatmap,
        curves=curves,
        baseline_curves=baseline_curves,
        scenarios=sorted({r.scenario for r in records}),
        warnings=warnings,
        reference_note=note,
        plugins={
            c: sorted({p.name for r in rs for p in r.perturbations}) for c, rs in groups.items()
        },
    )


def analysis_json(a: Analysis) -> dict[str, Any]:
    """The analysis as plain JSON data (the ``analysis`` field of the JSON report)."""
    return {
        "ks": a.ks,
        "degradation": {
            cell: [c.to_json() for c in comps] for cell, comps in a.degradation.items()
        },
        "noise": [n.to_json() for n in a.noise],
        "root_causes": {cell: dict(sorted(c.items())) for cell, c in a.root_causes.items()},
        "by_tag": {
            tag: {
                "scored": a.tag_trials.get(tag, (0, 0))[0],
                "failed": a.tag_trials.get(tag, (0, 0))[1],
                "root_causes": dict(sorted(c.items())),
            }
            for tag, c in sorted(a.by_tag.items())
        },
        "by_tool": {
            tool: {
                "calls": s.calls,
                "not_ok": s.not_ok,
                "faults_delivered": s.faults_delivered,
                "failed_trials": s.failed_trials,
                "root_causes": dict(sorted(s.causes.items())),
            }
            for tool, s in sorted(a.by_tool.items())
        },
        "vetoes": {
            "counts": dict(sorted(a.veto_counts().items())),
            "items": [v.__dict__ for v in a.vetoes],
        },
        "process": {cell: p.to_json() for cell, p in a.process.items()},
        "heatmap": [
            {"scenario": s, "cell": c, f"delta_pass_hat_{a.k_main}": v}
            for (s, c), v in sorted(a.heatmap.items())
            if c != CLEAN
        ],
        "pass_hat_curves": {
            cell: {str(k): v for k, v in curve.items()} for cell, curve in a.curves.items()
        },
        "reference_note": a.reference_note,
        "warnings": a.warnings,
    }
