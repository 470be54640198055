"""pass^k as a function of k per cell, and the per-scenario change in pass^k (the heatmap)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from chaoseval.analysis.aggregate import (
    CLEAN,
    CellResult,
    Records,
    _perturbed,
    name_ranks,
    same_tasks,
    summary_of,
)
from chaoseval.analysis.counts import CountsByTask
from chaoseval.analysis.primary import DEFAULT_PRIMARY, Primary, parse_primary
from chaoseval.store.columns import Trials, as_group

__all__ = ["Curve", "Heatmap", "heatmap", "pass_hat_curve", "pass_hat_curves"]

Curve = dict[int, float | None]  # k -> pass^k


def pass_hat_curve(counts: Mapping[str, tuple[int, int]]) -> Curve | None:
    """pass^k for k = 1 .. the most scored trials of any task; None without a scored trial."""
    if isinstance(counts, CountsByTask):
        max_n = int(counts.n.max()) if len(counts) else 0
    else:
        max_n = max((n for n, _ in counts.values()), default=0)
    if max_n < 1:
        return None
    return dict(summary_of(counts, range(1, max_n + 1)).pass_hat)


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
            base = pass_hat_curve(same_tasks(clean.counts, c.counts))
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


class Heatmap(Mapping[tuple[str, str], float | None]):
    """(scenario, cell) -> change in the primary metric against clean on that scenario, in
    the order each pair first appears; None where undefined (no clean run on the scenario,
    too few scored trials). Held as arrays of codes and values, not a dict: a journal of 100k
    tasks has 400k pairs, ~60 MB as tuples of names and floats."""

    def __init__(
        self, t: Trials | None, scenario: np.ndarray, cell: np.ndarray, value: np.ndarray
    ) -> None:
        self._t = t
        self._scenario, self._cell, self._value = scenario, cell, value
        cells = len(t.vocab["cell"]) if t is not None else 0
        self._at = np.full((len(t.vocab["scenario"]) if t is not None else 0, cells), -1, np.int64)
        self._at[scenario, cell] = np.arange(len(scenario))

    def __len__(self) -> int:
        return len(self._scenario)

    @property
    def trials(self) -> Trials | None:
        """The journal's columns whose codes the pairs hold (their names: ``trials.vocab``);
        None for a heatmap of records in memory with no pair."""
        return self._t

    def _name(self, i: int) -> tuple[str, str]:
        assert self._t is not None  # pairs exist only with their journal
        vocab = self._t.vocab
        return vocab["scenario"][int(self._scenario[i])], vocab["cell"][int(self._cell[i])]

    def _of(self, i: int) -> float | None:
        v = float(self._value[i])
        return None if v != v else v

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return (self._name(i) for i in range(len(self)))

    def __getitem__(self, key: tuple[str, str]) -> float | None:
        i = -1
        if self._t is not None:
            s, c = self._t.code("scenario", key[0]), self._t.code("cell", key[1])
            i = int(self._at[s, c]) if s >= 0 and c >= 0 else -1
        if i < 0:
            raise KeyError(key)
        return self._of(i)

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # type: ignore[index]
        except (KeyError, TypeError, IndexError):
            return False
        return True

    def sorted_codes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pairs' scenario and cell codes and their values (NaN: None), by scenario
        name, then cell name."""
        if not len(self):
            none = np.zeros(0, np.int64)
            return none, none, np.zeros(0)
        assert self._t is not None
        rank = {c: name_ranks(self._t.vocab[c]) for c in ("scenario", "cell")}
        order = np.lexsort((rank["cell"][self._cell], rank["scenario"][self._scenario]))
        return self._scenario[order], self._cell[order], self._value[order]

    def sorted_items(self) -> Iterator[tuple[tuple[str, str], float | None]]:
        """The pairs and their values by scenario name, then cell name (as ``sorted(items())``
        gives them, without a list of them all)."""
        if not len(self):
            return
        assert self._t is not None
        rank = {c: name_ranks(self._t.vocab[c]) for c in ("scenario", "cell")}
        order = np.lexsort((rank["cell"][self._cell], rank["scenario"][self._scenario]))
        for i in order.tolist():
            yield self._name(i), self._of(i)


def heatmap(records: Records, ks: Sequence[int], primary: str = DEFAULT_PRIMARY) -> Heatmap:
    """(scenario, cell) -> change in the primary metric against clean on that scenario.

    What ``by_scenario_cell`` would give (each pair's cell summary against clean's on the same
    task), counted for all pairs at once: a journal of 100k tasks has 300k pairs."""
    g = as_group(records)
    none = np.zeros(0, np.int64)
    if not len(g):
        return Heatmap(None, none, none, np.zeros(0))
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
    # Clean's value on each pair's scenario, where the scenario ran clean (NaN elsewhere:
    # no clean value, and a pair without one has none to change from).
    clean_value = np.full(len(t.vocab["scenario"]), np.nan)
    mine = cell == clean
    clean_value[scenario[mine]] = _primary_value(n[mine], c[mine], p)
    diff = value - clean_value[scenario]
    return Heatmap(t, scenario[order], cell[order], diff[order])
