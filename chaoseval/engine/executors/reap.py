"""Killing a worker process with everything its trials started.

An ``exec:`` agent runs in a session of its own (chaoseval.agents.process), so that stopping
it stops its whole tree and nothing else. When an executor kills the worker it ran in (a trial
past its timeout, ``--max-memory``), that session is not the worker's process group: killing the
group alone would leave the agent running, orphaned, with nobody left to stop it (an agent
that ignores SIGTERM and sleeps outlives the run). So the worker is frozen first (SIGSTOP: it
can start nothing more), its descendants are found in ``/proc`` (the agent's parent is still
the worker then; once the worker is dead it would be reparented and lost), and each of their
process groups is killed, then the worker's. A worker killed by another hand (the OOM
killer, Ray) leaves this to each agent's guard (:mod:`chaoseval.agents.guard`).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from pathlib import Path


def _parents() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, process group id) of every process visible in /proc."""
    table: dict[int, tuple[int, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue  # it exited while we looked
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        with contextlib.suppress(ValueError, IndexError):
            table[int(entry.name)] = (int(fields[1]), int(fields[2]))
    return table


def descendants(pid: int) -> list[tuple[int, int]]:
    """(pid, process group) of every living descendant of ``pid`` (Linux; [] elsewhere)."""
    if not Path("/proc/self/stat").exists():
        return []
    table = _parents()
    children: dict[int, list[int]] = {}
    for child, (parent, _) in table.items():
        children.setdefault(parent, []).append(child)
    found: list[tuple[int, int]] = []
    todo = list(children.get(pid, ()))
    while todo:
        child = todo.pop()
        found.append((child, table[child][1]))
        todo.extend(children.get(child, ()))
    return found


def _signal_all(pids: Iterable[int], groups: Iterable[int], sig: signal.Signals) -> None:
    for group in groups:
        with contextlib.suppress(OSError):
            os.killpg(group, sig)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def kill_descendants(pid: int) -> None:
    """SIGKILL every descendant of ``pid`` and each one's process group (never the caller's
    own group: a Ray worker shares its raylet's)."""
    tree = descendants(pid)
    own = os.getpgid(0)
    groups = {g for _, g in tree if g not in (own, pid)}
    _signal_all([p for p, _ in tree], groups, signal.SIGKILL)


def kill_tree(pid: int, *, group: bool) -> None:
    """SIGKILL ``pid`` with its descendants; with ``group``, ``pid``'s own process group too
    (a worker that leads one)."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGSTOP)  # frozen: it forks nothing while we look
    kill_descendants(pid)
    if group:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
