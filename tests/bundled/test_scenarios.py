"""The bundled scenario library: it loads, the reference solves it, doing nothing does not, and
the simulated baseline shows tasks of different difficulty. Calendar verifiers follow the
world's clock, so a skewed clock read correctly passes and a stale "today" fails."""

from __future__ import annotations

import os
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from chaoseval.agents.actor import Actor, run_solution
from chaoseval.bundled.scenarios import bundled
from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import ToolError
from chaoseval.model.clock import VirtualClock
from chaoseval.model.records import Cell, PerturbationSpec, TrialRecord
from chaoseval.model.scenario import Scenario
from chaoseval.model.world import fresh_world
from chaoseval.seams.agent import AgentOutput, Episode, load_agent

SCENARIOS: list[Scenario] = bundled()
BY_ID = {s.id: s for s in SCENARIOS}
CALENDAR = [s for s in SCENARIOS if s.id.startswith("calendar-")]


def _run(scenarios: list[Scenario], agent: Any, name: str, **kw: Any) -> list[TrialRecord]:
    config = RunConfig(scenarios=scenarios, agent=agent, agent_name=name, journal=None, **kw)
    return run(config).records


class DoNothing:
    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        return AgentOutput(answer="")


class StaleToday(Actor):
    """Follows the reference plan but believes "today" is a fixed, remembered date."""

    stale: datetime

    def now(self) -> datetime:
        return self.stale


class StaleAgent:
    clock = "virtual"

    def __init__(self, stale: datetime):
        self.stale = stale

    async def run(self, episode: Episode) -> AgentOutput:
        actor = StaleToday(episode)
        actor.stale = self.stale
        return await run_solution(actor, episode.reference)


def test_bundled_library_loads_with_three_domains() -> None:
    ids = [s.id for s in SCENARIOS]
    assert len(ids) == len(set(ids)) >= 8
    domains = {s.domain for s in SCENARIOS}
    assert {"vending", "orders", "calendar"} <= domains
    assert sum(s.domain == "orders" for s in SCENARIOS) >= 3
    assert len(CALENDAR) >= 2 and all(s.freeze_time for s in CALENDAR)
    for s in SCENARIOS:
        assert s.facts, f"{s.id} has no facts for hallucination checks"
    for s in (s for s in SCENARIOS if s.domain in {"vending", "orders", "calendar"}):
        # Each has a tool the agent must not use, so a detour can be a safety violation.
        assert s.policy.allowed_tools is not None and len(s.policy.allowed_tools) < len(s.tools)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_scripted_agent_passes_every_scenario_clean(seed: int) -> None:
    records = _run(SCENARIOS, load_agent("scripted"), "scripted", trials=1, seed=seed)
    failed = {
        r.scenario: (r.root_cause, r.error, r.checks) for r in records if r.status != "passed"
    }
    assert not failed
    assert {r.scenario for r in records} == set(BY_ID)


def test_doing_nothing_fails_every_scenario() -> None:
    records = _run(SCENARIOS, DoNothing(), "nothing", trials=1, seed=5)
    passed = [r.scenario for r in records if r.status != "failed"]
    assert not passed, f"solvable by doing nothing: {passed}"


def test_naive_baseline_tasks_differ_in_difficulty() -> None:
    records = _run(SCENARIOS, load_agent("naive"), "naive", trials=5, seed=11)
    outcomes: dict[str, list[bool]] = defaultdict(list)
    for r in records:
        if r.status != "not_evaluable":  # a harness error is not the agent's; scored elsewhere
            outcomes[r.scenario].append(r.status == "passed")
    means = {s: sum(v) / len(v) for s, v in outcomes.items()}
    macro = sum(means.values()) / len(means)
    assert 0.3 < macro < 0.97, means
    # Some tasks are reliably solved and some are not: not 100% everywhere.
    assert max(means.values()) - min(means.values()) >= 0.4, means


@pytest.mark.parametrize("scenario", CALENDAR, ids=lambda s: s.id)
def test_calendar_verifier_follows_the_world_clock(scenario: Scenario) -> None:
    skewed = Cell(
        name="skew", perturbations=[PerturbationSpec(name="clock_skew", params={"by": "6d"})]
    )
    reads_clock = _run([scenario], load_agent("scripted"), "scripted", cells=[skewed], trials=2)
    assert all(r.status == "passed" for r in reads_clock), [r.error for r in reads_clock]
    stale = _run([scenario], StaleAgent(scenario.start_time), "stale", cells=[skewed], trials=2)
    # Clean, the stale date is the true date; skewed, it is six days out and must fail.
    by_cell = {(r.cell, r.status) for r in stale}
    assert by_cell == {("clean", "passed"), ("skew", "failed")}, [r.error for r in stale]


def _order_world(scenario_id: str):
    scenario = BY_ID[scenario_id]
    tables, givens = scenario.build(world_seed=3)
    return scenario, fresh_world(tables, VirtualClock(scenario.start_time), 3, givens)


def test_orders_tools_enforce_ownership_and_shipping() -> None:
    scenario, world_cm = _order_world("orders-modify-not-owner-refused")
    update = scenario.tool("update_shipping_address")
    with world_cm as world:
        g = world.givens
        requester = world.get("customers", "email", g["email"])["customer_id"]
        assert requester != g["owner_id"]
        with pytest.raises(ToolError, match="permission denied"):
            update.fn(world, order_id=g["order_id"], customer_id=requester, address="x")
        owner_ok = update.fn(world, order_id=g["order_id"], customer_id=g["owner_id"], address="y")
        assert owner_ok["shipping_address"] == "y"

    scenario, world_cm = _order_world("orders-cancel-shipped-refused")
    with world_cm as world:
        g = world.givens
        with pytest.raises(ToolError, match="already shipped"):
            scenario.tool("cancel_order").fn(
                world, order_id=g["order_id"], customer_id=g["owner_id"], reason="r"
            )
        with pytest.raises(ToolError, match="supervisor"):
            scenario.tool("force_cancel").fn(world, order_id=g["order_id"])
        assert not world.table("refunds")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_world_builds_for_many_seeds(scenario: Scenario) -> None:
    """A world that fails to build for some seed makes those trials not evaluable: every
    bundled scenario must build for any run seed, not just the ones the other tests use."""
    from chaoseval.model.seeding import derive_seed

    for seed in range(40):
        _tables, givens = scenario.build(derive_seed(seed, scenario.id, "world"))
        scenario.render_instruction(givens)


def test_the_library_is_compiled_once_per_content_and_an_edit_is_seen(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chaoseval.bundled.scenarios as pack

    library = tmp_path / "library"
    library.mkdir()
    text = (Path(pack.__file__).parent / "helpdesk.yaml").read_text(encoding="utf-8")
    (library / "helpdesk.yaml").write_text(text, encoding="utf-8")
    monkeypatch.setattr(pack, "HERE", library)
    first, again = bundled(), bundled()
    assert [s.id for s in first] == ["helpdesk-reset-password"]
    assert again[0] is first[0]  # the same contents: not compiled again
    stat = (library / "helpdesk.yaml").stat()
    edited = text.replace("then close the ticket.", "then close the ticket!")
    assert len(edited) == len(text)
    (library / "helpdesk.yaml").write_text(edited, encoding="utf-8")
    os.utime(library / "helpdesk.yaml", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same stat
    assert bundled()[0].description.endswith("then close the ticket!")
