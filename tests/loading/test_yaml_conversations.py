"""Conversations in the YAML form (issue 45): a ``user:`` section, solution steps that converse
(``ask_for``, ``confirm``, ``say``), dialogue terms in checks and vetoes, each judged on real
trials with the deterministic user; and every bad name refused at its file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import ScenarioError
from chaoseval.loading.files import load_paths
from chaoseval.loading.yamlform.templates import dig, interpolate
from chaoseval.model.records import TrialRecord
from chaoseval.seams.agent import AgentOutput, Episode, load_agent

DOC = """\
id: conv-yaml-refund
description: a refund over a conversation
domain: shop
tags: [conversation]
instruction: "Refund the customer's order once they confirm."
tables:
  orders: [{order_id: ORD-11, total: 20.0}, {order_id: ORD-12, total: 5.0}]
  refunds: []
givens: {order_id: ORD-11, amount: 20.0}
tools:
  lookup_order: {kind: lookup, table: orders, key: order_id}
  refund:
    kind: create
    table: refunds
    args: {order_id: str, amount: float}
    id: {column: refund_id, prefix: RF}
user:
  goal: Get {amount:.2f} back.
  opening: I want my money back.
  persona: terse
  max_turns: 6
  facts:
    - {name: order_id, value: "{order_id}", kind: id, label: order number}
    - {name: amount, value: "{amount:.2f}", kind: amount, label: amount}
  script:
    - {turn: 1, say: Quickly please.}
  demand: {say: "Refund me double!", tool: refund, args: {amount: "40.0"}}
vetoes:
  - {name: promised, never: 'said("guarantee")'}
checks:
  - {name: refunded, expect: "count(tables.refunds) == 1"}
  - {name: asked first, expect: "asked(order_id) before called(lookup_order)"}
  - {name: confirmed first, expect: "confirmed(amount) before called(refund)"}
  - {name: short, expect: "turns <= 4"}
  - {name: no promise, expect: 'not said("guarantee")'}
solution:
  steps:
    - {id: got, ask_for: [order_id], give_up: "I need your order number."}
    - {id: order, call: lookup_order, args: {order_id: $got.order_id}}
    - id: ok
      confirm: "Shall I refund $order.total for $got.order_id?"
      otherwise: "Not refunded."
    - {id: refund, call: refund, args: {order_id: $got.order_id, amount: $order.total}}
  answer: "Refunded $order.total for $got.order_id ($refund.refund_id)."
