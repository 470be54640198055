"""A sequential run interrupted in the middle of a round (issue 44): Ctrl-C (SIGINT) or a kill
(SIGKILL) while a round's trials are being written, then the same command with ``--resume``,
ends with the decisions and the trials (journal lines sorted by trial id, timestamps and
durations masked) of the same command never interrupted.

The run goes through the process executor: the runner then awaits its workers, so a SIGINT is
taken at once. (In process, the simulated agents' trials on the virtual clock never wait, so
Ctrl-C is taken between trials only where the lanes wait: at the end of a round.)
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chaoseval.analysis.sequential import journal_progress
from chaoseval.store.columns import read_trials
from tests.e2e.golden_journal import normalize
from tests.e2e.shell import user_env

pytestmark = pytest.mark.slow

# 16 tasks; sampling and latency stay undecided for a few rounds of 4 trials per task.
FIRST_ROUND = 16 * 4 * 2  # tasks x (clean + 3 cells) x -n
ATTEMPTS = 3


def _args(journal: Path, executor: str) -> list[str]:
    return [
        sys.executable, "-m", "chaoseval", "run", "--agent", "naive", "--seed", "5",
        "-s", "orders-*", "-s", "memory-*", "-p", "timeout", "-p", "sampling", "-p", "latency",
        "--sequential", "-n", "2", "--round-size", "4", "--max-trials-per-task", "14",
        "--executor", executor, "-j", "2", "--journal", str(journal), "--no-progress", "-q",
    ]  # fmt: skip


def _lines(journal: Path) -> int:
    try:
        return journal.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _decisions(journal: Path) -> dict[str, tuple[object, ...]]:
    p, _ = journal_progress(read_trials(journal))
    return {c: (d.status, d.round, d.trials, d.steps, d.rule) for c, d in p.decisions.items()}


def _mid_round(journal: Path) -> bool:
    """The journal stops inside a round: some of the next round's trials are in, not all."""
    t = read_trials(journal)
    assert t.manifest.sequential is not None
    p, _ = journal_progress(t)
    if not p.rounds_done:
        return False
    done = t.manifest.sequential.rounds()[p.rounds_done - 1]
    return bool((t.col["index"] >= done).any())


def _default_sigint() -> None:
    """In the child before exec: SIGINT as a terminal's Ctrl-C finds it. A shell's background
    job inherits it ignored, and Python then installs no KeyboardInterrupt for it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(args: list[str], journal: Path, sig: signal.Signals, cwd: Path) -> int:
    """Start the run, wait until it has written past its first round, send ``sig``; the exit
    code (the run may also have ended by itself)."""
    proc = subprocess.Popen(
        args, cwd=cwd, env=user_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL, preexec_fn=_default_sigint,
    )  # fmt: skip
    deadline = time.monotonic() + 300  # a guard against a hang, not a measurement
    while proc.poll() is None and time.monotonic() < deadline:
        if _lines(journal) > FIRST_ROUND + 20:
            break
        time.sleep(0.005)
    if proc.poll() is None:
        proc.send_signal(sig)
    return proc.wait(timeout=300)


@pytest.mark.skipif(sys.platform != "linux", reason="signals a process group's runner")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_interrupted_mid_round_then_resumed_decides_as_never_interrupted(
    tmp_path: Path, sig: signal.Signals
) -> None:
    whole = tmp_path / "whole.jsonl"
    done = subprocess.run(
        _args(whole, "inprocess"), cwd=tmp_path, env=user_env(), timeout=300,
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    want = _decisions(whole)
    assert len({d[1] for d in want.values()}) > 1  # cells stop in different rounds

    cut = tmp_path / "cut.jsonl"
    mid = False
    for attempt in range(ATTEMPTS):  # until one interruption lands inside a round
        args = _args(cut, "process") + (["--resume"] if attempt else [])
        code = _interrupt(args, cut, sig, tmp_path)
        assert code != 0, "the run ended before the signal took effect"
        assert code in (130, -signal.SIGKILL), f"exit {code}"
        mid = _mid_round(cut)
        if mid:
            break
    assert mid, f"no interruption landed inside a round in {ATTEMPTS} attempts"

    resumed = subprocess.run(
        [*_args(cut, "inprocess"), "--resume"], cwd=tmp_path, env=user_env(), timeout=300,
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert _decisions(cut) == want
    trials = [x for x in normalize(cut) if '"type": "manifest"' not in x]
    assert trials == [x for x in normalize(whole) if '"type": "manifest"' not in x]
