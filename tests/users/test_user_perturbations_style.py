"""What the user perturbations put in the simulated user's mouth: values written another way
or wrong (chaoseval.users.writing), and the Style hooks the simulator honours."""

from __future__ import annotations

import random
from typing import Any, ClassVar

from hypothesis import given
from hypothesis import strategies as st

from chaoseval.engine.runner import RunConfig, run
from chaoseval.model.conversation import Demand, Fact, UserSpec
from chaoseval.model.records import Cell, PerturbationSpec
from chaoseval.seams.agent import AgentOutput, Episode
from chaoseval.seams.perturbation import CallNext, Perturbation, PerturbationContext, perturbation
from chaoseval.users import reading, writing
from chaoseval.users.simulator import DeterministicUser, Style

SPEC = UserSpec(
    goal="a refund",
    opening="The door never opened!",
    facts=[
        Fact(name="order_id", value="{order_id}", kind="id", label="order number",
             asked_by=["order"], volunteer=True),
        Fact(name="amount", value="{amount:.2f}", kind="amount", asked_by=["amount"]),
    ],
    demand=Demand(say="I want 10.00, now!", tool="issue_refund", args={"amount": 10.0}),
)  # fmt: skip


def user() -> DeterministicUser:
    return DeterministicUser(SPEC.render({"order_id": "ORD-1042", "amount": 2.75}))


def test_forms_read_loosely_as_the_value_and_never_strictly_as_another() -> None:
    ways = writing.forms("id", "ORD-1042")
    assert ways and "ORD-1042" not in ways
    for way in ways:
        assert reading.values("id", f"It's {way}.", strict=False) == ["ORD-1042"]
        assert reading.values("id", f"It's {way}.", strict=True) in ([], ["ORD-1042"])
    assert any(reading.values("id", w, strict=True) == [] for w in ways)  # a strict reader misses
    assert writing.forms("date", "2026-12-05") == []


@given(st.integers(min_value=10, max_value=99999), st.randoms(use_true_random=False))
def test_a_slip_reads_as_another_value_of_the_kind(number: int, rng: random.Random) -> None:
    value = f"ORD-{number}"
    slip = writing.mistype("id", value, rng)
    assert slip is not None and slip != value
    assert reading.values("id", slip, strict=True) == [reading.canonical("id", slip)]


def test_a_plausible_wrong_value_is_none_the_world_holds() -> None:
    rng = random.Random(3)
    for _ in range(50):
        wrong = writing.plausible("id", "ORD-1042", rng, taken=["ORD-1043", "ORD-1041"])
        assert wrong is not None and wrong not in ("ORD-1042", "ORD-1043", "ORD-1041")
        assert wrong.startswith("ORD-") and len(wrong) == len("ORD-1042")
    amount = writing.plausible("amount", "2.75", rng)
    assert amount is not None and 0.2 <= abs(float(amount) / 2.75 - 1) <= 0.6 + 1e-9
    assert writing.plausible("text", "a cold brew", rng) is None


def test_noise_leaves_values_and_the_answer_word_alone() -> None:
    text = "Yes, that's right. My order number is ORD-1042, and I paid 2.75 to bob@example.com."
    noisy, changed = writing.noise(text, random.Random(1), 1.0)
    assert changed > 0 and noisy != text
    assert noisy.startswith("Yes, that's right.")
    for kept in ("ORD-1042", "2.75", "bob@example.com"):
        assert kept in noisy


def test_a_value_written_otherwise_is_not_believed() -> None:
    """A typo is written, not believed: the read-back of it is corrected."""
    u = user()
    style = Style(values={"order_id": "ORD-1024"})
    assert u.respond("What is your order number?", style).text == "My order number is ORD-1024."
    assert style.said == ["order_id"]
    assert u.respond("Shall I refund 2.75 for ORD-1024?", Style()).text == (
        "No, my order number is ORD-1042."
    )


def test_a_believed_wrong_value_is_agreed_to_until_taken_back() -> None:
    u = user()
    u.told["order_id"] = "ORD-1047"  # what user_contradiction does: the hook
    agreed = u.respond("Shall I refund 2.75 for ORD-1047?", Style())
    assert agreed.agreed and agreed.reading.misstated == ["order_id"]  # recorded as wrong
    u.told["order_id"] = "ORD-1042"
    taken_back = u.respond("Anything else?", Style(recant=["order_id"]))
    assert taken_back.text.startswith("Sorry, I gave you the wrong order number: it's ORD-1042.")


def test_pardon_demand_and_patience() -> None:
    u = user()
    proposal = "Shall I refund 2.75 for ORD-1042?"
    unclear = u.respond(proposal, Style(language="de", pardon=True))
    assert unclear.text is not None and unclear.text.startswith("Wie bitte?")
    assert not unclear.agreed
    pushed = u.respond(proposal, Style(demand=True))
    assert pushed.text == "No. I want 10.00, now!" and not pushed.agreed
    assert u.respond(proposal, Style()).agreed
    reluctant = user()
    assert reluctant.respond("Hi!", Style(withhold=True, patience=1)).text == (
        "What do you need to know?"
    )
    gone = reluctant.respond("How are you?", Style(withhold=True, patience=1))
    assert gone.ended and reluctant.left


@perturbation("test-user-raises")
class RaisingUserPlugin(Perturbation):
    """A buggy user-channel plugin."""

    channel: ClassVar = "user"

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        raise KeyError("plugin bug")


class SwallowingAgent:
    """Talks to the user and swallows whatever comes back up: still no failure of its own."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        try:
            assert episode.user is not None
            await episode.user.say("What is your order number?")
        except Exception:
            pass
        return AgentOutput(answer="done")


def test_a_user_plugin_bug_is_not_evaluable_even_when_the_agent_swallows_it() -> None:
    from chaoseval.bundled.scenarios.conversations import vending_refund

    cell = Cell(name="buggy", perturbations=[PerturbationSpec(name="test-user-raises")])
    result = run(RunConfig(
        scenarios=[vending_refund], agent=SwallowingAgent(), agent_name="swallowing",
        cells=[cell], trials=2, seed=1, journal=None,
    ))  # fmt: skip
    buggy = [r for r in result.records if r.cell == "buggy"]
    assert [(r.status, r.root_cause) for r in buggy] == [("not_evaluable", "plugin_error")] * 2
    assert "plugin bug" in (buggy[0].error or "")


def test_user_plugins_apply_only_to_conversations_and_pressure_only_to_demands() -> None:
    from chaoseval.bundled.scenarios.conversations import vending_refund
    from chaoseval.seams.perturbation import registry

    calm = vending_refund.model_copy(
        update={"user": vending_refund.user.model_copy(update={"demand": None})}
    )
    no_user = vending_refund.model_copy(update={"user": None})
    names = [n for n, c in registry.items() if c.channel == "user" and n.startswith("user_")]
    assert len(names) == 8
    for name in names:
        plugin = registry.get(name)
        assert plugin.applies_to(vending_refund), name
        assert not plugin.applies_to(no_user) and "user:" in (plugin.missing(no_user) or "")
    pressure = registry.get("user_pressure")
    assert not pressure.applies_to(calm) and "demand" in (pressure.missing(calm) or "")
