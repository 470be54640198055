"""OpenAI chat-completions shapes: completions, SSE chunks, request fingerprints.

Every upstream answers with one whole chat completion; the server turns it into a JSON body or
a stream of ``chat.completion.chunk`` events, so a fault can cut the stream at a chosen point
(in the middle of a tool call's arguments) whatever the upstream was.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from typing import Any, TypedDict, cast, get_type_hints

import msgspec

from chaoseval.model import untrusted

STREAM_PIECE = 24  # characters of content or arguments per chunk: several chunks per call


def json_encoder(**options: Any) -> Callable[[Any], str]:
    """``json.JSONEncoder(**options).encode``, made once (``json.dumps`` with an option builds
    an encoder per call): the same text."""
    return json.JSONEncoder(**options).encode


# json.dumps(body, sort_keys=True, separators=(",", ":"), default=str): body_hash's text.
_CANONICAL = json_encoder(sort_keys=True, separators=(",", ":"), default=str)
# json.dumps(value) and json.dumps(value, ensure_ascii=False).
dumps = json_encoder()
dumps_utf8 = json_encoder(ensure_ascii=False)
_DECODE = msgspec.json.Decoder().decode
_ENCODE = msgspec.json.Encoder().encode
JSON_SPACE = b" \t\r\n"  # the bytes JSON takes as space between tokens


def answer_bytes(value: Any) -> bytes:
    """An answer chaoseval made itself (a completion no plugin could have changed, in its
    API's shape: the sim's, or an upstream's as read) as UTF-8 JSON: msgspec's compact text,
    in a ninth of json's time (a completion with a tool call). Any client reads it as it
    read json's spaced, ASCII-escaped text. Where UTF-8 has no form for a string (a lone
    surrogate), json's escapes, as plugins' answers are written (``dumps``). A NaN (only an
    upstream's answer can hold one, read by json) is written null: JSON has no NaN, and json
    wrote a token some clients refuse."""
    try:
        return _ENCODE(value)
    except UnicodeEncodeError:
        return dumps(value).encode()


def fingerprint(raw: bytes) -> str:
    """A request's fingerprint, as its model step records it (``request_hash``): sha256 of
    its body's bytes as the agent sent them, the first 16 hex digits. A client's retry sends
    the same bytes, so the same fingerprint. Taken over the bytes rather than over a
    canonical text of their parse (journals before schema 7): the channel need not decode a
    whole body for it, and an agent's request grows with its conversation (20 kB by its
    tenth turn: make bench-wire)."""
    return digest(hashlib.sha256(raw))


def digest(hashed: Any) -> str:
    """A fingerprint from a sha256 object fed a request's bytes (in one piece or several): the
    first 16 hex digits."""
    return str(hashed.hexdigest()[:16])


def is_utf8(raw: bytes) -> bool:
    """Whether ``raw`` is UTF-8 (at once where it is ASCII)."""
    if raw.isascii():
        return True
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True


def body_hash(body: dict[str, Any]) -> str:
    """A fingerprint of a request's value, whatever its text: sha256 of its canonical JSON
    (keys sorted, no spaces), the first 16 hex digits. The sim's answers are cached by it."""
    return fingerprint(_CANONICAL(body).encode())


def decode_json(raw: bytes) -> Any:
    """``json.loads(raw)``, the same values or the same error, at a quarter of its time for a
    request or answer body: msgspec reads what it can (UTF-8 JSON), and whatever it refuses
    (NaN and Infinity, a UTF-8 BOM or UTF-16 text, a lone surrogate, a number out of its
    range, malformed JSON) is json's to read or to refuse as before (ValueError; JSON nested
    past either parser's limit, untrusted.TooDeep)."""
    try:
        return _DECODE(raw)
    except msgspec.DecodeError:
        return untrusted.loads(raw)
    except RecursionError:  # msgspec's own limit: json's is no further
        raise untrusted.TooDeep("JSON nested deeper than the parser takes") from None


