"""Every (task, cell) pair's result, counted for all pairs at once (the JSON report's
``cells``).

What :func:`chaoseval.analysis.aggregate.by_scenario_cell` gives pair by pair (a
``CellResult`` of one task, against clean on the same task), as the JSON report writes it, but
computed over the columns in one pass of numpy group sums: a journal of 100k tasks has 300k
pairs, and a ``CellResult`` each cost minutes and gigabytes. The floats are the ones
``metrics.summarize`` gives for one task (the same products, term by term), so the report is
byte for byte what the per-pair path wrote; ``tests/analysis/test_pairs.py`` holds the two
together. The streamed report writes these objects as text from the same numbers
(analysis.pairtext), not the objects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chaoseval.analysis.aggregate import CLEAN, _perturbed, name_ranks
from chaoseval.store.columns import Group, Trials

__all__ = ["CHUNK", "Chunk", "chunks", "pair_json", "texts"]


def _prefix(top: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """Per pair, ``metrics._all_succeed(n, top, k)``: prod_{j<k} (top - j) / (n - j), zero
    from the first j with top - j <= 0 on (only read where n >= k)."""
    prod = np.ones(len(n))
    safe = np.maximum(n, k).astype(np.float64)  # pairs with n < k are not read: no 0 division
    for j in range(k):
        prod = np.where((top - j <= 0) | (prod == 0.0), 0.0, prod * ((top - j) / (safe - j)))
    return prod


def _values(n: np.ndarray, c: np.ndarray, ks: Sequence[int]) -> dict[str, _Values]:
    """Per pair, its summary's mean, pass@k and pass^k, and where each is defined."""
    scored = n >= 1
    mean = np.where(scored, c / np.maximum(n, 1), np.nan)
    out = {"mean": _Values(mean, scored)}
    for k in ks:
        ok = n >= k
        out[f"at{k}"] = _Values(1.0 - _prefix(n - c, n, k), ok)
        out[f"hat{k}"] = _Values(_prefix(c, n, k), ok)
    return out


class _Values:
    """Per pair, a value or None where undefined, taken as lists a chunk of pairs at a time
    (as lists, the 7 values of 300k pairs were ~70 MB of Python floats; read one by one, a
    numpy scalar each, most of the time the report took to write)."""

    def __init__(self, values: np.ndarray, defined: np.ndarray) -> None:
        self.values, self.defined = values, defined

    def at(self, pairs: np.ndarray) -> list[float | None]:
        """The values of ``pairs``."""
        return _listed(self.values[pairs], self.defined[pairs])

    def change(self, pairs: np.ndarray, base: np.ndarray) -> list[float | None]:
        """Each pair's value minus the value of its pair in ``base`` (-1: none): a float
        difference, the same in numpy as in Python."""
        at = np.maximum(base, 0)
        defined = self.defined[pairs] & (base >= 0) & self.defined[at]
        return _listed(self.values[pairs] - self.values[at], defined)

    def texts(self, pairs: np.ndarray) -> list[str]:
        """:meth:`at` as json.dumps writes each value."""
        return texts(self.values[pairs], self.defined[pairs])

    def change_texts(self, pairs: np.ndarray, base: np.ndarray) -> list[str]:
        """:meth:`change` as json.dumps writes each value."""
        at = np.maximum(base, 0)
        defined = self.defined[pairs] & (base >= 0) & self.defined[at]
        return texts(self.values[pairs] - self.values[at], defined)


def _listed(values: np.ndarray, defined: np.ndarray) -> list[float | None]:
    return [v if d else None for v, d in zip(values.tolist(), defined.tolist(), strict=True)]


def texts(values: np.ndarray, defined: np.ndarray) -> list[str]:
    """Each value as json.dumps writes it (a float's repr; NaN, Infinity), "null" where
    undefined. Each distinct value written once: a pair's values are functions of its counts,
    which few pairs do not share."""
    if np.any(np.signbit(values) & (values == 0)):  # -0.0: np.unique takes it for 0.0
        distinct, inverse = values, np.arange(len(values))
    else:
        distinct, inverse = np.unique(values, return_inverse=True)
    written = [_SPECIAL.get(r, r) for r in map(float.__repr__, distinct.tolist())]
    out = list(map(written.__getitem__, inverse.tolist()))
    for i in np.flatnonzero(~defined).tolist():
        out[i] = "null"
    return out


_SPECIAL = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


