"""The viewport perturbation and the accessibility rendering on the text side (no browser):
the narrow layout hides the action bars behind a menu in the text DOM, the click tool refuses
what the menu hides until it is opened, the simulated agents meet it as the browser agents do,
and the text DOM renders as an accessibility tree that follows the perturbations."""

from __future__ import annotations

from typing import Any

import pytest

from chaoseval.engine.a11y import aria_snapshot
from chaoseval.engine.domops import action_bars, collapse, menu_plans
from chaoseval.engine.runner import RunConfig, RunResult, run
from chaoseval.engine.ui import elements, page_action, ui_state
from chaoseval.errors import ConfigError, ToolError
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.device import Viewport
from chaoseval.model.records import ModelSettings
from chaoseval.seams.agent import Episode, load_agent

REFUND, CHECKOUT = "ui-refund-admin", "ui-checkout"


def _run(agent: Any, cells: list[str], tasks: list[str], trials: int = 2, **kw: Any) -> RunResult:
    return run(
        RunConfig(
            scenarios=kw.pop("scenarios", None) or select(installed(), tasks),
            agent=agent,
            agent_name="probe",
            cells=parse_cells(cells),
            trials=trials,
            seed=3,
            references=False,
            **kw,
        )
    )


class Probe:
    """Reads the page and its accessibility tree, clicks a hidden control, opens the menu."""

    clock = "virtual"

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    async def run(self, episode: Episode) -> str:
        world = episode._observe.world  # type: ignore[union-attr]
        page = await episode.observe() or ""
        seen: dict[str, Any] = {"page": page, "aria": aria_snapshot(page), "errors": []}
        self.seen.append(seen)
        menus = [e for e in elements(page) if e.controls]
        if not menus:
            return "nothing collapsed"
        try:
            await episode.tools.call("click", element_id="approve-refund")
        except ToolError as exc:
            seen["errors"].append(str(exc))
        await episode.tools.call("click", element_id=menus[0].id)
        seen["opened"] = await episode.observe() or ""
        seen["menus"] = {k: m.open for k, m in ui_state(world).menus.items()}
        await episode.tools.call("click", element_id="approve-refund")
        return f"Approved refund request {episode.task['request_id']}."


def test_the_narrow_layout_hides_the_action_bar_until_its_menu_opens() -> None:
    probe = Probe()
    result = _run(probe, ["viewport:sizes=[mobile]"], [REFUND], trials=1)
    clean, narrow = probe.seen
    assert "errors" in clean and "menu" not in clean["aria"].lower()
    hidden = {e.id: e.hidden_in for e in elements(narrow["page"])}
    assert hidden["approve-refund"] and hidden["nav-queue"] is None  # the nav link stays
    assert "not visible" in narrow["errors"][0] and "open the menu first" in narrow["errors"][0]
    assert narrow["menus"] == dict.fromkeys(narrow["menus"], True)
    assert all(e.hidden_in is None for e in elements(narrow["opened"]))
    # the accessibility tree shows the menu button, not what it hides, until it is opened
    assert 'button "More actions"' in narrow["aria"] and "Approve refund" not in narrow["aria"]
    assert "[expanded]" not in narrow["aria"]
    assert '"Approve refund"' in aria_snapshot(narrow["opened"])
    record = next(r for r in result.records if r.cell != "clean")
    (fault,) = record.trajectory.faults
    assert fault.kind == "viewport" and fault.delivered and fault.detail["width"] == 390
    assert record.status == "passed"


def test_one_device_per_trial_drawn_from_the_seed() -> None:
    from chaoseval.bundled.perturbations.viewport import ViewportShift

    plugin = ViewportShift.from_spec({"sizes": ["mobile", "tablet", "narrow", "412x915"]})
    draws = [plugin.device_for(7, REFUND, i) for i in range(12)]
    assert draws == [plugin.device_for(7, REFUND, i) for i in range(12)]
    assert {d.name for d in draws if d} == {"mobile", "tablet", "narrow", "412x915"}
    assert ViewportShift.from_spec({"probability": 0.0}).device_for(7, REFUND, 0) is None
    with pytest.raises(ConfigError, match="unknown device 'phablet'"):
        ViewportShift.from_spec({"sizes": ["phablet"]})


