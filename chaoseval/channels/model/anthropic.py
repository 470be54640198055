"""The Anthropic Messages API (``POST /v1/messages``) over the same channel.

A Messages request becomes a chat-completions body (system, text, ``tool_use`` and
``tool_result`` blocks, tools with ``input_schema``); the completion becomes a Message, or its
stream of events (``message_start`` ... ``message_stop``). Faults keep their meaning: a cut
stream stops inside a tool call's ``input_json_delta``; arguments that are not JSON arrive as
such in the stream (and as a string ``input`` without streaming); no finish reason gives a
null ``stop_reason``; no choices an empty ``content``.
"""

from __future__ import annotations

import json
from typing import Any

from chaoseval.channels.model.wire import Cut, chat_tool, content_text, first_choice, pieces

STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
}


def to_chat(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions request a Messages request means."""
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": content_text(system)})
    for message in body.get("messages") or []:
        _append(messages, message)
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    tools = [chat_tool(t, "input_schema") for t in body.get("tools") or []]
    if tools:
        chat["tools"] = tools
    for key in ("temperature", "top_p", "max_tokens"):
        if body.get(key) is not None:
            chat[key] = body[key]
    if body.get("stream"):
        chat["stream"] = True
    return chat


def _append(messages: list[dict[str, Any]], message: dict[str, Any]) -> None:
    role, content = message.get("role", "user"), message.get("content")
    if isinstance(content, str):
        messages.append({"role": role, "content": content})
        return
    blocks = [b for b in content or [] if isinstance(b, dict)]
    text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    calls = [
        {
            "id": b.get("id"),
            "type": "function",
            "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input") or {})},
        }
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    for b in blocks:
        if b.get("type") == "tool_result":
            content = content_text(b.get("content"))
            if b.get("is_error"):
                # Chat completions has no error flag: the conventional envelope carries it.
                # An empty message is still an error (the flag says so): the envelope of
                # an empty error would read as no envelope, i.e. a success.
                content = json.dumps({"error": content or "tool error (no message)"})
            messages.append(
                {"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": content}
            )
    if role == "assistant":
        entry: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            entry["tool_calls"] = calls
        messages.append(entry)
    elif text:
        messages.append({"role": role, "content": text})


def _parts(done: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """Content blocks (tool inputs still as argument strings) and the stop reason."""
    choice = first_choice(done)
    if choice is None:
        return [], None
    message = choice.get("message") or {}
    blocks: list[dict[str, Any]] = []
    if message.get("content"):
        blocks.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": fn.get("name"),
                "arguments": fn.get("arguments") or "",
            }
        )
    finish = choice.get("finish_reason")
    return blocks, STOP_REASONS.get(finish, finish) if finish else None


def from_chat(done: dict[str, Any]) -> dict[str, Any]:
    """The Message a chat completion means."""
    blocks, stop = _parts(done)
    content = []
    for block in blocks:
        if block["type"] == "tool_use":
            raw = block.pop("arguments")
            try:
                block["input"] = json.loads(raw)
            except ValueError:
                block["input"] = raw  # not JSON: the client gets it as it came
        content.append(block)
    return {**_envelope(done), "content": content, "stop_reason": stop, "usage": _usage(done)}


def _envelope(done: dict[str, Any]) -> dict[str, Any]:
    ident = str(done.get("id", "chatcmpl-0")).removeprefix("chatcmpl-")
    return {
        "id": f"msg_{ident}",
        "type": "message",
        "role": "assistant",
        "model": done.get("model"),
        "stop_sequence": None,
    }


def _usage(done: dict[str, Any]) -> dict[str, int]:
    used = done.get("usage") or {}
    return {
        "input_tokens": int(used.get("prompt_tokens", 0)),
        "output_tokens": int(used.get("completion_tokens", 0)),
    }


def stream_events(done: dict[str, Any], cut: bool) -> list[tuple[str, dict[str, Any]] | Cut]:
    """The Message as (event name, data) pairs; a cut drops the connection half-way through
    the first tool call's input."""
    blocks, stop = _parts(done)
    usage = _usage(done)
    start = {**_envelope(done), "content": [], "stop_reason": None}
    start["usage"] = {"input_tokens": usage["input_tokens"], "output_tokens": 0}
    out: list[tuple[str, dict[str, Any]] | Cut] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    first_tool = True
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            head: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
        else:
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = block["arguments"]
            if cut and first_tool:
                raw = raw[: len(raw) // 2]
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(raw)]
        out.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": head},
            )
        )
        out.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        )
        if cut and block["type"] == "tool_use" and first_tool:
            out.append(Cut())
            return out
        first_tool = first_tool and block["type"] != "tool_use"
        out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    if cut:  # no tool call to cut inside: drop before the message ends
        out.append(Cut())
        return out
    out.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    out.append(("message_stop", {"type": "message_stop"}))
    return out


def sse_event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def error_body(status: int, message: str) -> dict[str, Any]:
    return {
        "type": "error",
        "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message},
    }
