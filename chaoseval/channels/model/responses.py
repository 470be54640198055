"""The Responses API (``POST /v1/responses``, the OpenAI Agents SDK's default) over the same
channel: a request becomes a chat-completions body, the completion becomes a Response.

Streaming or not. Model-channel faults keep their meaning in the Responses shapes: a broken
tool call stays a ``function_call`` item with broken ``arguments`` (or an unknown name), empty
choices give an empty ``output`` and a missing finish reason an ``incomplete`` response (a
stream then ends with ``response.incomplete``, not ``response.completed``), and a stream cut
in the middle of a tool call stops after half of its ``function_call_arguments.delta`` events.
"""

from __future__ import annotations

import json
import time
from typing import Any

from chaoseval.channels.model.wire import Cut, chat_tool, content_text, first_choice, pieces


def to_chat(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions request a Responses request means."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": str(body["instructions"])})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or []:
        _append_item(messages, item)
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    tools = [
        chat_tool(t, "parameters") for t in body.get("tools") or [] if t.get("type") == "function"
    ]
    if tools:
        chat["tools"] = tools
    for key in ("temperature", "seed", "top_p"):
        if body.get(key) is not None:
            chat[key] = body[key]
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    if body.get("stream"):
        chat["stream"] = True
    return chat


def _append_item(messages: list[dict[str, Any]], item: dict[str, Any]) -> None:
    kind = item.get("type", "message")
    if kind == "function_call":
        call = {
            "id": item.get("call_id"),
            "type": "function",
            "function": {"name": item.get("name"), "arguments": item.get("arguments") or ""},
        }
        last = messages[-1] if messages else None
        if last is not None and last.get("role") == "assistant" and last.get("tool_calls"):
            last["tool_calls"].append(call)  # parallel calls: one assistant message
        else:
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    elif kind == "function_call_output":
        output = item.get("output")
        messages.append(
            {"role": "tool", "tool_call_id": item.get("call_id"), "content": content_text(output)}
        )
    elif kind == "message":
        role = item.get("role", "user")
        messages.append(
            {
                "role": "system" if role == "developer" else role,
                "content": content_text(item.get("content")),
            }
        )


def from_chat(done: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The Response object a chat completion means."""
    ident = str(done.get("id", "chatcmpl-0")).removeprefix("chatcmpl-")
    output: list[dict[str, Any]] = []
    choice = first_choice(done)
    finish = None
    if choice is not None:
        finish = choice.get("finish_reason")
        message = choice.get("message") or {}
        if message.get("content"):
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{ident}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [
                        {"type": "output_text", "text": message["content"], "annotations": []}
                    ],
                }
            )
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{call.get('id')}",
                    "call_id": call.get("id"),
                    "name": fn.get("name"),
                    "arguments": fn.get("arguments") or "",
                    "status": "completed",
                }
            )
    complete = choice is not None and finish in ("stop", "tool_calls")
    used = done.get("usage") or {}
    return {
        "id": f"resp_{ident}",
        "object": "response",
        "created_at": done.get("created", int(time.time())),
        "model": done.get("model"),
        "status": "completed" if complete else "incomplete",
        "incomplete_details": None if complete else {"reason": "max_output_tokens"},
        "error": None,
        "instructions": request.get("instructions"),
        "metadata": {},
        "output": output,
        "parallel_tool_calls": True,
        "temperature": request.get("temperature"),
        "tool_choice": "auto",
        "tools": request.get("tools") or [],
        "top_p": request.get("top_p"),
        "text": {"format": {"type": "text"}},
        "usage": {
            "input_tokens": used.get("prompt_tokens", 0),
            "output_tokens": used.get("completion_tokens", 0),
            "total_tokens": used.get("total_tokens", 0),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def stream_events(
    done: dict[str, Any], request: dict[str, Any], cut: bool
) -> list[dict[str, Any] | Cut]:
    """The Response as the SSE events the SDK's stream reader expects, in order: created,
    in_progress, each output item (added, its deltas, done), then completed (or incomplete).
    With ``cut``, the events stop half way through the first tool call's arguments."""
    final = from_chat(done, request)
    events: list[dict[str, Any] | Cut] = []

    def emit(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    opening = {**final, "status": "in_progress", "incomplete_details": None, "output": []}
    emit("response.created", response=opening)
    emit("response.in_progress", response=opening)
    for index, item in enumerate(final["output"]):
        if item["type"] == "function_call":
            if _function_call_events(emit, index, item, cut):
                events.append(Cut())
                return events
        else:
            _message_events(emit, index, item)
    if cut:  # no tool call to cut inside: the stream drops before its end
        events.append(Cut())
        return events
    ended = "response.completed" if final["status"] == "completed" else "response.incomplete"
    emit(ended, response=final)
    return events


def _function_call_events(emit: Any, index: int, item: dict[str, Any], cut: bool) -> bool:
    """A function call's events; True when the stream is cut inside its arguments."""
    arguments = str(item.get("arguments") or "")
    emit(
        "response.output_item.added",
        output_index=index,
        item={**item, "arguments": "", "status": "in_progress"},
    )
    if cut:
        arguments = arguments[: len(arguments) // 2]
    for piece in pieces(arguments):
        emit(
            "response.function_call_arguments.delta",
            item_id=item["id"],
            output_index=index,
            delta=piece,
        )
    if cut:
        return True
    emit(
        "response.function_call_arguments.done",
        item_id=item["id"],
        output_index=index,
        name=item.get("name"),
        arguments=arguments,
    )
    emit("response.output_item.done", output_index=index, item=item)
    return False


def _message_events(emit: Any, index: int, item: dict[str, Any]) -> None:
    text = "".join(str(p.get("text", "")) for p in item.get("content") or [])
    where = {"item_id": item["id"], "output_index": index, "content_index": 0}
    emit(
        "response.output_item.added",
        output_index=index,
        item={**item, "content": [], "status": "in_progress"},
    )
    emit(
        "response.content_part.added",
        **where,
        part={"type": "output_text", "text": "", "annotations": []},
    )
    for piece in pieces(text):
        emit("response.output_text.delta", **where, delta=piece, logprobs=[])
    emit("response.output_text.done", **where, text=text, logprobs=[])
    part = {"type": "output_text", "text": text, "annotations": []}
    emit("response.content_part.done", **where, part=part)
    emit("response.output_item.done", output_index=index, item=item)


def sse_event(event: dict[str, Any]) -> bytes:
    """One Responses event on the wire: named, as the API writes them."""
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
