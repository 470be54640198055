"""Per-task metric values as integers over one common denominator, from the integer counts.

Every per-task metric is a ratio of integers: ``mean = c / n``, ``pass^k = C(c, k) / C(n, k)``,
``pass@k = (C(n, k) - C(n - c, k)) / C(n, k)``. Written over one common denominator ``D`` (the
least common multiple of the arms' reduced denominators), a difference of two metrics, or of two
drops, is a difference of integers: a difference that is zero in exact arithmetic is the integer
0, never +-5.6e-17 from float rounding, and the paired tests decide on integers (no tolerance).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

__all__ = ["exact_value", "exact_values"]


def exact_value(n: int, c: int, metric: str, k: int) -> Fraction:
    """One task's ``metric`` from ``n`` scored trials and ``c`` successes, exactly."""
    if metric == "mean":
        return Fraction(c, n)
    total = math.comb(n, k)
    if metric == "pass^k":
        return Fraction(math.comb(c, k), total)
    return Fraction(total - math.comb(n - c, k), total)  # pass@k


def exact_values(
    arms: Sequence[tuple[np.ndarray, np.ndarray]], metric: str, k: int
) -> tuple[list[np.ndarray], int]:
    """Each arm's per-task ``metric`` (arms of aligned ``(n, c)`` count arrays, every ``n >= k``)
    as integer numerators over one common denominator ``D``: ``(numerators per arm, D)``.

    int64 when every sum the analysis takes (differences of up to four arms over all tasks)
    fits; Python integers otherwise, so nothing ever overflows.
    """
    tables: list[tuple[list[Fraction], np.ndarray]] = []
    dens: set[int] = {1}
    tasks = 0
    for n, c in arms:
        pairs = np.stack([np.asarray(n, np.int64), np.asarray(c, np.int64)], axis=1)
        tasks = max(tasks, len(pairs))
        if not len(pairs):
            tables.append(([], np.zeros(0, np.int64)))
            continue
        # Few distinct (n, c) pairs however many tasks: each value is computed once.
        uniq, inverse = np.unique(pairs, axis=0, return_inverse=True)
        values = [exact_value(int(nn), int(cc), metric, k) for nn, cc in uniq]
        dens.update(v.denominator for v in values)
        tables.append((values, inverse.ravel()))
    den = math.lcm(*dens)
    small = 4 * den * max(tasks, 1) < 2**62
    out = []
    for values, inverse in tables:
        scaled = [v.numerator * (den // v.denominator) for v in values]
        table = np.array(scaled, dtype=np.int64 if small else object)
        out.append(table[inverse] if len(values) else np.zeros(0, np.int64))
    return out, den
