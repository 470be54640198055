"""Adversarial search: finds, shrinks, confirms and saves a schedule that breaks ``naive``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaoseval.engine.runner import RunConfig, run
from chaoseval.investigate.schedules import fault_strategy, plugin_parameters, searchable_plugins
from chaoseval.investigate.search import evaluate, make_cell, search
from chaoseval.loading.files import load_paths, select
from chaoseval.model.cells import parse_cells
from chaoseval.seams.agent import load_agent
from chaoseval.seams.perturbation import registry
from chaoseval.store.journal import read_journal

SCENARIO = "vending-refund-not-dispensed"
# The bundled file itself, so a colleague's half-written scenario elsewhere cannot break these.
VENDING = Path(__file__).resolve().parents[2] / "scenarios" / "vending.py"


# The first-party plugins: colleagues' plugins in progress must not change what these find.
PLUGINS = ["latency", "timeout"]
KW = {"seed": 3, "trials": 3, "budget": 60, "confirm": 10, "plugins": PLUGINS}


@pytest.fixture(scope="module")
def scenario():
    return select(load_paths([VENDING]), [SCENARIO])[0]


@pytest.fixture(scope="module")
def found(scenario):
    return search(scenario, load_agent("naive"), agent_name="naive", **KW)


def test_search_shrinks_to_one_fault_that_breaks_naive(found, scenario) -> None:
    specs = found.cell.perturbations
    assert len(specs) == 1  # shrunk: a single fault suffices against a harness with no retries
    params = specs[0].params
    assert params.get("probability", 1.0) == 1.0
    assert not {"first_n", "after_n", "on_turn"} & set(params)  # the simplest trigger
    # Confirmed on fresh trials: most fail with the fault delivered (a trial whose policy
    # stops before reaching the faulted call fails without it, and is not counted).
    conf = found.confirmation
    assert len(conf.records) == 10
    assert conf.failure_rate >= 0.8
    assert conf.failure_rate > found.clean_failure_rate
    assert found.confirmed and not found.rejected
    assert conf.broken == sum(
        r.status == "failed" and r.faults_delivered() > 0 for r in conf.records
    )


def test_search_is_deterministic_in_its_seed(found, scenario) -> None:
    again = search(scenario, load_agent("naive"), agent_name="naive", **KW)
    assert again.cell == found.cell
    assert again.history == found.history


def test_saved_spec_fails_again_through_the_runner(found, scenario, tmp_path: Path) -> None:
    spec = tmp_path / "found.json"
    found.save(spec)
    cells = parse_cells([str(spec)])
    assert [c.perturbations for c in cells] == [found.cell.perturbations]
    result = run(
        RunConfig(
            scenarios=[scenario],
            agent=load_agent("naive"),
            agent_name="naive",
            cells=cells,
            trials=6,
            seed=11,
        )
    )
    found_cell = [r for r in result.records if r.cell == cells[0].name]
    assert len(found_cell) == 6
    assert all(r.status == "failed" for r in found_cell)
    clean = [r for r in result.records if r.cell == "clean"]
    assert any(r.status == "passed" for r in clean)  # the fault, not the scenario, breaks it


def test_saved_spec_through_the_cli(found, tmp_path: Path) -> None:
    spec = tmp_path / "found.json"
    found.save(spec)
    journal = tmp_path / "j.jsonl"
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("chaoseval")),
            "run",
            "--agent",
            "naive",
            "-s",
            SCENARIO,
            "--scenarios",
            str(VENDING),
            "-p",
            str(spec),
            "-n",
            "4",
            "--k",
            "1",
            "--journal",
            str(journal),
            "--no-progress",
            "--no-report",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    records = [r for r in read_journal(journal).records if r.cell == found.cell.name]
    assert [r.status for r in records] == ["failed"] * 4
    provenance = json.loads(spec.read_text())["found_by"]
    assert provenance["confirmed_failure_rate"] == round(found.confirmation.failure_rate, 4)


def test_search_respects_target_tools(scenario) -> None:
    result = search(
        scenario,
        load_agent("naive"),
        agent_name="naive",
        seed=1,
        trials=2,
        budget=40,
        confirm=4,
        tools=["issue_refund"],
        plugins=PLUGINS,
    )
    assert all(p.params["tools"] == ["issue_refund"] for p in result.cell.perturbations)
    hit = {
        r.trajectory.steps[f.step].tool
        for r in result.confirmation.records
        for f in r.trajectory.faults
        if f.delivered
    }
    assert hit == {"issue_refund"}


def test_every_registered_plugin_is_searchable_by_its_params(scenario) -> None:
    plugins = searchable_plugins(scenario, channels=("tool",))
    # Those that can reach the scenario at all: drift needs declared drift points.
    tool_plugins = [
        n for n, c in registry.items() if c.channel == "tool" and c.applies_to(scenario)
    ]
    assert sorted(plugins) == sorted(tool_plugins) and "drift" not in plugins
    assert "modes" in plugin_parameters(plugins["timeout"])
    assert "conflict" in plugin_parameters(registry.get("drift"))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_drawn_faults_are_valid_specs(data) -> None:
    scenario = select(load_paths([VENDING]), [SCENARIO])[0]
    plugins = searchable_plugins(scenario, PLUGINS)
    spec = data.draw(fault_strategy(plugins, ["lookup_order", "*"], 8))
    cls = registry.get(spec.name)
    cls.from_spec(spec.params)  # raises ConfigError when the drawn parameters are invalid
    ev = evaluate(scenario, make_cell([spec]), load_agent("naive"), agent_name="naive", trials=1)
    assert ev.records[0].status in ("passed", "failed")


def _record(cell, index: int, failed: bool):
    from datetime import UTC, datetime

    from chaoseval.model.records import ModelSettings, TrialRecord
    from chaoseval.model.trajectory import Fault, Trajectory

    traj = Trajectory(faults=[Fault(perturbation="x", channel="tool", kind="x", delivered=True)])
    return TrialRecord(
        run_id="t",
        trial_id=f"s/{cell.name}/{index}",
        scenario="s",
        cell=cell.name,
        index=index,
        seed=index,
        world_seed=0,
        agent="a",
        model=ModelSettings(),
        status="failed" if failed else "passed",
        trajectory=traj,
        started_at=datetime.now(UTC),
    )


def test_a_find_that_does_not_confirm_is_rejected_and_searched_again(scenario, monkeypatch) -> None:
    """A schedule that broke the agent on the search's few trials by luck is not reported as
    confirmed: the search rules it out, tries again, and says so."""
    import chaoseval.investigate.search as search_module
    from chaoseval.investigate.search import Evaluation

    def lucky(scenario, cell, agent, *, agent_name, model, seed, trials, wall_timeout):
        if cell.is_clean:
            return Evaluation(cell, [_record(cell, i, False) for i in range(trials)])
        if seed == 3:  # the search's own trials: every schedule looks like it breaks the agent
            return Evaluation(cell, [_record(cell, i, True) for i in range(trials)])
        return Evaluation(cell, [_record(cell, i, i % 2 == 0) for i in range(trials)])

    monkeypatch.setattr(search_module, "evaluate", lucky)
    result = search(
        scenario, load_agent("naive"), agent_name="naive", rounds=2, confirm_rate=0.8, **KW
    )
    assert not result.confirmed
    assert len(result.rejected) == 2
    assert len({name for name, _ in result.rejected}) == 2  # the second round found another
    assert result.confirmation.failure_rate == 0.5
    assert result.spec()["found_by"]["confirmed"] is False