class _Pairs:
    """The pairs of a journal: their sums over their rows, in (task, cell) name order."""

    def __init__(self, t: Trials) -> None:
        self.t = t
        cells = len(t.vocab["cell"]) + 1
        key = (t.col["scenario"].astype(np.int64) + 1) * cells + t.col["cell"] + 1
        uniq, self.inverse = np.unique(key, return_inverse=True)
        self.scenario, self.cell = uniq // cells - 1, uniq % cells - 1
        st = t.col["status"]
        rows = np.ones(len(t), bool)
        self.trials = self.sum(rows)
        self.n, self.c, self.ne = self.sum(st != 2), self.sum(st == 0), self.sum(st == 2)
        self.injected, self.delivered = self.sum(t.col["faults"]), self.sum(t.col["delivered"])
        perturbed = self.sum(_perturbed_rows(t))
        self.perturbed = perturbed > 0
        # not_landed: every trial perturbed and no fault delivered in any of them.
        self.missed = (perturbed == self.trials) & (self.sum(t.col["delivered"] > 0) == 0)
        self.safety, self.hallucination = (
            self.sum(t.col["safety"]),
            self.sum(t.col["hallucination"]),
        )
        # In (task, cell) name order: by each name's rank among its column's names.
        rank = {c: name_ranks(t.vocab[c]) for c in ("scenario", "cell")}
        self.order = np.lexsort((rank["cell"][self.cell], rank["scenario"][self.scenario]))

    def name(self, i: int) -> tuple[str, str]:
        t = self.t
        return t.vocab["scenario"][int(self.scenario[i])], t.vocab["cell"][int(self.cell[i])]

    def sum(self, weights: np.ndarray) -> np.ndarray:
        out: np.ndarray = np.bincount(
            self.inverse, weights=weights, minlength=len(self.scenario)
        ).astype(np.int64)
        return out

    def root_causes(self) -> _Causes:
        """Per pair with failed trials on a task its faults reached: root cause -> trials."""
        t = self.t
        failed = (t.col["status"] == 1) & ~self.missed[self.inverse] & (t.col["root_cause"] >= 0)
        names = t.vocab["root_cause"]
        width = max(len(names), 1)
        # Numbered by name (each pair's causes come in name order); unnamed ones left out.
        rank = name_ranks(names)
        named = np.array([bool(name) for name in names] or [False])
        failed[failed] = named[t.col["root_cause"][failed]]
        key, counts = np.unique(
            self.inverse[failed].astype(np.int64) * width + rank[t.col["root_cause"][failed]],
            return_counts=True,
        )
        return _Causes(sorted(names), key, counts, width, len(self.scenario))


class _Causes:
    """Each pair's root causes from sorted (pair, cause) keys and their counts, read one pair
    at a time: as a dict per pair, 300k pairs held ~65 MB while the report was written."""

    def __init__(
        self, names: list[str], key: np.ndarray, counts: np.ndarray, width: int, pairs: int
    ) -> None:
        self.names, self.counts = names, counts
        self.cause = key % width
        pair = key // width
        self.start = np.searchsorted(pair, np.arange(pairs), side="left")
        self.end = np.searchsorted(pair, np.arange(pairs), side="right")

    def of(self, i: int) -> dict[str, int]:
        """Pair ``i``'s causes by name."""
        a, b = int(self.start[i]), int(self.end[i])
        names = self.names
        return {
            names[c]: n
            for c, n in zip(self.cause[a:b].tolist(), self.counts[a:b].tolist(), strict=True)
        }

    def texts(self, pairs: np.ndarray, obj: Callable[[list[str]], str]) -> list[str]:
        """Each pair's causes as ``obj`` writes an object of their entries."""
        lo, hi = self.start[pairs], self.end[pairs]
        sizes = hi - lo
        ends = np.cumsum(sizes)
        total = int(ends[-1]) if len(ends) else 0
        entries = np.repeat(lo - (ends - sizes), sizes) + np.arange(total)
        keys = [json.dumps(name) + ": " for name in self.names]
        found = zip(self.cause[entries].tolist(), self.counts[entries].tolist(), strict=True)
        text = [keys[c] + str(n) for c, n in found]
        out = []
        at = 0
        for size in sizes.tolist():
            out.append(obj(text[at : at + size]) if size else "{}")
            at += size
        return out


def _perturbed_rows(t: Trials) -> np.ndarray:
    return _perturbed(Group.all(t))


CHUNK = 4096  # pairs whose numbers are taken out of the arrays at once


def pair_json(t: Trials, ks: Sequence[int]) -> Iterator[dict[str, Any]]:
    """The JSON report's ``cells``: one object per (task, cell), sorted by task then cell."""
    for chunk in chunks(t, ks):
        yield from _chunk(chunk)


