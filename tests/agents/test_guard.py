"""chaoseval.agents.guard: the groups a process watches die with it, the ones it forgot live."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.engine.test_executor_orphans import alive

# Starts two sleepers in sessions of their own (as exec: agents are), watches both, forgets
# the second (stopped, as far as the guard knows), says both pids, then waits to be killed.
STARTER = """\
import subprocess, sys, time
from chaoseval.agents import guard
sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
watched = subprocess.Popen(sleep, start_new_session=True)
forgotten = subprocess.Popen(sleep, start_new_session=True)
guard.watch(watched.pid)
guard.watch(forgotten.pid)
guard.forget(forgotten.pid)
print(watched.pid, forgotten.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_watched_group_dies_with_its_starter_and_a_forgotten_one_does_not():
    starter = subprocess.Popen([sys.executable, "-c", STARTER], stdout=subprocess.PIPE, text=True)
    assert starter.stdout is not None
    watched, forgotten = (int(pid) for pid in starter.stdout.readline().split())
    try:
        starter.kill()  # SIGKILL: it stops nothing itself
        starter.wait()
        deadline = time.monotonic() + 5
        while alive(watched) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not alive(watched)
        time.sleep(0.2)  # the guard has acted: the forgotten group was spared
        assert alive(forgotten)
    finally:
        for pid in (watched, forgotten):
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


# Watches a sleeper, then forks a child that never starts an agent and outlives the starter.
FORKER = """\
import os, subprocess, sys, time
from chaoseval.agents import guard
watched = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                           start_new_session=True)
guard.watch(watched.pid)
child = os.fork()
if child == 0:
    time.sleep(60)
    os._exit(0)
print(watched.pid, child, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_forked_child_that_outlives_its_parent_does_not_hide_the_parents_death():
    starter = subprocess.Popen([sys.executable, "-c", FORKER], stdout=subprocess.PIPE, text=True)
    assert starter.stdout is not None
    watched, child = (int(pid) for pid in starter.stdout.readline().split())
    try:
        starter.kill()
        starter.wait()
        deadline = time.monotonic() + 5
        while alive(watched) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not alive(watched)  # the child's copy of the pipe was closed when it forked
    finally:
        for kill, pid in ((os.killpg, watched), (os.kill, child)):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
