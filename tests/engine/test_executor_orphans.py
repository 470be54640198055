"""An exec: agent dies with its trial's worker: none outlives the run, whatever it ignores."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest

from chaoseval.agents import netrelay
from chaoseval.agents.process import ProcessAgent
from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import IsolationWarning
from chaoseval.store.journal import read_journal
from tests.e2e.shell import user_env
from tests.engine.test_executors import _scenario

NETRELAY = netrelay.__file__

# Ignores SIGTERM, starts a child of its own (same group), then sleeps. Both carry the token
# given as their last argument: in its sandbox the agent can neither write outside its trial
# nor know its pid as the host sees it, so the test finds them in the host's /proc by it.
STUBBORN = """\
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", sys.argv[1]])
time.sleep(120)
"""


class Undeclared(ProcessAgent):
    """An exec: agent whose executor is told nothing of its grace: the executor kills the
    worker while the agent still ignores SIGTERM, and the agent must die with it all the same
    (whatever else kills a worker mid-trial: a blocked loop, --max-memory)."""

    stop_grace = 0.0


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


def _argv(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _sandbox_own(argv: list[str]) -> bool:
    """bwrap, or the relay it runs the agent under (chaoseval.agents.netrelay)."""
    return bool(argv) and (Path(argv[0]).name == "bwrap" or NETRELAY in argv)


def carrying(token: str) -> list[int]:
    """Host pids of the processes whose arguments include ``token`` (the sandbox's own
    excepted), the agent first."""
    found = []
    for entry in Path("/proc").iterdir():
        argv = _argv(int(entry.name)) if entry.name.isdigit() else []
        if token in argv and not _sandbox_own(argv) and alive(int(entry.name)):
            found.append(int(entry.name))
    return sorted(found, key=lambda pid: "-c" in _argv(pid))


def started(token: str, proc: subprocess.Popen[bytes] | None = None) -> list[int]:
    """The agent and its child, once both run (within 60 s)."""
    deadline = time.monotonic() + 60
    while len(pids := carrying(token)) < 2:
        assert proc is None or proc.poll() is None, "chaoseval ended before the agent ran"
        assert time.monotonic() < deadline, "the agent never ran"
        time.sleep(0.05)
    return pids


def _worker(pid: int) -> int:
    """The process that started agent ``pid``: its parent, or bwrap's in a sandbox."""
    parent = _parent(pid)
    while _sandbox_own(_argv(parent)):
        parent = _parent(parent)
    return parent


def _kill_its_worker(token: str, stop: threading.Event) -> None:
    """Each time the agent runs, SIGKILL the worker that started it, as the OOM killer would:
    the executor does not see it coming. A worker that dies before it answered anything sent
    after the trial gets the trial run again alone (ray.py: it may have died before the trial
    reached it), and a second death blames the trial; so the worker of every start is killed,
    not only the first, and how soon the executor first heard from it (later on a loaded
    machine) does not decide the outcome."""
    killed: set[int] = set()
    while not stop.is_set():
        pids = carrying(token)
        fresh = [pid for pid in pids[:1] if pid not in killed]
        if len(pids) >= 2 and fresh:
            # Past the executor's first look at the worker, most of the time: the trial is
            # then recorded at once; when not, the run-again start is killed in its turn.
            time.sleep(0.5)
            killed.add(fresh[0])
            with contextlib.suppress(ProcessLookupError, FileNotFoundError):
                os.kill(_worker(fresh[0]), signal.SIGKILL)
        time.sleep(0.05)


