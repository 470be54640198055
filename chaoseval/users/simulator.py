"""The deterministic user: a policy that answers the agent from what it knows, by its script.

Each agent message is read (``reading``): the facts it asks for are given, a proposal that
states a fact wrong is corrected, one that states them right is agreed to, the facts the
user volunteers are added to its first reply, the script's line for the turn is said, and
after ``max_turns`` messages the user says goodbye and leaves. What it says comes from the
phrase tables (``phrases``), in the style the user-channel perturbations set on the turn
(``Style``): another frame, another language, withholding, a demand. Every draw is from the
trial's streams, so a conversation is reproducible from its seed.
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
    withhold: bool = False  # only what is asked directly: nothing volunteered
    demand: bool = False  # answers a proposal with the scenario's demand instead of a yes


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
            self.left = True
            return Reply(self._pick(table.bye, style), seen, ended=True)
        parts: list[str] = []
        agreed = False
        if seen.confirm or seen.misstated:
            if seen.misstated:
                parts += [self._state(table.correct, name, style) for name in seen.misstated]
            elif style.demand and self.user.demand:
                parts += [self._pick(table.refuse, style), self.user.demand]
            else:
                parts.append(self._pick(table.yes, style))
                agreed = True
        for name in seen.asked:
            if name not in seen.misstated:
                parts.append(self._state(table.state, name, style))
        if not style.withhold and self.turns == 1:
            parts += [
                self._state(table.state, f.name, style)
                for f in self.facts
                if f.volunteer and f.name not in self.given and f.name not in seen.asked
            ]
        if self.turns in self.user.script:
            parts.append(self.user.script[self.turns])
        if not parts:
            pool = table.what if style.withhold else table.generic[self.user.spec.persona]
            parts.append(self._pick(pool, style))
        return Reply(" ".join(parts), seen, agreed=agreed)

    def _pick(self, frames: tuple[str, ...], style: Style) -> str:
        return frames[0] if style.paraphrase is None else style.paraphrase.choice(frames)

    def _state(self, frames: tuple[str, ...], name: str, style: Style) -> str:
        fact = self.user.fact(name)
        self.given.add(name)
        value = self.told[name]
        if fact.kind == "amount" and style.language != "en":
            value = value.replace(".", phrases.table(style.language).decimal)
        return self._pick(frames, style).format(label=fact.spoken, value=value)
