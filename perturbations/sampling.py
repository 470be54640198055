"""Seed and temperature variation: the agent's model samples with other settings.

Runs once per trial on the model channel: the trial's ModelSettings come in, changed settings
go out, and they are what the agent reads from ``episode.model`` and what the trial record
keeps. Sweep it to see how reliability depends on sampling::

    -p "sampling:temperature=0|0.7|1.2"     one cell per temperature
    -p "sampling:seed=1|2|3"                one cell per sampling seed

With no parameters it draws a fresh sampling seed per trial (a provider whose sampling is not
reproducible), leaving the temperature alone.

On the wire (agents that call their model through the model channel) it also rewrites each
request's ``temperature`` and ``seed`` before the upstream sees them: the agent sets its own.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from chaoseval.channels.model.calls import ModelCall
from chaoseval.model.records import ModelSettings
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    Perturbation,
    PerturbationContext,
    perturbation,
)


class SamplingParams(CommonParams):
    temperature: float | None = Field(
        default=None, ge=0, le=2, description="sampling temperature to use (None: keep)"
    )
    seed: int | None = Field(
        default=None, description="sampling seed to use (None with no temperature: a random one)"
    )
    temperature_jitter: float = Field(
        default=0.0, ge=0, le=1, description="uniform noise added to the temperature per trial"
    )


@perturbation("sampling")
class Sampling(Perturbation[SamplingParams]):
    """Change the sampling temperature and/or seed the agent's model runs with."""

    channel = "model"
    Params = SamplingParams
    models = "a different sampling seed or temperature (provider default changed, retried call)"

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        if isinstance(call, ModelCall):
            return await call_next(self._rewrite_request(call, ctx))
        p = self.params
        settings: ModelSettings = (await call_next(call)).model_copy(deep=True)
        before = settings.model_dump()
        if p.temperature is not None:
            settings.temperature = p.temperature
        if p.temperature_jitter:
            settings.temperature = round(
                min(2.0, settings.temperature + ctx.rng.uniform(0, p.temperature_jitter)), 4
            )
        if p.seed is not None:
            settings.seed = p.seed
        elif p.temperature is None and not p.temperature_jitter:
            settings.seed = ctx.rng.getrandbits(31)
        after = settings.model_dump()
        changed = {k: {"from": before[k], "to": v} for k, v in after.items() if before[k] != v}
        if changed:  # settings already equal to the requested ones are no fault
            ctx.fault("model", "sampling", **changed)
        self._drawn = settings  # a plugin instance lives for one trial
        return settings

    def _rewrite_request(self, call: ModelCall, ctx: PerturbationContext) -> ModelCall:
        """The per-request form: the trial's drawn settings, written into each request body
        (so an agent that sets its own temperature and seed still samples with them)."""
        drawn: ModelSettings | None = getattr(self, "_drawn", None)
        if drawn is None:  # this trial was not sampled (probability gate at setup)
            return call
        p, body = self.params, call.body
        after = {}
        if p.temperature is not None or p.temperature_jitter:
            after["temperature"] = drawn.temperature
        if p.seed is not None or (p.temperature is None and not p.temperature_jitter):
            after["seed"] = drawn.seed
        changed = {k: {"from": body.get(k), "to": v} for k, v in after.items() if body.get(k) != v}
        if changed:
            body.update({k: after[k] for k in changed})
            ctx.fault("model", "sampling", **changed)
        return call
