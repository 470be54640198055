"""pass^k as a function of k per cell, and the per-scenario change in pass^k (the heatmap)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from chaoseval.analysis.aggregate import CLEAN, CellResult, Records, _perturbed
from chaoseval.analysis.metrics import summarize_counts
from chaoseval.analysis.primary import DEFAULT_PRIMARY, Primary, parse_primary
from chaoseval.store.columns import as_group

__all__ = ["Curve", "heatmap", "pass_hat_curve", "pass_hat_curves"]

Curve = dict[int, float | None]  # k -> pass^k


def pass_hat_curve(counts: dict[str, tuple[int, int]]) -> Curve | None:
    """pass^k for k = 1 .. the most scored trials of any task; None without a scored trial."""
    max_n = max((n for n, _ in counts.values()), default=0)
    if max_n < 1:
        return None
    return dict(summarize_counts(counts, range(1, max_n + 1)).pass_hat)


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


def _pass_hat(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Per group, pass^k by the product metrics.summarize takes for one task (the same floats,
    term by term); NaN where fewer than k trials were scored."""
    prod = np.ones(len(n))
    safe = np.maximum(n, k).astype(np.float64)  # masked below: no division by zero
    for j in range(k):
        prod = np.where(c - j <= 0, 0.0, prod * ((c - j) / (safe - j)))
    return np.where(n >= k, prod, np.nan)


def _primary_value(n: np.ndarray, c: np.ndarray, p: Primary) -> np.ndarray:
    """Per group, the primary metric as metrics.summarize computes it for one task (the same
    floats); NaN where fewer than k (or no) trials were scored."""
    if p.metric == "mean":
        return np.where(n >= 1, c / np.maximum(n, 1), np.nan)
    if p.metric == "pass^k":
        return _pass_hat(n, c, p.kk)
    return 1.0 - _pass_hat(n, n - c, p.kk)  # pass@k: NaN stays NaN


def heatmap(
    records: Records, ks: Sequence[int], primary: str = DEFAULT_PRIMARY
) -> dict[tuple[str, str], float | None]:
    """(scenario, cell) -> change in the primary metric against clean on that scenario.

    What ``by_scenario_cell`` would give (each pair's cell summary against clean's on the same
    task), counted for all pairs at once: a journal of 100k tasks has 300k pairs."""
    g = as_group(records)
    if not len(g):
        return {}
    p = parse_primary(primary)
    t = g.t
    cells = len(t.vocab["cell"]) + 1
    key = (g["scenario"].astype(np.int64) + 1) * cells + g["cell"] + 1
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    st = g["status"]

    def per(weights: np.ndarray) -> np.ndarray:
        return np.bincount(inverse, weights=weights, minlength=len(uniq)).astype(np.int64)

    n, c = per(st != 2), per(st == 0)
    landed = (per(~_perturbed(g)) > 0) | (per(g["delivered"] > 0) > 0)
    value = np.where(landed, _primary_value(n, c, p), np.nan)
    scenario, cell = uniq // cells - 1, uniq % cells - 1
    clean = t.code("cell", CLEAN)
    # Clean's value on each pair's scenario, where the scenario ran clean.
    clean_value = np.full(len(t.vocab["scenario"]), np.nan)
    has_clean = np.zeros(len(t.vocab["scenario"]), bool)
    mine = cell == clean
    clean_value[scenario[mine]] = _primary_value(n[mine], c[mine], p)
    has_clean[scenario[mine]] = True
    diff = value - clean_value[scenario]
    names, cell_names = t.vocab["scenario"], t.vocab["cell"]
    out: dict[tuple[str, str], float | None] = {}
    for i in order.tolist():
        s = int(scenario[i])
        d = float(diff[i])
        out[(names[s], cell_names[int(cell[i])])] = None if not has_clean[s] or d != d else d
    return out
