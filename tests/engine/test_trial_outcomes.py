"""How a trial ends when the agent or a plugin misbehaves: the run always completes."""

from __future__ import annotations

from typing import Any, ClassVar

import anyio
import pytest

from chaoseval.engine.runner import RunConfig, run
from chaoseval.model.records import Cell, PerturbationSpec
from chaoseval.seams.agent import AgentOutput, Episode, load_agent
from chaoseval.seams.perturbation import CallNext, Perturbation, PerturbationContext, perturbation


class RaisingAgent:
    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        await episode.tools.call("get_item", sku="SKU-100")
        raise RuntimeError("agent bug")


class HangingAgent:
    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


class GarbageAgent:
    clock = "virtual"

    async def run(self, episode: Episode) -> Any:
        return 42


class VirtualHangAgent:
    """Waits on the trial clock forever: the virtual trial budget ends it."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        while True:
            await episode.clock.sleep(10)


class CatchAllAgent:
    """Swallows every exception from its tools: a harness error must still not be scored."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        try:
            await episode.tools.call("get_item", sku="SKU-100")
        except Exception:
            pass
        await episode.tools.call("add_to_cart", sku="SKU-100")
        return AgentOutput(answer="done")


@perturbation("test-raises")
class RaisingPlugin(Perturbation):
    """A buggy plugin."""

    channel: ClassVar = "tool"

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        raise KeyError("plugin bug")


def _run(scenario, agent, cells=(), trials=3, **kw):
    return run(
        RunConfig(
            scenarios=[scenario],
            agent=agent,
            agent_name=type(agent).__name__,
            cells=list(cells),
            trials=trials,
            seed=1,
            journal=None,
            **kw,
        )
    )


def test_agent_that_raises_is_a_crash_failure(tiny):
    result = _run(tiny, RaisingAgent())
    assert len(result.records) == 3
    assert {r.status for r in result.records} == {"failed"}
    assert {r.root_cause for r in result.records} == {"crash"}
    assert "agent bug" in result.records[0].error


def test_agent_that_hangs_is_stopped_and_failed_as_timeout(tiny):
    result = _run(tiny, HangingAgent(), trials=2, wall_timeout=0.2)
    assert [(r.status, r.root_cause) for r in result.records] == [("failed", "timeout")] * 2


def test_agent_that_waits_forever_on_virtual_time_hits_the_trial_budget(tiny):
    result = _run(tiny, VirtualHangAgent(), trials=1)
    (record,) = result.records
    assert (record.status, record.root_cause) == ("failed", "timeout")
    assert record.sim_seconds == pytest.approx(tiny.budgets.trial_timeout)


def test_agent_that_returns_garbage_is_invalid_output(tiny):
    result = _run(tiny, GarbageAgent(), trials=2)
    assert [(r.status, r.root_cause) for r in result.records] == [("failed", "invalid_output")] * 2
    assert "int" in result.records[0].error


def test_plugin_that_raises_makes_trials_not_evaluable_not_failed(tiny):
    cell = Cell(name="buggy", perturbations=[PerturbationSpec(name="test-raises")])
    result = _run(tiny, load_agent("scripted"), cells=[cell])
    clean = [r for r in result.records if r.cell == "clean"]
    buggy = [r for r in result.records if r.cell == "buggy"]
    assert {r.status for r in clean} == {"passed"}
    assert len(buggy) == 3
    assert {r.status for r in buggy} == {"not_evaluable"}
    assert {r.root_cause for r in buggy} == {"plugin_error"}
    assert "plugin bug" in buggy[0].error


def test_harness_error_swallowed_by_agent_is_still_not_evaluable(tiny):
    cell = Cell(
        name="buggy",
        perturbations=[PerturbationSpec(name="test-raises", params={"first_n": 1})],
    )
    result = _run(tiny, CatchAllAgent(), cells=[cell], trials=1)
    buggy = [r for r in result.records if r.cell == "buggy"]
    assert [r.status for r in buggy] == ["not_evaluable"]


def test_scripted_agent_passes_and_world_is_fresh_each_trial(tiny):
    result = _run(tiny, load_agent("scripted"), trials=4)
    assert [r.status for r in result.records] == ["passed"] * 4
    # Operation ids restart per trial: no state leaks between repeats.
    ids = [r.trajectory.steps[-2].result for r in result.records]
    assert len({str(i) for i in ids}) == 1


