"""OpenAI chat-completions shapes: completions, SSE chunks, request fingerprints.

Every upstream answers with one whole chat completion; the server turns it into a JSON body or
a stream of ``chat.completion.chunk`` events, so a fault can cut the stream at a chosen point
(in the middle of a tool call's arguments) whatever the upstream was.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import msgspec

STREAM_PIECE = 24  # characters of content or arguments per chunk: several chunks per call
# json.dumps(body, sort_keys=True, separators=(",", ":"), default=str), made once: dumps with
# any argument builds a new encoder per call (a third of a fingerprint's time). The same
# encoder, so the same text and hash as every journal written before.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)
_DECODE = msgspec.json.Decoder().decode


def request_hash(body: dict[str, Any]) -> str:
    """A fingerprint of a request: the client's retry sends the same body, so the same hash."""
    return hashlib.sha256(_CANONICAL.encode(body).encode()).hexdigest()[:16]


def decode_json(raw: bytes) -> Any:
    """``json.loads(raw)``, the same values or the same error, at a quarter of its time for a
    request or answer body: msgspec reads what it can (UTF-8 JSON), and whatever it refuses
    (NaN and Infinity, a UTF-8 BOM or UTF-16 text, a lone surrogate, a number out of its
    range, malformed JSON) is json's to read or to refuse as before (ValueError)."""
    try:
        return _DECODE(raw)
    except msgspec.DecodeError:
        return json.loads(raw)


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def content_text(content: Any) -> str:
    """A message's content as text: a string as is, content parts joined (their ``text``),
    a JSON object as its JSON text (a client that sends the tool's result object itself)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_part_text(p) for p in content)
    if isinstance(content, dict):
        return _part_text(content)
    return json.dumps(content, default=str)


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        return str(part["text"])
    if isinstance(part, dict) and part.get("type") in ("image", "image_url", "input_image"):
        return ""  # not text: a model reading it sees no words
    return json.dumps(part, default=str)


def estimate_tokens(value: Any) -> int:
    """A deterministic token count (about four characters a token) for an offline model."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return max(1, len(text) // 4)


def completion(
    model: str,
    message: dict[str, Any],
    finish_reason: str | None,
    usage: dict[str, int],
    ident: str,
) -> dict[str, Any]:
    return {
        "id": ident,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
        ],
        "usage": usage,
        "system_fingerprint": "chaoseval",
    }


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def first_choice(done: dict[str, Any]) -> dict[str, Any] | None:
    choices = done.get("choices") or []
    return choices[0] if choices else None


def tool_calls_of(done: dict[str, Any]) -> list[dict[str, Any]]:
    choice = first_choice(done)
    if choice is None:
        return []
    return list((choice.get("message") or {}).get("tool_calls") or [])


def chat_tool(tool: dict[str, Any], schema_key: str) -> dict[str, Any]:
    """A chat-completions tool from another API's flat tool (its schema under ``schema_key``)."""
    return {
        "type": "function",
        "function": {
            "name": tool.get("name"),
            "description": tool.get("description") or "",
            "parameters": tool.get(schema_key) or {"type": "object", "properties": {}},
        },
    }


def error_body(message: str, error_type: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


class Cut:
    """Marks where a stream is cut: after this chunk, the connection drops."""


def stream_chunks(
    done: dict[str, Any], include_usage: bool, cut: bool
) -> list[dict[str, Any] | Cut]:
    """The completion as ``chat.completion.chunk`` events, optionally with a cut marker in the
    middle of the first tool call's arguments."""
    base = {
        "id": done.get("id", "chatcmpl-0"),
        "object": "chat.completion.chunk",
        "created": done.get("created", int(time.time())),
        "model": done.get("model", ""),
        "system_fingerprint": done.get("system_fingerprint"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out: list[dict[str, Any] | Cut] = []
    choice = first_choice(done)
    if choice is not None:
        message = choice.get("message") or {}
        out.append(chunk({"role": "assistant", "content": ""}))
        for piece in pieces(message.get("content") or ""):
            out.append(chunk({"content": piece}))
        for i, call in enumerate(message.get("tool_calls") or []):
            fn = call.get("function") or {}
            head = {"index": i, "id": call.get("id"), "type": "function"}
            out.append(
                chunk(
                    {
                        "tool_calls": [
                            {**head, "function": {"name": fn.get("name"), "arguments": ""}}
                        ]
                    }
                )
            )
            arguments = fn.get("arguments") or ""
            if cut and i == 0:  # half the arguments, then the connection drops
                arguments = arguments[: len(arguments) // 2]
            for piece in pieces(arguments) or [""]:
                out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
            if cut and i == 0:
                out.append(Cut())
                return out
        out.append(chunk({}, choice.get("finish_reason")))
    if cut:  # no tool call to cut inside: cut before the end of the stream
        out.insert(max(1, len(out) - 1), Cut())
        return out[: out.index(next(c for c in out if isinstance(c, Cut))) + 1]
    if include_usage:
        out.append({**base, "choices": [], "usage": done.get("usage")})
    return out


def sse(event: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(event)}\n\n".encode()


SSE_DONE = b"data: [DONE]\n\n"


def pieces(text: str) -> list[str]:
    """A text in the chunks a stream sends it in."""
    return [text[i : i + STREAM_PIECE] for i in range(0, len(text), STREAM_PIECE)]
