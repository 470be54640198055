"""The README's refund table: its two commands run as written, and the gate says what the README
shows, rule by rule (so the README cannot drift from what chaoseval does)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "### The refund agent's table as one gate"


def _blocks() -> tuple[list[str], list[str]]:
    """The section's bash commands and the gate output it shows."""
    text = README.read_text().split(SECTION, 1)[1]
    bash = re.search(r"```bash\n(.*?)```", text, re.S)
    shown = re.search(r"```text\n(.*?)```", text, re.S)
    assert bash and shown, f"README section {SECTION!r} lost its command or output block"
    return bash[1].strip().splitlines(), shown[1].strip().splitlines()


def _pattern(detail: str) -> re.Pattern[str]:
    """A README detail as a pattern: 'timeout(...)' and '...' stand for what was shortened."""
    parts = re.split(r"(timeout\(\.\.\.\)|\.\.\.)", detail)
    regex = "".join(
        r"timeout\(.*?\)" if p == "timeout(...)" else ".*" if p == "..." else re.escape(p)
        for p in parts
    )
    return re.compile(regex)


def _verdicts(lines: list[str]) -> dict[str, tuple[str, str]]:
    """rule -> (ok | BROKEN | UNDECIDED, detail), from gate output lines."""
    out = {}
    for line in lines:
        m = re.match(r"^(ok|BROKEN|UNDECIDED)\s+(.+?): (.*)$", line)
        if m:
            out[m[2]] = (m[1], m[3])
    return out


@pytest.mark.slow
def test_the_readme_refund_table_runs_as_shown(tmp_path: Path, monkeypatch) -> None:
    commands, shown = _blocks()
    assert [shlex.split(c)[:2] for c in commands] == [["chaoseval", "run"], ["chaoseval", "gate"]]
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    ran = runner.invoke(app, [*shlex.split(commands[0])[1:], "--no-progress", "--no-report"])
    assert ran.exit_code == 0, ran.output
    gated = runner.invoke(app, shlex.split(commands[1])[1:])
    expected = _verdicts(shown)
    got = _verdicts(gated.output.splitlines())
    assert list(got) == list(expected), gated.output
    for rule, (state, detail) in expected.items():
        assert got[rule][0] == state, (rule, got[rule])
        assert _pattern(detail).fullmatch(got[rule][1]), (rule, detail, got[rule][1])
    states = {state for state, _ in expected.values()}
    assert gated.exit_code == (1 if "BROKEN" in states else 3 if "UNDECIDED" in states else 0)
