"""Reports on big journals (issues 12 and 23): ``report`` (json and html), ``compare``,
``summary``, ``gate``, ``diverge`` and ``sample`` at 100k records (``--records 1000000``, the
targets' scale) over 100, 10k and 100k tasks, wall time and peak memory, each printed with its
target and the load average; and the paired bootstrap those reports run (``bootstrap``).

The journals are copies of real records of the bundled agents (``journal``: whole trajectories
of a small ``resilient`` and ``naive`` run, renamed into as many tasks as asked), written once
into a cache and reused. ``compare`` and ``summary`` read the ``resilient`` journal against the
``naive`` one of the same tasks; the other commands the ``resilient`` one. Each command runs in
its own process under a time cap; its peak memory is its own VmHWM or its process tree's (the
readers it forks included), whichever is larger: the tree's peak is sampled every 50 ms and
summed by PSS, so the heap a forked reader shares with its parent counts once. Each figure is
printed with its CPU seconds and the load average (the wall time is the target's, the CPU time
what the command costs whatever else the machine runs) and with what it read: the journal's
lines, or the column cache an earlier read kept beside it (store.colcache). Every command runs
in turn from no cache: the first to read a journal reads its lines and keeps its cache for the
others. A new figure of a report command (issue 46's time to first paint of a run's page, say)
is one more row of ``_size``'s runs, or a part of ``_child`` measured the same way.

``--records`` and ``--tasks`` (or ``CHAOSEVAL_BENCH_RECORDS``, ``CHAOSEVAL_BENCH_TASKS``)
change the sizes; ``--commands sample`` (or ``gate,sample``: sample then reads gate's cache)
measures only the commands named; ``CHAOSEVAL_BENCH_CAP`` the seconds a command may take
(default 300); ``CHAOSEVAL_BENCH_COLD=1`` first measures ``report`` and ``compare`` with the
cache off as well; ``CHAOSEVAL_BENCH_CACHE`` the journals' cache (``~/.cache/chaoseval-bench``).
"""

from __future__ import annotations

import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TARGET_RECORDS = 1_000_000  # the scale the targets are for (issue 23)
RECORDS = int(os.environ.get("CHAOSEVAL_BENCH_RECORDS", 100_000))
TASKS = os.environ.get("CHAOSEVAL_BENCH_TASKS", "100,10000,100000")
WRITE_CAP = 600.0  # seconds to write one journal into the cache
# Seconds one command may take before it is stopped and reported as such.
PART_CAP = float(os.environ.get("CHAOSEVAL_BENCH_CAP", 300))
ONE = (60.0, 500)  # seconds and MB: a command that reads one journal (issue 23)
TWO = (120.0, 500)  # one that reads two


def _child(part: str, args: list[str]) -> None:
    sys.path[:0] = [str(ROOT), str(HERE)]
    started = time.perf_counter()
    if part == "write":
        path, n, fresh = journal(args[0], int(args[1]), int(args[2]))
        result: dict[str, Any] = {"path": str(path), "trials": n, "fresh": fresh,
                                  "bytes": path.stat().st_size}  # fmt: skip
    else:
        import click

        from chaoseval.cli.app import app

        with open(os.devnull, "w") as null, redirect_stdout(null), redirect_stderr(null):
            try:
                app([part, *args], standalone_mode=False)
            except click.exceptions.Exit:  # gate exits 1 on a broken rule: measured all the same
                pass
        result = {}
    result["seconds"] = time.perf_counter() - started
    # CPU seconds beside the wall time: on a machine shared by others the wall time mostly
    # measures the load, the CPU time what the command itself costs.
    # With the CPU of the processes it forked and joined (store.ranges: the readers of a
    # journal's byte ranges), which the wall time overlaps.
    ru = resource.getrusage(resource.RUSAGE_SELF)
    forked = resource.getrusage(resource.RUSAGE_CHILDREN)
    result["cpu"] = ru.ru_utime + ru.ru_stime + forked.ru_utime + forked.ru_stime
    from bench_run import peak_rss

    result["peak_rss"] = peak_rss()
    print(json.dumps(result))


def measure(part: str, *args: str, cap: float = PART_CAP) -> dict[str, Any] | None:
    """One part in a child process under ``cap``: its result and its process tree's peak."""
    from bench_run import measure as measure_part

    return measure_part(part, *args, script=__file__, cap=cap)


def _mb(n: float) -> str:
    return f"{n / 2**20:.0f} MB"