def test_forbidden_tool_is_a_safety_veto_even_when_the_task_succeeds(tiny):
    from chaoseval.model.scenario import Policy

    scenario = tiny.model_copy(update={"policy": Policy(allowed_tools=["add_to_cart"])})
    result = _run(scenario, load_agent("scripted"), trials=1)
    (record,) = result.records
    assert record.status == "failed"
    assert record.root_cause == "safety_violation"
    assert record.vetoes[0].kind == "safety"
    assert all(c.passed for c in record.checks)


def test_made_up_id_in_answer_is_a_hallucination(tiny):
    class Liar:
        clock = "virtual"

        async def run(self, episode: Episode) -> AgentOutput:
            await episode.tools.call("add_to_cart", sku="SKU-100")
            return AgentOutput(answer="Added SKU-100; see also SKU-999.")

    (record,) = _run(tiny, Liar(), trials=1).records
    assert (record.status, record.root_cause) == ("failed", "hallucination")
    assert "SKU-999" in record.vetoes[0].detail


def test_step_budget(tiny):
    class Looper:
        clock = "virtual"

        async def run(self, episode: Episode) -> AgentOutput:
            while True:
                await episode.tools.call("get_item", sku="SKU-100")

    (record,) = _run(tiny, Looper(), trials=1).records
    assert (record.status, record.root_cause) == ("failed", "budget_exceeded")
    assert record.steps == tiny.budgets.max_steps + 1


def test_unknown_perturbation_stops_the_run_before_it_starts(tiny):
    from chaoseval.errors import ConfigError

    cell = Cell(name="x", perturbations=[PerturbationSpec(name="latncy")])
    with pytest.raises(ConfigError, match="did you mean 'latency'"):
        _run(tiny, load_agent("scripted"), cells=[cell])


def test_bad_plugin_parameters_name_the_parameter(tiny):
    from chaoseval.errors import ConfigError

    cell = Cell(name="x", perturbations=[PerturbationSpec(name="latency", params={"mean": -1})])
    with pytest.raises(ConfigError, match="mean"):
        _run(tiny, load_agent("scripted"), cells=[cell])


def test_real_clock_agent_waits_for_real_and_hangs_end_at_the_call_deadline(tiny):
    """An agent without ``clock = "virtual"`` runs on wall time: faults cost real seconds."""
    from chaoseval.agents.actor import Actor, run_solution
    from chaoseval.model.scenario import Budgets

    class RealAgent:  # no clock attribute: real time
        async def run(self, episode: Episode) -> AgentOutput:
            return await run_solution(Actor(episode), episode.reference)

    # Every call of the clean and slow cells must end within the call deadline and their
    # trials within the trial's: 2 s for a 0.05 s latency and 60 s for a trial, so a loaded
    # machine's late wake-ups do not cut them (0.2 s and 5 s before); the hang still ends at
    # the call deadline, far from the trial's.
    scenario = tiny.model_copy(
        update={"budgets": Budgets(max_steps=6, call_timeout=2, trial_timeout=60)}
    )
    cells = [
        Cell(
            name="hang",
            perturbations=[
                PerturbationSpec(name="timeout", params={"probability": 1, "tools": ["get_item"]})
            ],
        ),
        Cell(
            name="slow",
            perturbations=[
                PerturbationSpec(
                    name="latency", params={"mean": 0.05, "jitter": 0.01, "distribution": "uniform"}
                )
            ],
        ),
    ]
    result = _run(scenario, RealAgent(), cells=cells, trials=1)
    by_cell = {r.cell: r for r in result.records}
    assert by_cell["clean"].status == "passed"
    assert by_cell["slow"].status == "passed" and by_cell["slow"].clock == "real"
    assert by_cell["slow"].wall_seconds >= 0.05
    hang = by_cell["hang"]
    assert (hang.status, hang.root_cause) == ("failed", "timeout")
    assert 1.5 <= hang.wall_seconds < 30  # the call's 2 s deadline, not the trial's 60 s
    assert hang.trajectory.faults[0].delivered


def test_first_n_counts_calls_to_the_selected_tools(tiny):
    """``tools=add_to_cart,first_n=1`` hits the first add_to_cart call, even as call #2."""
    cell = Cell(
        name="t",
        perturbations=[
            PerturbationSpec(
                name="timeout",
                params={
                    "tools": ["add_to_cart"],
                    "first_n": 1,
                    "probability": 1,
                    "modes": ["raise"],
                },
            )
        ],
    )
    result = _run(tiny, load_agent("scripted"), cells=[cell], trials=1)
    (record,) = [r for r in result.records if r.cell == "t"]
    assert [(f.kind, f.call_index, f.delivered) for f in record.trajectory.faults] == [
        ("timeout", 1, True)
    ]
