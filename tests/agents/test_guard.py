"""chaoseval.agents.guard: the groups a process watches die with it, the ones it forgot live."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.engine.test_executor_orphans import alive

# Starts two sleepers in sessions of their own (as exec: agents are), watches both, forgets
# the second (stopped, as far as the guard knows), says both pids and its guard's, then waits
# to be killed.
STARTER = """\
import subprocess, sys, time
from chaoseval.agents import guard
sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
watched = subprocess.Popen(sleep, start_new_session=True)
forgotten = subprocess.Popen(sleep, start_new_session=True)
guard.watch(watched.pid)
guard.watch(forgotten.pid)
guard.forget(forgotten.pid)
print(watched.pid, forgotten.pid, guard._guard.proc.pid, flush=True)
time.sleep(60)
"""


@contextlib.contextmanager
def starter_killed(script: str) -> Iterator[tuple[int, int]]:
    """Run ``script`` (it prints three pids: a group it watched, another process, its guard),
    SIGKILL it, wait for its guard to have acted (it exits once it killed what it watched)
    and yield the first two; kill what is left after. The 60 s only bound a guard that never
    exits: what decides the test is the guard's exit, however late a loaded machine runs it
    (it was a fixed 0.2 s after the watched group's death)."""
    starter = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert starter.stdout is not None
    watched, other, guard = (int(pid) for pid in starter.stdout.readline().split())
    try:
        starter.kill()  # SIGKILL: it stops nothing itself
        starter.wait()
        deadline = time.monotonic() + 60
        while (alive(guard) or alive(watched)) and time.monotonic() < deadline:
            time.sleep(0.02)
        yield watched, other
    finally:
        for pid in (watched, other):
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_watched_group_dies_with_its_starter_and_a_forgotten_one_does_not():
    with starter_killed(STARTER) as (watched, forgotten):
        assert not alive(watched)
        assert alive(forgotten)  # the guard has acted and exited: it spared the forgotten group


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
print(watched.pid, child, guard._guard.proc.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_a_forked_child_that_outlives_its_parent_does_not_hide_the_parents_death():
    with starter_killed(FORKER) as (watched, _child):
        assert not alive(watched)  # the child's copy of the pipe was closed when it forked


# Starts a sleeper (with a child of its own) the way process.py starts an agent, but dies
# before it could watch its group: only the mark in its environment points the guard to it.
# Both sleep past starter_killed's 60 s bound, so a guard that missed them fails the test.
UNWATCHED = """\
import os, subprocess, sys, time
from chaoseval.agents import guard
mark = guard.expect()
code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', " \\
    "'import time; time.sleep(300)']); time.sleep(300)"
agent = subprocess.Popen([sys.executable, "-c", code], start_new_session=True,
                         env={**os.environ, guard.MARK: mark})
time.sleep(0.5)
print(agent.pid, os.getpid(), guard._guard.proc.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
def test_an_agent_whose_starter_died_before_watching_it_dies_by_its_mark():
    with starter_killed(UNWATCHED) as (agent, _starter):
        assert not alive(agent)


def test_a_mark_taken_back_spares_what_carries_it():
    """Once its group is written down the mark is taken back: a process still carrying it
    (a forgotten group, here) is left alone."""
    script = STARTER.replace(
        "forgotten = subprocess.Popen(sleep, start_new_session=True)",
        "mark = guard.expect()\n"
        "import os\n"
        "forgotten = subprocess.Popen(sleep, start_new_session=True,"
        " env={**os.environ, guard.MARK: mark})",
    ).replace("guard.watch(forgotten.pid)", "guard.watch(forgotten.pid, mark)")
    assert script != STARTER
    with starter_killed(script) as (watched, forgotten):
        assert not alive(watched)
        assert alive(forgotten)
