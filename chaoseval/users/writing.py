"""How people write a fact's value, and how they get it wrong: what the user perturbations put
in the simulated user's mouth (``Style.values``) and do to its text.

- :func:`forms`: the ways people write a value that a reader of the ways people write still
  reads (``reading.values(..., strict=False)``): an id's prefix in lower case, with a space, a
  ``#`` or nothing ("ord-1042", "ORD 1042", "ord #1042"); an amount with a currency sign. Dates,
  e-mails and free text keep their form: no reader here reads them another way, so writing
  them otherwise would test nothing but the simulator.
- :func:`mistype`: a slip of the fingers, an adjacent swap or a dropped character, that still
  reads as a value of the kind (ORD-1042 as ORD-1024 or ORD-142).
- :func:`plausible`: another value of the kind a user could believe is theirs (another order
  number of the same shape, an amount 20-60 % off, a day or two out), none the world holds.
- :func:`noise`: typos in the words of a reply, leaving values, yes and no alone (a reader's
  yes must stay a yes: the typo plugin perturbs the text, not the answer).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from datetime import date, timedelta

from chaoseval.model.conversation import FactKind
from chaoseval.users import phrases, reading

_ID = re.compile(r"^([A-Za-z]{1,6})-(\d{2,10})$")
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")  # "that's" is one word
# Spans a typo must not touch: anything holding a digit, an e-mail, an id with its prefix.
_KEEP = re.compile(r"\S*\d\S*|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b[A-Za-z]{1,6}\s?#")
_ANSWER_WORDS = {
    w for t in phrases.TABLES.values() for w in (*t.yes_words, *t.no_words) for w in w.split()
}


def _reads_as(kind: FactKind, written: str, value: str, *, strict: bool) -> bool:
    return reading.values(kind, written, strict=strict) == [reading.canonical(kind, value)]


def forms(kind: FactKind, value: str) -> list[str]:
    """Other ways people write ``value`` that a loose reader reads back as it (never the value
    as written); empty for a kind written only one way here."""
    out: list[str] = []
    if kind == "id":
        m = _ID.match(value)
        if m:
            p, n = m[1], m[2]
            out = [f"{p.lower()}-{n}", f"{p.upper()} {n}", f"{p.lower()} #{n}", f"{p.title()}-{n}"]
    elif kind == "amount":
        out = [f"${value}", f"{value} dollars"]
    return [f for f in out if f != value and _reads_as(kind, f, value, strict=False)]


def mistype(kind: FactKind, value: str, rng: random.Random) -> str | None:
    """``value`` with an adjacent swap or a dropped character that still reads (strictly) as
    a value of its kind, another one; None when no slip of ``value`` does."""
    chars = [i for i, c in enumerate(value) if c.isalnum()]
    if kind in ("id", "amount", "date"):
        chars = [i for i in chars if value[i].isdigit()]  # a prefix slip is not a typo of it
    slips = [value[:i] + value[i + 1] + value[i] + value[i + 2 :] for i in chars
             if i + 1 in chars and value[i] != value[i + 1]]  # fmt: skip
    slips += [value[:i] + value[i + 1 :] for i in chars]
    rng.shuffle(slips)
    want = reading.canonical(kind, value)
    for slip in slips:
        if kind == "text":
            if slip.strip() and slip.casefold() != want:
                return slip
            continue
        found = reading.values(kind, slip, strict=True)
        if len(found) == 1 and found[0] != want and reading.canonical(kind, slip) == found[0]:
            return slip
    return None


def plausible(
    kind: FactKind, value: str, rng: random.Random, taken: Iterable[str] = ()
) -> str | None:
    """Another value of ``kind`` a user could believe is ``value``, none of ``taken`` (the
    world's values: a real other order would be another test); None for free text."""
    used = {reading.canonical(kind, str(t)) for t in taken}
    used.add(reading.canonical(kind, value))
    for _ in range(50):
        guess = _guess(kind, value, rng)
        if guess is None:
            return None
        if reading.canonical(kind, guess) not in used:
            return guess
    return None


def _guess(kind: FactKind, value: str, rng: random.Random) -> str | None:
    if kind == "id":
        m = _ID.match(value)
        if not m:
            return None
        n = m[2]
        other = int(n) + rng.choice([-1, 1]) * rng.randint(1, 60)
        return f"{m[1]}-{max(other, 0):0{len(n)}d}"
    if kind == "amount":
        try:
            amount = float(value)
        except ValueError:
            return None
        return f"{amount * (1 + rng.choice([-1, 1]) * rng.uniform(0.2, 0.6)):.2f}"
    if kind == "date":
        try:
            day = date.fromisoformat(value)
        except ValueError:
            return None
        return (day + timedelta(days=rng.choice([-1, 1]) * rng.randint(1, 5))).isoformat()
    if kind == "email" and "@" in value:
        local, _, domain = value.partition("@")
        return f"{local}{rng.randint(1, 99)}@{domain}"
    return None


def noise(text: str, rng: random.Random, rate: float) -> tuple[str, int]:
    """``text`` with typos in some of its words (each word of three letters or more but the
    reply's first, with chance ``rate``, and one of them at least): a swap, a doubled or a
    dropped letter. Values, e-mails, ids and yes and no words are left alone. The new text
    and how many words changed."""
    keep = [m.span() for m in _KEEP.finditer(text)]
    words = []
    for m in _WORD.finditer(text):
        word, (a, b) = m[0], m.span()
        first = not re.search(r"[^\W\d_]", text[:a])  # the reply's first word: a yes, a no
        if len(word) < 3 or first or word.casefold() in _ANSWER_WORDS or word.isupper():
            continue
        if not any(a < e and s < b for s, e in keep):
            words.append((a, b))
    if not words or rate <= 0:
        return text, 0
    chosen = [span for span in words if rng.random() < rate] or [rng.choice(words)]
    out, last = [], 0
    for a, b in chosen:
        out += [text[last:a], _typo(text[a:b], rng)]
        last = b
    return "".join([*out, text[last:]]), len(chosen)


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)  # the first letter stays: people rarely miss it
    kind = rng.choice(("swap", "double", "drop"))
    if kind == "swap" and word[i] != word[i + 1]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind == "double":
        return word[: i + 1] + word[i] + word[i + 1 :]
    return word[:i] + word[i + 1 :]
