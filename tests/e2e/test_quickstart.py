"""The README's "Wrap your own agent", literally: its agent module and its run command, copied
out of README.md into an empty directory and run as a user would (no PYTHONPATH)."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from tests.e2e.shell import sh, user_env

pytestmark = pytest.mark.slow
README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def block(language: str, marker: str) -> str:
    """The one fenced block in the README of ``language`` that contains ``marker``."""
    found = [
        body
        for lang, body in FENCE.findall(README.read_text(encoding="utf-8"))
        if lang == language and marker in body
    ]
    assert len(found) == 1, f"README: expected one {language} block with {marker!r}"
    return found[0]


def test_readme_agent_and_run_command(tmp_path: Path) -> None:
    agent = block("python", "def factory()")
    first = agent.splitlines()[0]
    assert first.startswith("# myagent.py"), "the README must say where the module goes"
    (tmp_path / "myagent.py").write_text(agent, encoding="utf-8")
    command = block("bash", "--agent myagent:factory")
    assert " -s " in command, "the quickstart runs a small subset (-s) so it stays fast"

    env = user_env(PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    proc = sh(["bash", "-euo", "pipefail", "-c", command], tmp_path, env)
    assert proc.returncode == 0, proc.stderr

    words = shlex.split(command.replace("\\\n", " "))
    journal = tmp_path / words[words.index("--journal") + 1]
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    manifest, trials = lines[0], [r for r in lines if r["type"] == "trial"]
    assert manifest["agent"] == "myagent:factory"
    assert trials and all(r["status"] != "not_evaluable" for r in trials)
    assert {r["cell"] for r in trials} >= {"clean"} and len({r["cell"] for r in trials}) > 1
    assert any(f["delivered"] for r in trials for f in r["trajectory"]["faults"])
    assert all(r["usage"]["model_calls"] == 1 for r in trials)  # record_model_call counted
    # A complete agent, not a stub: it passes its scenarios, clean and under every fault the
    # command injects, backing off on the trial's clock (issue 21 point 4).
    assert [r["trial_id"] for r in trials if r["status"] != "passed"] == []
    kinds = {f["kind"] for r in trials for f in r["trajectory"]["faults"] if f["delivered"]}
    assert {"latency", "timeout", "http_error"} <= kinds, kinds
