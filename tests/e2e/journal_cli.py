"""`chaoseval run` as a user starts it, for the journal's lifecycle tests: a subprocess, and an
exec: agent that waits on a file handshake so two runs overlap without any sleep deciding it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.e2e.shell import sh, user_env

SCENARIO = "vending-refund-log-down"
# The agent says it started (the file "started" in $HANDSHAKE), then answers only once the
# test writes "go" there: the run holds its journal for as long as the test needs.
WAITING_AGENT = """\
import json, os, pathlib, time
here = pathlib.Path(os.environ["HANDSHAKE"])
(here / "started").touch()
while not (here / "go").exists():
    time.sleep(0.01)
print(json.dumps({"answer": "done"}))
"""
# Limits how long a test waits for a run it started to reach a point (a safety bound for a
# broken run, never what decides the outcome).
PATIENCE = 120.0


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "chaoseval", *args]


def run_args(journal: Path, *extra: str, agent: str = "naive", trials: int = 2) -> list[str]:
    return command(
        "run", "--agent", agent, "-s", SCENARIO, "-n", str(trials), "--journal", str(journal),
        "--no-report", "--no-progress", *extra,
    )  # fmt: skip


def chaoseval(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return sh(list(args), cwd, user_env(**env))


def waiting_run(journal: Path, cwd: Path, *extra: str, **env: str) -> subprocess.Popen[str]:
    """A run whose exec: agent blocks until :func:`release`; returned once its first trial
    started (its manifest written, its lock held)."""
    agent = cwd / "waiting_agent.py"
    agent.write_text(WAITING_AGENT)
    args = run_args(journal, "--sandbox", "none", *extra, agent=f"exec:{sys.executable} {agent}")
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env=user_env(HANDSHAKE=str(cwd), **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    deadline = time.monotonic() + PATIENCE
    while not (cwd / "started").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            out, err = proc.communicate(timeout=PATIENCE)
            raise AssertionError(f"the waiting run never started its agent:\n{out}\n{err}")
        time.sleep(0.01)
    return proc


def release(cwd: Path) -> None:
    (cwd / "go").touch()


def lines(journal: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in journal.read_text().splitlines()]
