"""Reading a conversation's text: the values of a fact's kind in it, and what a message asks.

Both sides read with these: the simulated user tells whether the agent's message asks for a
fact, states it right or wrong, or asks it to confirm; the simulated agents find the user's
facts in a reply (``strict``: written as the scenario writes them; else also the ways people
write them: "ord 1042", "#1042", "2,75 €"). An agent's reading is what its harness makes of
the reply, and where the two differ is what the user perturbations measure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from chaoseval.model.conversation import Fact, FactKind

# Written the way the scenario writes its values.
STRICT: dict[FactKind, re.Pattern[str]] = {
    "id": re.compile(r"\b[A-Z]{1,6}-\d{1,10}\b"),
    "amount": re.compile(r"(?<![\w.,-])\d+(?:\.\d{1,2})?(?![\w.,]*\d)"),
    "email": re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    "date": re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
}
# Also as people write them: an id's prefix in any case with "-" or "#" ("ord-1042"), or in
# capitals with a space or nothing ("ORD 1042"), never a word and a number ("paid 10"); an
# amount with a decimal comma or a currency sign.
_LOOSE_ID = re.compile(
    r"(?<![\w-])(?:([A-Za-z]{1,6})\s?[#-]\s?|([A-Z]{1,6})\s?)(\d{2,10})\b"
)
_LOOSE_AMOUNT = re.compile(r"(?<![\w.,])(\d+)(?:[.,](\d{1,2}))?(?![\w]*\d)")
CONFIRM_CUES = (
    "confirm", "is that right", "is that correct", "correct?", "right?", "shall i",
    "should i", "may i", "go ahead", "ok to", "okay to", "do you agree", "is this right",
)  # fmt: skip


def canonical(kind: FactKind, value: str) -> str:
    """The form two writings of one value share: ids upper-cased with one dash, amounts with
    two decimals, others case-folded."""
    text = value.strip()
    if kind == "id":
        m = _LOOSE_ID.fullmatch(text)
        return _id(m) if m else text.upper()
    if kind == "amount":
        m = _LOOSE_AMOUNT.fullmatch(text.replace(" ", ""))
        if m:
            return f"{int(m[1])}.{(m[2] or '0').ljust(2, '0')}"
        return text
    return text.casefold()


def values(kind: FactKind, text: str, *, strict: bool = True) -> list[str]:
    """The values of ``kind`` in ``text``, in order, canonical (``strict``: only as the
    scenario writes them). Ids are taken out before amounts are read, so an order number's
    digits are never an amount."""
    if kind == "text":
        return []
    if kind == "amount":
        text = _LOOSE_ID.sub(" ", text)
        text = re.sub(r"\b\d{4}-\d{2}-\d{2}\b", " ", text)
        if strict:
            return [canonical(kind, m) for m in STRICT["amount"].findall(text)]
        return [canonical(kind, m[0]) for m in _LOOSE_AMOUNT.finditer(text)]
    if kind == "id" and not strict:
        return [_id(m) for m in _LOOSE_ID.finditer(text)]
    return [canonical(kind, m) for m in STRICT[kind].findall(text)]


def _id(m: re.Match[str]) -> str:
    return f"{(m[1] or m[2]).upper()}-{m[3]}"


def mentions(fact: Fact, value: str, text: str) -> bool | None:
    """Whether ``text`` states the fact right (True), states another value of its kind
    (False) or does not state it (None)."""
    if fact.kind == "text":
        return True if value.casefold() in text.casefold() else None
    found = values(fact.kind, text, strict=False)
    if not found:
        return None
    return canonical(fact.kind, value) in found


def asks_for(fact: Fact, text: str) -> bool:
    """Whether an agent's message asks for ``fact`` by one of its cues, as a question."""
    folded = text.casefold()
    return "?" in folded and any(cue in folded for cue in fact.cues())


def asks_to_confirm(text: str) -> bool:
    folded = text.casefold()
    return any(cue in folded for cue in CONFIRM_CUES)


def starts_with(text: str, words: Iterable[str]) -> bool:
    """Whether a reply opens with one of ``words`` (a yes or a no)."""
    head = re.sub(r"^[\W_]+", "", text.casefold())
    return any(re.match(rf"{re.escape(w)}\b", head) for w in words)
