"""The ``click`` tool of the YAML UI scenarios: a page's buttons mapped to row updates.

The YAML form has no click kind of its own, so a UI scenario names this factory
(``kind: python, function: "chaoseval.bundled.scenarios._ui_kit:ui_buttons"``) and lists its
buttons under ``with:``. Every button acts on the task's row (``givens[key]`` in ``table``):

- ``expect: {column: value}``: the row must hold these values, else a ToolError the agent sees
  (a decision already taken, a form not filled in);
- ``set: {column: value}``: written to the row and to the givens, because the page re-renders
  from the givens; a value ``"{name}"`` takes the given ``name`` (e.g. a choice made earlier);
- ``page: {name: value}``: page state only (a radio choice not saved yet);
- ``status``: the text the click returns (``{value}`` is the row's key); none of the keys: a
  navigation link that changes nothing.

Clicks go through ``chaoseval.engine.ui.click_tool``, so layout and modal perturbations reach
the same ids in the text DOM and in the browser's page server.
"""

from __future__ import annotations

from typing import Any

from chaoseval.engine.ui import Action, click_tool
from chaoseval.errors import ToolError
from chaoseval.loading.yamlform import custom_tool
from chaoseval.model.scenario import ToolSpec


def _button(table: str, key: str, element_id: str, spec: dict[str, Any]) -> Action:
    expect: dict[str, Any] = dict(spec.get("expect") or {})
    sets: dict[str, Any] = dict(spec.get("set") or {})
    page: dict[str, Any] = dict(spec.get("page") or {})
    status = str(spec.get("status") or f"{element_id} clicked")

    def action(world: Any) -> dict[str, Any]:
        value = world.givens[key]
        if not (expect or sets):  # page state or navigation: the row is not touched
            world.givens.update(page)
            return {"action": element_id, "status": status.format(value=value)}
        row = world.get(table, key, value, what=table.rstrip("s"))
        for column, want in expect.items():
            if row.get(column) != want:
                raise ToolError(f"{table.rstrip('s')} {value}: {column} is {row.get(column)!r}")
        new = {
            c: str(v).format(**world.givens) if isinstance(v, str) else v for c, v in sets.items()
        }
        world.update(table, key, value, **new)
        world.givens.update(new)  # the page re-renders from the givens
        world.givens.update(page)
        return {"action": element_id, "status": status.format(value=value), "ref": value}

    return action


@custom_tool("ui_buttons")
def ui_buttons(table: str, key: str, buttons: dict[str, dict[str, Any]]) -> ToolSpec:
    """``click(element_id)`` over a page whose buttons update one row of ``table``."""
    actions = {eid: _button(table, key, eid, spec or {}) for eid, spec in buttons.items()}
    return click_tool(actions, writes=[table])
