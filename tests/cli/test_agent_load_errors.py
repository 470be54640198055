"""An agent module that cannot be used is one clear line before any trial: a syntax error
names its file, line and text (an ImportError already did); a run that is not async is
refused at load, not crashed in every trial."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app

SYNC_AGENT = """\
from chaoseval import AgentOutput

class Agent:
    def run(self, episode):
        return AgentOutput(answer="sync")

def factory():
    return Agent()
"""


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str):
    name = f"agent_{uuid.uuid4().hex[:8]}"  # a fresh module name: no import cached
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    args = ["run", "--agent", f"{name}:factory", "-s", "vending-refund-log-down", "-n", "1"]
    return CliRunner().invoke(app, [*args, "--journal", "j.jsonl", "--no-report"]), name


def test_a_syntax_error_in_the_agent_module_is_one_line_naming_the_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, name = _run(tmp_path, monkeypatch, "def factory(:\n    pass\n")
    assert result.exit_code == 2, result.output
    out = result.output.strip()
    assert "Traceback" not in out and len(out.splitlines()) <= 3, out
    assert f"{name}.py:1" in out and "SyntaxError" in out and "def factory(:" in out
    assert not (tmp_path / "j.jsonl").exists()


def test_an_error_raised_by_the_module_s_own_code_names_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, name = _run(tmp_path, monkeypatch, "X = 1\nundefined_name()\n")
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"{name}.py:2" in result.output and "NameError" in result.output


def test_an_agent_whose_run_is_not_async_is_refused_before_any_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, _ = _run(tmp_path, monkeypatch, SYNC_AGENT)
    assert result.exit_code == 2, result.output
    assert "Agent.run is not async" in result.output and "async def run" in result.output
    assert not (tmp_path / "j.jsonl").exists()
