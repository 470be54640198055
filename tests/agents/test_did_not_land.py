"""A cell whose faults target a channel the agent never calls did not land, and the report's
note names the channel the agent never called."""

from __future__ import annotations

from chaoseval.analysis.aggregate import by_cell
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import AgentOutput
from chaoseval.seams.agent import Episode, load_agent


class Silent:
    """Answers at once: calls neither its model nor its tools."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        return AgentOutput(answer="nothing to do")


def _notes(agent: object, cell: str) -> tuple[str | None, str | None]:
    """The landing notes of clean and ``cell``."""
    records = run(
        RunConfig(
            scenarios=select(installed(), ["vending-refund-not-dispensed"]),
            agent=agent,  # type: ignore[arg-type]
            agent_name="probe",
            cells=parse_cells([cell]),
            trials=1,
            seed=1,
        )
    ).records
    clean, perturbed = by_cell(records, [1])
    return clean.landing_note(), perturbed.landing_note()


def test_the_note_names_the_channel_the_agent_never_called() -> None:
    clean, note = _notes(load_agent("scripted"), "model_error:probability=1")  # tools only
    assert clean is None
    assert (note or "").endswith("there the agent never called its model")

    _, note = _notes(Silent(), "timeout:probability=1")
    assert (note or "").endswith("there the agent never called its model or its tools")


def test_a_cell_that_landed_has_no_note() -> None:
    _, note = _notes(load_agent("scripted"), "timeout:probability=1,modes=raise")
    assert note is None
