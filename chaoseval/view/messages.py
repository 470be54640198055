"""A trial's model messages beside its model steps: the ``model.jsonl`` artifact the model
channel writes when a trial ends (chaoseval.channels.model.transcript), one line per model
step keyed by the step's index, read only when the trial's page is made.

The file is a journal's word like any artifact: it is read only when the record lists it and it
resolves inside the store and the folder (view.files), redacted again as it is read, and every
value in it is shown as text (view.html: redacted, made visible, escaped), whatever its type.
A line that is not a JSON object is skipped. Each step's messages and answer are collapsed
(``<details>``, no script): a trial of forty steps stays a page one scrolls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chaoseval.model.records import TrialRecord
from chaoseval.store.artifacts import MODEL_MESSAGES
from chaoseval.view.files import read_text, served
from chaoseval.view.html import text
from chaoseval.view.library import NotServed

__all__ = ["NOTE", "messages_html", "note_html", "read_lines"]

NOTE = -1  # the key of the file's own note (steps it does not keep), beside the steps' lines


def read_lines(root: Path, journal: Path, record: TrialRecord) -> dict[int, dict[str, Any]]:
    """The record's model.jsonl lines by step index (NOTE: the file's note of steps it does
    not keep; a problem reading it, e.g. a path out of the store, is that note too). Empty when
    the record lists no such artifact (an agent in chaoseval's process, a run before it)."""
    listed = [a for a in record.artifacts if a.name == MODEL_MESSAGES]
    if not listed:
        return {}
    try:
        body = read_text(served(root, journal, record, listed[-1]))
    except (NotServed, OSError) as exc:
        return {NOTE: {"cut": f"{MODEL_MESSAGES}: not read ({exc})"}}
    lines: dict[int, dict[str, Any]] = {}
    for raw in body.splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue  # the store's own cut marker, a torn or hand-made line
        if not isinstance(line, dict):
            continue
        step = line.get("step")
        if type(step) is int:
            lines[step] = line
        elif "cut" in line:
            lines[NOTE] = line
    return lines


def note_html(lines: dict[int, dict[str, Any]]) -> str:
    """The file's note, when it has one (steps not kept, or not read)."""
    note = lines.get(NOTE)
    return f"<p class='warn'>{text(note.get('cut'))}</p>" if note else ""


def messages_html(line: dict[str, Any]) -> str:
    """A model step's messages and answer, collapsed under a summary line."""
    messages = line.get("messages")
    listed = messages if isinstance(messages, list) else []
    said = f"messages: {len(listed)} sent"
    repeats = line.get("repeats")
    if isinstance(repeats, dict) and type(repeats.get("step")) is int:
        said += f" after the first {repeats.get('messages')}, as in step {repeats['step'] + 1}"
    answer = line.get("answer")
    said += "; the answer" if isinstance(answer, dict) else "; no answer"
    body = ""
    for key in ("request", "cut"):
        if line.get(key) is not None:
            body += f"<p class='warn'>{text(line[key])}</p>"
    body += "".join(_message(m) for m in listed)
    if isinstance(answer, dict):
        body += _message(answer, css="msg answer", label="answer")
    for key, what in (("cut_answer", "cut"), ("fault", "fault written instead")):
        if line.get(key) is not None:
            body += f"<div class='fault'>{what}: {text(line[key])}</div>"
    summary = text(said)
    return f"<details class='messages'><summary>{summary}</summary>{body}</details>"


def _message(m: Any, *, css: str = "msg", label: str | None = None) -> str:
    if not isinstance(m, dict):
        return f"<div class='{css}'><pre>{text(m)}</pre></div>"
    head = f"<b>{text(label or m.get('role'))}</b>"
    if m.get("tool_call_id") is not None:
        head += f" for call {text(m['tool_call_id'])}"
    if m.get("finish_reason") is not None:
        head += f" (finish reason {text(m['finish_reason'])})"
    out = head
    if m.get("content") is not None:
        out += f"<pre>{text(m['content'])}</pre>"
    calls = m.get("tool_calls")
    for c in calls if isinstance(calls, list) else []:
        c = c if isinstance(c, dict) else {"arguments": c}
        out += (
            f"<p class='call'>tool call {text(c.get('name'))} ({text(c.get('id'))})</p>"
            f"<pre>{text(c.get('arguments'))}</pre>"
        )
    for key in ("choices", "unreadable"):
        if key in m:
            out += f"<p class='warn'>{key}: {text(m[key])}</p>"
    return f"<div class='{css}'>{out}</div>"
