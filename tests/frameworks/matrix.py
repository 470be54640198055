"""The framework matrix (tests/frameworks): each framework's example agent (examples/) run
unmodified through ``exec:`` by the ``chaoseval`` command, beside the bundled
examples/openai_mcp_agent.py on the same scenarios, cells and seeds.

The frameworks live in their own venvs (and node_modules) under ``$CHAOSEVAL_FRAMEWORKS``
(``make frameworks`` builds them from pinned versions; ``make test-frameworks`` builds and runs
these tests). Without that variable the tests look in ``.cache/frameworks`` and skip when it is
missing; with it, a missing framework is a failure, so CI cannot pass on an empty cache.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from chaoseval.model.cells import parse_cells
from chaoseval.model.records import TrialRecord
from chaoseval.store.journal import read_journal

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CACHE = Path(os.environ.get("CHAOSEVAL_FRAMEWORKS") or ROOT / ".cache" / "frameworks")

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
TRIALS = 3
CONCURRENCY = 4
CLEAN = "clean"
TIMEOUT = "timeout:modes=[raise,429,reset],probability=0.5"
MALFORMED = "malformed:probability=0.5"
DRIFT = "tool_schema_drift:modes=[rename]"
# Model errors and tool latency stacked in one cell (a cell fewer to run): each must land, and
# neither may put anything on chaoseval's stderr.
MODEL_ERROR_AND_LATENCY = (
    "model_error:modes=[429,500,reset],probability=0.3,retry_after=0.05+latency:mean=0.2"
)
# The example runs the cells the frameworks are compared on; the frameworks also the one that
# only has to land and leave chaoseval's stderr clean.
BASELINE_CELLS = (TIMEOUT, MALFORMED, DRIFT)
FRAMEWORK_CELLS = (*BASELINE_CELLS, MODEL_ERROR_AND_LATENCY)
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


def _python(venv: str, script: str) -> Framework:
    python = CACHE / venv / "bin" / "python"
    return Framework(venv, (str(python), str(EXAMPLES / script)), CACHE / venv / ".installed")


FRAMEWORKS = {
    f.name: f
    for f in (
        _python("openai-agents", "openai_agents_sdk_agent.py"),
        _python("pydantic-ai", "pydantic_ai_agent.py"),
        _python("langgraph", "langgraph_agent.py"),
        _python("smolagents", "smolagents_agent.py"),
        _python("anthropic", "anthropic_mcp_agent.py"),
        # The link in the cache points at examples/node/agent.mjs; --preserve-symlinks-main makes
        # node resolve its packages from the cache's node_modules beside the link.
        Framework(
            "node",
            ("node", "--preserve-symlinks-main", str(CACHE / "node" / "agent.mjs")),
            CACHE / "node" / ".installed",
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


def run_matrix(framework: Framework, cells: tuple[str, ...], journal: Path) -> Matrix:
    """``chaoseval run`` as a user runs it, in a subprocess, with the trial seeds of SEED."""
    chaoseval = Path(sys.executable).with_name("chaoseval")
    argv = [str(chaoseval), "run", "--agent", f"exec:{framework.command}"]
    for scenario in SCENARIOS:
        argv += ["-s", scenario]
    for cell in cells:
        argv += ["-p", cell]
    argv += ["-n", str(TRIALS), "--seed", str(SEED), "-j", str(CONCURRENCY)]
    argv += ["--journal", str(journal), "--overwrite"]
    done = subprocess.run(
        argv, cwd=journal.parent, capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, f"{framework.name}: exit {done.returncode}\n{done.stderr[-3000:]}"
    return Matrix(read_journal(journal).records, done.stderr)


def installed(framework: Framework) -> Framework:
    if not framework.needs.exists():
        message = f"{framework.name} is not installed under {CACHE}: run `make frameworks`"
        if os.environ.get("CHAOSEVAL_FRAMEWORKS"):
            pytest.fail(message)
        pytest.skip(message)
    return framework
