"""From one journal to the answers a team acts on: degradation with uncertainty, noise floor,
root-cause slices, vetoes, process metrics and the judge's audit (the report's sections, each
computed by its own module). A pure function of the journal: it reads the records, the
manifest and the reviewers' labels kept beside it (store.reviews), nothing else."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from chaoseval.analysis.aggregate import (
    CLEAN,
    CellResult,
    by_cell,
    groups,
    release,
    task_names,
)
from chaoseval.analysis.attack import AttackCell, attack_cells
from chaoseval.analysis.audit import Audit, audit
from chaoseval.analysis.browser import BrowserView, browser_view
from chaoseval.analysis.curves import Curve, Heatmap, heatmap, pass_hat_curves
from chaoseval.analysis.degradation import Comparison, degradation
from chaoseval.analysis.measures import Measures, graceful_by_cell, measure
from chaoseval.analysis.noise import RunNoise, run_noise
from chaoseval.analysis.pairtext import heatmap_text, long_list
from chaoseval.analysis.primary import DEFAULT_PRIMARY, parse_primary, recorded_primary
from chaoseval.analysis.process import (
    NOT_USED,
    ProcessMetrics,
    References,
    process_metrics,
    recorded_references,
)
from chaoseval.analysis.sequential import statuses as sequential_statuses
from chaoseval.analysis.simulator import simulator_failures
from chaoseval.analysis.slices import Slices, ToolSlice, VetoItem, slices
from chaoseval.analysis.status import DEFAULT_MARGIN, CellStatus, cell_statuses
from chaoseval.store.columns import Group, Trials, as_trials
from chaoseval.store.journal import Journal
from chaoseval.store.reviews import read_labels

__all__ = ["Analysis", "analysis_json", "analyze"]


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
    heatmap: Heatmap
    curves: dict[str, Curve]
    baseline_curves: dict[str, Curve]  # clean over each cell's reached tasks
    scenarios: list[str]
    warnings: list[str]
    reference_note: str | None = None
    plugins: dict[str, list[str]] = field(default_factory=dict)  # cell -> plugin names
    browser: BrowserView | None = None  # CLS, landed faults, screenshots of browser trials
    # Per scored trial: what it spent and how it ended under a degradation contract (gate).
    measures: Measures = field(default_factory=lambda: measure([]))
    # The metric verdicts are judged by (chaoseval.analysis.primary), as the run recorded it.
    primary: str = DEFAULT_PRIMARY
    # Cells where a planted instruction reached the agent: attack success and utility.
    attack: list[AttackCell] = field(default_factory=list)
    # Each perturbed cell's status in its scope (chaoseval.analysis.status), and the margin a
    # drop must stay under to hold.
    statuses: dict[str, CellStatus] = field(default_factory=dict)
    margin: float = DEFAULT_MARGIN
    # The run's matrix as its manifest declares it (cell -> plugin names), trials or not: what a
    # gate selector may name.
    matrix: dict[str, list[str]] = field(default_factory=dict)
    # The veto rules the run's scenarios declare (name -> safety | hallucination), fired or
    # not: what a gate rule's ``vetoes(NAME)`` may name.
    veto_rules: dict[str, str] = field(default_factory=dict)
    # The judge's audit from reviewers' labels (chaoseval review), None without labels.
    audit: Audit | None = None
    # Per cell, the trials an LLM user broke (not evaluable, root cause user_simulator):
    # counted apart in every view (chaoseval.analysis.simulator); empty without one.
    user_simulator: dict[str, int] = field(default_factory=dict)

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


def _plugins(g: Group) -> list[str]:
    sets = g.t.vocab["plugins"]
    return sorted({p for code in np.unique(g["plugins"]).tolist() if code >= 0 for p in sets[code]})


def analyze(
    journal: Trials | Journal,
    ks: Sequence[int] | None = None,
    *,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
    references: bool = True,
    primary: str | None = None,
    margin: float = DEFAULT_MARGIN,
) -> Analysis:
    """Analyse one journal; reads the journal and nothing else.

    Tool-call correctness and path efficiency use the reference runs the run recorded in its
    manifest; ``references=False`` leaves them off. Verdicts use the primary metric the run
    recorded, or ``primary`` when given (its k joins ``ks``); ``margin``: the drop a cell
    must stay under to hold."""
    t = as_trials(journal)
    main = parse_primary(primary) if primary else recorded_primary(t.manifest)
    ks = sorted(set(ks or t.manifest.ks) | ({main.kk} if main.metric != "mean" else set()))
    records = Group.all(t)
    sequence = t.manifest.sequential
    if sequence is not None:
        # Each task's first-round trials: as many in every cell, which the rounds' stopping
        # cannot bias (pass^k, the tables); the statuses are the sequential decisions.
        records = records.where(t.col["index"] < sequence.first)
    cells = by_cell(records, ks)
    by = groups(records, "cell")
    warnings = [*t.manifest.run_warnings(), *t.warnings, *_sequential_note(t)]
    degraded = degradation(
        cells, by, ks, warnings, n_resamples=n_resamples, ci=ci, seed=seed, primary=main.label
    )
    refs = recorded_references(t, warnings) if references else References(note=NOT_USED)
    sl: Slices = slices(records)
    curves, baselines = pass_hat_curves(cells)
    # Each step below reads its own columns; those it does not are let go (release), not all
    # held to the end (the process measures alone are ~90 MB at 1M trials).
    release(t)
    process = {c.cell: process_metrics(c.cell, by[c.cell], refs) for c in cells}
    release(t)
    m = t.manifest
    a = Analysis(
        journal=str(t.path),
        run_id=m.run_id,
        agent=m.agent,
        seed=m.seed,
        ks=ks,
        cells=cells,
        degradation=degraded,
        noise=[run_noise(c.cell, by[c.cell]) for c in cells],
        root_causes={c.cell: c.root_causes for c in cells},
        by_tag=sl.by_tag,
        tag_trials=sl.tag_trials,
        by_tool=sl.by_tool,
        vetoes=sl.vetoes,
        process=process,
        user_simulator=simulator_failures(records),
        heatmap=heatmap(records, ks, main.label),
        curves=curves,
        baseline_curves=baselines,
        scenarios=sorted(task_names(t)),
        warnings=warnings,
        reference_note=refs.note,
        plugins={c: _plugins(g) for c, g in by.items()},
        browser=browser_view(records),
        measures=measure(records),
        primary=main.label,
        attack=attack_cells(by, ci=ci),
        statuses=(
            _statuses(cells, degraded, main.label, margin)
            if sequence is None
            else sequential_statuses(t)
        ),
        margin=margin,
        matrix={c.name: [p.name for p in c.perturbations] for c in m.cells},
        veto_rules=t.veto_rules,
        audit=_judge_audit(t, cells, warnings, ci, ks),
    )
    release(t)
    return a


def _judge_audit(
    t: Trials, cells: Sequence[CellResult], warnings: list[str], ci: float, ks: Sequence[int]
) -> Audit | None:
    """The judge's audit from reviewers' labels (chaoseval review) at the report's level and
    ks; None without labels."""
    labels = read_labels(t.path, t.manifest.run_id, warnings)
    return audit(t, labels, {c.cell: c.counts for c in cells}, ci, ks)


def _sequential_note(t: Trials) -> list[str]:
    s = t.manifest.sequential
    if s is None:
        return []
    return [
        f"a sequential run (run --sequential): the statuses are its anytime-valid decisions on "
        f"these tasks (e-Holm at alpha {s.alpha:g}, margin {s.margin:g}, up to {s.max_trials} "
        f"trials per task); the metrics, pass^k and intervals are of each task's first-round "
        f"{s.first} trial(s), as many in every cell, which the rounds' stopping cannot bias"
    ]


def _statuses(
    cells: Sequence[CellResult],
    degraded: dict[str, list[Comparison]],
    primary: str,
    margin: float,
) -> dict[str, CellStatus]:
    clean = next((c for c in cells if c.cell == CLEAN), None)
    perturbed = [c for c in cells if c.cell != CLEAN]
    return cell_statuses(
        {c.cell: c.counts for c in perturbed},
        clean.counts if clean is not None else None,
        {
            c.cell: next((x for x in degraded.get(c.cell, []) if x.label == primary), None)
            for c in perturbed
        },
        {c.cell: not c.did_not_land for c in perturbed},
        primary,
        margin,
    )


def _slices_json(a: Analysis, lists: Callable[[Iterable[Any]], Any]) -> dict[str, Any]:
    return {
        "root_causes": {cell: dict(sorted(c.items())) for cell, c in a.root_causes.items()},
        "by_tag": {
            tag: {
                "scored": a.tag_trials.get(tag, (0, 0))[0],
                "failed": a.tag_trials.get(tag, (0, 0))[1],
                "root_causes": dict(sorted(c.items())),
            }
            for tag, c in sorted(a.by_tag.items())
        },
        "by_tool": {tool: s.to_json() for tool, s in sorted(a.by_tool.items())},
        "vetoes": {
            "counts": dict(sorted(a.veto_counts().items())),
            "items": lists(v.to_json() for v in a.vetoes),  # one a veto: 100k and more
        },
    }


def _heatmap(a: Analysis, lists: Callable[[Iterable[Any]], Any]) -> Any:
    """The heatmap's list: its text written from the arrays when ``lists`` can take text
    (render.jsonstream.Streamed), else an object per perturbed pair."""
    key = f"delta_{a.primary}"

    def items() -> Iterator[dict[str, Any]]:
        for (s, c), v in a.heatmap.sorted_items():
            if c != CLEAN:
                yield {"scenario": s, "cell": c, key: v}

    return long_list(lists, partial(heatmap_text, a.heatmap, key), items)


def analysis_json(a: Analysis, lists: Callable[[Iterable[Any]], Any] = list) -> dict[str, Any]:
    """The analysis as plain JSON data (the ``analysis`` field of the JSON report); ``lists``
    makes the long lists: the heatmap's (one entry per (task, perturbed cell)) and the vetoes'."""
    return {
        "ks": a.ks,
        "primary": a.primary,
        "degradation": {
            cell: [c.to_json() for c in comps] for cell, comps in a.degradation.items()
        },
        "noise": [n.to_json() for n in a.noise],
        **_slices_json(a, lists),
        "process": {cell: p.to_json() for cell, p in a.process.items()},
        "heatmap": _heatmap(a, lists),
        "pass_hat_curves": {
            cell: {str(k): v for k, v in curve.items()} for cell, curve in a.curves.items()
        },
        "graceful": {cell: g.to_json() for cell, g in graceful_by_cell(a.measures).items()},
        # Only where a planted instruction reached a trial (runs without one read as before).
        **({"attack": {c.cell: c.to_json() for c in a.attack}} if a.attack else {}),
        # Only where reviewers labelled trials (chaoseval review).
        **({"audit": a.audit.to_json()} if a.audit else {}),
        "reference_note": a.reference_note,
        "warnings": a.warnings,
    }
