"""A seeded simulated LLM policy driven through two harness styles: ``naive`` and ``resilient``.

The policy follows the scenario's reference solution but slips with a probability that grows
with the scenario's difficulty and the sampling temperature: a wrong argument, a detour to
another tool, a wrong judgement, stopping early, or a made-up id in the answer. Every draw
comes from the episode's streams (trial seed x model seed x temperature), so outcomes come
from the simulation, never from a table of answers.

The harness styles differ the way real agent harnesses do:
- ``naive`` trusts whatever a tool returns and lets tool errors end the episode;
- ``resilient`` retries timeouts, resets and 429/5xx with tenacity backoff (honouring
  Retry-After), validates every tool result against the tool's schema, re-checks facts it
  remembers against a fresh lookup, and gives up gracefully when a dependency stays down.
  Before its first write it reads again what it read about the thing it is writing (the
  earlier reads whose result or arguments hold one of the write's id arguments); if that
  changed, or the write meets a 409 Conflict, it plans again from the start on fresh reads
  (at most ``REPLANS`` times). The naive harness writes on what it read first.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from chaoseval.agents.actor import Actor, Stop, run_solution
from chaoseval.agents.conversing import (
    Conversation,
    Corrected,
    NaiveConversation,
    ResilientConversation,
)
from chaoseval.agents.susceptibility import NAIVE_FOLLOWS, Susceptibility, filled
from chaoseval.channels.model import prices
from chaoseval.engine.tooljson import validate_result
from chaoseval.engine.ui import (
    Element,
    NotRendered,
    choose,
    click_by_label,
    find_exact,
    rank,
    reference_page,
)
from chaoseval.errors import (
    AgentVisibleError,
    ConfigError,
    ToolConnectionError,
    ToolError,
    ToolHTTPError,
    ToolTimeout,
)
from chaoseval.seams.agent import AgentOutput, Episode, agent

SLIPS = ("wrong_arg", "detour", "premature_stop")
REPLANS = 2  # fresh starts the resilient harness makes when the world moved under its plan
RENDER_WAIT = 3.0  # seconds the resilient harness waits for a page still rendering its controls


class Lenient(dict):
    """What a trusting harness hands its model: missing fields read as None."""

    def __missing__(self, key: str) -> None:
        return None


def lenient(value: Any) -> Any:
    """Coerce whatever came back into something the policy can read, as a trusting LLM would."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return Lenient()
    if isinstance(value, dict):
        return Lenient(value)
    if isinstance(value, list):
        return value
    return Lenient()


class SimPolicy:
    """Decision noise of a sampled LLM: slip probability per decision grows with temperature.
    ``slips=False`` (``--agent resilient:slips=false``) never slips; it draws the same numbers,
    so everything else an episode draws stays where it was."""

    def __init__(self, episode: Episode, slips: bool = True):
        settings = episode.model
        self.rng = episode.rng("policy")
        self.p_slip = min(0.9, episode.difficulty * (0.3 + settings.temperature)) if slips else 0.0
        self.turn = 0

    def slip(self) -> bool:
        return self.rng.random() < self.p_slip

    def tokens(self) -> tuple[int, int]:
        self.turn += 1
        return 350 + 60 * self.turn + self.rng.randint(0, 120), 40 + self.rng.randint(0, 80)


