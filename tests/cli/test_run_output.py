"""What `run` tells a user beside the report: progress in a CI log, the real-clock notice,
and `scenarios list -s` selecting as `run -s` does."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app
from chaoseval.model.records import TrialRecord
from chaoseval.render.progress import LineProgress


def test_line_progress_prints_on_a_timer_even_while_no_trial_finishes() -> None:
    out = io.StringIO()
    progress = LineProgress(stream=out, interval=0.05)
    progress.start("naive", 3)
    progress.trial_done(TrialRecord.model_construct(status="passed"))

    def ticks() -> list[str]:
        lines = out.getvalue().splitlines()
        return [line for line in lines if "1/3 trials (pass 1 fail 0 n/e 0)" in line]

    # No trial finishes meanwhile: the timer still writes, twice at least. Waited for, not a
    # fixed 0.4 s (room for 8 ticks, fewer when a loaded machine runs the thread late); the
    # 60 s only bound a timer that never writes.
    deadline = time.monotonic() + 60
    while len(ticks()) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    progress.trial_done(TrialRecord.model_construct(status="failed"))
    progress.stop()
    lines = out.getvalue().splitlines()
    assert lines[0] == "chaoseval run naive: 3 trial(s) to run"
    assert len(ticks()) >= 2, lines
    assert "about" in ticks()[0] and "left" in ticks()[0]
    assert lines[-1].startswith("chaoseval run naive: 2/3 trials (pass 1 fail 1 n/e 0)")
    assert lines[-1].endswith("(finished)")
    n = len(lines)
    time.sleep(0.15)
    assert len(out.getvalue().splitlines()) == n  # stopped means silent


AGENT = """\
from chaoseval import AgentOutput


class Quick:
{clock}
    async def run(self, episode):
        return AgentOutput(answer="nothing to do", gave_up=True)


def factory():
    return Quick()
"""


@pytest.mark.parametrize(
    ("module", "clock", "notice"),
    [("realclockagent", "", True), ("virtualclockagent", '    clock = "virtual"\n', False)],
)
def test_a_custom_agent_on_the_real_clock_gets_a_one_line_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, clock: str, notice: bool
) -> None:
    # One module name per case: a module imported once stays imported in this process.
    (tmp_path / f"{module}.py").write_text(AGENT.format(clock=clock))
    monkeypatch.chdir(tmp_path)
    args = ["--agent", f"{module}:factory", "-s", "vending-refund-log-down", "-n", "1"]
    res = CliRunner().invoke(app, ["run", *args, "--no-report", "--journal", "j.jsonl"])
    assert res.exit_code == 0, res.output
    notes = [line for line in res.output.splitlines() if "real clock" in line]
    assert len(notes) == (1 if notice else 0), res.output
    if notice:
        assert 'set clock = "virtual" on it' in notes[0]
    # CliRunner's stderr is no terminal: progress comes as plain lines, not a bar.
    assert f"chaoseval run {module}:factory: 1 trial(s) to run" in res.output
    assert "(finished)" in res.output


def test_scenarios_list_selects_like_run() -> None:
    runner = CliRunner()
    res = runner.invoke(app, ["scenarios", "list", "-s", "vending-*", "-s", "tag:nope"])
    assert res.exit_code == 0, res.output
    listed = {line.split()[1] for line in res.output.splitlines() if "vending-" in line}
    assert listed == {
        "vending-refund-not-dispensed",
        "vending-refund-log-down",
        "vending-refund-dispensed",
    }
