"""``contracts:`` in the YAML form: compiled like ``checks:`` and judged the same way."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import ScenarioError, ToolTimeout
from chaoseval.loading.files import load_paths
from chaoseval.model.cells import parse_cells
from chaoseval.seams.agent import AgentOutput, Episode

DOC = """\
id: escalate-test
description: the order service may hang; then escalating is right
domain: shop
instruction: "Ship {order_id}"
tables:
  orders: [{order_id: A-1, status: pending}]
  notes: []
givens: {order_id: A-1}
tools:
  get_order: {kind: lookup, table: orders, key: order_id}
  add_note:
    kind: create
    table: notes
    args: {order_id: str, text: str}
    id: {column: note_id, prefix: NT}
checks:
  - expect: "tables.orders[order_id={order_id}].status == shipped"
contracts:
  - name: order service down
    tools: [TOOL]
    faults: [timeout]
    checks:
      - expect: "count(tables.notes) == 1"
      - answer_contains: escalated
solution:
  steps:
    - {call: get_order, args: {order_id: "{order_id}"}}
  answer: "done"
"""


class Escalator:
    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        try:
            await episode.tools.call("get_order", order_id="A-1")
        except ToolTimeout:
            await episode.tools.call("add_note", order_id="A-1", text="service down")
            return AgentOutput(answer="escalated A-1")
        return AgentOutput(answer="looked at A-1")


def _load(tmp_path: Path, tool: str):
    path = tmp_path / "escalate.yaml"
    path.write_text(DOC.replace("TOOL", tool))
    return load_paths([path])


def test_a_yaml_contract_is_judged_when_its_fault_lands(tmp_path: Path) -> None:
    (scenario,) = _load(tmp_path, "get_order")
    assert [c.name for c in scenario.contracts] == ["order service down"]
    records = run(
        RunConfig(
            scenarios=[scenario],
            agent=Escalator(),
            agent_name="escalator",
            cells=parse_cells(["timeout:probability=1,modes=[hang],tools=get_order"]),
            trials=1,
            references=False,
        )
    ).records
    by_cell = {r.cell == "clean": r for r in records}
    assert by_cell[True].status == "failed" and by_cell[True].contracts == []
    assert by_cell[False].status == "passed"
    assert [c.held for c in by_cell[False].contracts] == [True]


def test_a_yaml_contract_naming_a_missing_tool_is_an_error_at_its_line(tmp_path: Path) -> None:
    with pytest.raises(
        ScenarioError,
        match=r"escalate.yaml:20: contracts\[0\]\.tools\[0\]: no tool named 'get_ordr'; did you "
        r"mean 'get_order'",
    ):
        _load(tmp_path, "get_ordr")