def read_json(raw: bytes) -> tuple[Any, bool]:
    """:func:`decode_json`'s value, and whether the read was plain: msgspec read it. Then
    ``raw`` is UTF-8 JSON with no BOM, NaN or number out of range, which any reader takes as
    the same value: bytes that can be passed on for it."""
    try:
        return _DECODE(raw), True
    except msgspec.DecodeError:
        return untrusted.loads(raw), False
    except RecursionError:  # msgspec's own limit: json's is no further
        raise untrusted.TooDeep("JSON nested deeper than the parser takes") from None


class _Top(TypedDict, total=False):
    """The members of a chat request its step records and the channel acts on: the
    conversation and the tools only as their items' bytes (counted, never built)."""

    model: Any
    messages: list[msgspec.Raw] | None
    tools: list[msgspec.Raw] | None
    stream: Any
    stream_options: Any
    temperature: Any
    seed: Any


READ_TOP = msgspec.json.Decoder(_Top).decode
# The same members and one more, "~", an array of items' bytes: a request's rest read alone,
# after an opening of that member (resent.ConversationReader), no chat API's member name.
READ_REST = msgspec.json.Decoder(
    cast(Any, TypedDict)("_Rest", {"~": list[msgspec.Raw], **get_type_hints(_Top)}, total=False)
).decode


def read_top(raw: bytes) -> dict[str, Any] | None:
    """A chat request's top-level members that its record and the channel read (_Top), for
    a channel that passes the agent's bytes on as they came (no plugin to see the body):
    ``messages`` and ``tools`` as lists of each item's bytes, so a conversation resent
    whole each turn is scanned, not decoded. None where the body must be read whole
    (:func:`read_json`): not a UTF-8 JSON object with arrays there, or one whose bytes cannot
    be passed on as they are (a stream asked for, ``stream_options``, a null sampling
    setting the channel replaces in place: channel._as_sent). A number out of range inside
    the items stays as the agent wrote it (a whole read would have json write Infinity)."""
    if not is_utf8(raw):  # the items' strings are skipped unread: their UTF-8 checked here
        return None
    try:
        # A plain dict of the members the body has (what the channel's body is, for mypy).
        top = cast(dict[str, Any], READ_TOP(raw))
    except msgspec.DecodeError:  # ValidationError included
        return None
    return top if passable(top) else None


def passable(top: dict[str, Any]) -> bool:
    """Whether a chat request, read at its top level, can be passed on as its bytes: it asks
    for no stream and sends no null sampling setting (which the channel replaces in place)."""
    return not (asks_stream(top) or top.get("temperature", 0) is None or top.get("seed", 0) is None)


def asks_stream(body: dict[str, Any]) -> bool:
    """Whether a chat body asks for a stream (``stream`` other than absent or false, or any
    ``stream_options``): the upstream is then asked for a whole completion, the body written
    anew without them, so its bytes cannot be passed on as they came."""
    return "stream_options" in body or body.get("stream", False) is not False


def members_text(members: dict[str, Any]) -> bytes:
    """``members`` as :func:`with_text` adds them to a body: each ``"name": value`` as
    ``json.dumps`` writes it, joined by ``", "``."""
    if len(members) == 1:  # the usual case (a configured temperature): no list to join
        [(key, value)] = members.items()
        return _member(key, value)
    return b", ".join([_member(k, v) for k, v in members.items()])


def with_text(raw: bytes, added: bytes) -> bytes:
    """``raw``, the bytes of a JSON object that has none of the members ``added`` holds
    (written by :func:`members_text`, or nothing), with them at its end: the same object as
    the one read from ``raw`` with them set."""
    if not added:
        return raw
    head = raw.rstrip(JSON_SPACE)
    end = len(head) - 1  # the closing brace
    if end < 0 or head[end] != _CLOSE:
        raise ValueError("not the bytes of a JSON object")
    # The byte before the closing brace is "{" only in an empty object (a member's value
    # ends with a quote, a digit, a letter, "]" or "}").
    before = end - 1
    while before >= 0 and head[before] in JSON_SPACE:
        before -= 1
    comma = b"" if before >= 0 and head[before] == _OPEN else b", "
    # (the head as a view: joined, it is copied once, not sliced into a copy first; 20 kB at
    # an agent's tenth turn)
    return b"".join((memoryview(head)[:end], comma, added, b"}"))