def _describe(pid: int) -> str:
    """What a survivor is, for the failure's message: its state, parent, group and command."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return f"{pid} (gone while described)"
    state, ppid, pgid = stat[stat.rfind(")") + 2 :].split()[:3]
    parent = " ".join(_argv(int(ppid)))[:80]
    return f"{pid} state={state} ppid={ppid} ({parent}) pgid={pgid}: {' '.join(_argv(pid))[:120]}"


def gone(token: str) -> list[str]:
    """The processes still carrying ``token`` after 60 s, described (none, when they died with
    their trial). Found by the token, not by pid: a pid freed by the kill and taken by another
    process is not a survivor. The 60 s bound a failure, well short of the agents' 120 s
    sleep; a kill that works returns as soon as the processes are gone, however loaded the
    machine (it was 5 s)."""
    deadline = time.monotonic() + 60
    while carrying(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [_describe(pid) for pid in carrying(token)]


def run_stubborn(
    tmp_path: Path,
    executor: Any,
    *,
    kill_worker: bool = False,
    sandbox: str = "auto",
    grace: float | None = None,
) -> float:
    """Run the stubborn agent past an 8 s timeout under ``executor``: its one trial is a
    timeout, and the agent and its child are gone (:func:`gone`). With ``kill_worker``, its
    worker is SIGKILLed from outside while the agent runs (a 60 s timeout): the trial is a
    crash, and the agent and its child are gone all the same. The run's seconds. Its grace
    (SIGTERM, then SIGKILL) is 120 s and :class:`Undeclared`, so its worker is killed while
    it still ignores SIGTERM (which used to leave it orphaned); with ``grace``, a plain exec:
    agent of that grace."""
    token = f"stubborn-{uuid.uuid4().hex}"
    script = tmp_path / "agent.py"
    script.write_text(STUBBORN)
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {token}"
    seen: list[int] = []
    config = RunConfig(
        # No generated world: building it starts no freezegun walk of every loaded module,
        # which can hold a worker's loop past this short timeout once many modules are loaded.
        scenarios=[_scenario("stubborn")],
        agent=Undeclared(command, grace=120)
        if grace is None
        else ProcessAgent(command, grace=grace),
        agent_name="exec:stubborn",
        trials=1,
        seed=1,
        journal=tmp_path / "j.jsonl",
        # Long enough for the agent to start its child on a loaded machine (at load 6 a 1 s
        # timeout once killed it before the child ran, and the watcher never saw two; 3 s
        # passed at load 10 to 12 with two CPU hogs, 8 s leaves room for worse).
        wall_timeout=60.0 if kill_worker else 8.0,
        executor=executor,
        references=False,
        sandbox=sandbox,
    )
    stop = threading.Event()
    killer = threading.Thread(target=_kill_its_worker, args=(token, stop), daemon=True)
    watcher = threading.Thread(target=lambda: seen.extend(started(token)), daemon=True)
    watcher.start()
    if kill_worker:
        killer.start()
    t0 = time.monotonic()
    try:
        with pytest.warns(IsolationWarning) if sandbox == "none" else nullcontext():
            run(config)
    finally:
        stop.set()
    elapsed = time.monotonic() - t0
    records = read_journal(tmp_path / "j.jsonl").records
    expected = "crash" if kill_worker else "timeout"
    assert len(records) == 1 and {r.root_cause for r in records} == {expected}
    watcher.join(timeout=60)  # it returns once it saw both, or gives up at its own 60 s
    assert len(seen) == 2  # the agent and its child
    assert gone(token) == []
    return elapsed


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_stubborn_exec_agent_dies_with_its_killed_worker(tmp_path):
    # Its worker was killed at the timeout, not after the agent's 120 s grace: a bound far
    # from both the 8 s timeout and the grace, so no loaded machine's pace decides it.
    assert run_stubborn(tmp_path, "process") < 60


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_stubborn_exec_agent_is_killed_by_its_own_grace_before_its_worker_is(tmp_path):
    """Its grace (2.5 s) outlasts the executor's old fixed 2 s past the timeout: the
    worker was killed first ("it ignored its cancellation, so its worker was killed") and
    every other trial in flight on it run again. The executor now waits the agent's grace
    first: the agent's SIGKILL ends it, and its worker records the timeout itself."""
    run_stubborn(tmp_path, "process", grace=2.5)
    [record] = read_journal(tmp_path / "j.jsonl").records
    assert "time budget" in (record.error or "") and "worker" not in (record.error or "")


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("sandbox", ["auto", "none"])
def test_a_stubborn_exec_agent_dies_with_a_worker_killed_from_outside(tmp_path, sandbox):
    """No executor kills the worker here, so nothing but the agent's guard (and, in a
    sandbox, bwrap's --die-with-parent) is left to stop the agent (chaoseval.agents.guard).
    The trial is a crash, not a timeout (run_stubborn checks): it ended at the worker's
    death, well before its 60 s, however long a loaded machine took to get there."""
    run_stubborn(tmp_path, "process", kill_worker=True, sandbox=sandbox)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
@pytest.mark.parametrize("executor", ["process", "inprocess"])
def test_a_stubborn_exec_agent_dies_with_a_killed_chaoseval_run(tmp_path, executor):
    """`chaoseval run` itself SIGKILLed mid-trial: whoever started the agent (a worker, which
    dies with its runner, or the runner) is gone, and its guard kills the agent's group."""
    token = f"stubborn-{uuid.uuid4().hex}"
    (tmp_path / "agent.py").write_text(STUBBORN)
    errors = tmp_path / "stderr.txt"
    agent = f"exec:{shlex.quote(sys.executable)} agent.py {token}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "chaoseval", "run", "--agent", agent,
         "-s", "vending-refund-dispensed", "--trials", "1", "--executor", executor,
         "--journal", "j.jsonl", "--no-report", "--no-progress"],
        cwd=tmp_path, env=user_env(), stdout=subprocess.DEVNULL, stderr=errors.open("wb"),
    )  # fmt: skip
    try:
        started(token, proc)
    finally:
        proc.kill()
        proc.wait()
    survivors = gone(token)
    assert survivors == [], f"chaoseval's stderr: {errors.read_text(errors='replace')[-2000:]}"
