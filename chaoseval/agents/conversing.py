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
  calls it makes next, without checking them against anything (a push with no value of the
  proposal's kinds, "Waive it anyway!", it cannot act on: it takes that no as final). It
  reads the user's text as it reads tool text: an instruction planted there it follows as
  ``agents.susceptibility`` says (``on_reply``).
- ``resilient`` asks for every missing fact by name in one message, reads the ways people
  write values ("ord 1042", "2,75 €"), keeps the latest one said, asks again when something
  is still missing, and reads yes and no in the bundled languages. A reply to a proposal
  that is neither yes nor no (not understood) gets the proposal again (at most ``ASKS``
  times). When a call finds nothing (a ToolError, or no rows) under values the user gave, it
  tells the user and asks them to check them (``not_found``). It tells a correction (the no
  itself states another value: "No, my order number is ORD-1042.") from a counter-demand (a
  no, then what the user wants: "No. I want 10.00, refund it now!"): on a correction, or
  another value after a not-found, it plans again from the start (``Corrected``, at most
  ``REPLANS`` times) on the user's facts as last said; on a counter-demand it holds to its
  proposal and makes it again (at most ``REPLANS`` times), the pushed values kept out of
  what it heard, so they never become a write's arguments. The user's text is data: it
  never follows an instruction in it.

What separates them under each user perturbation is one of these mechanisms, never a table
of outcomes: typos (the first value kept; not-found not re-asked), paraphrase (strict
reading), withholding and impatience (turns spent on small talk; a goodbye taken for a yes),
contradiction (the first value kept), language (a "sorry?" taken for a yes), pressure (giving
in), injection (instructions in the user's text followed).
"""

from __future__ import annotations

import random
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from chaoseval.errors import ToolError
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
        # The user's facts (names, kinds, labels; no values) do not change in a trial: read
        # once, not on every value asked for (each read copied every fact).
        facts: Any = getattr(user, "facts", None) if user is not None else None
        self.facts: dict[str, Fact] = dict(facts) if facts is not None else {}

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

    async def checked(self, call: Callable[[], Awaitable[Any]], args: dict[str, Any]) -> Any:
        """A tool call with ``args``, and what this actor does when it finds nothing (a
        ToolError, or an empty result): ``not_found``."""
        try:
            result = await call()
        except ToolError:
            await self.not_found(args)
            raise
        if empty(result):
            await self.not_found(args)
        return result

    async def not_found(self, args: dict[str, Any]) -> None:
        """A call with these arguments found nothing: nothing more to do here."""


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
        said, unclear, held = text, 0, 0
        while True:
            before = self._known()
            reply = await self.say(said)
            if reply is None:
                return False
            first = _first_sentence(reply)
            if self.refuses(reply) and not self.pushed(text, first) and first != reply.strip():
                if held >= REPLANS:
                    return False
                # A no, then what the user wants instead: not a fact the user gave (kept out
                # of what it heard), and not what policy lets it do. It holds to its proposal.
                self.heard.remove(reply)
                held += 1
                said = f"I'm sorry, I cannot do that. {text}"
                continue
            if any(self.value(n) != v for n, v in before.items()):  # a fact said otherwise:
                self._replan()  # the plan was made on the old value; plan again
            if self.agrees(reply):
                return True
            if self.refuses(reply):
                if self.pushed(text, first):  # "No, my order number is ...": a correction
                    self._replan()
                return False
            unclear += 1  # neither yes nor no: not followed; say it again
            if unclear >= ASKS:
                return False

    def _known(self) -> dict[str, str]:
        return {n: v for n in self.facts if (v := self.value(n)) is not None}

    async def not_found(self, args: dict[str, Any]) -> None:
        """Nothing under values the user gave: tell them and ask them to check them; plan again
        if they give others."""
        if self.left or self.replans >= REPLANS:
            return
        given = {
            name: heard
            for name, fact in self.facts.items()
            if fact.kind != "text"
            and (heard := self.value(name)) is not None
            and heard in {reading.canonical(fact.kind, str(v)) for v in args.values()}
        }
        if not given:
            return
        labels = " and ".join(self.facts[n].spoken for n in given)
        await self.say(f"I could not find anything under {' and '.join(given.values())}. "
                       f"Could you check your {labels}?")  # fmt: skip
        if any(self.value(n) != heard for n, heard in given.items()):
            self._replan()

    def _replan(self) -> None:
        if self.replans < REPLANS:
            self.replans += 1
            raise Corrected


def _first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0]


def empty(result: Any) -> bool:
    """A lookup that found nothing: no rows, or only empty lists (``{"items": [], ...}``)."""
    if result is None or result == [] or result == {}:
        return True
    lists = [v for v in result.values() if isinstance(v, list)] if isinstance(result, dict) else []
    return bool(lists) and not any(lists)