_OPEN, _CLOSE = ord("{"), ord("}")
# The last text written for each member name, with the value it was written for: a trial's
# requests add the same configured setting each time (the same object), written once.
_MEMBERS: dict[str, tuple[Any, bytes]] = {}
_SCALARS = (int, float, str, bool, type(None))


def _member(key: str, value: Any) -> bytes:
    """``key: value`` as ``json.dumps`` writes a member (UTF-8)."""
    seen = _MEMBERS.get(key)
    if seen is not None and seen[0] is value:
        return seen[1]
    text = f"{dumps_utf8(key)}: {_text(value)}".encode()
    if type(value) in _SCALARS and len(_MEMBERS) < 64:  # immutable: the text stays true
        _MEMBERS[key] = (value, text)
    return text


def _text(value: Any) -> str:
    """``dumps_utf8(value)``; an int's or a finite float's repr at once (json writes that)."""
    kind = type(value)
    if kind is int or (kind is float and math.isfinite(value)):
        return repr(value)
    return dumps_utf8(value)


class _Function(msgspec.Struct):
    name: Any = None


class _ToolCall(msgspec.Struct):
    function: _Function | None = None


class _Message(msgspec.Struct):
    tool_calls: list[_ToolCall] | None = None


class _Choice(msgspec.Struct):
    message: _Message | None = None
    finish_reason: Any = None


class _Usage(msgspec.Struct):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class AnswerSummary(msgspec.Struct):
    """What a model step records of a chat completion (the tool calls' names, the first
    choice's finish reason, the usage's token counts, the model), read from its bytes
    without building the rest: :func:`read_summary`."""

    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    model: Any = ""

    def fields(self) -> tuple[list[Any], Any, int, int, str]:
        """(tool call names, finish reason, prompt tokens, completion tokens, model): the
        values :func:`answer_fields` reads from the decoded completion."""
        choices = self.choices
        first = choices[0] if choices else None
        names: list[Any] = []
        reason = None
        if first is not None:
            reason = first.finish_reason
            message = first.message
            if message is not None and message.tool_calls:
                names = [None if c.function is None else c.function.name
                         for c in message.tool_calls]  # fmt: skip
        used = self.usage
        tin, tout = (0, 0) if used is None else (used.prompt_tokens, used.completion_tokens)
        return names, reason, tin, tout, str(self.model)


_READ_SUMMARY = msgspec.json.Decoder(AnswerSummary).decode


def read_summary(raw: bytes) -> AnswerSummary | None:
    """A chat completion's recorded fields, when ``raw`` is a JSON object msgspec reads and
    these fields have their usual shapes (then :meth:`AnswerSummary.fields` is what
    :func:`answer_fields` makes of ``decode_json(raw)``); else None: read it whole."""
    try:
        return _READ_SUMMARY(raw)
    except msgspec.DecodeError:  # ValidationError included
        return None


def answer_fields(done: dict[str, Any]) -> tuple[list[Any], Any, int, int, str]:
    """(tool call names, finish reason, prompt tokens, completion tokens, model) of a chat
    completion, as its model step records them."""
    names = [(c.get("function") or {}).get("name") for c in tool_calls_of(done)]
    choices = done.get("choices") or []
    reason = choices[0].get("finish_reason") if choices else None
    used = done.get("usage") or {}
    tin, tout = int(used.get("prompt_tokens", 0)), int(used.get("completion_tokens", 0))
    return names, reason, tin, tout, str(done.get("model", ""))


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
    return f"data: {dumps(event)}\n\n".encode()


SSE_DONE = b"data: [DONE]\n\n"


def pieces(text: str) -> list[str]:
    """A text in the chunks a stream sends it in."""
    return [text[i : i + STREAM_PIECE] for i in range(0, len(text), STREAM_PIECE)]
