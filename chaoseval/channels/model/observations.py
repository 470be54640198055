"""What an agent told its model about a tool call, read as every common client writes it.

``chaoseval-sim`` decides from what the agent actually sent, so one trial gives one outcome
whatever framework relays it. Every endpoint's request is a chat-completions body by the time
it is read (chaoseval.channels.model.responses and .anthropic translate theirs), and the
outcome of the call the sim asked for is found, latest first, as:

- a ``tool`` message with the call's ``tool_call_id`` (chat completions, a Responses
  ``function_call_output``, an Anthropic ``tool_result``, whose ``is_error`` arrives as
  ``{"error": "..."}``): content as text, JSON text, a JSON object or a list of content parts;
- else ReAct-style text after the assistant turn that names the call (smolagents'
  ToolCallingAgent): a user turn ``Observation:\\n...`` for a result, ``Error:\\n...``
  (optionally after ``Call id: ...``) for an error; a code-writing agent's observation is
  what its code printed (``Execution logs:\\n...``: chaoseval.channels.model.codeprompt);
- else, when the client refused the call before sending it (smolagents checks a call's
  argument types itself), the ``Error:`` text it added to the conversation since the call
  was made, which names no call (:func:`refusals`).

An error is flagged (``is_error``, ``Error:``), or an envelope (``{"error": {...}}``,
``{"error": "..."}``, ``{"error": ..., "kind": ...}``, a relayed MCP result with ``isError``),
or prose: a tool answers in JSON, so text that is neither JSON nor a broken body (empty, an
HTML page, JSON cut short) is an error message. Its kind is read from its words, the way the
MCP server writes them ("503 Service Unavailable, retry after 2 s", "timeout: ...",
"connection reset: ...") and the way frameworks refuse a call themselves ("is not a valid
tool", "Invalid JSON input"); an envelope's explicit kind only adds what the words do not say.
So the bundled example's ``{"error": {"kind": ..., "message": ...}}`` and a framework's bare
text lead to the same decision.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from chaoseval.channels.model.codeprompt import execution_output
from chaoseval.channels.model.wire import content_text
from chaoseval.model import untrusted

ENVELOPE_KEYS = {"error", "kind", "status", "retry_after", "message"}
SPECIFIC_KINDS = ("timeout", "http_error", "connection_reset", "invalid_arguments", "unknown_tool")
REACT_MARK = re.compile(r"(?:^|\n)\s*(Observation|Error)\s*:[ \t]*\n?", re.IGNORECASE)
CALL_ID_LINE = re.compile(r"^\s*Call id:[^\n]*\n?", re.IGNORECASE)
# How frameworks word a call they refused before it reached a tool (the model may re-issue it).
UNKNOWN_TOOL = re.compile(
    r"not a valid tool|unknown tool|no tool named|tool \S+ not found", re.IGNORECASE
)
INVALID_ARGUMENTS = re.compile(
    r"invalid json|not valid json|json ?decode|(?:could not|failed to) parse (?:the )?"
    r"(?:tool )?arguments",
    re.IGNORECASE,
)
TIMEOUT = re.compile(r"^timeout:|\btim(?:ed|e)[ -]?out\b", re.IGNORECASE)
RESET = re.compile(r"\bconnection (?:reset|refused|aborted)\b|\breset by peer\b", re.IGNORECASE)
STATUS = re.compile(r"\b([1-5]\d\d) ([A-Z][A-Za-z'-]*(?: [A-Za-z'-]+)*)")
HTTP_STATUS = re.compile(r"\bHTTP[ /]?(?:1\.[01] )?([1-5]\d\d)\b")
RETRY_AFTER = re.compile(r"retry[ -]after:? ?(\d+(?:\.\d+)?) ?s", re.IGNORECASE)


@dataclass(frozen=True)
class Observation:
    """A call's outcome as the agent relayed it: a value, or an error the model reads."""

    value: Any  # the parsed result (JSON, a Python literal), else the text as sent
    error: dict[str, Any] | None = None  # {"kind", "message", "status"?, "retry_after"?}


def observation_for(messages: list[Any], call_id: str) -> Observation | None:
    """The latest outcome the conversation carries for ``call_id`` (None: not relayed)."""
    messages = [m for m in messages if isinstance(m, dict)]
    for message in reversed(messages):
        if message.get("role") == "tool" and message.get("tool_call_id") == call_id:
            return read_content(message.get("content"))
    return _react_observation(messages, call_id)


