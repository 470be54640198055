"""The Actor: the small API a scenario's reference solution is written against.

A reference solution is ``async def solve(actor) -> AgentOutput``. The scripted agent runs it
with a faithful Actor; the simulated agents run it with actors that add decision noise and
their own harness behaviour (retries, validation, trust in memory). So one solution per
scenario drives every reference agent, and the outcomes come from the seeded simulation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from chaoseval.agents.conversing import Conversation
from chaoseval.errors import ToolConnectionError, ToolHTTPError, ToolTimeout
from chaoseval.seams.agent import AgentOutput, Episode


class Stop(Exception):
    """Raised inside a solution to end the episode early with an output."""

    def __init__(self, output: AgentOutput):
        self.output = output
        super().__init__(output.answer)


class Actor:
    """Faithful execution: every call goes straight to the (perturbed) tools."""

    # How it talks with a conversational scenario's user (agents.conversing).
    conversation: type[Conversation] = Conversation

    def __init__(self, episode: Episode):
        self.episode = episode
        self.task = episode.task
        self.talk = self.conversation(episode)

    async def say(self, text: str) -> str | None:
        """Send the user a message; their reply (None once they have left)."""
        return await self.talk.say(text)

    async def ask_for(self, *facts: str) -> dict[str, str | None]:
        """The user's facts by name, asked for when not yet heard (None: never given)."""
        return await self.talk.ask_for(*facts)

    async def confirm(self, text: str) -> bool:
        """Propose ``text`` to the user; whether they agreed."""
        return await self.talk.confirm(text)

    async def call(self, tool: str, /, **args: Any) -> Any:
        return await self.episode.tools.call(tool, **args)

    async def try_call(self, tool: str, /, **args: Any) -> Any:
        """Call a dependency that may be down: None when it stays unavailable (not on ToolError:
        the world's own 'no' is an answer, not an outage)."""
        try:
            return await self.call(tool, **args)
        except (ToolTimeout, ToolHTTPError, ToolConnectionError):
            return None

    def decide(self, condition: bool) -> bool:
        """A judgement the policy makes from what it has read (where an LLM could slip)."""
        return condition

    async def recall(self, key: str, lookup: Callable[[], Awaitable[Any]]) -> Any:
        """A fact the agent may remember from an earlier session; the reference re-checks.

        It still reads its memory first, as any agent with memory in its context does, so a
        memory perturbation reaches it (and lint's canary can show that)."""
        self.memory(key)
        return await lookup()

    def memory(self, key: str) -> Any:
        for item in self.episode.memory:
            if item.key == key:
                return item.value
        return None

    def now(self) -> datetime:
        return self.episode.now()

    async def page(self) -> str | None:
        return await self.episode.observe()

    async def accessibility(self) -> str | None:
        """The page as its accessibility tree (Playwright's aria-snapshot YAML, rendered from
        the text DOM by chaoseval.engine.a11y): what browser-use-style agents read."""
        from chaoseval.engine.a11y import aria_snapshot

        page = await self.page()
        return None if page is None else aria_snapshot(page)

    async def click(self, label: str, role: str = "button") -> Any:
        """Activate a UI element by its role and visible label (see chaoseval.engine.ui)."""
        from chaoseval.engine.ui import click_by_label

        return await click_by_label(self, label, role)

    def answer(self, text: str, **data: Any) -> AgentOutput:
        return AgentOutput(answer=text, data=data, usage=self.episode.usage)

    def give_up(self, reason: str) -> AgentOutput:
        return AgentOutput(answer=reason, gave_up=True, usage=self.episode.usage)


async def run_solution(actor: Actor, solution: Callable[[Actor], Awaitable[Any]]) -> AgentOutput:
    try:
        return await solution(actor)
    except Stop as stop:
        return stop.output
