"""The framework matrix (tests/frameworks): each framework's example agent (examples/) run
unmodified through ``exec:`` by the ``chaoseval`` command, beside the bundled
examples/openai_mcp_agent.py on the same scenarios, cells and seeds.

The frameworks live in their own venvs (and node_modules) in a cache outside the clone
(tests/frameworks/venvs.py: ``make frameworks`` builds them from pinned versions; ``make
test-frameworks`` builds and runs these tests, with ``$CHAOSEVAL_FRAMEWORKS`` naming the cache).
Without that variable the tests look in the user's cache and skip a framework missing there;
with it, a missing framework is a failure, so CI cannot pass on an empty cache.

Every run of the session starts at once (``start_matrix``), the example's and each
framework's, and a test waits for the run it reads: on two cores most of a trial is waiting
(an SDK's backoff, a tracing export's retries, injected latency), which the other runs fill.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from chaoseval.model.cells import parse_cells
from chaoseval.model.records import TrialRecord
from chaoseval.store.journal import read_journal
from tests.frameworks.venvs import DONE, ENVS, cache_root, node_main, python_of

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CACHE = cache_root()

# Four bundled tool scenarios: a dependency that is down (the agent must pass the 503 on to its
# model to pass), a refund with a degradation contract, a multi-step write behind an ownership
# check, and one that the bundled model's seeded slips fail at T=0.7 on some seeds (so equal
# clean outcomes are not equal by all passing).
SCENARIOS = (
    "inventory-stock-service-down",
    "vending-refund-not-dispensed",
    "orders-modify-address",
    "library-renew-loan",
)
SEED = 7
# Two trials a task: trial 0 of inventory-stock-service-down and library-renew-loan fails clean
# for the example (seed 7, T=0.7) where the others pass, so equal clean outcomes are not equal
# by all passing; trial 1 of library-renew-loan is the one the rename costs the example.
TRIALS = 2
# Per run; the eight runs go at once: 16 agents at a time on two cores. More only queue for the
# CPU, and a framework's own timeouts then fire (pydantic-ai gives its MCP handshake 5 s: at 21
# at a time, under other load, some of its trials never reached a tool).
CONCURRENCY = 2
# No trial of these cells may end by the trial's timeout (no hang is injected): a generous one,
# so that a machine slowed by other work delays the matrix instead of failing it.
TRIAL_TIMEOUT = 600
CLEAN = "clean"
TIMEOUT = "timeout:modes=[raise,429,reset],probability=0.5"
MALFORMED = "malformed:probability=0.5"
DRIFT = "tool_schema_drift:modes=[rename]"
# Model errors and tool latency stacked in one cell (a cell fewer to run): each must land, and
# neither may put anything on chaoseval's stderr. The first model request of every trial gets
# a 429 or a 500 (first_n, not a probability: at two trials a task a draw of 0.3 missed
# inventory-stock-service-down, whose trials make few requests), which every SDK here retries,
# so each trial goes on as its clean twin and the latency lands wherever that one calls a tool.
# (A reset there is not retried by Node's openai SDK when the headers came: the trial crashes
# before any tool call.)
MODEL_ERROR_AND_LATENCY = (
    "model_error:modes=[429,500],probability=1,first_n=1,retry_after=0.05+latency:mean=0.2"
)
# The cells every run has, the example's and each framework's: every trial is compared with
# the example's same trial (status and root cause).
FRAMEWORK_CELLS = (TIMEOUT, MALFORMED, DRIFT, MODEL_ERROR_AND_LATENCY)
# The lines `chaoseval run` itself writes on stderr in a pipe: anything else is noise it let
# through (a library's log, a warning, a traceback).
STATUS_LINE = re.compile(r"^chaoseval run .*: (\d+ trial\(s\) to run|\d+/\d+ trials \(.*\), .*)$")


@dataclass(frozen=True)
class Framework:
    name: str
    argv: tuple[str, ...]  # the exec: command, each part a path or a flag
    needs: Path  # what `make frameworks` leaves when it is installed

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


def _python(venv: str, script: str, name: str = "") -> Framework:
    """The example ``script`` on the venv of its lock, examples/requirements/VENV.txt."""
    python = python_of(venv)
    argv = (str(python), str(EXAMPLES / script))
    return Framework(name or venv, argv, python.parents[1] / DONE)


FRAMEWORKS = {
    f.name: f
    for f in (
        _python("openai-agents", "openai_agents_sdk_agent.py"),
        _python("pydantic-ai", "pydantic_ai_agent.py"),
        _python("langgraph", "langgraph_agent.py"),
        _python("smolagents", "smolagents_agent.py"),
        # The same framework and pins (one lock, one venv), its code-writing agent.
        _python("smolagents", "smolagents_code_agent.py", "smolagents-code"),
        _python("anthropic", "anthropic_mcp_agent.py"),
        # A link to examples/node/agent.mjs beside a link to the cache's node_modules (made by
        # `make frameworks`): --preserve-symlinks-main makes node resolve its packages there.
        Framework(
            "node",
            ("node", "--preserve-symlinks-main", str(node_main())),
            ENVS["node"].path(CACHE) / DONE,
        ),
    )
}
EXAMPLE = Framework(
    "openai-mcp-example", (sys.executable, str(EXAMPLES / "openai_mcp_agent.py")), EXAMPLES
)


@dataclass(frozen=True)
class Matrix:
    """One `chaoseval run` of an agent: its trials by cell, and chaoseval's own stderr."""

    records: list[TrialRecord]
    stderr: str

    def cell(self, spec: str) -> list[TrialRecord]:
        """The trials of the cell written as ``spec`` on the command line."""
        name = CLEAN if spec == CLEAN else parse_cells([spec])[0].name
        return sorted(
            (r for r in self.records if r.cell == name), key=lambda r: (r.scenario, r.index)
        )

    def noise(self) -> list[str]:
        """stderr lines that are not the run's own status lines."""
        return [ln for ln in self.stderr.splitlines() if ln.strip() and not STATUS_LINE.match(ln)]


