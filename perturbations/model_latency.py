"""Model-channel latency: a slow model, a slow first token, a slow stream.

Per request to the agent's model. Delays are wall-clock time (they happen on a real socket, and
the agent's SDK times out in wall-clock time), so keep them small in large matrices:

- ``latency``: the request waits ``seconds`` before the upstream sees it
- ``first_token``: the answer waits ``seconds`` before its first byte (stream: first chunk)
- ``slow_stream``: each stream chunk after the first waits ``seconds`` / 10
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
from pydantic import Field, field_validator

from chaoseval.channels.model.calls import (
    ModelCall,
    ModelCallFailed,
    ModelCallPerturbation,
    mode_names,
)
from chaoseval.model.records import RootCause
from chaoseval.model.trajectory import Fault
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    FailureContext,
    PerturbationContext,
    perturbation,
)

SLOW_MODEL = RootCause(
    name="slow_model", label="timed out waiting for a slow model", owner="model_latency"
)

Mode = Literal["latency", "first_token", "slow_stream"]


class ModelLatencyParams(CommonParams):
    seconds: float = Field(default=0.5, ge=0, description="mean added delay in seconds")
    jitter: float = Field(default=0.5, ge=0, le=1, description="relative spread around the mean")
    modes: list[Mode] = Field(
        default_factory=lambda: list[Mode](["latency"]),
        description="where the delay goes: latency, first_token, slow_stream",
    )
    _modes = field_validator("modes", mode="before")(mode_names)


@perturbation("model_latency")
class ModelLatency(ModelCallPerturbation[ModelLatencyParams]):
    """Slow the agent's model down."""

    Params = ModelLatencyParams
    models = "a slow or overloaded model API (latency, slow first token, slow stream)"
    root_causes = (SLOW_MODEL,)

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """A delay explains a failure only when the agent gave up waiting (a timeout)."""
        error = failure.error
        return SLOW_MODEL if isinstance(error, ModelCallFailed) and error.timed_out else None

    async def apply(self, call: ModelCall, call_next: CallNext, ctx: PerturbationContext) -> Any:
        p = self.params
        mode = ctx.rng.choice(sorted(p.modes))
        delay = round(p.seconds * ctx.rng.uniform(1 - p.jitter, 1 + p.jitter), 4)
        ctx.fault("model", "latency", mode=mode, seconds=delay)
        if mode == "latency":
            await anyio.sleep(delay)
            return await call_next(call)
        reply = await call_next(call)
        if mode == "first_token":
            reply.first_token_delay += delay
        else:
            reply.chunk_delay += delay / 10
        return reply
