"""Tool latency: the tool answers, but late."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    Perturbation,
    PerturbationContext,
    perturbation,
)


class LatencyParams(CommonParams):
    mean: float = Field(default=2.0, ge=0, description="mean added delay, seconds")
    jitter: float = Field(
        default=1.0,
        ge=0,
        description="spread, seconds: half-width (uniform), standard deviation (normal); "
        "exponential ignores it (its spread is its mean)",
    )
    distribution: Literal["uniform", "normal", "exponential"] = Field(
        default="exponential", description="shape of the delay around the mean"
    )


@perturbation("latency")
class Latency(Perturbation[LatencyParams]):
    """Delay each selected tool result. A delay past the call deadline becomes a timeout.

    Models a slow dependency: a database under load or a third-party API at its p99. The
    default exponential delay (mean 2 s) gives the long tail real services show. Delays never
    go below zero. The delay is slept on the trial clock: instant on the virtual clock of the
    simulated agents, real for a real agent. Logged as fault kind ``latency`` with ``seconds``.
    """

    channel = "tool"
    Params = LatencyParams
    models = "a slow dependency (p99 latency, a database under load)"

    def draw(self, ctx: PerturbationContext) -> float:
        p = self.params
        if p.distribution == "uniform":
            delay = ctx.rng.uniform(p.mean - p.jitter, p.mean + p.jitter)
        elif p.distribution == "normal":
            delay = ctx.rng.gauss(p.mean, p.jitter)
        else:
            delay = ctx.rng.expovariate(1 / p.mean) if p.mean > 0 else 0.0
        return max(0.0, delay)

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        delay = self.draw(ctx)
        ctx.fault("tool", "latency", seconds=round(delay, 4))
        await ctx.clock.sleep(delay)
        return await call_next(call)
