"""A trial's model messages, kept as its ``model.jsonl`` artifact: per model step, the messages
the agent sent and the answer written back (or the fault written instead).

The journal keeps of a model request its counts, sampling settings and the sha256 of its bytes;
someone reading a failed trial wants what the model was sent and what it said. The wire's time
per request is a budget (benchmarks/bench_wire.py), so while the trial runs the channel only
keeps references to objects each request made anyway (the body's bytes as they came, the reply,
the fault's class and text): :meth:`Transcript.add`, a few hundred nanoseconds. When the trial
ends (:meth:`Transcript.write`, from ``TrialModelChannel.close``) each body is read in its API's
shape and made the chat messages ``observations`` reads (``responses.to_chat``,
``anthropic.to_chat``), redacted, cut and written, one JSON line per model step keyed by the
step's index in the trajectory (``step``), in request order.

Bounds, each cut said where it happens (``cut``):

- a string of a line: :data:`TEXT_LIMIT` characters (``redact.cap``: redacted before the cut);
- a line: :data:`LINE_LIMIT` characters; past it every string is cut at :data:`SHORT_TEXT`,
  then the request's earliest messages are left out;
- the file: :data:`FILE_LIMIT` characters; the latest steps are kept (a failed trial fails
  late, and a later request resends the conversation), a first line saying how many were not;
- held while the trial runs: :data:`HELD_LIMIT` bytes of request bodies and :data:`HELD_STEPS`
  steps; past them the oldest are let go (their line keeps the answer and says so).

A request repeats the conversation before it: a line lists only the messages after the ones
it shares with the request before it (``repeats``: that step and how many), so the file grows
with the conversation, not with its square. The first line kept lists all of its own.

Nothing is kept when the run keeps no artifacts (no journal): the channel then holds no
transcript at all.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from chaoseval import redact
from chaoseval.channels.model import anthropic, responses
from chaoseval.channels.model.calls import ModelCall, ModelReply
from chaoseval.channels.model.wire import content_text, decode_json, read_json
from chaoseval.store.artifacts import MODEL_MESSAGES, TrialArtifacts

__all__ = ["ARTIFACT", "Transcript", "render"]

ARTIFACT = MODEL_MESSAGES
TEXT_LIMIT = 16 << 10  # characters of one string in a line (a message's content, arguments)
LINE_LIMIT = 64 << 10  # characters of one line
FILE_LIMIT = 768 << 10  # characters of the file: under the store's limit, which cuts mid-line
HELD_LIMIT = 8 << 20  # bytes of request bodies held while the trial runs
HELD_STEPS = 4096  # requests held while the trial runs
SHORT_TEXT = 2048  # characters of one string in a line that is over LINE_LIMIT with TEXT_LIMIT


class _Entry:
    """One request as the channel finished it: what a line needs and nothing else (not the
    request's parsed body, which a conversation makes large: every object kept to the trial's
    end is one more the collector walks while the trial runs). Nothing is read yet."""

    __slots__ = ("answer", "attempt", "endpoint", "error", "index", "received", "result_class",
                 "status", "step")  # fmt: skip

    def __init__(
        self,
        call: ModelCall,
        received: bytes | None,
        reply: ModelReply | None,
        status: int,
        result_class: str,
        error: str | None,
    ):
        self.step, self.index, self.attempt = call.step, call.index, call.attempt
        self.endpoint = call.endpoint
        self.received = received
        # A forwarded answer nobody decoded is kept as its bytes (what the agent was written),
        # any other as the completion it was rendered from.
        self.answer: dict[str, Any] | bytes | None = None
        if reply is not None:
            unread = reply.summary is not None and call.answer_bytes is not None
            self.answer = call.answer_bytes if unread else reply.completion
        self.status = status
        self.result_class = result_class
        self.error = error


class Transcript:
    """One trial's requests and answers, written to its artifacts when the trial ends."""

    __slots__ = ("_bare", "_entries", "_held", "_let_go", "_open", "store")

    def __init__(self, store: TrialArtifacts):
        self.store = store
        self._entries: deque[_Entry] = deque()
        self._held = 0  # bytes of request bodies held
        self._bare = 0  # the leading entries whose bodies were let go
        self._let_go = 0  # entries let go entirely (past HELD_STEPS)
        self._open = True

    def add(
        self,
        call: ModelCall,
        received: bytes,
        reply: ModelReply | None,
        status: int,
        result_class: str,
        error: str | None,
    ) -> None:
        """A request was answered (``reply``) or faulted (``error``): keep the references."""
        if not self._open:  # a stream that finished after the trial ended
            return
        self._entries.append(_Entry(call, received, reply, status, result_class, error))
        self._held += len(received)
        if self._held > HELD_LIMIT or len(self._entries) > HELD_STEPS:
            self._let_go_oldest()

    def _let_go_oldest(self) -> None:
        entries = self._entries
        while len(entries) > HELD_STEPS:
            gone = entries.popleft()
            if self._bare:
                self._bare -= 1
            else:
                self._held -= len(gone.received or b"")
            self._let_go += 1
        while self._held > HELD_LIMIT and self._bare < len(entries) - 1:
            entry = entries[self._bare]
            self._held -= len(entry.received or b"")
            entry.received = None
            self._bare += 1

    def write(self) -> None:
        """The trial ended: its lines into the artifact (once; later requests are not kept)."""
        if not self._open:
            return
        self._open = False
        entries = sorted(self._entries, key=lambda e: e.index)
        self._entries.clear()
        if not entries and not self._let_go:
            return
        limit = min(FILE_LIMIT, self.store.store.limit * 3 // 4)
        self.store.write(ARTIFACT, render(entries, self._let_go, limit))


def render(entries: list[_Entry], let_go: int = 0, limit: int = FILE_LIMIT) -> str:
    """The file's text: a line per entry (in request order), the latest that fit ``limit``."""
    redactor = redact.current()
    read: dict[int, list[dict[str, Any]] | str] = {}

    def messages(i: int) -> list[dict[str, Any]] | str:
        if i not in read:
            read[i] = _messages(entries[i])
        return read[i]

    lines: list[str] = []
    size, first = 0, len(entries)
    budget = max(0, limit - LINE_LIMIT)  # room for the first line kept, written again whole
    for i in range(len(entries) - 1, -1, -1):
        before = (entries[i - 1], messages(i - 1)) if i else None
        line = _line(entries[i], messages(i), before, redactor)
        if lines and size + len(line) + 1 > budget:
            break
        lines.append(line)
        size += len(line) + 1
        first = i
    if first < len(entries) and first > 0:  # the first kept repeats a step not kept
        lines[-1] = _line(entries[first], messages(first), None, redactor)
    lines.reverse()
    missing = let_go + first
    if missing:
        why = []
        if let_go:
            why.append(f"{let_go} let go while it ran (it holds its latest {HELD_STEPS})")
        if first:
            why.append(f"{first} past what fits in {limit} characters")
        cut = f"the first {missing} model step(s) of this trial are not kept: {'; '.join(why)}"
        lines.insert(0, json.dumps({"cut": cut}))
    return "".join(line + "\n" for line in lines)


def _messages(entry: _Entry) -> list[dict[str, Any]] | str:
    """The request's messages as chat messages, or why they are not here."""
    raw = entry.received
    if raw is None:
        return (
            f"request not kept: a trial holds its latest {HELD_LIMIT:,} bytes of requests while"
            " it runs"
        )
    try:
        body, _ = read_json(raw)
        if not isinstance(body, dict):
            return "request body is not a JSON object"
        endpoint = entry.endpoint
        if endpoint == "responses":
            body = responses.to_chat(body)
        elif endpoint == "messages":
            body = anthropic.to_chat(body)
        listed = body.get("messages")
        return [_message(m) for m in listed] if isinstance(listed, list) else []
    except (ValueError, RecursionError):
        return "request body is not JSON the channel reads"
    except Exception as exc:  # the agent's bytes, in any shape: never the trial's failure
        return f"request not read ({type(exc).__name__}: it is not in its API's shape)"


def _message(m: Any) -> dict[str, Any]:
    if not isinstance(m, dict):
        return {"role": "?", "content": content_text(m)}
    out: dict[str, Any] = {"role": str(m.get("role"))}
    if m.get("content") is not None:
        out["content"] = content_text(m["content"])
    calls = m.get("tool_calls")
    if isinstance(calls, list) and calls:
        out["tool_calls"] = [_call(c) for c in calls]
    for key in ("tool_call_id", "name"):
        if m.get(key) is not None:
            out[key] = str(m[key])
    return out


def _call(c: Any) -> dict[str, Any]:
    """A tool call as ``{id, name, arguments}`` (arguments as the text sent)."""
    if not isinstance(c, dict):
        return {"arguments": content_text(c)}
    fn = c.get("function")
    fn = fn if isinstance(fn, dict) else {}
    args = fn.get("arguments")
    return {
        "id": _scalar(c.get("id")),
        "name": _scalar(fn.get("name")),
        "arguments": args if isinstance(args, str) or args is None else content_text(args),
    }


def _scalar(value: Any) -> Any:
    """A JSON scalar as it is; anything else (a plugin may put any object there) as text."""
    return value if value is None or isinstance(value, str | int | float) else str(value)


def _answer(entry: _Entry) -> dict[str, Any] | None:
    """What the agent was written: the completion's first choice (a plugin's, as it made it)."""
    if entry.answer is None:
        return None
    try:
        done = entry.answer
        if isinstance(done, bytes):
            done = decode_json(done)
        choices = done.get("choices") if isinstance(done, dict) else None
        if not isinstance(choices, list) or not choices:
            return {"choices": 0}
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message")
        message = message if isinstance(message, dict) else {}
        answer = _message({"role": "assistant", **message})
        answer["finish_reason"] = _scalar(choice.get("finish_reason"))
        return answer
    except Exception as exc:  # a plugin's malformed completion: not the transcript's to judge
        return {"unreadable": f"{type(exc).__name__}: {exc}"}


def _line(
    entry: _Entry,
    messages: list[dict[str, Any]] | str,
    before: tuple[_Entry, list[dict[str, Any]] | str] | None,
    redactor: redact.Redactor,
) -> str:
    """One step's line, redacted and within LINE_LIMIT."""
    line: dict[str, Any] = {
        "step": entry.step,
        "call": entry.index,
        "attempt": entry.attempt,
        "endpoint": entry.endpoint,
        "status": entry.status,
        "class": entry.result_class,
    }
    if isinstance(messages, str):
        line["request"] = messages
        shown: list[dict[str, Any]] = []
    else:
        shown = messages
        if before is not None and isinstance(before[1], list):
            same = _shared(before[1], messages)
            if same:
                line["repeats"] = {"step": before[0].step, "messages": same}
                shown = messages[same:]
    line["messages"] = shown
    answer = _answer(entry)
    if answer is not None:
        line["answer"] = answer
    if entry.answer is not None and entry.result_class == "connection_reset":
        line["cut_answer"] = "the answer was cut in the middle of a tool call"
    if entry.error is not None:
        line["fault"] = entry.error
    return _fitted(line, redactor)


def _shared(earlier: list[dict[str, Any]], now: list[dict[str, Any]]) -> int:
    """How many leading messages ``now`` shares with ``earlier``."""
    n = 0
    for a, b in zip(earlier, now, strict=False):
        if a != b:
            break
        n += 1
    return n


def _fitted(line: dict[str, Any], redactor: redact.Redactor) -> str:
    """``line`` as JSON text of at most LINE_LIMIT characters: its strings redacted (before any
    cut) and cut at TEXT_LIMIT; if that is too long, every string cut at SHORT_TEXT; if still,
    its earliest messages left out, said on the line; if still, the step alone."""
    for text_limit in (TEXT_LIMIT, SHORT_TEXT):
        clean = redactor.data(redact.cap(line, text_limit, redactor))
        encoded = json.dumps(clean, ensure_ascii=False, default=str)
        if len(encoded) <= LINE_LIMIT:
            return encoded
    listed = clean["messages"]
    sizes = [len(json.dumps(m, ensure_ascii=False, default=str)) + 2 for m in listed]
    over, dropped = len(encoded) - LINE_LIMIT, 0
    while over > 0 and dropped < len(sizes):
        over -= sizes[dropped]
        dropped += 1
    clean["messages"] = listed[dropped:]
    clean["cut"] = (
        f"the first {dropped} of this request's {len(listed)} message(s) listed here are not "
        f"kept: a line of model.jsonl holds at most {LINE_LIMIT} characters"
    )
    encoded = json.dumps(clean, ensure_ascii=False, default=str)
    if len(encoded) <= LINE_LIMIT:
        return encoded
    keep = ("step", "call", "attempt", "endpoint", "status", "class")
    bare = {k: line[k] for k in keep}
    bare["cut"] = f"this step's request and answer are over {LINE_LIMIT} characters: not kept"
    return json.dumps(bare, default=str)
