"""pass^k as a function of k per cell, and the per-scenario change in pass^k (the heatmap)."""

from __future__ import annotations

from collections.abc import Sequence

from chaoseval.analysis.aggregate import CLEAN, CellResult, Records, by_scenario_cell
from chaoseval.analysis.metrics import TaskCounts, summarize

__all__ = ["Curve", "heatmap", "pass_hat_curve", "pass_hat_curves"]

Curve = dict[int, float | None]  # k -> pass^k


def pass_hat_curve(counts: dict[str, tuple[int, int]]) -> Curve | None:
    """pass^k for k = 1 .. the most scored trials of any task; None without a scored trial."""
    max_n = max((n for n, _ in counts.values()), default=0)
    if max_n < 1:
        return None
    tasks = [TaskCounts(t, n, c) for t, (n, c) in sorted(counts.items())]
    return dict(summarize(tasks, range(1, max_n + 1)).pass_hat)


def pass_hat_curves(cells: Sequence[CellResult]) -> tuple[dict[str, Curve], dict[str, Curve]]:
    """Each cell's curve, and clean's curve over the tasks each perturbed cell reached (so the
    panels compare like with like)."""
    curves: dict[str, Curve] = {}
    baselines: dict[str, Curve] = {}
    clean = next((c for c in cells if c.cell == CLEAN), None)
    for c in cells:
        own = pass_hat_curve(c.counts)
        if own is not None:
            curves[c.cell] = own
        if clean is not None and c.cell != CLEAN:
            same = {t: nc for t, nc in clean.counts.items() if t in c.counts}
            base = pass_hat_curve(same)
            if base is not None:
                baselines[c.cell] = base
    return curves, baselines


def heatmap(records: Records, ks: Sequence[int]) -> dict[tuple[str, str], float | None]:
    """(scenario, cell) -> change in pass^k (largest k) against clean on that scenario."""
    k_main = max(ks)
    per = by_scenario_cell(records, ks)
    return {key: (r.delta.pass_hat.get(k_main) if r.delta else None) for key, r in per.items()}
