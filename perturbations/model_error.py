"""Model-channel errors on the wire: rate limits, server errors, hangs, resets, cut streams.

Per request to the agent's model (the OpenAI-compatible channel). What the agent's SDK gets:

- ``429``: HTTP 429 with ``retry-after`` and ``retry-after-ms`` (fault ``http_error``)
- ``500`` / ``503``: a server error, with ``x-should-retry`` when ``should_retry`` is set
- ``hang``: no answer until the client's timeout or the end of the trial (fault ``timeout``)
- ``reset``: headers, half a body, then the connection drops (fault ``connection_reset``)
- ``stream_cut``: the upstream's answer, cut in the middle of its first tool call's arguments
  (a non-streaming answer: half its JSON) and the connection drops (fault ``stream_cut``)
- ``context_length``: HTTP 400 ``context_length_exceeded`` (fault ``context_length``)

An SDK retries 429, 5xx, hangs and resets by itself: the channel records a fault its retry hid
as *absorbed* (``detail.absorbed``; it still landed); the last fault of a chain is the one the
agent's code sees.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator

from chaoseval.channels.model.calls import (
    ModelCall,
    ModelCallFailed,
    ModelCallPerturbation,
    ModelHang,
    ModelHTTPFault,
    ModelReset,
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

MODEL_API_ERROR = RootCause(
    name="model_api_error", label="did not survive a model API failure", owner="model_error"
)

Mode = Literal["429", "500", "503", "hang", "reset", "stream_cut", "context_length"]


class ModelErrorParams(CommonParams):
    probability: float = Field(default=0.3, ge=0, le=1, description="per-request chance")
    modes: list[Mode] = Field(
        default_factory=lambda: list[Mode](["429"]),
        description="faults to draw from: 429, 500, 503, hang, reset, stream_cut, context_length",
    )
    retry_after: float = Field(
        default=1.0, ge=0, description="seconds a 429 asks to wait (retry-after, retry-after-ms)"
    )
    should_retry: bool | None = Field(
        default=None, description="x-should-retry on 429/5xx (None: header not sent)"
    )

    _modes = field_validator("modes", mode="before")(mode_names)

    def model_post_init(self, _: Any) -> None:
        if not self.modes:
            raise ValueError("modes must name at least one fault")


@perturbation("model_error")
class ModelError(ModelCallPerturbation[ModelErrorParams]):
    """Fail selected model requests the way a model API does."""

    Params = ModelErrorParams
    models = "an unreliable model API (rate limits, 5xx, hangs, resets, cut streams)"
    root_causes = (MODEL_API_ERROR,)

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """A model-API fault that reached the agent's code explains an agent that raised."""
        return MODEL_API_ERROR if isinstance(failure.error, ModelCallFailed) else None

    async def apply(self, call: ModelCall, call_next: CallNext, ctx: PerturbationContext) -> Any:
        p = self.params
        mode = ctx.rng.choice(sorted(p.modes))
        headers = {} if p.should_retry is None else {"x-should-retry": str(p.should_retry).lower()}
        if mode == "429":
            ctx.fault("model", "http_error", status=429, retry_after=p.retry_after)
            headers["retry-after-ms"] = str(round(p.retry_after * 1000))
            headers["retry-after"] = str(math.ceil(p.retry_after))
            raise ModelHTTPFault(
                429,
                "Rate limit reached for requests",
                error_type="requests",
                code="rate_limit_exceeded",
                headers=headers,
            )
        if mode in ("500", "503"):
            ctx.fault("model", "http_error", status=int(mode))
            raise ModelHTTPFault(int(mode), "The server had an error", headers=headers)
        if mode == "context_length":
            ctx.fault("model", "context_length", status=400)
            raise ModelHTTPFault(
                400,
                "This model's maximum context length is 8192 tokens; your messages exceed it.",
                error_type="invalid_request_error",
                code="context_length_exceeded",
            )
        if mode == "hang":
            ctx.fault("model", "timeout", mode="hang")
            raise ModelHang("the model never answered")
        if mode == "reset":
            ctx.fault("model", "connection_reset")
            raise ModelReset("connection reset by peer")
        reply = await call_next(call)
        ctx.fault("model", "stream_cut", stream=call.stream)
        reply.cut_mid_tool_call = True
        return reply