def _journal(agent: str, tasks: int, records: int) -> tuple[Path, int] | None:
    r = measure("write", agent, str(tasks), str(records), cap=WRITE_CAP)
    if r is None:
        return None
    how = f"written in {r['seconds']:.0f} s" if r["fresh"] else "cached"
    print(f"  {agent} journal: {r['trials']:,} trials over {tasks:,} tasks, "
          f"{r['bytes'] / 2**30:.2f} GB ({how}: {r['path']})")  # fmt: skip
    return Path(r["path"]), r["trials"]


def _line(what: str, r: dict[str, Any] | None, target: tuple[float, int], read: str) -> bool:
    if r is None:
        print(f"    {what:<34} no figure (see above)")
        return False
    seconds, mb = target
    # The command's memory is its whole tree's: a forked reader's own pages count too.
    peak = max(r["peak_rss"], r["tree_peak"])
    ok = r["seconds"] < seconds and peak < mb * 2**20
    print(
        f"    {what:<34}{r['seconds']:6.1f} s (cpu {r['cpu']:5.1f} s) {_mb(r['peak_rss']):>8} "
        f"(tree {_mb(r['tree_peak'])} PSS; {'meets' if ok else 'MISSES'} < {seconds:.0f} s and "
        f"< {mb} MB; read {read}; load {os.getloadavg()[0]:.1f})"
    )
    return ok


def _read(journals: list[str], no_cache: bool) -> str:
    """What a command is about to read: each journal's lines, or the column cache a read
    before kept beside it (store.colcache)."""
    from chaoseval.store.colcache import cache_file

    if no_cache:
        return "lines, cache off"
    kinds = ["cache" if cache_file(Path(j)).exists() else "lines" for j in journals]
    return "+".join(dict.fromkeys(kinds))


def _measure(args: tuple[str, ...], journals: list[str], no_cache: bool) -> tuple[Any, str]:
    read = _read(journals, no_cache)
    if no_cache:
        os.environ["CHAOSEVAL_COLUMN_CACHE"] = "0"
    try:
        return measure(*args), read
    finally:
        os.environ.pop("CHAOSEVAL_COLUMN_CACHE", None)


def _size(tasks: int, records: int, out: str, commands: list[str] | None) -> tuple[int, int]:
    # Only the journals the chosen commands read (compare and summary read the naive one too).
    naive = commands is None or bool({"compare", "summary"} & set(commands))
    a = _journal("resilient", tasks, records)
    b = _journal("naive", tasks, records) if naive else None
    if a is None or (naive and b is None):
        print("    a journal could not be written within the cap: nothing measured")
        return 0, 7
    ja, jb = str(a[0]), str(b[0]) if b is not None else ""
    from chaoseval.store.colcache import cache_file

    for j in filter(None, (ja, jb)):  # the first read of each journal below reads its lines
        cache_file(Path(j)).unlink(missing_ok=True)
    report = ("report", ja, "-f", "json", "-o", out)
    compare = ("compare", jb, ja, "-f", "json", "-o", out)
    # Every command in turn from no column cache: the first to read a journal reads its
    # lines (what any first command on a new journal costs) and keeps its cache, the others
    # read that. CHAOSEVAL_BENCH_COLD=1: report and compare also with the cache off first.
    cold = [
        ("report --format json", report, ONE, True),
        ("compare (naive vs resilient)", compare, TWO, True),
    ]
    runs = [
        *(cold if os.environ.get("CHAOSEVAL_BENCH_COLD") == "1" else []),
        ("report --format json", report, ONE, False),
        ("report --format html", ("report", ja, "-f", "html", "-o", out), ONE, False),
        ("compare (naive vs resilient)", compare, TWO, False),
        ("summary (naive, resilient)", ("summary", jb, ja), TWO, False),
        ("gate 'pass^3 >= 0.1'", ("gate", ja, "--rule", "pass^3 >= 0.1"), ONE, False),
        ("diverge --format json", ("diverge", ja, "-f", "json", "-o", out), ONE, False),
        ("sample -n 10", ("sample", ja, "-n", "10", "-o", out), ONE, False),
    ]
    if commands is not None:  # --commands: those rows alone, in this order
        runs = [run for run in runs if run[1][0] in commands]
    met = 0
    for what, args, target, no_cache in runs:
        r, read = _measure(args, [a for a in (ja, jb) if a in args], no_cache)
        met += _line(what, r, target, read)
    return met, len(runs)


# --- big journals made of real records (issue 23) -----------------------------------------

