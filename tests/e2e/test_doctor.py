"""`chaoseval doctor` (issue 21): in a fresh project it says what is missing and exits 1; once
set up (the README's agent and a settings file) it exits 0."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.newcomer import chaoseval, flat
from tests.e2e.test_quickstart import block

pytestmark = pytest.mark.slow


def test_doctor_says_what_is_missing_then_that_the_project_is_ready(tmp_path: Path) -> None:
    empty = chaoseval("chaoseval doctor", tmp_path, code=1).stdout
    assert "fail settings: no chaoseval.toml" in flat(empty)
    assert "fix: write chaoseval.toml" in empty
    settings = 'agent = "myagent:factory"\nscenarios = ["vending-*"]\n'
    (tmp_path / "chaoseval.toml").write_text(settings)
    missing = flat(chaoseval("chaoseval doctor", tmp_path, code=1).stdout)
    assert "ok settings" in missing and "ok scenarios: 3 load" in missing
    assert "fail agent: myagent:factory: cannot import module 'myagent'" in missing
    (tmp_path / "myagent.py").write_text(block("python", "def factory()"))
    ready = flat(chaoseval("chaoseval doctor", tmp_path).stdout)
    assert "ok agent: myagent:factory answered a clean trial of vending-" in ready
    assert "ready" in ready and "fail" not in ready


def test_doctor_names_missing_chromium_for_ui_tasks(tmp_path: Path) -> None:
    (tmp_path / "chaoseval.toml").write_text('agent = "naive"\nscenarios = ["ui-checkout"]\n')
    proc = chaoseval(f"CHAOSEVAL_CHROMIUM={tmp_path}/none chaoseval doctor", tmp_path)
    out = flat(proc.stdout)
    assert "warn chromium: no Chromium at" in out and "apt-get install chromium" in out


def test_doctor_shows_an_agents_stderr_without_obeying_it(tmp_path: Path) -> None:
    """An exec: agent that writes terminal escapes to stderr and exits: doctor's fail line
    carries them as visible escapes, as every other command does (rich's markup escape,
    used here before, left the ESC and BEL raw)."""
    (tmp_path / "bad.py").write_text(
        "import sys\nsys.stderr.write('\\x1b]0;pwned\\x07\\x1b[2J boom\\n')\nsys.exit(3)\n"
    )
    (tmp_path / "chaoseval.toml").write_text(
        'agent = "exec:python bad.py"\nscenarios = ["vending-*"]\nsandbox = "none"\n'
    )
    out = chaoseval("chaoseval doctor", tmp_path, code=1).stdout
    assert "boom" in out, out
    assert "\x1b" not in out and "\x07" not in out, repr(out)


def test_a_typo_in_an_exec_agent_s_script_is_named_with_a_near_name(tmp_path: Path) -> None:
    """Before: every trial crashed on `can't open file '/tmp/chaoseval-.../work/agnt.py'`, a
    path in the trial's directory the user never wrote; doctor then advised `chaoseval
    replay` with no journal to replay."""
    (tmp_path / "agent.py").write_text("print('{\"answer\": \"hi\"}')\n")
    (tmp_path / "chaoseval.toml").write_text(
        'agent = "exec:python agnt.py"\nscenarios = ["vending-*"]\n'
    )
    out = flat(chaoseval("chaoseval doctor", tmp_path, code=1).stdout)
    assert "'agnt.py' is not a file" in out and "did you mean 'agent.py'?" in out, out
    assert "chaoseval-" not in out
    run = chaoseval("chaoseval run -n 1 --journal j.jsonl", tmp_path, code=2)
    assert "did you mean 'agent.py'?" in run.stderr and not (tmp_path / "j.jsonl").exists()


def test_doctor_s_fix_for_a_failing_agent_is_a_command_that_keeps_its_reasons(
    tmp_path: Path,
) -> None:
    (tmp_path / "bad.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "chaoseval.toml").write_text(
        'agent = "exec:python bad.py"\nscenarios = ["vending-refund-log-down"]\n'
    )
    out = flat(chaoseval("chaoseval doctor", tmp_path, code=1).stdout)
    assert "chaoseval replay" not in out, out
    assert "chaoseval run -s vending-refund-log-down -n 1 --journal doctor.jsonl" in out, out
