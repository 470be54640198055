"""Print benchmark figures (`make bench`). Figures only; nothing here asserts a timing."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Runs as a script (`python benchmarks/run.py`): make the repo importable without an install.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_bootstrap import (
    best_of,
    make_workload,
    naive_numpy_loop,
    naive_pure_python,
    run_vectorised,
    vectorised_one,
)
from bench_browser import main as browser_trials
from bench_model_channel import main as model_channel
from bench_report import main as report_cost
from bench_run import main as run_cost
from bench_sandbox import main as sandbox_cost
from bench_wire import main as wire_overhead
from calibration_sim import main as verdict_calibration
from coverage_sim import main as interval_coverage

FULL_RESAMPLES = 10_000
SMALL_RESAMPLES = 200
TARGET_SECONDS = 2.0


def _row(label: str, seconds: float, baseline: float | None = None) -> str:
    ratio = f"  (vectorised is {seconds / baseline:.1f}x faster)" if baseline else ""
    return f"    {label:<48}{seconds * 1e3:9.2f} ms{ratio}"


def main() -> None:
    w = make_workload(tasks=1_000, trials=20, perturbations=10, k=5)
    arms = len(w.perturbed)
    print(
        f"paired task-level bootstrap: {w.tasks} tasks x {w.trials} trials, pass^{w.k}, "
        f"{arms} perturbed arms vs clean, {os.cpu_count()} CPUs"
    )

    full = best_of(lambda: run_vectorised(w, FULL_RESAMPLES), repeat=3)
    verdict = "within" if full < TARGET_SECONDS else "OVER"
    print(
        f"  vectorised, {FULL_RESAMPLES:,} resamples x {arms} comparisons: {full:.3f} s "
        f"({verdict} the {TARGET_SECONDS:.0f} s target; best of 3)"
    )

    a, b = w.perturbed[0], w.clean
    print(f"  side by side, one comparison, {SMALL_RESAMPLES} resamples:")
    vec = best_of(lambda: vectorised_one(a, b, SMALL_RESAMPLES), repeat=5)
    loop = best_of(lambda: naive_numpy_loop(a, b, SMALL_RESAMPLES), repeat=3)
    pure = best_of(lambda: naive_pure_python(a.tolist(), b.tolist(), SMALL_RESAMPLES), repeat=1)
    print(_row("vectorised (chaoseval.analysis.inference.paired_compare)", vec))
    print(_row("naive loop per resample, numpy inside", loop, vec))
    print(_row("naive loop per resample, pure Python", pure, vec))

    print(f"  side by side, one comparison, {FULL_RESAMPLES:,} resamples:")
    vec_full = best_of(lambda: vectorised_one(a, b, FULL_RESAMPLES), repeat=3)
    loop_full = best_of(lambda: naive_numpy_loop(a, b, FULL_RESAMPLES), repeat=1)
    print(_row("vectorised (chaoseval.analysis.inference.paired_compare)", vec_full))
    print(_row("naive loop per resample, numpy inside", loop_full, vec_full))
    model_channel()
    wire_overhead()
    browser_trials()
    interval_coverage()
    verdict_calibration()
    run_cost()
    report_cost()
    sandbox_cost()


if __name__ == "__main__":
    main()