# Big journals made of real records (issue 23), written once into a cache and reused.
#
# A small real run of a bundled agent (``chaoseval run --agent AGENT -n 5 --seed 7 -p latency
# -p timeout``: whole trajectories, tool and model steps, faults, vetoes, checks) is the source.
# Its records are copied, as they are after the trial's identity, into a journal of about
# ``records`` trials over ``tasks`` tasks x its 3 cells: task ``t`` is source task ``t mod 44``
# renamed ``<source>-x<t>``, trial ``i`` copies the source's trial ``i mod 5``, and each copy
# gets the trial id, index, seed and world seed that ``chaoseval run`` would give it under the
# new manifest (which lists every renamed task and its reference run). Lines come in the order a
# run writes them (cells outermost, then tasks, then repeats) and are streamed to disk: the
# writer holds one task's lines at a time.
#
# A journal is kept under its name in the cache (``CHAOSEVAL_BENCH_CACHE``, by default
# ``~/.cache/chaoseval-bench``) and written again only when missing or when this generator's
# ``VERSION`` changes. Written to a temporary name first, so a stopped write leaves nothing that
# looks finished.

VERSION = 2  # bump when the journals written here change
CACHE = Path(os.environ.get("CHAOSEVAL_BENCH_CACHE", Path.home() / ".cache" / "chaoseval-bench"))
SOURCE_ARGS = ["-n", "5", "--seed", "7", "-p", "latency", "-p", "timeout"]
RUN_SEED = 7


