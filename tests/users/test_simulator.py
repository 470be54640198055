"""The deterministic user: what it gives, corrects, agrees to and when it leaves."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from chaoseval.model.conversation import Fact, ScriptLine, UserSpec
from chaoseval.users import reading
from chaoseval.users.simulator import DeterministicUser, Style

SPEC = UserSpec(
    goal="a refund",
    opening="The door never opened!",
    facts=[
        Fact(
            name="order_id",
            value="{order_id}",
            kind="id",
            label="order number",
            asked_by=["order"],
            volunteer=True,
        ),
        Fact(name="amount", value="{amount:.2f}", kind="amount", asked_by=["amount"]),
    ],
    script=[ScriptLine(turn=2, say="I'm in a hurry.")],
    max_turns=3,
)


def user() -> DeterministicUser:
    return DeterministicUser(SPEC.render({"order_id": "ORD-1042", "amount": 2.75}))


def test_gives_what_is_asked_and_volunteers_only_in_the_first_reply() -> None:
    u = user()
    first = u.respond("Sorry to hear that.", Style())
    assert first.text == "My order number is ORD-1042."  # volunteered, not asked
    second = u.respond("What amount did you pay?", Style())
    assert second.text == "My amount is 2.75. I'm in a hurry."  # asked, and the script's line
    assert second.reading.asked == ["amount"]


def test_withholding_user_volunteers_nothing() -> None:
    u = user()
    assert u.respond("Sorry to hear that.", Style(withhold=True)).text == (
        "What do you need to know?"
    )


def test_a_wrong_value_is_corrected_and_a_right_one_agreed_to() -> None:
    u = user()
    u.respond("Hello.", Style())
    wrong = u.respond("Shall I refund 3.75 for ORD-1042?", Style())
    assert wrong.text == "No, my amount is 2.75. I'm in a hurry."  # and turn 2's line
    assert (wrong.reading.stated, wrong.reading.misstated, wrong.agreed) == (
        ["order_id"], ["amount"], False,
    )  # fmt: skip
    right = u.respond("Shall I refund 2.75 for ORD-1042?", Style())
    assert right.agreed and right.text is not None and right.text.startswith("Yes")


def test_leaves_after_max_turns_and_stays_gone() -> None:
    u = user()
    for _ in range(3):
        assert not u.respond("Hello?", Style()).ended
    bye = u.respond("Hello?", Style())
    assert bye.ended and bye.text is not None
    assert u.respond("Are you there?", Style()).text is None


def test_other_languages_write_amounts_their_way() -> None:
    u = user()
    u.respond("Hello.", Style())
    reply = u.respond("What is the amount?", Style(language="de"))
    assert reply.text == "Es ist 2,75. I'm in a hurry."  # the script is not translated
    assert reading.values("amount", reply.text) == []  # not as the scenario writes it
    assert reading.values("amount", reply.text, strict=False) == ["2.75"]


def test_paraphrase_draws_other_frames_from_its_stream() -> None:
    said = {
        DeterministicUser(SPEC.render({"order_id": "ORD-1042", "amount": 2.75}))
        .respond("What is your order number?", Style(paraphrase=random.Random(seed)))
        .text
        for seed in range(20)
    }
    assert len(said) > 1 and all(s is not None and "ORD-1042" in s for s in said)


@given(st.from_regex(r"[A-Z]{2,5}", fullmatch=True), st.integers(10, 10**8))
def test_ids_read_back_however_people_write_them(prefix: str, number: int) -> None:
    value = f"{prefix}-{number}"
    lower = f"{prefix.lower()}-{number}"
    for written in (value, lower, f"{prefix}#{number}", f"{prefix} {number}"):
        assert reading.values("id", f"it's {written}.", strict=False) == [value]
    assert reading.values("id", f"it's {value}.") == [value]


@given(st.integers(0, 10**6), st.integers(0, 99))
def test_amounts_read_back_with_a_point_or_a_comma(units: int, cents: int) -> None:
    canonical = f"{units}.{cents:02d}"
    assert reading.values("amount", f"I paid {canonical} euros.") == [canonical]
    assert reading.values("amount", f"Pagué {units},{cents:02d} €.", strict=False) == [canonical]
    assert reading.values("amount", f"Pagué {units},{cents:02d} €.") == []
