"""Clean output (issue 19, item 5): an agent's and a spec's text never drives the terminal
(no raw ESC, BEL, NUL, title escape, C1 CSI or bidi override, no rich markup from data) in
report, sample, diverge and replay, and JUnit XML stays well-formed whatever a cell is named."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app
from chaoseval.render.printable import CONTROL

# A terminal-title escape, a colour, BEL, NUL, a one-byte CSI (clear screen), a bidi
# override, and rich markup.
EVIL = "\x1b]0;pwned\x07\x1b[31mred\x00 \x9b2J \u202e [bold red]LOUD[/]"

AGENT = f"""
from chaoseval.model.records import AgentOutput

EVIL = {EVIL!r}


class Hostile:
    clock = "virtual"

    async def run(self, episode):
        try:
            await episode.tools.call("lookup_order", order_id=EVIL)
        except Exception:
            pass
        return AgentOutput(answer="answer: " + EVIL)


def make():
    return Hostile()
"""


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    (root / "hostile_agent.py").write_text(AGENT)
    spec = root / "spec.json"
    spec.write_text(json.dumps({"name": "cell " + EVIL, "perturbations": [{"name": "latency"}]}))
    path = root / "j.jsonl"
    out = CliRunner().invoke(
        app,
        ["run", "--agent", "hostile_agent:make", "--app-dir", str(root), "-s",
         "vending-refund-not-dispensed", "-n", "2", "-p", str(spec), "--journal", str(path)],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    return path


def _raw_controls(text: str) -> list[str]:
    return sorted({repr(c) for c in text if ord(c) in CONTROL})


def _commands(j: Path) -> dict[str, list[str]]:
    trial = "vending-refund-not-dispensed/clean/0"
    return {
        "report": ["report", str(j)],
        "sample": ["sample", str(j), "--status", "any", "-n", "4"],
        "diverge": ["diverge", str(j)],
        "replay": ["replay", str(j), trial, "--app-dir", str(j.parent)],
    }


@pytest.mark.parametrize("command", ["report", "sample", "diverge", "replay"])
def test_agent_and_spec_text_is_shown_never_obeyed(journal: Path, command: str) -> None:
    out = CliRunner().invoke(app, _commands(journal)[command], env={"COLUMNS": "400"})
    assert out.exit_code in (0, 1), out.output  # diverge/replay may say "not reproduced"
    assert _raw_controls(out.output) == [], out.output
    assert "\\x1b]0;pwned\\x07" in out.output.replace("\\\\", "\\")  # shown, as escapes
    if command in ("replay", "report", "diverge"):  # printed through rich: markup kept as text
        assert "red]LOUD[/]" in out.output, out.output  # markup would drop "[/]"


def test_junit_is_well_formed_with_control_characters_in_names(
    journal: Path, tmp_path: Path
) -> None:
    xml = tmp_path / "junit.xml"
    out = CliRunner().invoke(app, ["report", str(journal), "--format", "junit", "-o", str(xml)])
    assert out.exit_code == 0, out.output
    root = ET.parse(xml).getroot()  # raised "not well-formed (invalid token)" before
    shown = [out.text or "" for out in root.iter("system-out")]  # "cell: <its name>"
    assert any("\\x1b]0;pwned" in n and "[bold red]LOUD[/]" in n for n in shown), shown


@pytest.mark.parametrize("format", ["markdown", "html", "json"])
def test_report_formats_on_standard_output_and_in_files_carry_no_raw_controls(
    journal: Path, tmp_path: Path, format: str
) -> None:
    out = CliRunner().invoke(app, ["report", str(journal), "--format", format])
    assert out.exit_code == 0, out.output
    assert _raw_controls(out.stdout) == [], out.stdout
    assert "pwned" in out.stdout  # the cell's name is there, as escapes
    path = tmp_path / f"report.{format}"
    out = CliRunner().invoke(app, ["report", str(journal), "--format", format, "-o", str(path)])
    assert out.exit_code == 0, out.output
    assert _raw_controls(path.read_text(encoding="utf-8")) == []
