"""Crash safety: `chaoseval run` killed with SIGKILL at random moments, resumed each time,
ends with every trial exactly once and the same metrics as a run never interrupted."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from chaoseval.analysis.aggregate import by_cell
from chaoseval.store.journal import read_journal
from tests.e2e.golden_journal import normalize
from tests.e2e.shell import user_env

pytestmark = pytest.mark.slow

KILLS = 3


def _args(journal: Path, executor: str) -> list[str]:
    return [
        sys.executable, "-m", "chaoseval", "run", "--agent", "naive", "-s", "vending-*",
        "-p", "latency", "--trials", "4", "--seed", "5", "-j", "3",
        "--executor", executor, "--journal", str(journal), "--no-report", "--no-progress",
    ]  # fmt: skip


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in os.listdir(f"/proc/{pid}/task"):
        # A thread may end between the listing and the read: it has no children left then.
        try:
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                found += [int(c) for c in fh.read().split()]
        except FileNotFoundError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _kill_at_random(args: list[str], journal: Path, rng: random.Random, cwd: Path) -> None:
    """Start the run, wait until it writes a trial (or ends), SIGKILL it a random moment
    later: before, between or in the middle of journal lines."""
    before = journal.stat().st_size if journal.exists() else 0
    proc = subprocess.Popen(
        args, cwd=cwd, env=user_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if journal.exists() and journal.stat().st_size > before:
            break
        time.sleep(0.005)
    time.sleep(rng.uniform(0, 0.6))
    workers = _children(proc.pid) if proc.poll() is None else []
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # Worker processes die with their runner: none is left running trials. (60 s bound a
    # worker that never dies; one that does is seen gone at once, however loaded the machine.)
    deadline = time.monotonic() + 60
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [w for w in workers if _alive(w)], "worker processes outlived their runner"


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_sigkill_at_random_moments_then_resume_loses_and_repeats_nothing(tmp_path):
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    full = tmp_path / "full.jsonl"
    done = subprocess.run(_args(full, "inprocess"), cwd=tmp_path, env=user_env(), timeout=300)
    assert done.returncode == 0

    journal = tmp_path / "killed.jsonl"
    for kill in range(KILLS):
        args = _args(journal, ("inprocess", "process")[kill % 2])
        _kill_at_random([*args, "--resume"] if kill else args, journal, rng, tmp_path)
    final = subprocess.run(
        [*_args(journal, "process"), "--resume"], cwd=tmp_path, env=user_env(), timeout=300
    )
    assert final.returncode == 0, f"kill seed {seed}"

    lines = [json.loads(x) for x in journal.read_text().splitlines() if x.strip()]
    ids = Counter(x["trial_id"] for x in lines if x["type"] == "trial")
    expected = {r.trial_id for r in read_journal(full).records}
    assert set(ids) == expected, f"lost trials (kill seed {seed})"
    assert max(ids.values()) == 1, f"repeated trials (kill seed {seed})"
    assert normalize(journal) == normalize(full), f"kill seed {seed}"
    ks = [1, 2, 5]
    metrics = [repr(c) for c in by_cell(read_journal(journal).records, ks)]
    assert metrics == [repr(c) for c in by_cell(read_journal(full).records, ks)]
