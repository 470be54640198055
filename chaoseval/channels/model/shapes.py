"""How each API the model channel serves writes a completion, its stream and its errors.

The channel runs every request as a chat completion; a :class:`Shape` turns the answer into
the API's own body (chat completions as it is, the Responses API, Anthropic messages), its
stream of events (cut where a fault says) and its error bodies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chaoseval.channels.model import anthropic, responses
from chaoseval.channels.model.calls import ModelHTTPFault
from chaoseval.channels.model.wire import SSE_DONE, Cut, sse, stream_chunks


@dataclass(frozen=True)
class Shape:
    """How one API writes a completion, its stream and its errors."""

    render: Callable[[dict[str, Any]], dict[str, Any]]
    stream: Callable[[dict[str, Any], bool], list[bytes | Cut]]
    error: Callable[[ModelHTTPFault], dict[str, Any]]
    verbatim: bool = False  # the API's answer is the chat completion itself (render: as is)


def _chat_stream(include_usage: bool) -> Callable[[dict[str, Any], bool], list[bytes | Cut]]:
    def events(done: dict[str, Any], cut: bool) -> list[bytes | Cut]:
        out: list[bytes | Cut] = [
            e if isinstance(e, Cut) else sse(e) for e in stream_chunks(done, include_usage, cut)
        ]
        return out if cut else [*out, SSE_DONE]

    return events


def _anthropic_stream(done: dict[str, Any], cut: bool) -> list[bytes | Cut]:
    return [
        e if isinstance(e, Cut) else anthropic.sse_event(*e)
        for e in anthropic.stream_events(done, cut)
    ]


def chat_shape(include_usage: bool) -> Shape:
    return Shape(lambda done: done, _chat_stream(include_usage), ModelHTTPFault.body, True)


def responses_shape(request: dict[str, Any]) -> Shape:
    def stream(done: dict[str, Any], cut: bool) -> list[bytes | Cut]:
        return [
            e if isinstance(e, Cut) else responses.sse_event(e)
            for e in responses.stream_events(done, request, cut)
        ]

    return Shape(lambda done: responses.from_chat(done, request), stream, ModelHTTPFault.body)


# The two chat shapes, made once (not two closures a request).
CHAT = {usage: chat_shape(usage) for usage in (False, True)}
ANTHROPIC = Shape(
    anthropic.from_chat,
    _anthropic_stream,
    lambda fault: anthropic.error_body(fault.status, str(fault)),
)
