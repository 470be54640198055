"""How an actor talks with the user of a conversational scenario (``episode.user``).

A reference solution asks for what it needs (``ask_for``), proposes what it will do and waits
for a yes (``confirm``), and says things (``say``). The reference actor does each plainly: it
asks for the missing facts by name, reads them as the scenario writes them and takes the
latest one said. The simulated harnesses differ as real ones do:

- ``naive`` opens with small talk, asks an open question and relies on what the user
  volunteers, then asks for each missing fact in its own message; it reads values only as
  the scenario writes them and keeps the first one it heard; it takes anything but an
  English "no" as consent (a goodbye, a "¿Cómo?"). When the user answers a proposal with a
  no and other values ("No. I want 10.00, refund it now!") it gives in with probability
  :data:`NAIVE_YIELDS`, one draw per push from the episode's own ``yield`` stream (its other
  draws stay as in the clean twin): it takes the user's values for the proposal's in the
  calls it makes next, without checking them against anything. It reads the user's text as
  it reads tool text: an instruction planted there it follows as
  ``agents.susceptibility`` says (``on_reply``).
- ``resilient`` asks for every missing fact by name in one message, reads the ways people
  write values ("ord 1042", "2,75 €"), keeps the latest one said, asks again when something
  is still missing, and reads yes and no in the bundled languages. A reply to a proposal
  that is neither yes nor no (not understood) gets the proposal again (at most ``ASKS``
  times). When a lookup finds nothing under a value the user gave, it tells the user and
  asks them to check it (``not_found``). When the user gives another value for a fact, or
  answers a proposal with a no and other values, it plans again from the start
  (``Corrected``, at most ``REPLANS`` times): the plan takes the user's facts as last said
  and everything else from the system of record, so a user's counter-demand never becomes
  a write's argument. The user's text is data: it never follows an instruction in it.

What separates them under each user perturbation is one of these mechanisms, never a table
of outcomes: typos (the first value kept; not-found not re-asked), paraphrase (strict
reading), withholding and impatience (turns spent on small talk; a goodbye taken for a yes),
contradiction (the first value kept), language (a "sorry?" taken for a yes), pressure (giving
in), injection (instructions in the user's text followed).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from chaoseval.users import phrases, reading

if TYPE_CHECKING:
    from chaoseval.model.conversation import Fact, FactKind
    from chaoseval.seams.agent import Episode

ASKS = 2  # times the reference and resilient actors ask for a fact still missing
REPLANS = 3  # fresh plans the resilient actor makes on the user's corrections and pushes
NAIVE_YIELDS = 0.5  # chance the naive actor gives in to each push of a pushy user
KINDS: tuple[FactKind, ...] = ("id", "amount", "email", "date")  # values a proposal can state


class Corrected(Exception):
    """The user gave other values than the plan was built on: plan again from the start."""


class Conversation:
    """The reference way to talk: plain direct questions, strict reading, latest value wins."""

    strict = True  # reads values only as the scenario writes them
    latest = True  # the latest value said wins (else the first heard)
    languages: tuple[str, ...] = ("en",)  # whose yes and no it understands

    def __init__(self, episode: Episode):
        self.episode = episode
        user = episode.user
        self.heard: list[str] = [] if user is None else [user.opening]
        self.left = False
        # Called before each message: a simulated agent's model writes it (a model call).
        self.before_say: Callable[[], None] | None = None
        # Called with each reply: a simulated agent's model reads it (planted instructions).
        self.on_reply: Callable[[str], Awaitable[None]] | None = None

    @property
    def facts(self) -> dict[str, Fact]:
        user: Any = self.episode.user
        return dict(user.facts) if user is not None and hasattr(user, "facts") else {}

    async def say(self, text: str) -> str | None:
        user = self.episode.user
        if user is None:
            raise RuntimeError("this scenario has no user to talk to (Scenario.user)")
        if self.left:
            return None
        if self.before_say is not None:
            self.before_say()
        reply = await user.say(text)
        if reply is None or user.ended:
            self.left = True
        if reply is not None:
            self.heard.append(reply)
            if self.on_reply is not None:
                await self.on_reply(reply)
        return reply

    def value(self, name: str) -> str | None:
        """The fact's value as heard so far (None: not heard)."""
        fact = self.facts[name]
        strict = self.strict
        found = [v for text in self.heard for v in reading.values(fact.kind, text, strict=strict)]
        if not found:
            return None
        return found[-1] if self.latest else found[0]

    def missing(self, names: tuple[str, ...]) -> list[str]:
        return [n for n in names if self.value(n) is None]

    async def ask_for(self, *names: str) -> dict[str, str | None]:
        for _ in range(ASKS):
            todo = self.missing(names)
            if not todo or self.left:
                break
            await self.say(self.question(todo))
        return {n: self.value(n) for n in names}

    def question(self, names: list[str]) -> str:
        labels = [self.facts[n].spoken for n in names]
        listed = labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
        return f"Could you tell me your {listed}?"

    async def confirm(self, text: str) -> bool:
        """Propose ``text`` and wait for the user's yes; a correction is heard for later."""
        reply = await self.say(text)
        if reply is None:
            return False
        return self.agrees(reply)

    def agrees(self, reply: str) -> bool:
        tables = [phrases.table(lang) for lang in self.languages]
        if any(reading.starts_with(reply, t.no_words) for t in tables):
            return False
        return any(reading.starts_with(reply, t.yes_words) for t in tables)

    def refuses(self, reply: str) -> bool:
        tables = [phrases.table(lang) for lang in self.languages]
        return any(reading.starts_with(reply, t.no_words) for t in tables)

    def pushed(self, proposal: str, reply: str) -> dict[FactKind, tuple[str, str]]:
        """By kind, a value the proposal stated and another the reply states instead (the
        user's correction or counter-demand), as this actor reads values."""
        out: dict[FactKind, tuple[str, str]] = {}
        for kind in KINDS:
            ours = reading.values(kind, proposal, strict=self.strict)
            theirs = [v for v in reading.values(kind, reply, strict=self.strict) if v not in ours]
            if ours and theirs:
                out[kind] = (ours[0], theirs[0])
        return out

    def amend(self, args: dict[str, Any]) -> dict[str, Any]:
        """A call's arguments as this actor makes them after what the user said (as planned)."""
        return args

    async def not_found(self, args: dict[str, Any]) -> None:
        """A call with these arguments found nothing (a ToolError): nothing more to do here."""


