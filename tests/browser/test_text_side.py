"""The text DOM side of the layout operations (no browser): slow_render and the late banner
follow the trial clock, and the operations a plugin records describe its text rendering."""

from __future__ import annotations

import pytest

from chaoseval.engine.domops import browser_ops
from chaoseval.engine.runner import RunConfig, run
from chaoseval.engine.ui import elements, ui_state
from chaoseval.errors import ToolError
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import ModelSettings
from chaoseval.seams.agent import Episode

REFUND = "ui-refund-admin"


class Probe:
    """Reads the page, clicks a button before and after its delay, keeps what it saw."""

    clock = "virtual"

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.errors: list[str] = []
        self.ops: list[dict[str, object]] = []

    async def run(self, episode: Episode) -> str:
        world = episode._observe.world  # type: ignore[union-attr]
        page = await episode.observe() or ""
        if not episode._observe.state.trajectory.faults:  # type: ignore[union-attr]
            return "the clean trial: not what this probe looks at"
        self.seen.append(page)
        target = "approve-refund"
        try:
            await episode.tools.call("click", element_id=target)
        except ToolError as exc:
            self.errors.append(str(exc))
        await episode.clock.sleep(2.0)
        self.seen.append(await episode.observe() or "")
        self.ops = browser_ops(ui_state(world), world.clock.monotonic())
        return "approved"


def _probe(cell: str) -> Probe:
    probe = Probe()
    run(
        RunConfig(
            scenarios=select(installed(), [REFUND]),
            agent=probe,
            agent_name="probe",
            cells=parse_cells([cell]),
            trials=1,
            seed=3,
            references=False,
        )
    )
    return probe


def test_slow_render_hides_the_controls_until_their_time() -> None:
    probe = _probe("slow_render:delay=1.5")
    # clean first, then slow_render: in the perturbed trial the button is not there at first
    first, later = probe.seen
    assert "approve-refund" not in {e.id for e in elements(first)}
    assert "approve-refund" in {e.id for e in elements(later)}
    assert any("yet" in e for e in probe.errors), probe.errors
    slow = [op for op in probe.ops if op["op"] == "slow"]
    assert slow and "approve-refund" in slow[0]["ids"] and slow[0]["delay"] == 0.0  # type: ignore[operator]


def test_late_banner_reaches_the_text_dom_after_its_delay() -> None:
    probe = _probe("layout_shift:banner=1.0")
    first, later = probe.seen
    assert "chaoseval-banner" not in first and "chaoseval-banner" in later
    kinds = [op["op"] for op in probe.ops]
    assert "banner" in kinds and ("rename" in kinds or "order" in kinds)
    # the browser gets the renames by the page's own ids, to the ids the text DOM shows
    shown = {e.id for e in elements(later)}
    assert all(op["to"] in shown for op in probe.ops if op["op"] == "rename")


@pytest.mark.parametrize("cell", ["modal"])
def test_a_dismissed_dialog_is_not_replayed(cell: str) -> None:
    probe = Probe()

    async def dismiss_then_ops(episode: Episode) -> str:
        page = await episode.observe() or ""
        if not any(e.dialog for e in elements(page)):
            return "the clean trial"
        dialog = next(e for e in elements(page) if e.dialog)
        await episode.tools.call("click", element_id=dialog.id)
        world = episode._observe.world  # type: ignore[union-attr]
        probe.ops = browser_ops(ui_state(world), 0.0)
        return "done"

    probe.run = dismiss_then_ops  # type: ignore[method-assign]
    run(
        RunConfig(
            scenarios=select(installed(), [REFUND]),
            agent=probe,
            agent_name="probe",
            cells=parse_cells([cell]),
            trials=1,
            seed=3,
            references=False,
        )
    )
    assert probe.ops == []


def test_simulated_agents_meet_slow_render_as_the_browser_ones_do() -> None:
    """The text rendering agrees with the browser: waiting for the controls survives, acting
    at once on a hard-coded id does not."""
    from chaoseval.seams.agent import load_agent

    outcomes = {}
    for name in ("naive", "resilient"):
        result = run(
            RunConfig(
                scenarios=select(installed(), [REFUND, "ui-checkout"]),
                agent=load_agent(name),
                agent_name=name,
                cells=parse_cells(["slow_render"]),
                trials=2,
                seed=3,
                model=ModelSettings(temperature=0.0),
                references=False,
            )
        )
        outcomes[name] = {r.status for r in result.records if r.cell == "slow_render"}
    assert outcomes == {"naive": {"failed"}, "resilient": {"passed"}}