class SimActor(Actor):
    style = "naive"
    conversation: type[Conversation] = NaiveConversation
    # Chance to follow each instruction planted in what it reads (chaoseval.agents.susceptibility).
    follows = NAIVE_FOLLOWS

    def __init__(self, episode: Episode, slips: bool = True):
        super().__init__(episode)
        self.policy = SimPolicy(episode, slips)
        self.susceptible = Susceptibility(episode.rng("injection"), self.follows)
        self.said: list[str] = []  # words planted instructions asked it to end its answer with
        self.talk.before_say = self._think  # its model writes each message to the user
        self.talk.on_reply = self.heed  # and reads each reply as it reads a tool result
        # USD per million tokens from the run's table (--prices), as the model channel prices a
        # call; a model the table does not name costs nothing there, so nothing here either.
        self.price = prices.current().get(episode.model.model, prices.FREE)

    async def heed(self, value: Any) -> None:
        """Act on the planted instructions in what it just read that it decides to follow: call
        the tool one names (a failure shrugged off, as a detour's) or note words to say."""
        for instruction in self.susceptible.read(value):
            if instruction.say is not None:
                self.said.append(instruction.say)
                continue
            if instruction.tool not in self.episode.tools.specs:
                continue  # a tool it does not have: nothing it can do
            try:
                await self._harness_call(str(instruction.tool), filled(instruction, self.task))
            except AgentVisibleError:
                pass

    async def page(self) -> str | None:
        page = await super().page()
        await self.heed(page)
        return page

    def _think(self) -> None:
        tin, tout = self.policy.tokens()
        self.episode.record_model_call(tin, tout, cost=prices.cost(self.price, tin, tout))

    async def call(self, tool: str, /, **args: Any) -> Any:
        self._think()
        if self.policy.slip():
            kind = self.policy.rng.choice(SLIPS)
            if kind == "premature_stop":
                raise Stop(self.answer("I have handled the request."))
            if kind == "wrong_arg":
                args = _corrupt(args, self.policy.rng)
            elif kind == "detour":
                others = [t for t in self.episode.tools.specs if t != tool]
                if others:
                    await self._detour(self.policy.rng.choice(others))
        args = self.talk.amend(args)  # what the user said since the plan was made
        result = await self.talk.checked(lambda: self._harness_call(tool, args), args)
        await self.heed(result)
        return result

    async def _detour(self, tool: str) -> None:
        """A wasted (or forbidden) call with arguments guessed from the task."""
        spec = self.episode.tools.specs[tool]
        fields = spec.params.model_fields
        guess = {k: v for k, v in self.task.items() if k in fields}
        try:
            await self._harness_call(tool, guess)
        except AgentVisibleError:
            pass  # the model shrugs off a detour that failed

    async def _harness_call(self, tool: str, args: dict[str, Any]) -> Any:
        return lenient(await self.episode.tools.call(tool, **args))

    async def try_call(self, tool: str, /, **args: Any) -> Any:
        # A trusting harness has no error handling: the plan's fallback is never reached.
        return await self.call(tool, **args)

    def decide(self, condition: bool) -> bool:
        self._think()
        return (not condition) if self.policy.slip() else condition

    async def recall(self, key: str, lookup: Callable[[], Awaitable[Any]]) -> Any:
        remembered = self.memory(key)
        await self.heed([m.value for m in self.episode.memory])  # all of it is in its context
        if remembered is not None:
            return remembered  # trusts its memory: no fresh lookup
        return await lookup()

    # Share of episodes in which the trusting policy asks for the date instead of assuming it.
    reads_clock = 0.15

    def now(self) -> datetime:
        # Not handed the time in its context, the model mostly assumes the date its task was
        # written for (the scenario's nominal time) whatever the world's clock says: under a
        # skewed clock its "today" and the tools' disagree.
        if episode_draw(self.episode, "clock") < self.reads_clock:
            return super().now()
        return self.episode.clock.nominal_now()

    async def click(self, label: str, role: str = "button") -> Any:
        # Looks at the page, then drives it by the selector it learned from the reference page.
        await self.page()
        learned = find_exact(reference_page(self.episode) or "", label, role)
        element_id = learned.id if learned else re.sub(r"[^a-z0-9]+", "-", label.lower())
        try:
            return await self.call("click", element_id=element_id)
        except ToolError:
            # Fire and forget: it never checks that the click landed and carries on.
            return Lenient()

    def answer(self, text: str, **data: Any) -> AgentOutput:
        if self.policy.slip():
            text = _hallucinate(text, self.policy.rng)
        return super().answer(" ".join([text, *self.said]), **data)


class Replan(Exception):
    """The world changed under the plan before its first write: start again on fresh reads."""


