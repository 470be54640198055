"""Verdict-level calibration, the long version of tests/analysis/test_calibration.py.

Journals' counts are drawn from known per-task success probabilities (5 trials a task, a
U-shaped spread of difficulties, three perturbed cells taking a random share) and judged by
compare's own verdict code (chaoseval.analysis.compare.compare_cells). Under the null (two
identical harnesses) the share of runs with any false "better" or "more resilient" claim
should stay at or below 0.05 within Monte Carlo error; in the floor case (A 1/5 -> 0/5,
B 5/5 -> 4/5 per trial) "A is more resilient" should never be said. Fixed seeds: the figures
reproduce.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scipy.stats import binomtest  # type: ignore[import-untyped]

from chaoseval.analysis.calibration import (
    POPULATIONS,
    equal_drops,
    false_drops,
    floor_case,
    null_case,
    simulate,
)

ISSUE_41_REPS = 1_000


def _cp(rate: float, reps: int, side: str) -> str:
    """The rate with its one-sided 95% Clopper-Pearson bound: the upper one for a rate that
    must stay low, the lower one for a coverage that must stay high."""
    ci = binomtest(round(rate * reps), reps).proportion_ci(0.90, method="exact")
    bound = ci.high if side == "upper" else ci.low
    return f"{rate:.3f} ({side} 95% bound {bound:.3f})"


def issue_41(reps: int = ISSUE_41_REPS) -> None:
    """The broken call's family-wise rate under the null, and "more resilient" under equal
    true drops (tests/analysis/test_calibration.py runs the short versions)."""
    print(f"statuses and the difference of drops (issue 41), {reps} runs each:")
    for tasks, trials in ((1, 3), (6, 3), (30, 5)):
        r = false_drops(tasks, reps, trials=trials, seed=tasks)
        print(
            f"    null, 3 cells, {tasks:>2} task(s) x {trials} trials: some cell broken or "
            f"degraded in {_cp(r, reps, 'upper')} of runs (target <= 0.05)"
        )
    for population in POPULATIONS:
        for tasks in (10, 30, 67):
            d = equal_drops(population, tasks, reps, seed=tasks)
            print(
                f"    equal drops, {population:<8}, {tasks:>2} tasks: 'more resilient' in "
                f"{_cp(d.claimed, reps, 'upper')} (target <= 0.05), interval covers 0 in "
                f"{_cp(d.covered, d.measured, 'lower')} of {d.measured} (target >= 0.93)"
            )


def main(reps: int = 400) -> None:
    print(
        f"verdict calibration through compare's verdicts, {reps} simulated comparisons each, "
        "3 perturbed cells, pass^1 primary with pass^2, pass^5 and the mean shown:"
    )
    start = time.perf_counter()
    for tasks in (10, 30):
        r = simulate(null_case, tasks, reps, seed=tasks)
        se = r.se(0.05)
        print(
            f"    null, {tasks:>2} tasks: any false 'better' {r.better['any']:.3f}, any false "
            f"'more resilient' {r.more_resilient['any']:.3f} (target <= 0.05; MC se {se:.3f})"
        )
    for primary in ("pass^1", "pass^5"):
        for tasks in (10, 30):
            r = simulate(floor_case, tasks, reps // 4, primary=primary, seed=tasks + 1)
            print(
                f"    floor case, primary {primary}, {tasks:>2} tasks: 'A more resilient' in "
                f"{r.more_resilient['A']:.3f} of runs (target 0), 'B more resilient' in "
                f"{r.more_resilient['B']:.3f}"
            )
    print(f"    ({time.perf_counter() - start:.1f} s)")
    start = time.perf_counter()
    issue_41()
    print(f"    ({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
