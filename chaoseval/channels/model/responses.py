"""The Responses API (``POST /v1/responses``, the OpenAI Agents SDK's default) over the same
channel: a request becomes a chat-completions body, the completion becomes a Response.

Non-streaming. Model-channel faults keep their meaning in the Responses shapes: a broken tool
call stays a ``function_call`` item with broken ``arguments`` (or an unknown name), empty
choices give an empty ``output``, and a missing finish reason an ``incomplete`` response.
"""

from __future__ import annotations

import time
from typing import Any

from chaoseval.channels.model.wire import chat_tool, first_choice


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
            {"role": "tool", "tool_call_id": item.get("call_id"), "content": _text(output)}
        )
    elif kind == "message":
        role = item.get("role", "user")
        messages.append(
            {
                "role": "system" if role == "developer" else role,
                "content": _text(item.get("content")),
            }
        )


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


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
