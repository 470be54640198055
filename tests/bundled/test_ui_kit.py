"""The YAML UI scenarios' click tool (scenarios/_ui_kit.py): a button updates the task's row and
the page it re-renders, a decision is taken once, a radio choice is page state until saved."""

from __future__ import annotations

import pytest

from chaoseval.bundled.scenarios import bundled
from chaoseval.engine.ui import render
from chaoseval.errors import ToolError
from chaoseval.model.clock import VirtualClock
from chaoseval.model.world import fresh_world

BY_ID = {s.id: s for s in bundled()}


def test_a_decision_button_updates_the_row_and_the_page_once() -> None:
    scenario = BY_ID["ui-return-approve"]
    tables, givens = scenario.build(5)
    click = scenario.tool("click")
    with fresh_world(tables, VirtualClock(scenario.start_time), 5, givens) as world:
        rid = world.givens["return_id"]
        assert ">pending<" in render(scenario, world)
        done = click.fn(world, element_id="approve-return")
        assert done["ref"] == rid and world.get("returns", "return_id", rid)["status"] == "approved"
        assert ">approved<" in render(scenario, world)
        with pytest.raises(ToolError, match="status is 'approved'"):
            click.fn(world, element_id="reject-return")
        assert [r["status"] for r in world.table("returns")].count("pending") == 4


def test_a_radio_choice_is_saved_only_by_the_save_button() -> None:
    scenario = BY_ID["ui-ticket-assign-billing"]
    tables, givens = scenario.build(2)
    click = scenario.tool("click")
    with fresh_world(tables, VirtualClock(scenario.start_time), 2, givens) as world:
        tid = world.givens["ticket_id"]
        click.fn(world, element_id="team-tech")
        click.fn(world, element_id="team-billing")
        assert world.get("tickets", "ticket_id", tid)["team"] == "general"
        click.fn(world, element_id="save-team")
        assert world.get("tickets", "ticket_id", tid)["team"] == "billing"
        assert 'Team: <span id="team">billing</span>' in render(scenario, world)
        with pytest.raises(ToolError, match="no clickable element"):
            click.fn(world, element_id="team-finance")
