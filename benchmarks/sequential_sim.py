"""run --sequential's figures (issue 44): calibration under the null, and efficiency against a
fixed n = 20 run on the bundled suite.

Calibration: identical agents (each perturbed cell has clean's per-task success probabilities),
decided after every round by the sequential replay (chaoseval.analysis.sequential, the code the
runner uses): the family-wise rate of any false claim (broken or improved) over RUNS runs, with
its Clopper-Pearson upper bound; beside it the same data through the fixed-n exact stratified
test (Holm across the cells) looked at after every round and stopped at its first claim.

Efficiency (``--efficiency``; minutes of trials): the naive and resilient reference agents on
the bundled suite with the demo's catalogue, sequentially and at a fixed n = 20 (judged with the
same margin): the cells whose statuses agree, and the sequential run's trials as a share of the
fixed run's.

    python benchmarks/sequential_sim.py [--runs 1000] [--efficiency]
"""

from __future__ import annotations

import argparse
import itertools
import math
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
from scipy.stats import beta  # type: ignore[import-untyped]

from chaoseval.analysis.sequential import METHOD_WORDS, Outcomes, Progress, replay
from chaoseval.analysis.stats import holm
from chaoseval.analysis.strata import stratified_exact
from chaoseval.model.records import CLEAN, SequentialDesign

TASKS, CELLS, ALPHA = 20, 6, 0.05
AGENTS = ("naive", "resilient")
DESIGN = SequentialDesign(first=2, round_size=2, max_trials=20)
CATALOGUE = [
    "latency",
    "timeout",
    "malformed",
    "layout_shift",
    "modal",
    "sampling",
    "stale_memory",
    "clock_skew",
    "slow_render",
    "viewport",
    "drift",
    "injection",
]


def _null_run(rng: np.random.Generator) -> tuple[Outcomes, list[str]]:
    """Every cell with clean's per-task probabilities, independent draws, every fault landed."""
    p = rng.beta(0.7, 0.4, TASKS)
    cells = [CLEAN, *(f"x{j}" for j in range(CELLS))]
    tasks = [f"t{i}" for i in range(TASKS)]
    n = DESIGN.max_trials
    rows = [
        (tasks[i], cell, j, int(rng.random() >= p[i]), 1)
        for cell in cells
        for i in range(TASKS)
        for j in range(n)
    ]
    return Outcomes.of(tasks, cells, n, rows), cells


def _peeked_fixed_claim(o: Outcomes, cells: list[str]) -> bool:
    """The fixed-n exact test (Holm over the cells, both directions) after every round."""
    for n in DESIGN.rounds():
        clean = o.status[CLEAN][:, :n]
        ps = []
        for cell in cells[1:]:
            x = o.status[cell][:, :n]
            tables = [
                (n, int((x[i] == 0).sum()), n, int((clean[i] == 0).sum())) for i in range(TASKS)
            ]
            ps += [stratified_exact(tables, "less"), stratified_exact(tables, "greater")]
        if min(holm(ps)) <= ALPHA:
            return True
    return False


def _trials_run(p: Progress) -> float:
    """Trials per task the run's cells ran, summed over the cells: every index below each
    cell's count, or with allocation the ones its plan ran."""
    if p.allocation is None:
        return sum(d.trials for d in p.decisions.values())
    plans = p.allocation
    return sum(
        float(plans.of(c).include[:, : d.trials].sum()) / TASKS for c, d in p.decisions.items()
    )


def calibration(runs: int, allocate: float | None, seed: int = 44) -> None:
    rng = np.random.default_rng(seed)
    sequential = fixed = 0
    trials = 0.0
    start = time.monotonic()
    for r in range(runs):
        o, cells = _null_run(rng)
        design = DESIGN.model_copy(update={"settled_rate": allocate, "allocation_seed": r})
        p = replay(o, design, cells)
        sequential += any(d.status in ("broken", "improved") for d in p.decisions.values())
        fixed += _peeked_fixed_claim(o, cells)
        trials += _trials_run(p)
    how = "every task every round" if allocate is None else f"allocation {allocate:g}"
    print(
        f"calibration under the null: {runs} runs, {TASKS} tasks, {CELLS} cells, rounds "
        f"{DESIGN.rounds()} ({how}; decided after every round; "
        f"{time.monotonic() - start:.0f} s)"
    )
    label = f"sequential ({METHOD_WORDS[DESIGN.method]})"
    for name, k in ((label, sequential), ("fixed-n peeked", fixed)):
        upper = beta.ppf(0.95, k + 1, runs - k) if k < runs else 1.0
        print(
            f"  {name:36s} family-wise false claims {k}/{runs} = {k / runs:.3f} "
            f"(95% upper bound {upper:.3f}; target <= {ALPHA})"
        )
    print(
        f"  sequential: {trials / (runs * CELLS):.1f} trials per task per cell on average "
        f"(cap {DESIGN.max_trials})"
    )