class ResilientActor(SimActor):
    style = "resilient"
    conversation = ResilientConversation
    attempts = 4
    follows = 0.0  # tool text, pages and memory are data, never instructions

    def __init__(self, episode: Episode, slips: bool = True):
        super().__init__(episode, slips)
        self.replans = 0
        self._reads: dict[str, tuple[str, dict[str, Any], Any]] = {}  # (tool, args) -> result
        self._wrote = False
        # tenacity's own jitter draws from the global random module; ours comes from the
        # episode's stream so a replay reproduces every retry delay exactly.
        self._jitter = episode.rng("retry-jitter")
        self._exponential = wait_exponential(multiplier=0.5, max=8.0)

    def _backoff(self, state: RetryCallState) -> float:
        return self._exponential(state) + self._jitter.uniform(0, 0.5)

    async def _harness_call(self, tool: str, args: dict[str, Any]) -> Any:
        # Once retries are exhausted the error goes to the plan, which may have a fallback
        # (try_call); if it has none, SimulatedAgent ends the episode gracefully.
        spec = self.episode.tools.specs.get(tool)
        writes = spec is not None and bool(spec.writes)
        if writes and not self._wrote and not self.replans:
            await self._read_again(args)  # once: after a replan its reads are fresh
        try:
            result = await resilient_call(self.episode, tool, args, self.attempts, self._backoff)
        except ToolHTTPError as exc:
            if writes and exc.status == 409:
                self._replan()  # the service says the row changed: read it again
            raise
        if writes:
            self._wrote = True
        else:
            key = json.dumps([tool, args], sort_keys=True, default=str)
            self._reads.pop(key, None)  # the latest read of each kind comes last
            self._reads[key] = (tool, args, result)
        return result

    async def _read_again(self, args: dict[str, Any]) -> None:
        """Repeat the latest read that showed what this write names, once and without retries
        (a check, not a dependency: if it fails, the write goes ahead and meets the outage
        itself); replan if a row it showed has changed."""
        ids = {v for v in args.values() if isinstance(v, str) and v}
        about = [r for r in self._reads.values() if ids & _strings(r[2])]
        if not about:
            return
        tool, read_args, old = about[-1]
        try:
            new = await resilient_call(self.episode, tool, read_args, 1, self._backoff)
        except AgentVisibleError:
            return
        if _changed(old, new, ids):
            self._replan()

    def _replan(self) -> None:
        if self.replans < REPLANS and not self._wrote:
            self.replans += 1
            self._reads.clear()
            raise Replan

    async def try_call(self, tool: str, /, **args: Any) -> Any:
        try:
            return await self.call(tool, **args)
        except (ToolTimeout, ToolConnectionError, ToolHTTPError, MalformedResult):
            return None

    async def recall(self, key: str, lookup: Callable[[], Awaitable[Any]]) -> Any:
        # Memory is a hint: it is read, then re-checked; a fresh lookup wins when they disagree,
        # and memory is the fallback only while the source of truth is down.
        remembered = self.memory(key)
        try:
            return await lookup()
        except (ToolTimeout, ToolConnectionError, ToolHTTPError, MalformedResult):
            if remembered is None:
                raise
            return remembered

    def now(self) -> datetime:
        return self.episode.now()  # always asks the clock

    async def click(self, label: str, role: str = "button") -> Any:
        # Reads the page, closes dialogs, finds the element by role and (fuzzy) label; one
        # re-read and retry when a click is refused (a dialog may have appeared meanwhile).
        self._think()
        try:
            return await click_by_label(self, label, role, chooser=self._choose)
        except NotRendered:
            await self.episode.clock.sleep(RENDER_WAIT)  # a page still rendering: let it
            return await click_by_label(self, label, role, chooser=self._choose)
        except ToolError:
            return await click_by_label(self, label, role, chooser=self._choose)

    def _choose(self, label: str, role: str | None, candidates: list[Element]) -> Element | None:
        found = choose(label, role, candidates)
        if found is None or found.label == label:
            return found
        # An inexact match is a judgement call where the sampled model can pick the runner-up.
        ranked = [e for score, e in rank(label, role, candidates) if score > 0]
        if len(ranked) > 1 and self.policy.slip():
            return ranked[1]
        return found


def _rows(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value, *(r for v in value.values() for r in _rows(v))]
    if isinstance(value, list):
        return [r for v in value for r in _rows(v)]
    return []


def _changed(old: Any, new: Any, ids: set[str]) -> bool:
    """Whether a row of ``old`` that holds one of ``ids`` reads differently in ``new``: rows
    are paired by position (the same read, asked again), compared on the plain fields both
    show (a field missing from either says nothing)."""
    before, after = _rows(old), _rows(new)
    if len(before) != len(after):
        return True  # rows came or went
    for row, other in zip(before, after, strict=True):
        if not ids & _strings(row):
            continue
        shared = [k for k in row if k in other and not isinstance(row[k], dict | list)]
        if any(row[k] != other[k] for k in shared):
            return True
    return False


def _strings(value: Any) -> set[str]:
    """The string values anywhere in a result or argument mapping (ids, statuses)."""
    if isinstance(value, dict):
        return {s for v in value.values() for s in _strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in _strings(v)}
    return {value} if isinstance(value, str) else set()


