"""A trial re-run by ``--resume`` has two lines in a journal: its rows merged after reading.

``t`` is a :class:`chaoseval.store.columns.Trials` (not imported: columns imports this).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np

from chaoseval.store.conform import line_at
from chaoseval.store.journal import repeated_trial
from chaoseval.store.lite import STATUS

__all__ = ["merge_reruns"]


def _runs(t: Any, odd: set[int]) -> dict[int, list[int]]:
    """Rows with the same scenario, cell and index (and canonical ids), by their first row."""
    canonical = np.array([r for r in range(len(t)) if r not in odd], dtype=np.int64) if odd \
        else np.arange(len(t))  # fmt: skip
    sc, ce, ix = (t.col[c][canonical] for c in ("scenario", "cell", "index"))
    order = np.lexsort((canonical, ix, ce, sc))  # equal keys: rows in journal order
    same = (np.diff(sc[order]) == 0) & (np.diff(ce[order]) == 0) & (np.diff(ix[order]) == 0)
    groups: dict[int, list[int]] = {}
    first, previous = -1, -2
    for i in np.flatnonzero(same).tolist():
        a, b = int(canonical[order[i]]), int(canonical[order[i + 1]])
        if i != previous + 1:
            first = a
            groups[first] = [a]
        groups[first].append(b)
        previous = i
    return groups


def _only_reruns(t: Any, groups: dict[int, list[int]]) -> None:
    """A trial has several rows only as ``--resume`` writes them: every row but the last is
    a not-evaluable attempt it ran again. Anything else (a duplicated line, a flipped
    status) is a JournalError naming both lines: counting either would be a guess."""
    status = t.col["status"]
    for rows in groups.values():
        for earlier, later in pairwise(rows):
            if int(status[earlier]) != STATUS["not_evaluable"]:
                raise repeated_trial(
                    t.path, t.trial_id(earlier), line_at(t.path, int(t.offsets[earlier])),
                    line_at(t.path, int(t.offsets[later])),
                )  # fmt: skip


def merge_reruns(t: Any) -> bool:
    """Rows of the same trial merged: the first row's place, the last row's values (as
    read_journal's dict keeps them). False when every trial has one row."""
    odd = set(t.odd_ids)
    groups = _runs(t, odd)
    by_odd: dict[str, list[int]] = {}
    for row in sorted(odd):
        by_odd.setdefault(t.odd_ids[row], []).append(row)
    groups.update({rows[0]: rows for rows in by_odd.values() if len(rows) > 1})
    if not groups:
        return False
    _only_reruns(t, groups)
    keep = np.ones(len(t), bool)
    sides: list[dict[int, Any]] = [t.odd_ids, t.errors, t.vetoes, t.browser]
    for rows in groups.values():
        first, last = rows[0], rows[-1]
        for column in t.col.values():
            column[first] = column[last]
        t.offsets[first] = t.offsets[last]
        for side in sides:
            if last in side:
                side[first] = side[last]
            else:
                side.pop(first, None)
        keep[rows[1:]] = False
    new = np.cumsum(keep) - 1
    t.col = {name: column[keep] for name, column in t.col.items()}
    t.offsets = t.offsets[keep]
    for name in ("odd_ids", "errors", "vetoes", "browser"):
        side = getattr(t, name)
        setattr(t, name, {int(new[r]): v for r, v in side.items() if keep[r]})
    return True
