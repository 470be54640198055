"""Reports on big journals (issues 12 and 23): ``report`` (json and html), ``compare``,
``summary``, ``gate``, ``diverge`` and ``sample`` at 1M records over 100, 10k and 100k tasks,
wall time and peak memory, each printed with its target and the load average.

The journals are copies of real records of the bundled agents (benchmarks/big_journals.py:
whole trajectories of a small ``resilient`` and ``naive`` run, renamed into as many tasks as
asked), written once into a cache and reused. ``compare`` and ``summary`` read the
``resilient`` journal against the ``naive`` one of the same tasks; the other commands the
``resilient`` one. Each command runs in its own process under a time cap; its peak memory is
its own VmHWM or its process tree's (the readers it forks included), whichever is larger: the
tree's peak is sampled every 50 ms and summed by PSS, so the heap a forked reader shares with
its parent counts once.

``CHAOSEVAL_BENCH_RECORDS`` (default 1,000,000) and ``CHAOSEVAL_BENCH_TASKS`` (default
``100,10000,100000``) change the sizes, e.g. for a quick look while developing;
``CHAOSEVAL_BENCH_CAP`` the seconds a command may take (default 300). Each figure is printed
with its CPU seconds and the load average: the wall time is the target's, the CPU time what the
command costs whatever else the machine runs; and with what it read: the journal's lines, or
the column cache an earlier read kept beside it (store.colcache). Every command runs in turn
from no cache: the first to read a journal reads its lines (what the first command on a new
journal costs) and keeps its cache for the others. ``CHAOSEVAL_BENCH_COLD=1`` first measures
``report`` and ``compare`` with the cache off as well.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RECORDS = int(os.environ.get("CHAOSEVAL_BENCH_RECORDS", 1_000_000))
TASKS = [int(t) for t in os.environ.get("CHAOSEVAL_BENCH_TASKS", "100,10000,100000").split(",")]
WRITE_CAP = 600.0  # seconds to write one journal into the cache
# Seconds one command may take before it is stopped and reported as such.
PART_CAP = float(os.environ.get("CHAOSEVAL_BENCH_CAP", 300))
ONE = (60.0, 500)  # seconds and MB: a command that reads one journal (issue 23)
TWO = (120.0, 500)  # one that reads two


def _child(part: str, args: list[str]) -> None:
    sys.path[:0] = [str(ROOT), str(HERE)]
    started = time.perf_counter()
    if part == "write":
        from big_journals import journal

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


def _journal(agent: str, tasks: int) -> tuple[Path, int] | None:
    r = measure("write", agent, str(tasks), str(RECORDS), cap=WRITE_CAP)
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


def _size(tasks: int, out: str) -> tuple[int, int]:
    a, b = _journal("resilient", tasks), _journal("naive", tasks)
    if a is None or b is None:
        print("    a journal could not be written within the cap: nothing measured")
        return 0, 7
    ja, jb = str(a[0]), str(b[0])
    from chaoseval.store.colcache import cache_file

    for j in (ja, jb):  # the first read of each journal below reads its lines
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
    met = 0
    for what, args, target, no_cache in runs:
        r, read = _measure(args, [a for a in (ja, jb) if a in args], no_cache)
        met += _line(what, r, target, read)
    return met, len(runs)


def main() -> None:
    started = time.perf_counter()
    scale = "" if RECORDS == 1_000_000 else " (REDUCED SCALE: the targets are for 1,000,000)"
    print(f"reports on big journals of real records (issue 23), {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}, {RECORDS:,} records at each task count{scale}:")  # fmt: skip
    out_dir = Path(tempfile.mkdtemp(prefix="chaoseval-bench-report-"))
    met = total = 0
    try:
        for tasks in TASKS:
            print(f"  {tasks:,} tasks:")
            m, n = _size(tasks, str(out_dir / "out"))
            met, total = met + m, total + n
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    print(f"  {met} of {total} figures meet their targets; the bench itself took "
          f"{time.perf_counter() - started:.0f} s")  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) > 1:
        _child(sys.argv[1], sys.argv[2:])
    else:
        sys.path.insert(0, str(HERE))
        main()
