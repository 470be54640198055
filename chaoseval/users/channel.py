"""A trial's user channel: the agent's message through the user-channel plugins to the
simulated user and its reply back, each turn a ``user`` step of the trajectory.

What ``episode.user`` is in process; the tool servers' ``ask_user`` and the exec: line
protocol call the same ``say``. The plugins see a ``UserCall``: they may set its ``style``
before the user answers (another language, withholding, a demand) and rewrite the reply
after (typos, a planted instruction), or answer in its place (an impatient user gone).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from chaoseval.engine.toolbox import Received
from chaoseval.errors import HarnessError, UserSimulatorError
from chaoseval.model.clock import Clock
from chaoseval.model.conversation import Fact, RenderedUser
from chaoseval.model.trajectory import UserTurnData
from chaoseval.redact import cap
from chaoseval.seams.perturbation import Perturbation, PerturbationContext, build_chain
from chaoseval.users.simulator import DeterministicUser, Reading, Reply, Style

TEXT_CAP = 4000  # characters of one message kept in the step (the whole text reaches the user)


@dataclass
class UserCall:
    """One turn as the user-channel plugins see it."""

    text: str  # the agent's message
    index: int  # the agent's n-th message to the user (0-based)
    turn: int  # the agent's step count when it spoke
    step: int  # the trajectory step of the turn
    user: DeterministicUser
    reading: Reading
    style: Style = field(default_factory=Style)
    ended: bool = False  # set by the simulator (or a plugin) when the user leaves


class UserSession:
    """``episode.user``: ``await episode.user.say("What is your order number?")``."""

    def __init__(
        self,
        user: RenderedUser,
        state: Any,  # engine.toolbox.TrialState
        plugins: list[Perturbation[Any]],
        make_ctx: Callable[[Perturbation[Any], Any], PerturbationContext],
        clock: Clock,
        simulator: DeterministicUser | None = None,  # another user (users.llm.LLMUser)
    ):
        self._sim = simulator if simulator is not None else DeterministicUser(user)
        self._state = state
        self._plugins = [p for p in plugins if p.channel == "user"]
        self._make_ctx = make_ctx
        self._clock = clock
        self._count = 0
        self._facts = MappingProxyType(
            {f.name: f.model_copy(update={"value": ""}) for f in self._sim.facts}
        )  # asked for by every reading of a reply: made once, read-only

    @property
    def opening(self) -> str:
        """What the user said first (the end of the agent's instruction)."""
        return self._sim.user.opening

    @property
    def facts(self) -> Mapping[str, Fact]:
        """The facts the user may be asked for: names, kinds and labels, never their values."""
        return self._facts

    @property
    def ended(self) -> bool:
        return self._sim.left

    @property
    def turns(self) -> int:
        return self._count

    @property
    def simulator(self) -> DeterministicUser:
        """The user itself, for plugins' veto and blame and the judge; never for agents."""
        return self._sim

    async def say(self, text: str) -> str | None:
        """Send the user a message; their reply, or None once they have left."""
        state = self._state
        state.turn += 1
        index, self._count = self._count, self._count + 1
        step = state.trajectory.add_step(
            "user", t=self._clock.monotonic(), args={"text": cap(text, TEXT_CAP)}
        )
        call = UserCall(
            text=text, index=index, turn=state.turn, step=step.index, user=self._sim,
            reading=self._sim.read(text),
        )  # fmt: skip
        contexts: list[PerturbationContext] = []

        def ctx_for(plugin: Perturbation[Any], c: Any) -> PerturbationContext:
            ctx = self._make_ctx(plugin, c)
            ctx.step = step.index
            ctx.call_index = index
            contexts.append(ctx)
            return ctx

        agreed = False

        async def base(c: UserCall) -> str | None:
            nonlocal agreed
            try:
                reply = await _answer(self._sim, c.text, c.style)
            except UserSimulatorError as exc:
                # Kept where the judge looks first: the trial is the simulator's failure
                # (not evaluable) even if the agent catches what it is raised.
                state.harness_errors.append(exc)
                raise
            c.reading, c.ended, agreed = reply.reading, reply.ended, reply.agreed
            return reply.text

        try:
            if self._plugins:
                reply = await build_chain("user", self._plugins, base, ctx_for)(call)
            else:
                reply = await base(call)
        except HarnessError as exc:
            # A plugin's own bug: recorded so the trial is not evaluable even when the agent
            # swallows the exception (as the tool box does); its faults never delivered.
            if exc not in state.harness_errors:  # (the simulator's own are recorded in base)
                state.harness_errors.append(exc)
            step.result_class = "harness_error"
            step.error = str(exc)
            raise
        fired = [i for c in contexts for i in c.fired]
        step.faults = fired
        state.deliver(fired)
        seen = call.reading
        step.data = UserTurnData(
            turn=index + 1, asked=seen.asked, stated=seen.stated, misstated=seen.misstated,
            confirm=seen.confirm, agreed=agreed, ended=call.ended or reply is None,
        )  # fmt: skip
        step.result_class = "ok"
        step.result = cap(reply, TEXT_CAP)  # redacted before it is cut
        if reply is not None:  # ids it only echoes from the agent's message are not news
            state.received.append(Received(reply, text))
        return reply

    async def close(self) -> None:
        """Let go of what the user holds (an LLM user's client); the trial calls it once the
        agent is done."""
        close = getattr(self._sim, "close", None)
        if close is not None:
            await close()


async def _answer(sim: DeterministicUser, text: str, style: Style) -> Reply:
    """The user's reply: an LLM user's ``converse`` is awaited, the deterministic user's
    ``respond`` called."""
    converse = getattr(sim, "converse", None)
    if converse is not None:
        reply: Reply = await converse(text, style)
        return reply
    return sim.respond(text, style)
