"""The refund agent's table as one gate (docs/AUTHORING.md): its two commands run as written,
and the gate prints what the guide shows, line for line (so the guide cannot drift from what
chaoseval does)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "AUTHORING.md"
SECTION = "## The refund agent's table as one gate"


def _blocks() -> tuple[list[str], list[str]]:
    """The section's bash commands and the gate output it shows."""
    text = GUIDE.read_text(encoding="utf-8").split(SECTION, 1)[1].split("\n## ", 1)[0]
    bash = re.search(r"```bash\n(.*?)```", text, re.S)
    shown = re.search(r"```text\n(.*?)```", text, re.S)
    assert bash and shown, f"{GUIDE.name}: section {SECTION!r} lost its command or output block"
    return bash[1].strip().splitlines(), shown[1].strip().splitlines()


@pytest.mark.slow
def test_the_refund_table_runs_as_shown(tmp_path: Path, monkeypatch) -> None:
    commands, shown = _blocks()
    assert [shlex.split(c)[:2] for c in commands] == [["chaoseval", "run"], ["chaoseval", "gate"]]
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    ran = runner.invoke(app, [*shlex.split(commands[0])[1:], "--no-progress", "--no-report"])
    assert ran.exit_code == 0, ran.output
    gated = runner.invoke(app, shlex.split(commands[1])[1:])
    # What the command prints, whole: no line shortened, none left out (issue 42, item 8).
    assert gated.output.splitlines() == shown, gated.output
    states = {line.split()[0] for line in shown}
    assert gated.exit_code == (1 if "BROKEN" in states else 3 if "UNDECIDED" in states else 0)
