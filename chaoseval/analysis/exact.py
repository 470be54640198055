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
    ns = [np.asarray(n, np.int64) for n, _ in arms]
    cs = [np.asarray(c, np.int64) for _, c in arms]
    sizes = [len(n) for n in ns]
    tasks = max(sizes, default=0)
    if not tasks:
        return [np.zeros(0, np.int64) for _ in arms], 1
    n_all, c_all = np.concatenate(ns), np.concatenate(cs)
    # Few distinct (n, c) pairs however many tasks and arms: each value is computed once.
    key = n_all * (int(c_all.max()) + 1) + c_all
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    values = [exact_value(int(n_all[i]), int(c_all[i]), metric, k) for i in first.tolist()]
    den = math.lcm(*{v.denominator for v in values})
    small = 4 * den * tasks < 2**62
    scaled = [v.numerator * (den // v.denominator) for v in values]
    table = np.array(scaled, dtype=np.int64 if small else object)
    flat = table[inverse.ravel()]
    bounds = np.cumsum([0, *sizes])
    return [flat[bounds[i] : bounds[i + 1]] for i in range(len(arms))], den