@dataclass
class Running:
    """A ``chaoseval run`` under way in a subprocess; ``wait`` for its Matrix."""

    framework: Framework
    journal: Path
    process: subprocess.Popen[bytes]
    stderr: IO[bytes]
    done: Matrix | None = None

    def wait(self, timeout: float = 2400) -> Matrix:
        if self.done is None:
            try:
                code = self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                raise
            self.stderr.seek(0)
            err = self.stderr.read().decode(errors="replace")
            self.stderr.close()
            assert code == 0, f"{self.framework.name}: exit {code}\n{err[-3000:]}"
            self.done = Matrix(read_journal(self.journal).records, err)
        return self.done


def start_matrix(framework: Framework, cells: tuple[str, ...], journal: Path) -> Running:
    """``chaoseval run`` as a user runs it, in a subprocess, with the trial seeds of SEED."""
    chaoseval = Path(sys.executable).with_name("chaoseval")
    argv = [str(chaoseval), "run", "--agent", f"exec:{framework.command}"]
    for scenario in SCENARIOS:
        argv += ["-s", scenario]
    for cell in cells:
        argv += ["-p", cell]
    argv += ["-n", str(TRIALS), "--seed", str(SEED), "-j", str(CONCURRENCY)]
    argv += ["--trial-timeout", str(TRIAL_TIMEOUT), "--journal", str(journal), "--overwrite"]
    # A file, not a pipe: nobody reads it until the run ends (closed by Running.wait).
    err = tempfile.TemporaryFile()  # noqa: SIM115
    process = subprocess.Popen(
        argv, cwd=journal.parent, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL
    )
    return Running(framework, journal, process, err)


def run_matrix(framework: Framework, cells: tuple[str, ...], journal: Path) -> Matrix:
    """``start_matrix`` and wait for it."""
    return start_matrix(framework, cells, journal).wait()


def installed(framework: Framework) -> Framework:
    if not framework.needs.exists():
        message = f"{framework.name} is not installed under {CACHE}: run `make frameworks`"
        if os.environ.get("CHAOSEVAL_FRAMEWORKS"):
            pytest.fail(message)
        pytest.skip(message)
    return framework