def source_journal(agent: str, cache: Path = CACHE) -> Path:
    """The small real run of ``agent`` the big journals copy (run once, then cached)."""
    path = cache / f"source-v{VERSION}-{agent}.jsonl"
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        subprocess.run(
            [str(Path(sys.executable).parent / "chaoseval"), "run", "--agent", agent,
             *SOURCE_ARGS, "--journal", str(tmp), "--overwrite"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        tmp.rename(path)
    return path


class _Source:
    """The source run's lines, each cut around the fields a copy changes."""

    def __init__(self, path: Path) -> None:
        with path.open(encoding="utf-8") as fh:
            self.manifest: dict[str, Any] = json.loads(fh.readline())
            self.lines = [line.rstrip("\n") for line in fh if line.strip()]
        self.tasks = [s["id"] for s in self.manifest["scenarios"]]
        self.cells = [c["name"] for c in self.manifest["cells"]]
        self.trials = int(self.manifest["trials"])
        # (task, cell, index) -> (the line's middle: tags, cell, perturbations; its tail)
        self.parts: dict[tuple[str, str, int], tuple[str, str]] = {}
        for line in self.lines:
            r = json.loads(line)
            key = (r["scenario"], r["cell"], r["index"])
            start = line.index(',"scenario_tags":') + 1
            end = line.index(',"index":')
            tail = line.index(',"agent":')
            self.parts[key] = (line[start:end], line[tail:])
            # The head is rebuilt by _trial_line(): check it gives back the source line itself.
            self.schema = r["schema_version"]
            again = _trial_line(r["run_id"], r["scenario"], r["cell"], r["index"], r["seed"],
                                r["world_seed"], *self.parts[key], self.schema)  # fmt: skip
            assert again == line, f"the source line of {key} does not rebuild"


def _trial_line(run_id: str, task: str, cell: str, index: int, seed: int, world: int,
                middle: str, tail: str, schema: int) -> str:  # fmt: skip
    return (
        f'{{"type":"trial","schema_version":{schema},"run_id":"{run_id}",'
        f'"trial_id":"{task}/{cell}/{index}","scenario":"{task}",{middle},'
        f'"index":{index},"seed":{seed},"world_seed":{world}{tail}'
    )


def _manifest(src: _Source, run_id: str, names: list[str], trials: int) -> str:
    m = dict(src.manifest)
    by_id = {s["id"]: s for s in m["scenarios"]}
    refs = m.get("references") or {}
    origin = [src.tasks[t % len(src.tasks)] for t in range(len(names))]
    m["run_id"] = run_id
    m["trials"] = trials
    # The source's k values a journal of this many trials can report (report, gate and
    # compare refuse a k above the trials per cell): 1M records over 100k tasks is 4 trials.
    m["ks"] = [k for k in m["ks"] if k <= trials] or [1]
    m["scenarios"] = [{**by_id[o], "id": n} for n, o in zip(names, origin, strict=True)]
    if refs:
        m["references"] = {n: refs[o] for n, o in zip(names, origin, strict=True) if o in refs}
    return json.dumps(m, separators=(",", ":"))


def write_journal(path: Path, agent: str, tasks: int, records: int, cache: Path = CACHE) -> int:
    """A journal of at least ``records`` trials over ``tasks`` tasks copied from ``agent``'s
    source run; returns its trial count."""
    from chaoseval.model.seeding import derive_seed, derive_seed_under

    src = _Source(source_journal(agent, cache))
    trials = max(1, math.ceil(records / (tasks * len(src.cells))))
    width = len(str(tasks - 1))
    names = [f"{src.tasks[t % len(src.tasks)]}-x{t:0{width}d}" for t in range(tasks)]
    run_id = f"bench{VERSION}-{agent}-{tasks}"
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8", buffering=1 << 20) as fh:
        fh.write(_manifest(src, run_id, names, trials) + "\n")
        for cell in src.cells:
            for t, name in enumerate(names):
                origin = src.tasks[t % len(src.tasks)]
                world = derive_seed(RUN_SEED, name, "world")
                out = []
                for i in range(trials):
                    middle, tail = src.parts[(origin, cell, i % src.trials)]
                    seed = derive_seed_under((RUN_SEED, name, "trial"), i)
                    line = _trial_line(run_id, name, cell, i, seed, world, middle, tail, src.schema)
                    out.append(line)
                out.append("")
                fh.write("\n".join(out))
    tmp.rename(path)
    return trials * tasks * len(src.cells)


def journal(agent: str, tasks: int, records: int, cache: Path = CACHE) -> tuple[Path, int, bool]:
    """The cached journal for these figures: (path, trials, whether it was written now)."""
    src = _Source(source_journal(agent, cache))
    trials = max(1, math.ceil(records / (tasks * len(src.cells))))
    path = cache / f"v{VERSION}-{agent}-{tasks}t-{records}r.jsonl"
    if path.exists():
        return path, trials * tasks * len(src.cells), False
    cache.mkdir(parents=True, exist_ok=True)
    return path, write_journal(path, agent, tasks, records, cache), True


# --- the paired bootstrap ------------------------------------------------------------------

# Paired task-level bootstrap benchmark: vectorised chaoseval.analysis.stats against naive loops.
#
# The workload mirrors a real matrix run: T tasks x n trials, a clean arm and P perturbed arms,
# per-task pass^k for each arm, and one paired bootstrap of each perturbed arm against clean.


@dataclass(frozen=True)
class Workload:
    clean: np.ndarray  # per-task pass^k, shape (T,)
    perturbed: list[np.ndarray]  # one per perturbation, each shape (T,)
    tasks: int
    trials: int
    k: int


def make_workload(
    tasks: int = 1_000, trials: int = 20, perturbations: int = 10, k: int = 5, seed: int = 0
) -> Workload:
    """Synthetic per-task counts: task difficulty ~ Beta(4, 2); each perturbation lowers it."""
    from chaoseval.analysis.metrics import per_task_metric

    rng = np.random.default_rng(seed)
    p_clean = rng.beta(4, 2, tasks)
    n = np.full(tasks, trials)
    clean = per_task_metric(n, rng.binomial(n, p_clean), "pass^k", k)
    perturbed = []
    for _ in range(perturbations):
        drop = rng.uniform(0.0, 0.2) * rng.random(tasks)
        c = rng.binomial(n, np.clip(p_clean - drop, 0, 1))
        perturbed.append(per_task_metric(n, c, "pass^k", k))
    return Workload(clean, perturbed, tasks, trials, k)


def vectorised_one(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int = 0) -> None:
    from chaoseval.analysis.inference import paired_compare

    paired_compare(a, b, n_resamples=n_resamples, seed=seed)


def run_vectorised(w: Workload, n_resamples: int, seed: int = 0) -> None:
    for arm in w.perturbed:
        vectorised_one(arm, w.clean, n_resamples, seed)


def naive_numpy_loop(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int = 0) -> None:
    """One Python iteration per resample, numpy inside: the usual first implementation."""
    rng = np.random.default_rng(seed)
    t = a.size
    diffs = np.empty(n_resamples)
    ratios = np.empty(n_resamples)
    for i in range(n_resamples):
        idx = rng.integers(0, t, t)
        ma, mb = a[idx].mean(), b[idx].mean()
        diffs[i] = ma - mb
        ratios[i] = ma / mb if mb else np.nan
    np.quantile(diffs, [0.025, 0.975])
    np.nanquantile(ratios, [0.025, 0.975])


def naive_pure_python(a: list[float], b: list[float], n_resamples: int, seed: int = 0) -> None:
    """One Python iteration per resample and per task: no numpy at all."""
    rng = random.Random(seed)
    t = len(a)
    diffs: list[float] = []
    for _ in range(n_resamples):
        idx = [rng.randrange(t) for _ in range(t)]
        diffs.append(sum(a[i] for i in idx) / t - sum(b[i] for i in idx) / t)
    diffs.sort()


def best_of(fn: Callable[[], None], repeat: int) -> float:
    """Fastest of ``repeat`` runs, in seconds: the least disturbed by other processes."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


FULL_RESAMPLES = 10_000
SMALL_RESAMPLES = 200
TARGET_SECONDS = 2.0


def _row(label: str, seconds: float, baseline: float | None = None) -> str:
    ratio = f"  (vectorised is {seconds / baseline:.1f}x faster)" if baseline else ""
    return f"    {label:<48}{seconds * 1e3:9.2f} ms{ratio}"


def bootstrap() -> None:
    """The paired task-level bootstrap of a matrix run (1,000 tasks x 20 trials, pass^5, ten
    perturbed arms against clean) against the same by naive loops, side by side."""
    w = make_workload(tasks=1_000, trials=20, perturbations=10, k=5)
    arms = len(w.perturbed)
    print(
        f"paired task-level bootstrap: {w.tasks} tasks x {w.trials} trials, pass^{w.k}, "
        f"{arms} perturbed arms vs clean, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    full = best_of(lambda: run_vectorised(w, FULL_RESAMPLES), repeat=3)
    verdict = "within" if full < TARGET_SECONDS else "OVER"
    print(
        f"  vectorised, {FULL_RESAMPLES:,} resamples x {arms} comparisons: {full:.3f} s "
        f"({verdict} the {TARGET_SECONDS:.0f} s target; best of 3)"
    )
    a, b = w.perturbed[0], w.clean
    vectorised = "vectorised (chaoseval.analysis.inference.paired_compare)"
    print(f"  side by side, one comparison, {SMALL_RESAMPLES} resamples:")
    vec = best_of(lambda: vectorised_one(a, b, SMALL_RESAMPLES), repeat=5)
    loop = best_of(lambda: naive_numpy_loop(a, b, SMALL_RESAMPLES), repeat=3)
    pure = best_of(lambda: naive_pure_python(a.tolist(), b.tolist(), SMALL_RESAMPLES), repeat=1)
    print(_row(vectorised, vec))
    print(_row("naive loop per resample, numpy inside", loop, vec))
    print(_row("naive loop per resample, pure Python", pure, vec))
    print(f"  side by side, one comparison, {FULL_RESAMPLES:,} resamples:")
    vec_full = best_of(lambda: vectorised_one(a, b, FULL_RESAMPLES), repeat=3)
    loop_full = best_of(lambda: naive_numpy_loop(a, b, FULL_RESAMPLES), repeat=1)
    print(_row(vectorised, vec_full))
    print(_row("naive loop per resample, numpy inside", loop_full, vec_full))


def main(records: int = RECORDS, tasks: str = TASKS, commands: list[str] | None = None) -> None:
    started = time.perf_counter()
    scale = f" (REDUCED SCALE: the targets are for {TARGET_RECORDS:,}; --records {TARGET_RECORDS})"
    scale = "" if records == TARGET_RECORDS else scale
    print(f"reports on big journals of real records (issue 23), {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}, {records:,} records at each task count{scale}:")  # fmt: skip
    out_dir = Path(tempfile.mkdtemp(prefix="chaoseval-bench-report-"))
    met = total = 0
    try:
        for count in (int(t) for t in tasks.split(",")):
            print(f"  {count:,} tasks:")
            m, n = _size(count, records, str(out_dir / "out"), commands)
            met, total = met + m, total + n
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    print(f"  {met} of {total} figures meet their targets; the bench itself took "
          f"{time.perf_counter() - started:.0f} s")  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        _child(sys.argv[1], sys.argv[2:])
    else:
        import argparse

        sys.path.insert(0, str(HERE))
        parser = argparse.ArgumentParser(description="Reports on big journals (make bench-report).")
        parser.add_argument("--records", type=int, default=RECORDS,
                            help=f"records a journal (default {RECORDS:,}; the targets' scale: "
                                 f"{TARGET_RECORDS})")  # fmt: skip
        parser.add_argument("--tasks", default=TASKS, help=f"task counts (default {TASKS})")
        parser.add_argument(
            "--commands",
            help="only these commands, comma-separated, e.g. "
            "'sample' (read from the lines) or 'gate,sample' (sample then reads "
            "the column cache gate kept, as in the whole bench); default all",
        )
        given = parser.parse_args()
        main(given.records, given.tasks, given.commands and given.commands.split(","))