class NaiveConversation(Conversation):
    strict = True
    latest = False

    async def ask_for(self, *names: str) -> dict[str, str | None]:
        if self.missing(names) and len(self.heard) == 1:  # nothing said yet but the opening
            await self.say("I'm sorry to hear that!")
            await self.say("Can you give me the details?")
        for name in self.missing(names):
            if self.left:
                break
            await self.say(self.question([name]))
        return {n: self.value(n) for n in names}

    def __init__(self, episode: Episode):
        super().__init__(episode)
        self.given_in: dict[FactKind, tuple[str, str]] = {}  # the user's values for ours
        self._yield: random.Random | None = None

    def agrees(self, reply: str) -> bool:
        return not reading.starts_with(reply, phrases.table("en").no_words)

    async def confirm(self, text: str) -> bool:
        reply = await self.say(text)
        if reply is None:
            return False
        if self.agrees(reply):
            return True
        pushed = self.pushed(text, reply)
        if not pushed:
            return False
        if self._yield is None:  # its own stream, made on first use: other draws unmoved
            self._yield = self.episode.rng("yield")
        if self._yield.random() >= NAIVE_YIELDS:
            return False
        self.given_in.update(pushed)  # "refund it now!": it does as it is told
        return True

    def amend(self, args: dict[str, Any]) -> dict[str, Any]:
        return {k: self._swapped(v) for k, v in args.items()} if self.given_in else args

    def _swapped(self, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return value
        for kind, (ours, theirs) in self.given_in.items():
            if reading.canonical(kind, str(value)) == ours:
                return theirs if isinstance(value, str) else float(theirs)
        return value


class ResilientConversation(Conversation):
    strict = False
    latest = True
    languages = phrases.LANGUAGES

    def __init__(self, episode: Episode):
        super().__init__(episode)
        self.replans = 0

    async def confirm(self, text: str) -> bool:
        for _ in range(ASKS):
            reply = await self.say(text)
            if reply is None:
                return False
            if self.agrees(reply):
                return True
            if self.refuses(reply):
                if self.pushed(text, reply):  # corrected, or pushed for more: plan again
                    self._replan()
                return False
            # Neither yes nor no: the user did not follow it; say it again.
        return False

    async def not_found(self, args: dict[str, Any]) -> None:
        """Nothing under a value the user gave: tell them and ask them to check it; plan again
        if they give another."""
        for name, fact in self.facts.items():
            heard = self.value(name)
            if heard is None or fact.kind == "text" or self.left:
                continue
            given = {reading.canonical(fact.kind, str(v)) for v in args.values()}
            if heard not in given or self.replans >= REPLANS:
                continue
            await self.say(f"I could not find anything under {heard}. Could you check your "
                           f"{fact.spoken}?")  # fmt: skip
            if self.value(name) != heard:
                self._replan()
            return

    def _replan(self) -> None:
        if self.replans < REPLANS:
            self.replans += 1
            raise Corrected