def _run(agent: str, journal: Path, seed: int, *args: str) -> None:
    cmd = [sys.executable, "-m", "chaoseval", "run", "--agent", agent, "--seed", str(seed)]
    cmd += ["--journal", str(journal), "--overwrite", "--no-progress", "--no-report"]
    for p in CATALOGUE:
        cmd += ["-p", p]
    # Its decisions are printed below beside the fixed run's: the run's own lines would bury them.
    subprocess.run([*cmd, *args], check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def _statuses(journal: Path) -> tuple[dict[str, str], int]:
    from chaoseval.analysis.build import analyze
    from chaoseval.store.columns import read_trials

    t = read_trials(journal)
    a = analyze(t, [1], n_resamples=2_000, references=False)
    word = {"degraded": "dropped", "broken": "dropped"}
    return {c: word.get(s.status, s.status) for c, s in a.statuses.items()}, len(t)


def _kind(fixed: str, seq: str) -> str:
    """How two statuses of one cell differ: a side undecided, or both decided otherwise."""
    if fixed == seq:
        return "same"
    if seq == "inconclusive":
        return "sequential undecided"
    if fixed == "inconclusive":
        return "fixed undecided"
    return "both decided, other words"


def _reach(journal: Path, cell: str) -> str:
    """For a cell the sequential run left undecided: the most a bettor with the best constant
    stake, chosen in hindsight, reaches on its trials per claim, against 1/alpha for that claim
    alone (no other claim of the run, no peeking): below it, no betting e-process decides it."""
    from chaoseval.analysis.sequential import hindsight_log_wealth, journal_progress
    from chaoseval.store.columns import read_trials

    p, o = journal_progress(read_trials(journal))
    best = hindsight_log_wealth(p, o, cell)
    bar = math.log(1 / p.design.alpha)
    return ", ".join(f"{k} e {math.exp(v):.3g}" for k, v in best.items()) + (
        f" at best in hindsight on {p.decisions[cell].trials} trials a task (1/alpha = "
        f"{math.exp(bar):g})"
    )


def _fixed_agreement(fixed: dict[tuple[int, str], dict[str, str]], seeds: list[int]) -> None:
    """Two fixed n = 20 runs of other seeds: how often the reference agrees with itself."""
    for s1, s2 in itertools.pairwise(seeds):
        pairs = [(fixed[s1, a][c], fixed[s2, a][c]) for a in AGENTS for c in fixed[s1, a]]
        same = sum(x == y for x, y in pairs)
        print(f"  fixed n=20 seed {s1} against fixed n=20 seed {s2}: {same} of {len(pairs)} agree")


def efficiency(seeds: list[int], cap: int, keep: Path | None, allocate: float | None) -> None:
    agree = cells = seq_trials = fixed_trials = 0
    kinds: Counter[str] = Counter()
    fixed_words: dict[tuple[int, str], dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        where = keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        for seed, agent in ((s, a) for s in seeds for a in AGENTS):
            fixed, seq = where / f"{agent}-{seed}-20.jsonl", where / f"{agent}-{seed}-seq.jsonl"
            _run(agent, fixed, seed, "-n", "20")
            more = [] if allocate is None else ["--allocate", str(allocate)]
            more += ["--max-trials-per-task", str(cap)]
            _run(agent, seq, seed, "--sequential", "-n", "2", *more)
            want, n_fixed = _statuses(fixed)
            got, n_seq = _statuses(seq)
            fixed_words[seed, agent] = want
            for c in want:
                kind = _kind(want[c], got[c])
                kinds[kind] += 1
                agree += kind == "same"
                note = "" if kind == "same" else f"   <- differs ({kind})"
                if kind == "sequential undecided":
                    note += f": {_reach(seq, c)}"
                print(
                    f"  seed {seed} {agent:9s} {c:14s} fixed n=20 {want[c]:13s} "
                    f"sequential {got[c]}{note}"
                )
            cells += len(want)
            seq_trials += n_seq
            fixed_trials += n_fixed
    print(
        f"efficiency (seeds {', '.join(map(str, seeds))}; sequential cap {cap}): statuses agree "
        f"on {agree} of {cells} cells; the sequential runs used {seq_trials} trials, "
        f"{seq_trials / fixed_trials:.2f} of the fixed runs' {fixed_trials}"
    )
    print("  " + "; ".join(f"{k}: {n}" for k, n in kinds.most_common()))
    _fixed_agreement(fixed_words, seeds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--efficiency", action="store_true", help="also the bundled-suite runs")
    ap.add_argument("--seeds", default="7", help="run seeds of the efficiency runs: 7,8,9")
    ap.add_argument("--cap", type=int, default=20, help="the sequential runs' cap per task")
    ap.add_argument("--keep", type=Path, help="write the efficiency runs' journals here")
    ap.add_argument("--no-calibration", action="store_true", help="the efficiency runs only")
    ap.add_argument(
        "--allocate", type=float, help="within-cell allocation: a settled task's trial share"
    )
    args = ap.parse_args()
    if not args.no_calibration:
        calibration(args.runs, args.allocate)
    if args.efficiency:
        seeds = [int(x) for x in args.seeds.split(",")]
        efficiency(seeds, args.cap, args.keep, args.allocate)


if __name__ == "__main__":
    main()
