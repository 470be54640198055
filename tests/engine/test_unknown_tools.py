"""A call to a tool the scenario lacks is the agent's error: never a fault target."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app
from chaoseval.engine.runner import RunConfig, run
from chaoseval.engine.toolbox import unknown_tool_note
from chaoseval.errors import AgentVisibleError, ToolError
from chaoseval.model.records import Cell, PerturbationSpec
from chaoseval.seams.agent import AgentOutput, Episode, load_agent


class WrongToolsAgent:
    """Calls a tool from another domain first, then does the task's own calls."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        try:
            await episode.tools.call("lookup_order", order_id="A-1")
        except ToolError:
            pass
        try:
            await episode.tools.call("get_item", sku="SKU-100")
        except AgentVisibleError:
            return AgentOutput(answer="", gave_up=True)
        return AgentOutput(answer="done")


def test_unknown_tool_is_never_a_fault_target(tiny) -> None:
    # Every call that a perturbation sees fails: only get_item may carry a fault.
    always = PerturbationSpec(name="timeout", params={"probability": 1.0, "modes": ["raise"]})
    result = run(
        RunConfig(
            scenarios=[tiny],
            agent=WrongToolsAgent(),
            agent_name="wrong-tools",
            cells=[Cell(name="timeout", perturbations=[always])],
            trials=3,
            seed=1,
            journal=None,
        )
    )
    perturbed = [r for r in result.records if r.cell == "timeout"]
    assert len(perturbed) == 3
    for r in perturbed:
        unknown, known = r.trajectory.tool_steps()[:2]
        assert (unknown.tool, unknown.result_class, unknown.faults) == (
            "lookup_order",
            "tool_error",
            [],
        )
        assert "no tool named 'lookup_order'" in (unknown.error or "")
        assert known.tool == "get_item" and known.faults and known.result_class == "timeout"
        # One fault in the ledger, delivered through get_item, the only call it could target.
        assert [f.delivered for f in r.trajectory.faults] == [True]
    assert unknown_tool_note(result.records, [tiny]) is not None


@pytest.mark.slow
def test_run_says_when_most_trials_call_missing_tools(tmp_path: Path) -> None:
    (tmp_path / "wrongtools.py").write_text(
        textwrap.dedent(
            """
            from chaoseval.errors import ToolError
            from chaoseval.seams.agent import AgentOutput

            class Agent:
                clock = "virtual"

                async def run(self, episode):
                    try:
                        await episode.tools.call("lookup_order", order_id="A-1")
                    except ToolError:
                        pass
                    return AgentOutput(answer="no idea")

            def agent():
                return Agent()
            """
        )
    )
    args = [
        "run",
        "--agent",
        "wrongtools:agent",
        "--app-dir",
        str(tmp_path),
        "-s",
        "calendar*",
        "-n",
        "1",
        "--no-report",
        "--no-progress",
        "--journal",
        str(tmp_path / "j.jsonl"),
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    lines = [line for line in res.output.splitlines() if "does not have" in line]
    assert len(lines) == 1 and "lookup_order" in lines[0], res.output


def test_note_only_when_most_trials_call_missing_tools(tiny) -> None:
    def records(agent: object, trials: int) -> list:
        config = RunConfig(
            scenarios=[tiny],
            agent=agent,
            agent_name="a",
            cells=[],
            trials=trials,
            seed=1,
            journal=None,
        )
        return run(config).records

    wrong, right = records(WrongToolsAgent(), 2), records(load_agent("scripted"), 2)
    assert unknown_tool_note(wrong[:1] + right, [tiny]) is None  # 1 of 3
    assert unknown_tool_note(wrong + right, [tiny]) is None  # 2 of 4: not most
    note = unknown_tool_note(wrong + right[:1], [tiny])
    assert note is not None and note.startswith("2 of 3 trials") and "lookup_order (2)" in note