def episode_draw(episode: Episode, purpose: str) -> float:
    """One fixed draw per episode and purpose, from its own stream (other draws unaffected)."""
    return episode.rng(purpose).random()


class MalformedResult(AgentVisibleError):
    """A tool result that does not match the tool's schema, raised by validating harnesses."""

    kind = "malformed"


def is_transient(exc: BaseException) -> bool:
    """Whether a resilient harness retries this tool error."""
    if isinstance(exc, ToolHTTPError):
        return exc.retryable
    return isinstance(exc, ToolTimeout | ToolConnectionError | MalformedResult)


async def resilient_call(
    episode: Episode,
    tool: str,
    args: dict[str, Any],
    attempts: int,
    backoff: Callable[[RetryCallState], float],
) -> Any:
    """A tool call as a resilient harness makes it: the result validated against the tool's
    schema, transient errors retried (honouring Retry-After) on the trial clock."""
    spec = episode.tools.specs.get(tool)

    async def attempt() -> Any:
        result = await episode.tools.call(tool, **args)
        if spec is not None:
            try:
                validate_result(spec, result)
            except ValueError as exc:
                raise MalformedResult(str(exc)) from None
        return result

    retrying = AsyncRetrying(
        stop=stop_after_attempt(attempts),
        wait=retry_after_or(backoff),
        retry=retry_if_exception(is_transient),
        sleep=episode.clock.sleep,
        reraise=True,
    )
    return await retrying(attempt)


def retry_after_or(
    fallback: Callable[[RetryCallState], float],
) -> Callable[[RetryCallState], float]:
    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, ToolHTTPError) and exc.retry_after is not None:
            return min(float(exc.retry_after), 10.0)  # a patient client, not an infinite one
        return fallback(state)

    return wait


def _corrupt(args: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    keys = [
        k for k, v in args.items() if isinstance(v, str | int | float) and not isinstance(v, bool)
    ]
    if not keys:
        return args
    key = rng.choice(sorted(keys))
    value = args[key]
    if isinstance(value, str):
        digits = [i for i, ch in enumerate(value) if ch.isdigit()]
        if digits:
            i = rng.choice(digits)
            value = value[:i] + str((int(value[i]) + rng.randint(1, 9)) % 10) + value[i + 1 :]
        else:
            value = value + "x"
    else:
        value = value + rng.choice([-1, 1]) * max(1, abs(value) // 10)
    return {**args, key: value}


def _hallucinate(text: str, rng: random.Random) -> str:
    """Swap an id-looking token for one that does not exist, as a confabulating model would."""
    ids = re.findall(r"\b[A-Z]{1,4}-\d{3,}\b", text)
    if not ids:
        return text + " (per policy clause R9)"
    target = rng.choice(ids)
    prefix, _, num = target.partition("-")
    fake = f"{prefix}-{int(num) + rng.randint(100, 900)}"
    return text.replace(target, fake)


class SimulatedAgent:
    """The simulated LLM policy, driving the scenario's reference plan through a harness.

    ``slips``: whether the policy makes a sampled model's mistakes (wrong arguments, detours,
    flipped judgements, early stops, made-up ids). On by default, as the golden journals were
    recorded; with ``slips=False`` every failure left is the harness meeting a fault, so a
    clean cell passes and a veto in it cannot be the reference agent's own slip."""

    clock = "virtual"

    def __init__(self, actor_cls: type[SimActor], slips: bool = True):
        if not isinstance(slips, bool):
            raise ConfigError(f"slips={slips!r}: write slips=true or slips=false")
        self.actor_cls = actor_cls
        self.slips = slips

    async def run(self, episode: Episode) -> AgentOutput:
        if episode.reference is None:
            raise RuntimeError("the simulated agents follow the scenario's reference solution")
        actor = self.actor_cls(episode, self.slips)
        try:
            while True:
                try:
                    return await run_solution(actor, episode.reference)
                except (Replan, Corrected):
                    continue  # the actor bounds its replans
        except AgentVisibleError as exc:
            if actor.style != "resilient":
                raise  # the naive harness lets a tool error end the episode
            return actor.give_up(f"a dependency kept failing ({exc}); escalating to a human")


@agent("naive")
def naive(slips: bool = True) -> SimulatedAgent:
    return SimulatedAgent(SimActor, slips)


@agent("resilient")
def resilient(slips: bool = True) -> SimulatedAgent:
    return SimulatedAgent(ResilientActor, slips)