@dataclass
class Chunk:
    """Some pairs (indices into ``p``'s), in (task, cell) name order, and what their objects
    are written from."""

    p: _Pairs
    pairs: np.ndarray
    clean: list[bool]  # whether the pair's task ran clean
    same: np.ndarray  # clean's pair on the same tasks (-1: none to change from)
    ks: list[int]
    values: dict[str, _Values]  # "mean", f"at{k}", f"hat{k}"
    n: np.ndarray  # per pair (all pairs), its scored trials; 0 where missed
    causes: _Causes

    def rows(self) -> Any:
        """Per pair: its index, task and cell codes, missed, n, trials, not evaluable,
        hallucination and safety vetoes, faults injected and delivered, perturbed, whether
        its task ran clean."""
        p, pairs = self.p, self.pairs
        columns = (
            p.scenario, p.cell, p.missed, self.n, p.trials, p.ne, p.hallucination, p.safety,
            p.injected, p.delivered, p.perturbed,
        )  # fmt: skip
        lists = (col[pairs].tolist() for col in columns)
        return zip(pairs.tolist(), *lists, self.clean, strict=True)


def chunks(t: Trials, ks: Sequence[int]) -> Iterator[Chunk]:
    """The pairs in (task, cell) name order, :data:`CHUNK` at a time."""
    if not len(t):
        return
    ks = list(dict.fromkeys(ks))
    p = _Pairs(t)
    # A missed pair is summarised over no task; its n and c count nothing.
    n, c = np.where(p.missed, 0, p.n), np.where(p.missed, 0, p.c)
    v = _values(n, c, ks)
    clean_of = _clean_pairs(p)
    causes = p.root_causes()
    for start in range(0, len(p.order), CHUNK):
        pairs = p.order[start : start + CHUNK]
        j = clean_of[pairs]
        # Clean over the same tasks: clean's own pair where this pair counts a task, else none.
        same = np.where((j >= 0) & ~p.missed[pairs] & ~p.missed[np.maximum(j, 0)], j, -1)
        yield Chunk(p, pairs, (j >= 0).tolist(), same, ks, v, n, causes)


def _chunk(ch: Chunk) -> Iterator[dict[str, Any]]:
    """The objects of the chunk's pairs."""
    pairs, ks, causes = ch.pairs, ch.ks, ch.causes
    v = {name: (x.at(pairs), x.change(pairs, ch.same)) for name, x in ch.values.items()}
    vocab = ch.p.t.vocab
    mean, mean_change = v["mean"]
    at = [(str(k), *v[f"at{k}"]) for k in ks]
    hat = [(str(k), *v[f"hat{k}"]) for k in ks]
    tasks, cells = vocab["scenario"], vocab["cell"]
    for x, row in enumerate(ch.rows()):
        i, sc, cell, missed, n, trials, ne, hall, safety, injected, delivered, perturbed, clean = (
            row
        )
        task = tasks[sc]
        counted = not missed
        scored = counted and n >= 1

        vetoes = {}
        if counted:
            for kind, sums in (("hallucination", hall), ("safety", safety)):
                if sums:
                    vetoes[kind] = sums
        yield {
            "scenario": task,
            "name": cells[cell],
            "tasks": int(scored),
            "trials": trials,
            "scored": n if scored else 0,
            "not_evaluable": ne,
            "mean": mean[x],
            "pass_at": {k: own[x] for k, own, _ in at},
            "pass_hat": {k: own[x] for k, own, _ in hat},
            "excluded": {str(k): [task] for k in ks if scored and n < k},
            "unscored": [task] if counted and not scored else [],
            "delta_mean": mean_change[x] if clean else None,
            "delta_pass_at": {k: change[x] for k, _, change in at} if clean else {},
            "delta_pass_hat": {k: change[x] for k, _, change in hat} if clean else {},
            "root_causes": causes.of(i),
            "vetoes": vetoes,
            "faults_injected": injected,
            "faults_delivered": delivered,
            "did_not_land": perturbed and not delivered,
            "not_landed": [task] if missed else [],
        }


def _clean_pairs(p: _Pairs) -> np.ndarray:
    """Per pair, the index of clean's pair on the same task (-1: the task has none)."""
    clean = p.t.code("cell", CLEAN)
    of_task = np.full(len(p.t.vocab["scenario"]) + 1, -1, np.int64)
    mine = np.flatnonzero(p.cell == clean)
    of_task[p.scenario[mine]] = mine
    out: np.ndarray = of_task[p.scenario]
    return out
