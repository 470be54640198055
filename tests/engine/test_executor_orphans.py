"""An exec: agent dies with its trial's worker: none outlives the run, whatever it ignores."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from chaoseval.agents.process import ProcessAgent
from chaoseval.engine.runner import RunConfig, run
from chaoseval.store.journal import read_journal
from tests.e2e.shell import user_env
from tests.engine.test_executors import _scenario

# Ignores SIGTERM, starts a child of its own (same group), says both pids, then sleeps.
STUBBORN = """\
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
with open(sys.argv[1], "a") as fh:
    fh.write(f"{os.getpid()} {child.pid}\\n")
time.sleep(120)
"""


def alive(pid: int) -> bool:
    """Running (a zombie no init reaps in a container counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def _kill_its_worker(pids: Path) -> None:
    """Once the agent has said its pid, SIGKILL the worker that started it (its parent), as
    the OOM killer would: the executor does not see it coming."""
    deadline = time.monotonic() + 60
    while not pids.exists() or not pids.read_text().strip():
        if time.monotonic() > deadline:
            return
        time.sleep(0.02)
    # Past the Ray executor's first look at the worker: a worker that dies before answering
    # anything sent after the trial gets the trial run again (ray.py), not recorded.
    time.sleep(0.5)
    os.kill(_parent(int(pids.read_text().split()[0])), signal.SIGKILL)


def run_stubborn(tmp_path: Path, executor: Any, *, kill_worker: bool = False) -> float:
    """Run the stubborn agent past a 1 s timeout under ``executor``: its one trial is a
    timeout, and the agent and its child are gone within 5 s. With ``kill_worker``, its
    worker is SIGKILLed from outside while the agent runs (a 60 s timeout): the trial is a
    crash, and the agent and its child are gone within 5 s all the same. The run's seconds."""
    pids = tmp_path / "pids.txt"
    script = tmp_path / "agent.py"
    script.write_text(STUBBORN)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {shlex.quote(str(pids))}"
    config = RunConfig(
        # No generated world: building it starts no freezegun walk of every loaded module,
        # which can hold a worker's loop past this short timeout once many modules are loaded.
        scenarios=[_scenario("stubborn")],
        # Its own grace (SIGTERM, then SIGKILL) outlasts the executor's: the worker is killed
        # while the agent still ignores SIGTERM, which used to leave it orphaned.
        agent=ProcessAgent(command, grace=30),
        agent_name="exec:stubborn",
        trials=1,
        seed=1,
        journal=tmp_path / "j.jsonl",
        wall_timeout=60.0 if kill_worker else 1.0,
        executor=executor,
        references=False,
    )
    killer = threading.Thread(target=_kill_its_worker, args=(pids,), daemon=True)
    if kill_worker:
        killer.start()
    t0 = time.monotonic()
    run(config)
    elapsed = time.monotonic() - t0
    records = read_journal(tmp_path / "j.jsonl").records
    expected = "crash" if kill_worker else "timeout"
    assert len(records) == 1 and {r.root_cause for r in records} == {expected}
    started = [int(p) for line in pids.read_text().split("\n") if line for p in line.split()]
    assert len(started) == 2  # the agent and its child
    deadline = time.monotonic() + 5
    while any(alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in started if alive(p)] == []
    return elapsed


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_stubborn_exec_agent_dies_with_its_killed_worker(tmp_path):
    assert run_stubborn(tmp_path, "process") < 20


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_stubborn_exec_agent_dies_with_a_worker_killed_from_outside(tmp_path):
    """No executor kills the worker here, so nothing but the agent's guard is left to stop
    the agent (chaoseval.agents.guard)."""
    assert run_stubborn(tmp_path, "process", kill_worker=True) < 20


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("executor", ["process", "inprocess"])
def test_a_stubborn_exec_agent_dies_with_a_killed_chaoseval_run(tmp_path, executor):
    """`chaoseval run` itself SIGKILLed mid-trial: whoever started the agent (a worker, which
    dies with its runner, or the runner) is gone, and its guard kills the agent's group."""
    pids = tmp_path / "pids.txt"
    (tmp_path / "agent.py").write_text(STUBBORN)
    agent = f"exec:{shlex.quote(sys.executable)} agent.py {shlex.quote(str(pids))}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "chaoseval", "run", "--agent", agent,
         "-s", "vending-refund-dispensed", "--trials", "1", "--executor", executor,
         "--journal", "j.jsonl", "--no-report", "--no-progress"],
        cwd=tmp_path, env=user_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (pids.exists() and pids.read_text().endswith("\n")):
            assert proc.poll() is None and time.monotonic() < deadline, "the agent never ran"
            time.sleep(0.02)
    finally:
        proc.kill()
        proc.wait()
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2  # the agent and its child
    deadline = time.monotonic() + 5
    while any(alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in started if alive(p)] == []
