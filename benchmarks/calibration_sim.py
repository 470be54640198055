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

from chaoseval.analysis.calibration import floor_case, null_case, simulate


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


if __name__ == "__main__":
    main()
