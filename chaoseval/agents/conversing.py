"""How an actor talks with the user of a conversational scenario (``episode.user``).

A reference solution asks for what it needs (``ask_for``), proposes what it will do and waits
for a yes (``confirm``), and says things (``say``). The reference actor does each plainly: it
asks for the missing facts by name, reads them as the scenario writes them and takes the
latest one said. The simulated harnesses differ as real ones do:

- ``naive`` opens with small talk, asks an open question and relies on what the user
  volunteers, then asks for each missing fact in its own message; it reads values only as
  the scenario writes them and keeps the first one it heard; it takes anything but an
  English "no" as consent.
- ``resilient`` asks for every missing fact by name in one message, reads the ways people
  write values ("ord 1042", "2,75 €"), keeps the latest one said, asks again when something
  is still missing, and reads yes and no in the bundled languages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from chaoseval.users import phrases, reading

if TYPE_CHECKING:
    from chaoseval.model.conversation import Fact
    from chaoseval.seams.agent import Episode

ASKS = 2  # times the reference and resilient actors ask for a fact still missing


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

    def agrees(self, reply: str) -> bool:
        return not reading.starts_with(reply, phrases.table("en").no_words)


class ResilientConversation(Conversation):
    strict = False
    latest = True
    languages = phrases.LANGUAGES
