"""The trials' loop: the heap the process started it with is out of the collector's passes
while it runs, and back in them (collectable) once it ends; the youngest generation waits for
more new objects meanwhile."""

from __future__ import annotations

import gc
import weakref

from chaoseval.engine.loops import YOUNG, run_loop
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.records import AgentOutput
from chaoseval.seams.agent import Episode


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


async def _seen() -> tuple[int, bool]:
    made_before = _MADE[0]
    gc.collect()  # a full pass: the frozen cycle made before the loop is not collected
    return gc.get_freeze_count(), made_before() is not None


_MADE: list[weakref.ref[_Node]] = []


def test_the_startup_heap_is_frozen_while_the_loop_runs_and_thawed_after() -> None:
    node = _Node()
    _MADE[:] = [weakref.ref(node)]
    del node  # garbage now, but only a collection can tell
    frozen, alive = run_loop(_seen)
    assert frozen > 0 and alive  # out of the passes while the trials ran
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert _MADE[0]() is None  # thawed: garbage made before the loop is collected after


class _Counting:
    clock = "virtual"

    def __init__(self) -> None:
        self.frozen = 0

    async def run(self, episode: Episode) -> AgentOutput:
        self.frozen = gc.get_freeze_count()
        return AgentOutput(answer="none")


def test_a_run_s_trials_run_on_that_loop() -> None:
    agent = _Counting()
    scenarios = select(installed(), ["vending-refund-not-dispensed"])
    run(RunConfig(scenarios=scenarios, agent=agent, agent_name="counting", trials=1,
                  references=False))  # fmt: skip
    assert agent.frozen > 0
    assert gc.get_freeze_count() == 0


async def _thresholds() -> tuple[int, ...]:
    return gc.get_threshold()


def test_the_young_generation_waits_for_more_objects_while_the_loop_runs() -> None:
    before = gc.get_threshold()
    inside = run_loop(_thresholds)
    assert inside == (max(YOUNG, before[0]), *before[1:])
    assert gc.get_threshold() == before  # restored


class _Costly:
    """A result whose repr is counted: a run's result holds every trial's record."""

    reprs = 0

    def __repr__(self) -> str:
        _Costly.reprs += 1
        return "costly"


async def _costly() -> _Costly:
    return _Costly()


def test_the_loop_s_result_is_handed_back_without_being_repr_d() -> None:
    # asyncio.Runner.run, on the main thread, asks signal.getsignal whether its SIGINT
    # handler is still set; on 3.11 that formats a ValueError with the handler's repr, which
    # holds the main task's, its result included: a whole RunResult written out and thrown
    # away (172 ms at the end of a trial of 6,000 steps: bench_wire's).
    _Costly.reprs = 0
    result = run_loop(_costly)
    assert isinstance(result, _Costly)
    assert _Costly.reprs == 0
