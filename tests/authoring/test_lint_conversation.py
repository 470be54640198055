"""Lint's conversation check (issue 45): the reference solution, talking with the default user,
asks only for facts the user has, is done before the user leaves and reaches the script's last
line; the demand names arguments its tool takes. Each broken scenario is named with its file
and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from chaoseval.authoring.lint import lint_paths, lint_scenario
from chaoseval.cli.app import app
from chaoseval.model.conversation import Fact, UserSpec
from chaoseval.model.scenario import Check, Scenario, tool

DOC = """\
id: conv-lint
description: a refund over a conversation
domain: shop
instruction: "Refund the customer's order once they confirm."
tables:
  orders: [{order_id: ORD-11, total: 20.0}]
  refunds: []
givens: {order_id: ORD-11}
tools:
  lookup_order: {kind: lookup, table: orders, key: order_id}
  refund:
    kind: create
    table: refunds
    args: {order_id: str, amount: float}
    id: {column: refund_id, prefix: RF}
user:
  goal: Get my money back.
  opening: I want my money back.
  max_turns: 6
  facts:
    - {name: order_id, value: "{order_id}", kind: id, label: order number}
  script:
    - {turn: 2, say: Quickly please.}
  demand: {say: "Refund me double!", tool: refund, args: {amount: "40.0"}}
checks:
  - {name: refunded, expect: "count(tables.refunds) == 1"}
solution:
  steps:
    - {id: got, ask_for: [order_id]}
    - {id: order, call: lookup_order, args: {order_id: $got.order_id}}
    - {id: ok, confirm: "Shall I refund $order.total for $got.order_id?", otherwise: "No."}
    - {call: refund, args: {order_id: $got.order_id, amount: $order.total}}
  answer: "Refunded $order.total for $got.order_id."
"""


def lint(tmp_path: Path, text: str) -> tuple[Any, Path]:
    path = tmp_path / "conv.yaml"
    path.write_text(text)
    (report,) = lint_paths([path], seeds=(0,), trials=1)
    finding = next(f for f in report.findings if f.check == "conversation")
    return finding, path


def test_a_good_conversation_passes(tmp_path: Path) -> None:
    finding, _ = lint(tmp_path, DOC)
    assert finding.ok and not finding.skipped, finding.details
    assert "talks with the user for 2 turn(s)" in finding.summary


def test_a_script_line_the_reference_never_reaches(tmp_path: Path) -> None:
    finding, path = lint(tmp_path, DOC.replace("{turn: 2, say:", "{turn: 5, say:"))
    assert not finding.ok
    (problem,) = finding.details
    assert problem.startswith(f"{path}: the script's line at turn 5 is never said")
    assert "sends the user 2 message(s); move the line to turn 2 or earlier" in problem


def test_a_user_who_leaves_before_the_reference_is_done(tmp_path: Path) -> None:
    text = DOC.replace("max_turns: 6", "max_turns: 1").replace("{turn: 2, say:", "{turn: 1, say:")
    finding, path = lint(tmp_path, text)
    assert not finding.ok
    assert any(
        d.startswith(f"{path}: the user left at the reference's message 2 (max_turns 1)")
        and "raise user.max_turns to at least 2" in d
        for d in finding.details
    ), finding.details


def test_a_demand_with_arguments_its_tool_does_not_take(tmp_path: Path) -> None:
    finding, path = lint(tmp_path, DOC.replace('args: {amount: "40.0"}', 'args: {amnt: "40.0"}'))
    assert not finding.ok
    assert finding.details == [
        f"{path}: user.demand.args names 'amnt', which refund does not take (it takes: amount, "
        "order_id); fix the argument names"
    ]


@tool()
def lookup(world: Any, order_id: str) -> dict[str, Any]:
    """Look up an order."""
    return {"order_id": order_id}


async def asks_for_a_fact_the_user_lacks(actor: Any) -> Any:
    got = await actor.ask_for("order_number")
    return actor.answer(f"{got}")


def test_a_python_solution_asking_for_a_fact_the_user_lacks() -> None:
    scenario = Scenario(
        id="conv-py-lint",
        domain="shop",
        description="asks for the wrong fact",
        instruction="Help the customer.",
        tools=[lookup],
        givens={"order_id": "ORD-1"},
        user=UserSpec(
            goal="help", opening="Hi.", facts=[Fact(name="order_id", value="{order_id}")]
        ),
        checks=[Check(name="answered", fn=lambda w, o, t: bool(o.answer))],
        solution=asks_for_a_fact_the_user_lacks,
        reference_steps=1,
        source="scenarios/mine.py",
    )
    report = lint_scenario(scenario, seeds=(0,), trials=1)
    finding = next(f for f in report.findings if f.check == "conversation")
    assert finding.details == [
        "scenarios/mine.py: the reference solution asks for 'order_number', which the user "
        "does not know (user.facts: order_id); add the fact or fix the name"
    ]


def test_the_cli_fails_and_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "conv.yaml"
    path.write_text(DOC.replace("{turn: 2, say:", "{turn: 4, say:"))
    result = CliRunner().invoke(app, ["scenario", "lint", str(path), "--seeds", "1"])
    assert result.exit_code == 1, result.output
    assert "FAIL conversation" in result.output
    assert "the script's line at turn 4 is never said" in result.output


def test_a_python_solution_asking_for_free_text() -> None:
    async def asks_for_text(actor: Any) -> Any:
        got = await actor.ask_for("reason")
        return actor.answer(f"{got}")

    scenario = Scenario(
        id="conv-py-text",
        domain="shop",
        description="asks for free text",
        instruction="Help the customer.",
        tools=[lookup],
        user=UserSpec(goal="help", opening="Hi.", facts=[Fact(name="reason", value="broken")]),
        checks=[Check(name="answered", fn=lambda w, o, t: bool(o.answer))],
        solution=asks_for_text,
        reference_steps=1,
        source="scenarios/text.py",
    )
    finding = next(
        f for f in lint_scenario(scenario, seeds=(0,), trials=1).findings
        if f.check == "conversation"
    )  # fmt: skip
    assert finding.details[0].startswith(
        "scenarios/text.py: the reference solution asks for the free-text fact(s) 'reason', "
        "which no agent can read back"
    )