def test_a_device_crossing_no_breakpoint_is_no_fault() -> None:
    """A page designed for a narrow device does not change on another narrow one, and a wide
    device changes no layout: the cell says the fault did not land rather than 'survived'."""
    (scenario,) = select(installed(), [REFUND])
    mobile = scenario.model_copy(update={"viewport": Viewport.model_validate("mobile")})
    result = _run(load_agent("scripted"), ["viewport"], [], scenarios=[mobile])
    assert all(not r.trajectory.faults for r in result.records)
    result = _run(load_agent("scripted"), ["viewport:sizes=[wide]"], [REFUND])
    assert all(not r.trajectory.faults for r in result.records)


def test_scenario_viewport_forms() -> None:
    assert Viewport.model_validate("412x915").width == 412
    assert Viewport.model_validate({"width": 500, "height": 700, "touch": True}).touch
    assert Viewport.model_validate("mobile").playwright()["is_mobile"] is True
    with pytest.raises(ValueError, match="WIDTHxHEIGHT"):
        Viewport.model_validate("huge")


def test_simulated_agents_meet_the_narrow_layout_as_the_browser_ones_do() -> None:
    outcomes = {}
    for name in ("naive", "resilient"):
        result = _run(load_agent(name), ["viewport"], [REFUND, CHECKOUT],
                      model=ModelSettings(temperature=0.0))  # fmt: skip
        perturbed = [r for r in result.records if r.cell == "viewport"]
        outcomes[name] = {(r.status, r.root_cause) for r in perturbed}
    assert outcomes == {
        "naive": {("failed", "control_in_collapsed_menu")},
        "resilient": {("passed", None)},
    }


def test_collapse_keeps_renamed_bars_and_page_action_refuses_hidden_ids() -> None:
    page = '<main><div class="actions"><button id="a">A</button><b id="x">x</b></div></main>'
    (menu,) = menu_plans(page, 1)
    assert action_bars(page) == [("a", ["a"])]
    shown = collapse(page.replace('id="a"', 'id="btn-1"'), [menu], {"btn-1": "a"})
    assert [(e.id, e.hidden_in) for e in elements(shown)] == [
        (menu.toggle_id, None),
        ("btn-1", menu.menu_id),
    ]

    class World:
        pass

    world = World()
    state = ui_state(world)  # type: ignore[arg-type]
    state.menus = {menu.toggle_id: menu}
    with pytest.raises(ToolError, match="collapsed menu"):
        page_action(world, "a")  # type: ignore[arg-type]
    assert page_action(world, menu.toggle_id) == {"action": "menu", "status": "menu opened"}  # type: ignore[arg-type]
    assert page_action(world, "a") == "a"  # type: ignore[arg-type]


def test_the_accessibility_tree_follows_a_rename() -> None:
    probe = Probe()
    _run(probe, ["layout_shift:banner=null,relabel=1"], [REFUND], trials=1)
    clean, shifted = (seen["aria"] for seen in probe.seen)
    assert '- button "Approve refund"' in clean
    assert '- button "Approve refund"' not in shifted
    labels = [e.label for e in elements(probe.seen[1]["page"]) if e.role == "button"]
    assert all(f'- button "{label}"' in shifted for label in labels)


def test_a_yaml_scenario_names_its_device(tmp_path: Any) -> None:
    from pathlib import Path

    import chaoseval.bundled.scenarios as bundled
    from chaoseval.loading.yamlform import load_yaml_file

    text = (Path(bundled.__path__[0]) / "ui_desks.yaml").read_text()
    path = tmp_path / "desks.yaml"
    for value, width in (("tablet", 768), ("{width: 500, height: 700}", 500)):
        path.write_text(text.replace("\n  ui: |", f"\n  viewport: {value}\n  ui: |", 1))
        first, second, *_ = load_yaml_file(path)
        assert (first.viewport.width, second.viewport.name) == (width, "desktop")
    path.write_text(text.replace("\n  ui: |", "\n  viewport: phablet\n  ui: |", 1))
    with pytest.raises(Exception, match="unknown device 'phablet'"):
        load_yaml_file(path)
