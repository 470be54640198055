"""A world's temp dir is made only when read, also through the judge's initial-world view."""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path

import pytest

from chaoseval.engine.judge import find_hallucinations
from chaoseval.model.clock import VirtualClock
from chaoseval.model.world import World, fresh_world
from chaoseval.seams.agent import AgentOutput
from tests.conftest import make_scenario


def test_the_judge_reads_the_initial_world_without_making_a_temp_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # this test's own temp dirs
    scenario = make_scenario()
    tables = {"items": [{"sku": "SKU-1"}]}
    with fresh_world(tables, VirtualClock(datetime(2026, 1, 1)), 1, {}) as world:
        cited = AgentOutput(answer="added SKU-1 and SKU-9")
        vetoes = find_hallucinations(scenario, world, cited, initial=tables)
        assert [v.detail for v in vetoes] == ["sku 'SKU-9' does not exist"]
        assert not list(tmp_path.iterdir())  # no tool and no fact read it: none made


def test_a_view_over_other_tables_shares_the_temp_dir_made_on_the_world() -> None:
    clock = VirtualClock(datetime(2026, 1, 1))
    world = World(tables={"t": [{"a": 1}]}, clock=clock, seed=3)
    view = world.over({"t": []})
    assert view.tables == {"t": []} and (view.clock, view.seed) == (clock, 3)
    made = view.tmpdir  # read first through the view: made on the world, which owns it
    assert made.is_dir() and world.tmpdir == made
    world.release()
    made_again = World(tables={}, clock=clock, seed=3)
    made_again.tmpdir = made
    assert made_again.over({}).tmpdir == made  # an existing dir is passed on as it is


def test_showing_or_comparing_a_world_makes_no_temp_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """repr (a traceback, a log line) and == read every dataclass field: each made a temp dir,
    and one made after the trial released its world was never removed."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    clock = VirtualClock(datetime(2026, 1, 1))
    world = World(tables={"t": [{"a": 1}]}, clock=clock, seed=3)
    world.release()
    assert "tables={'t': [{'a': 1}]}" in repr(world)
    assert world != World(tables={"t": [{"a": 1}]}, clock=clock, seed=3)  # reads every field
    assert not list(tmp_path.iterdir())
