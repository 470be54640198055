"""What model-channel plugins see and return: one request in, one reply (or a wire fault) out.

The trial's setup pass hands every ``model``-channel plugin the trial's ModelSettings once;
per-request plugins subclass :class:`ModelCallPerturbation`, which lets that pass through, and
then act on each :class:`ModelCall`. A plugin shapes what reaches the agent either by changing
the :class:`ModelReply` (delays, a cut stream, malformed tool calls) or by raising a
:class:`WireFault` (an HTTP error, a hang, a reset) that the server writes instead of a reply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from chaoseval.channels.model.wire import AnswerSummary, decode_json
from chaoseval.errors import AgentVisibleError
from chaoseval.seams.perturbation import (
    CallNext,
    CommonParams,
    Perturbation,
    PerturbationContext,
)

Endpoint = Literal["chat", "responses", "messages"]


@dataclass
class ModelCall:
    """One request on the model channel, normalised to a chat-completions body."""

    endpoint: Endpoint
    # Plugins may rewrite it (sampling); the upstream gets this one. Where the agent's bytes
    # are passed on (``raw``: no plugin), it holds only the top-level members the step records,
    # the messages and tools as each item's bytes (wire.read_top, resent.ConversationReader):
    # read it whole from ``raw``.
    body: dict[str, Any]
    stream: bool
    index: int  # this trial's n-th model request (0-based, retries included)
    attempt: int  # 1 for a first request, n for the client's (n-1)-th retry of it
    turn: int
    step: int
    tool: str = "model"  # so the shared ``tools`` glob selects model calls as one "tool"
    # What the agent itself sent for the sampling settings (None: it sent none, and the
    # channel applied the trial's configured value to ``body``).
    sent: dict[str, Any] = field(default_factory=dict)
    # ``body`` as bytes, for an upstream that sends bytes (forwarding): the agent's own, the
    # sampling settings the channel applied added at their end; None where they could not
    # stand for it (a plugin on the channel may change ``body``; see TrialModelChannel.begin).
    raw: bytes | None = None
    # The upstream's own time when it can tell it apart from ours (a forwarded request: the
    # HTTP exchange, not building the body or parsing the answer); else the call's whole time.
    upstream_seconds: float | None = None
    # The upstream's answer as it came (a forwarded request): what the agent is written when
    # no plugin could have changed it, byte for byte as the API sent it.
    answer_bytes: bytes | None = None


class ModelReply:
    """The upstream's chat completion and how to write it to the agent.

    A forwarded answer may come as its bytes and the few fields its step records
    (``answer``, ``summary``: wire.read_summary): the completion is then decoded from the
    bytes when first read, and ``summary`` is None from then on (whoever read it may change
    it)."""

    def __init__(
        self,
        completion: dict[str, Any] | None = None,
        first_token_delay: float = 0.0,
        chunk_delay: float = 0.0,
        cut_mid_tool_call: bool = False,
        malformed: bool = False,
        *,
        answer: bytes | None = None,
        summary: AnswerSummary | None = None,
    ):
        if completion is None and (answer is None or summary is None):
            raise TypeError("ModelReply needs a completion, or an answer's bytes and summary")
        self._completion = completion
        self._answer = answer
        self._summary = summary
        self.first_token_delay = first_token_delay  # seconds before the first byte
        self.chunk_delay = chunk_delay  # seconds between stream chunks
        # Stop writing in the middle of the first tool call's arguments and drop the connection.
        self.cut_mid_tool_call = cut_mid_tool_call
        self.malformed = malformed  # a plugin broke the completion's shape (recorded as such)

    @property
    def completion(self) -> dict[str, Any]:
        done = self._completion
        if done is None:  # bytes whose summary was read: a JSON object msgspec reads
            done = self._completion = decode_json(self._answer or b"")
        return done

    @completion.setter
    def completion(self, value: dict[str, Any]) -> None:
        self._completion = value

    @property
    def summary(self) -> AnswerSummary | None:
        """The recorded fields of an answer whose completion nobody has read (so nobody has
        changed it), else None."""
        return self._summary if self._completion is None else None


class WireFault(AgentVisibleError):
    """Written to the agent instead of a reply."""

    kind = "model_fault"


class ModelHTTPFault(WireFault):
    """An HTTP error with an OpenAI-style JSON body."""

    kind = "http_error"

    def __init__(
        self,
        status: int,
        message: str,
        *,
        error_type: str = "server_error",
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        self.status = status
        self.error_type = error_type
        self.code = code
        self.headers = headers or {}
        super().__init__(message)

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": str(self),
                "type": self.error_type,
                "param": None,
                "code": self.code,
            }
        }


class ModelHang(WireFault):
    """No answer at all: the request is held until the client gives up or the trial ends."""

    kind = "timeout"


class ModelReset(WireFault):
    """The connection drops: response headers, then part of a body, then nothing."""

    kind = "connection_reset"


class ModelCallFailed(AgentVisibleError):
    """Raised by a wire agent's harness when its model call failed (after any SDK retries),
    so the judge can ask the model-channel plugin whose fault reached it."""

    kind = "model_error"

    def __init__(self, message: str, *, timed_out: bool = False):
        self.timed_out = timed_out
        super().__init__(message)


class ModelAnswerUnusable(AgentVisibleError):
    """Raised by a wire agent's harness when it cannot use the model's answer (no choices,
    tool-call arguments that are not JSON)."""

    kind = "malformed"


def mode_names(value: Any) -> Any:
    """Before validation of a ``modes`` list: "-p x:modes=429" parses 429 as a number, and
    "modes=hang" as a bare string; both mean a list of names."""
    items = value if isinstance(value, list | tuple) else [value]
    return [str(m) for m in items]


P = TypeVar("P", bound=CommonParams)


class ModelCallPerturbation(Perturbation[P]):
    """Base for per-request model-channel plugins (the setup pass goes through untouched)."""

    channel = "model"

    async def __call__(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        if not isinstance(call, ModelCall):
            return await call_next(call)  # the trial's ModelSettings: not a request
        return await super().__call__(call, call_next, ctx)
