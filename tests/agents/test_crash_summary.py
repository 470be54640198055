"""A crashed exec: agent's error is the line of its stderr that says why, not its last lines
(Node's version banner, an SDK's trailing warning); the whole stderr stays an artifact.

The stderr texts are made by really running each program (Python, Node.js, a shell)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_exec_agents import run_exec, script

from chaoseval.agents.crash import summary

TRAILING = "print('[non-fatal] Tracing request failed', file=sys.stderr)"
PYTHON = {
    "traceback, then atexit noise": (
        "import atexit, sys\n"
        f"atexit.register(lambda: {TRAILING})\n"
        "print('warming up', file=sys.stderr)\n"
        "def lookup(): raise ValueError('bad order id ORD-1')\n"
        "lookup()\n",
        "ValueError: bad order id ORD-1",
    ),
    "chained": (
        "try:\n    {}['order']\nexcept KeyError:\n    raise RuntimeError('lookup failed')\n",
        "RuntimeError: lookup failed",
    ),
    "exception group": (
        "import asyncio\n"
        "async def bad(): raise ConnectionError('model channel refused')\n"
        "async def main():\n"
        "    async with asyncio.TaskGroup() as tg: tg.create_task(bad())\n"
        "asyncio.run(main())\n",
        "ConnectionError: model channel refused",
    ),
}
NODE = {
    "thrown, after a warning": (
        "console.error('[non-fatal] Tracing request failed');\n"
        "throw new Error('connect ECONNREFUSED 127.0.0.1:1');\n",
        "Error: connect ECONNREFUSED 127.0.0.1:1",
    ),
    "type error": (
        "const reply = null;\nconsole.log(reply.choices);\n",
        "TypeError: Cannot read properties of null (reading 'choices')",
    ),
    "unhandled rejection": (
        "async function main() { throw new RangeError('turn budget spent'); }\nmain();\n",
        "RangeError: turn budget spent",
    ),
}


def _stderr(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    return done.stderr


@pytest.mark.parametrize("case", PYTHON)
def test_a_python_traceback_gives_its_exception_line(case: str, tmp_path: Path) -> None:
    program, expected = PYTHON[case]
    (tmp_path / "agent.py").write_text(program)
    stderr = _stderr([sys.executable, str(tmp_path / "agent.py")])
    assert summary(stderr) == expected, stderr


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
@pytest.mark.parametrize("case", NODE)
def test_a_node_crash_gives_its_error_line(case: str, tmp_path: Path) -> None:
    program, expected = NODE[case]
    (tmp_path / "agent.js").write_text(program)
    stderr = _stderr(["node", str(tmp_path / "agent.js")])
    assert stderr.strip().splitlines()[-1].startswith("Node.js v")  # what the tail used to say
    assert summary(stderr) == expected, stderr


def test_without_an_error_line_the_last_lines_are_the_summary() -> None:
    stderr = _stderr(["sh", "-c", "echo starting >&2; echo; echo disk full >&2; exit 2"])
    assert summary(stderr) == "starting | disk full"
    assert summary("") == ""


def test_a_crashed_trial_records_the_error_line_and_keeps_the_whole_stderr(
    tmp_path: Path,
) -> None:
    program, expected = PYTHON["traceback, then atexit noise"]
    [record] = run_exec(tmp_path, script(tmp_path, "agent", program))
    assert record.root_cause == "crash"
    assert (
        record.error == f"AgentProcessFailed: agent process exited with code 1; stderr: {expected}"
    )
    stderr = next(tmp_path / a.path for a in record.artifacts if a.name == "stderr.txt")
    kept = stderr.read_text()
    assert "warming up" in kept and "Traceback" in kept and "Tracing request failed" in kept