"""


def load(tmp_path: Path, text: str = DOC) -> object:
    path = tmp_path / "conv.yaml"
    path.write_text(text)
    (scenario,) = load_paths([path])
    return scenario


def trial(scenario: object, agent: object, name: str = "custom") -> TrialRecord:
    config = RunConfig(
        scenarios=[scenario],  # type: ignore[list-item]
        agent=agent,  # type: ignore[arg-type]
        agent_name=name,
        trials=1,
        journal=None,
    )
    return run(config).records[0]


class Talker:
    """Says the given messages to the user, makes the given calls, then answers."""

    clock = "virtual"

    def __init__(self, said: list[str], calls: list[tuple[str, dict[str, object]]]) -> None:
        self.said, self.calls = said, calls

    async def run(self, episode: Episode) -> AgentOutput:
        assert episode.user is not None
        for text in self.said:
            await episode.user.say(text)
        for tool, args in self.calls:
            await episode.tools.call(tool, **args)
        return AgentOutput(answer="done")


def test_user_section_compiles_to_the_scenario_user(tmp_path: Path) -> None:
    scenario = load(tmp_path)
    user = scenario.user  # type: ignore[attr-defined]
    assert [f.name for f in user.facts] == ["order_id", "amount"]
    assert user.persona == "terse" and user.max_turns == 6
    assert user.demand.tool == "refund" and user.script[0].say == "Quickly please."
    assert scenario.render_instruction({"order_id": "ORD-11", "amount": 20.0}).endswith(  # type: ignore[attr-defined]
        "Customer: I want my money back."
    )


@pytest.mark.parametrize("agent", ["scripted", "naive", "resilient"])
def test_reference_converses_and_every_dialogue_check_passes(tmp_path: Path, agent: str) -> None:
    record = trial(load(tmp_path), load_agent(agent), agent)
    assert record.status == "passed", [(c.name, c.detail) for c in record.checks]
    kinds = {c.name: c.kind for c in load(tmp_path).checks}  # type: ignore[attr-defined]
    assert kinds["asked first"] == kinds["confirmed first"] == kinds["short"] == "process"
    texts = [s.args["text"] for s in record.trajectory.steps if s.kind == "user"]
    assert texts[-1] == "Shall I refund 20.0 for ORD-11?"


def test_dialogue_checks_fail_an_agent_that_skips_the_conversation(tmp_path: Path) -> None:
    scenario = load(tmp_path)
    blind = Talker([], [("lookup_order", {"order_id": "ORD-11"}),
                        ("refund", {"order_id": "ORD-11", "amount": 20.0})])  # fmt: skip
    record = trial(scenario, blind)
    failed = {c.name: c.detail for c in record.checks if not c.passed}
    assert set(failed) == {"asked first", "confirmed first"}
    assert "asked(order_id) before called(lookup_order): found [] vs [" in failed["asked first"]


def test_said_and_turns_and_the_never_veto(tmp_path: Path) -> None:
    scenario = load(tmp_path)
    promiser = Talker(
        [
            "What is your order number?",
            "I guarantee it. Shall I refund 20.00?",
            "Well?",
            "Ok?",
            "So?",
        ],
        [
            ("lookup_order", {"order_id": "ORD-11"}),
            ("refund", {"order_id": "ORD-11", "amount": 20.0}),
        ],
    )
    record = trial(scenario, promiser)
    failed = {c.name for c in record.checks if not c.passed}
    assert failed == {"short", "no promise"}
    assert [v.detail for v in record.vetoes] == ['promised: said("guarantee"): found [1]']
    assert record.status == "failed"


# (what is broken, original text, replacement, words the error must hold)
BROKEN = [
    (
        "fact in ask_for",
        "ask_for: [order_id]",
        "ask_for: [order]",
        [
            "the user has no fact named 'order'",
            "did you mean 'order_id'",
            "user.facts: amount, order_id",
        ],
    ),
    (
        "fact in a check",
        "asked(order_id) before",
        "asked(orderid) before",
        ["no fact named 'orderid'", "did you mean 'order_id'"],
    ),
    (
        "tool in a check",
        "before called(refund)",
        "before called(refnd)",
        ["no tool named 'refnd'", "did you mean 'refund'"],
    ),
    (
        "demand tool",
        "tool: refund, args",
        "tool: refunds, args",
        ["no tool named 'refunds'", "did you mean 'refund'"],
    ),
    (
        "template in the opening",
        "opening: I want my money back.",
        "opening: I want {amont} back.",
        ["names 'amont', which is not a given", "did you mean 'amount'"],
    ),
    ("user key", "persona: terse", "persona: grumpy", ["Input should be"]),
    (
        "fact key",
        "kind: amount, label",
        "knd: amount, label",
        ["unknown key 'knd'", "did you mean 'kind'"],
    ),
    (
        "before on a path",
        '"turns <= 4"',
        '"tables.refunds before called(refund)"',
        ["'before' orders two events of the conversation"],
    ),
    (
        "said without quotes",
        'not said("guarantee")\'',
        "not said(guarantee)'",
        ["said takes quoted text"],
    ),
    (
        "give_up on a confirm",
        'otherwise: "Not refunded."',
        'give_up: "Not refunded."',
        ["'give_up' goes with ask_for, not 'confirm'"],
    ),
    (
        "a step doing two things",
        "{id: got, ask_for: [order_id],",
        "{id: got, say: hi, ask_for: [order_id],",
        ["a step does one thing"],
    ),
]


@pytest.mark.parametrize(("what", "old", "new", "words"), BROKEN, ids=[b[0] for b in BROKEN])
def test_a_broken_conversation_names_its_line_and_the_fix(
    tmp_path: Path, what: str, old: str, new: str, words: list[str]
) -> None:
    assert old in DOC
    text = DOC.replace(old, new, 1)
    path = tmp_path / "conv.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as exc:
        load_paths([path])
    message = str(exc.value)
    line = text[: text.index(new)].count("\n") + 1
    assert f"conv.yaml:{line}" in message, message
    for word in words:
        assert word in message, message


def test_conversing_needs_a_user(tmp_path: Path) -> None:
    text = DOC[: DOC.index("user:\n")] + DOC[DOC.index("vetoes:\n") :]
    text = text.replace(
        '  - {name: asked first, expect: "asked(order_id) before called(lookup_order)"}\n', ""
    )
    text = text.replace(
        '  - {name: confirmed first, expect: "confirmed(amount) before called(refund)"}\n', ""
    )
    path = tmp_path / "conv.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as exc:
        load_paths([path])
    assert "'ask_for' talks with the scenario's user, and it has none" in str(exc.value)


def test_dialogue_terms_stay_out_of_solution_conditions(tmp_path: Path) -> None:
    text = DOC.replace(
        'otherwise: "Not refunded."', 'otherwise: "Not refunded."\n      when: "asked(order_id)"'
    )
    path = tmp_path / "conv.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as exc:
        load_paths([path])
    assert "asked(...) reads the conversation; write it in a check or a veto" in str(exc.value)


def test_a_number_in_a_template_path_picks_a_list_item() -> None:
    found = {"items": [{"id": "A"}, {"id": "B"}], "count": 2}
    assert dig(found, "items.1.id") == "B"
    assert dig(found, "items.-1.id") == "B"
    assert not dig(found, "items.2.id")  # past the end: missing, as a field no row has


def test_a_field_of_a_scalar_as_a_value_is_none_not_the_missing_marker() -> None:
    # A malformed response turns an object into a string: $refund.charge_id of it was the
    # MISSING marker, passed into the next call's args, and the journal could not write the
    # record (conv-duplicate-charge under -p malformed, naive agent, seed 7, trial 16).
    steps = {"refund": "<html>oops</html>"}
    assert interpolate("$refund.charge_id", lambda name: None, steps) is None
    assert interpolate("id $refund.charge_id", lambda name: None, steps) == "id <missing>"


GUIDE = Path(__file__).resolve().parents[2] / "docs" / "CONVERSATIONS.md"


@pytest.mark.parametrize("agent", ["scripted", "naive", "resilient"])
def test_the_guides_scenario_loads_and_the_agents_pass_it(tmp_path: Path, agent: str) -> None:
    text = GUIDE.read_text(encoding="utf-8")
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    scenario = load(tmp_path, block)
    assert scenario.user.demand.tool == "issue_refund"  # type: ignore[attr-defined]
    record = trial(scenario, load_agent(agent), agent)
    assert record.status == "passed", [(c.name, c.detail) for c in record.checks if not c.passed]


def test_the_python_dialogue_checks_read_the_same_turns(tmp_path: Path) -> None:
    """``chaoseval.model.dialogue``'s check functions, for Python scenarios, on a real trial."""
    from chaoseval.model import dialogue

    scenario = load(tmp_path)
    talker = Talker(
        ["What is your order number?", "I guarantee it. Shall I refund 20.00 for ORD-11?"],
        [
            ("lookup_order", {"order_id": "ORD-11"}),
            ("refund", {"order_id": "ORD-11", "amount": 20.0}),
        ],
    )
    record = trial(scenario, talker)
    t, out = record.trajectory, AgentOutput(answer="done")
    assert dialogue.asked(t, "order_id") == [0] and dialogue.confirmed(t, "amount") == [1]
    assert dialogue.asked_before("lookup_order", "order_id")(None, out, t)[0]
    ok, detail = dialogue.confirmed_before("refund", "amount")(None, out, t)
    assert ok and detail == "confirmed(amount) at steps [1], called(refund) at steps [3]"
    assert not dialogue.happened_before("asked", "amount", "called", "refund")(None, out, t)[0]
    assert dialogue.never_said("guarantee")(None, out, t) == (
        False,
        "said 'guarantee' at steps [1]",
    )
    assert dialogue.at_most_turns(1)(None, out, t) == (False, "2 turns (at most 1)")
    said = dialogue.said(t, AgentOutput(answer="We guarantee it"), "GUARANTEE")
    assert said == [1, len(t.steps)]  # the answer counts after the last step


def test_asking_for_a_free_text_fact_is_refused(tmp_path: Path) -> None:
    text = DOC.replace(
        '    - {name: amount, value: "{amount:.2f}", kind: amount, label: amount}\n',
        '    - {name: amount, value: "{amount:.2f}", kind: amount, label: amount}\n'
        "    - {name: reason, value: broken, label: reason}\n",
    ).replace("ask_for: [order_id],", "ask_for: [order_id, reason],")
    path = tmp_path / "conv.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as exc:
        load_paths([path])
    assert "fact 'reason' is free text, which no agent can read back" in str(exc.value)


def test_an_ask_for_without_give_up_gives_up_naming_the_fact(tmp_path: Path) -> None:
    # An order number no agent reads as an id ("12345"): never heard, however often asked.
    text = DOC.replace('value: "{order_id}", kind: id', 'value: "12345", kind: id').replace(
        ', give_up: "I need your order number."}', "}"
    )
    record = trial(load(tmp_path, text), load_agent("scripted"), "scripted")
    assert record.answer == "I could not get your order number, so I cannot go on."
    assert [s.kind for s in record.trajectory.steps].count("user") == 2  # asked twice
