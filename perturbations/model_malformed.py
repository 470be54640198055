"""Malformed model answers: broken tool-call arguments, an unknown tool, a broken envelope.

Per request to the agent's model; the upstream's answer is changed before it is written:

- ``invalid_json``: the first tool call's arguments are not JSON
- ``truncated_json``: the first tool call's arguments stop half-way
- ``unknown_tool``: the first tool call names a tool that was not offered
- ``no_finish_reason``: the choice has no finish_reason
- ``empty_choices``: the completion has no choices at all

Tool-call modes apply to answers that call a tool; an answer without one gets one of the
envelope modes instead.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from chaoseval.channels.model.calls import (
    ModelAnswerUnusable,
    ModelCall,
    ModelCallPerturbation,
    ModelReply,
    mode_names,
)
from chaoseval.channels.model.wire import tool_calls_of
from chaoseval.model.records import RootCause
from chaoseval.model.trajectory import Fault
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    FailureContext,
    PerturbationContext,
    perturbation,
)

MALFORMED_MODEL_OUTPUT = RootCause(
    name="malformed_model_output",
    label="broke on a malformed model answer",
    owner="model_malformed",
)

Mode = Literal[
    "invalid_json", "truncated_json", "unknown_tool", "no_finish_reason", "empty_choices"
]
TOOL_MODES: tuple[Mode, ...] = ("invalid_json", "truncated_json", "unknown_tool")


class ModelMalformedParams(CommonParams):
    probability: float = Field(default=0.3, ge=0, le=1, description="per-request chance")
    modes: list[Mode] = Field(
        default_factory=lambda: list[Mode](TOOL_MODES),
        description="invalid_json, truncated_json, unknown_tool, no_finish_reason, empty_choices",
    )
    _modes = field_validator("modes", mode="before")(mode_names)


@perturbation("model_malformed")
class ModelMalformed(ModelCallPerturbation[ModelMalformedParams]):
    """Break the shape of the model's answer."""

    Params = ModelMalformedParams
    models = "a model answer the client cannot use (bad tool-call JSON, unknown tool, no choices)"
    root_causes = (MALFORMED_MODEL_OUTPUT,)

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """An answer the agent's code could not parse explains an agent that raised."""
        return MALFORMED_MODEL_OUTPUT if isinstance(failure.error, ModelAnswerUnusable) else None

    async def apply(self, call: ModelCall, call_next: CallNext, ctx: PerturbationContext) -> Any:
        reply: ModelReply = await call_next(call)
        calls = tool_calls_of(reply.completion)
        modes = [m for m in sorted(self.params.modes) if calls or m not in TOOL_MODES]
        if not modes:
            return reply  # only tool-call modes asked for, and no tool call to break
        mode = ctx.rng.choice(modes)
        done = reply.completion
        if mode in TOOL_MODES:
            fn = calls[0]["function"]
            original = str(fn.get("arguments") or "")
            if mode == "invalid_json":
                fn["arguments"] = original.replace('"', "'", 2) + ",}"
            elif mode == "truncated_json":
                fn["arguments"] = original[: max(1, len(original) // 2)]
            else:
                fn["name"] = f"{fn.get('name')}_v2"
            ctx.fault("model", "malformed", mode=mode, tool=calls[0]["function"]["name"])
        elif mode == "no_finish_reason":
            for choice in done.get("choices") or []:
                choice["finish_reason"] = None
            ctx.fault("model", "malformed", mode=mode)
        else:
            done["choices"] = []
            ctx.fault("model", "malformed", mode=mode)
        reply.malformed = True
        return reply
