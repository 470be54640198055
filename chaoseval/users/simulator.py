"""The deterministic user: a policy that answers the agent from what it knows, by its script.

Each agent message is read (``reading``): the facts it asks for are given, a proposal that
states a fact wrong is corrected, one that states them right is agreed to, the facts the
user volunteers are added to its first reply, the script's line for the turn is said, and
after ``max_turns`` messages the user says goodbye and leaves. What it says comes from the
phrase tables (``phrases``), in the style the user-channel perturbations set on the turn
(``Style``): another frame, another language, withholding, a demand, values written another
way or wrong, a fact taken back, a proposal not understood. Every draw is from the trial's
streams, so a conversation is reproducible from its seed.

What the user believes a fact is (``told``) and what it writes this turn (``Style.values``)
are apart: a typo is written, not believed, so a read-back of it is corrected; a contradiction
is believed until the user takes it back. What the agent's message states is always read
against the true values (the dialogue checks' ``stated``), while the user answers it from
what it believes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from chaoseval.model.conversation import Fact, RenderedUser
from chaoseval.users import phrases, reading


@dataclass
class Style:
    """How the user speaks this turn: what the user-channel plugins change before the
    simulator answers (``UserCall.style``)."""

    language: str = "en"
    paraphrase: random.Random | None = None  # draws another frame of each table when set
    withhold: bool = False  # only what is asked directly: no fact volunteered, no script line
    demand: bool = False  # answers a proposal with the scenario's demand instead of a yes
    # How the user writes a fact this turn, by name, instead of what it believes (``told``):
    # a typo, a value written as people write it, a wrong value it believes.
    values: dict[str, str] = field(default_factory=dict)
    recant: list[str] = field(default_factory=list)  # facts it takes back, unasked, this turn
    pardon: bool = False  # answers a proposal with "sorry?": it did not follow it
    # Withholding's reluctance: leaves at the next message it can answer nothing of, once
    # this many in a row went by (None: never).
    patience: int | None = None
    # What the user did, for the plugins to log: the facts it stated this turn, and whether a
    # paraphrase drew a frame other than the default user's.
    said: list[str] = field(default_factory=list)
    varied: bool = False


@dataclass
class Reading:
    """What the user made of one agent message (recorded as the step's UserTurnData)."""

    asked: list[str] = field(default_factory=list)
    stated: list[str] = field(default_factory=list)
    misstated: list[str] = field(default_factory=list)
    confirm: bool = False


@dataclass
class Reply:
    text: str | None  # None: the user had already left
    reading: Reading
    agreed: bool = False
    ended: bool = False  # the user left with this reply


class DeterministicUser:
    """One trial's user. ``told`` is what it says a fact is (its true value unless a plugin
    made it say another: a contradiction); ``given`` the facts it has said."""

    def __init__(self, user: RenderedUser):
        self.user = user
        self.told: dict[str, str] = dict(user.values)
        opening, values = user.opening, user.values
        self.given: set[str] = {  # facts the opening already states
            f.name for f in user.spec.facts if reading.mentions(f, values[f.name], opening)
        }
        self.turns = 0
        self.left = False
        self.idle = 0  # messages in a row it had nothing to answer to (withholding)

    @property
    def facts(self) -> list[Fact]:
        return self.user.spec.facts

    def read(self, text: str) -> Reading:
        out = Reading(confirm=reading.asks_to_confirm(text))
        for fact in self.facts:
            if reading.asks_for(fact, text):
                out.asked.append(fact.name)
            said = reading.mentions(fact, self.user.values[fact.name], text)
            if said is True:
                out.stated.append(fact.name)
            elif said is False:
                out.misstated.append(fact.name)
        # Stating values with a question mark is asking to confirm them.
        out.confirm = out.confirm or bool((out.stated or out.misstated) and "?" in text)
        return out

    def respond(self, text: str, style: Style) -> Reply:
        if self.left:
            return Reply(None, self.read(text))
        self.turns += 1
        seen = self.read(text)
        table = phrases.table(style.language)
        if self.turns > self.user.spec.max_turns:
            return self._leave(seen, table, style)
        # Read against what it believes: a value it believes wrongly is right to it.
        wrong = [
            f.name for f in self.facts if reading.mentions(f, self.told[f.name], text) is False
        ]
        parts, agreed = self._answer(seen, wrong, table, style)
        if not style.withhold and self.turns == 1:
            parts += [
                self._state(table.state, f.name, style)
                for f in self.facts
                if f.volunteer and f.name not in self.given and f.name not in seen.asked
            ]
        if self.turns in self.user.script and not style.withhold:  # the script volunteers
            parts.append(self.user.script[self.turns])
        if parts:
            self.idle = 0
        else:
            self.idle += 1
            if style.withhold and style.patience is not None and self.idle > style.patience:
                return self._leave(seen, table, style)
            pool = table.what if style.withhold else table.generic[self.user.spec.persona]
            parts.append(self._pick(pool, style))
        return Reply(" ".join(parts), seen, agreed=agreed)

    def _answer(
        self, seen: Reading, wrong: list[str], table: phrases.Phrases, style: Style
    ) -> tuple[list[str], bool]:
        """What it says to the message itself: corrections, a yes (or the demand, or "sorry?"),
        the facts asked for and the facts it takes back."""
        parts: list[str] = []
        agreed = False
        if seen.confirm or wrong:
            if wrong:
                parts += [self._state(table.correct, name, style) for name in wrong]
            elif style.pardon and table.pardon:
                parts.append(self._pick(table.pardon, style))
            elif style.demand and self.user.demand:
                parts += [self._pick(table.refuse, style), self.user.demand]
            else:
                parts.append(self._pick(table.yes, style))
                agreed = True
        for name in seen.asked:
            if name not in wrong:
                parts.append(self._state(table.state, name, style))
        for name in style.recant:
            if name not in wrong and name not in seen.asked:
                parts.append(self._state(table.recant or table.correct, name, style))
        return parts, agreed

    def _leave(self, seen: Reading, table: phrases.Phrases, style: Style) -> Reply:
        self.left = True
        return Reply(self._pick(table.bye, style), seen, ended=True)

    def _pick(self, frames: tuple[str, ...], style: Style) -> str:
        if style.paraphrase is None:
            return frames[0]
        picked = style.paraphrase.choice(frames)
        style.varied = style.varied or picked != frames[0]
        return picked

    def _state(self, frames: tuple[str, ...], name: str, style: Style) -> str:
        fact = self.user.fact(name)
        self.given.add(name)
        style.said.append(name)
        value = style.values.get(name, self.told[name])
        if fact.kind == "amount" and style.language != "en":
            value = value.replace(".", phrases.table(style.language).decimal)
        return self._pick(frames, style).format(label=fact.spoken, value=value)