def _react_observation(messages: list[dict[str, Any]], call_id: str) -> Observation | None:
    """A ReAct transcript: user turns after the assistant turn that made the call."""
    named = re.compile(rf"\b{re.escape(call_id)}\b")
    made = None
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.get("role") != "assistant":
            continue
        ids = [c.get("id") for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        if call_id in ids or named.search(content_text(message.get("content"))):
            made = i
            break
    if made is None:
        return None
    after = "\n".join(
        content_text(m.get("content")) for m in messages[made + 1 :] if m.get("role") == "user"
    )
    marks = list(REACT_MARK.finditer(after))
    if not marks:
        return None
    last = marks[-1]
    text = CALL_ID_LINE.sub("", after[last.end() :]).strip()
    if last.group(1).lower() == "error":
        return refusal(text)
    return read_content(execution_output(text))


def refusals(messages: list[Any]) -> list[str]:
    """The ``Error:`` texts of a ReAct transcript's user turns, in order. A client that
    refuses a call before it reaches a tool writes one (and, in smolagents' ToolCallingAgent,
    no turn naming the call): one more than when the call was made is that call's refusal."""
    texts = [
        content_text(m.get("content"))
        for m in messages
        if isinstance(m, dict) and m.get("role") == "user"
    ]
    found = []
    for text in texts:
        marks = list(REACT_MARK.finditer(text))
        ends = [m.start() for m in marks[1:]] + [len(text)]
        found += [
            text[m.end() : end].strip()
            for m, end in zip(marks, ends[: len(marks)], strict=True)
            if m.group(1).lower() == "error"
        ]
    return found


def refusal(text: str) -> Observation:
    """An ``Error:`` text (a client's refusal, a tool's error), read as an error."""
    return Observation(text, error_from_text(text))


def read_content(content: Any, *, flagged: bool = False) -> Observation:
    """One relayed outcome, whatever shape the client gave it."""
    text = content_text(content)
    value = parse_value(text)
    if isinstance(value, dict):
        envelope = _envelope(value)
        if envelope is not None:
            return Observation(value, envelope)
    if flagged:
        return Observation(text, error_from_text(text))
    if value is not None or broken_body(text):
        return Observation(text if value is None else value)
    return Observation(text, error_from_text(text))  # prose where a tool answers JSON


def parse_value(text: str) -> Any:
    """JSON, or a Python literal (a client that relays ``str(result)``); None when neither."""
    try:
        return untrusted.loads(text)
    except ValueError:  # untrusted.TooDeep too: then not JSON the sim can read
        pass
    if text.lstrip()[:1] in ("{", "["):
        try:
            return ast.literal_eval(text.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    return None


def broken_body(text: str) -> bool:
    """A body a broken server or proxy sends: nothing, a markup page, JSON cut short."""
    head = text.lstrip()[:1]
    return head in ("", "<", "{", "[", '"')


def _envelope(value: dict[str, Any]) -> dict[str, Any] | None:
    if value.get("isError") is True or value.get("is_error") is True:  # a relayed MCP result
        text = content_text(value.get("content"))
        return error_from_text(text)
    if "error" not in value or not value["error"] or not set(value) <= ENVELOPE_KEYS:
        return None
    inner = value["error"]
    if isinstance(inner, dict):
        message = str(inner.get("message") or inner.get("detail") or json.dumps(inner))
        error = error_from_text(message)
        return _with_declared(error, inner)
    return _with_declared(error_from_text(str(inner)), value)


def _with_declared(error: dict[str, Any], declared: dict[str, Any]) -> dict[str, Any]:
    """Fields the envelope states that its words did not (a status, a kind)."""
    if error["kind"] == "tool_error" and declared.get("kind") in SPECIFIC_KINDS:
        error["kind"] = declared["kind"]
    if error["kind"] == "http_error" or "status" in declared:
        for key in ("status", "retry_after"):
            if error.get(key) is None and declared.get(key) is not None:
                error[key] = declared[key]
        if isinstance(error.get("status"), int):
            error["kind"] = "http_error"
    return error


def error_from_text(text: str) -> dict[str, Any]:
    """An error message's kind, read from its words."""
    message = text.strip()
    error: dict[str, Any] = {"kind": "tool_error", "message": message}
    if UNKNOWN_TOOL.search(message):
        error["kind"] = "unknown_tool"
    elif INVALID_ARGUMENTS.search(message):
        error["kind"] = "invalid_arguments"
    elif (status := _status(message)) is not None:
        error.update(kind="http_error", status=status)
        retry = RETRY_AFTER.search(message)
        if retry:
            error["retry_after"] = float(retry.group(1))
    elif TIMEOUT.search(message):
        error["kind"] = "timeout"
    elif RESET.search(message):
        error["kind"] = "connection_reset"
    return error


def _status(message: str) -> int | None:
    """An HTTP status the text names: "503 Service Unavailable" (its own phrase) or "HTTP 503"."""
    for match in STATUS.finditer(message):
        code = int(match.group(1))
        try:
            phrase = HTTPStatus(code).phrase
        except ValueError:
            continue
        if match.group(2).startswith(phrase):
            return code
    found = HTTP_STATUS.search(message)
    return int(found.group(1)) if found else None
