"""What an agent sends, made fit for a record: the one place that says what JSON from an agent
may be and what is done when it is not.

Two things an agent can send make data that a journal line cannot hold or a reader cannot
read back, and without this module they stopped the whole run (issue 39):

- a lone surrogate (``"\\ud800"`` as a JSON escape): valid JSON text, a valid Python string,
  but UTF-8 has no form for it, so the journal's encoder refuses the record. Such a string
  is kept with each lone surrogate written as the text of its escape (``\\ud800``: a
  backslash and five characters);
- nesting past what the parsers take: json and msgspec stop near Python's recursion limit
  (RecursionError, not the ValueError their callers catch), pydantic's serializer at 255
  levels, its JSON reader (every journal reader) at about 200. A request body deeper than
  :data:`MAX_DEPTH` is refused where it comes in (a 400 the agent reads, ``deep_request`` note
  step: :func:`deeper`), JSON no parser can take is :class:`TooDeep`, a ValueError
  (:func:`loads`), and anything deeper that reaches a record is cut at :data:`MAX_DEPTH`,
  the cut part replaced by a marker (:func:`clean`, :func:`scrub`).

Whatever is escaped or cut, the trial says so in a ``note`` step (:data:`CLEANED`, :func:`note`):
what was done, where, and why. The checks cost nothing on the usual path: :func:`deeper`
counts brackets before it scans, :func:`scrub` runs only once the journal's encoder refused a
record (chaoseval.store.journal.encode_record).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from chaoseval.model.trajectory import Trajectory

# Levels of nesting kept of JSON from an agent, counted from the outermost value (of a
# request body, an answer line, a record). Well under every reader's limit (pydantic's JSON
# reader stops at about 200 levels of a whole journal line), far over any real tool call.
MAX_DEPTH = 100
CLEANED = "cleaned_data"  # the note step's ``tool``: the agent's data was escaped or cut
DEEP_REQUEST = "deep_request"  # the note step's ``tool``: a request body nested too deep
CUT = f"[cut by chaoseval: nested deeper than {MAX_DEPTH} levels]"
LISTED = 10  # places named in a note; the count says how many there were
_SURROGATE = re.compile("[\ud800-\udfff]")
# A JSON string (its escapes whole) or a bracket: the tokens that decide nesting.
_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_OPENERS = frozenset(b"[{")


class TooDeep(ValueError):
    """JSON nested past what the parser takes (its RecursionError, as a ValueError)."""


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``, with JSON too deep for it a :class:`TooDeep` (a ValueError, so a
    caller that takes "not JSON" for ValueError takes this too) instead of a RecursionError."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TooDeep(f"JSON nested deeper than the parser takes ({_brackets(text)})") from None


def _brackets(text: str | bytes) -> str:
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return f"{raw.count(b'[') + raw.count(b'{')} opening brackets in {len(raw)} bytes"


def deeper(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON text ``raw`` nests deeper than ``limit`` levels (brackets inside strings
    do not count). At once for a body with at most ``limit`` opening brackets (two counts
    in C: every tool request); else scanned token by token, stopping at the first level
    past the limit."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    depth = 0
    for match in _TOKENS.finditer(raw):
        token = match[0]
        if len(token) != 1:
            continue  # a string
        if token[0] in _OPENERS:
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


@dataclass
class Cleaned:
    """What :func:`clean` or :func:`scrub` did: the places (JSON paths) of each change."""

    escaped: list[str] = field(default_factory=list)  # strings with lone surrogates
    cut: list[str] = field(default_factory=list)  # values nested deeper than the limit

    def __bool__(self) -> bool:
        return bool(self.escaped or self.cut)

    def sentence(self, what: str) -> str:
        """The note's text: what was done to ``what``, where, and why."""
        parts = []
        if self.escaped:
            parts.append(
                f"lone surrogates (text UTF-8 cannot hold) written as \\uXXXX escapes in "
                f"{_places(self.escaped)}"
            )
        if self.cut:
            parts.append(
                f"values nested deeper than {MAX_DEPTH} levels (more than a journal reader "
                f"takes) replaced by {CUT!r} at {_places(self.cut)}"
            )
        return f"{what} is not recorded as sent: " + "; ".join(parts)

    def args(self) -> dict[str, Any]:
        return {"escaped": self.escaped[:LISTED], "cut": self.cut[:LISTED]}


def _places(paths: list[str]) -> str:
    shown = ", ".join(p or "(the value)" for p in paths[:LISTED])
    more = len(paths) - LISTED
    return shown + (f" and {more} more" if more > 0 else "")


def escape(text: str) -> str:
    """``text`` with each lone surrogate written as the text of its escape (``\\ud800``)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def clean(value: Any, where: str = "", depth: int = 0, found: Cleaned | None = None) -> Any:
    """``value`` (JSON-like data: dicts, lists, strings, scalars) with lone surrogates escaped
    and anything nested deeper than :data:`MAX_DEPTH` levels (``depth``: levels above it)
    cut; the same object where nothing had to change. ``found`` collects what was done."""
    found = Cleaned() if found is None else found
    if isinstance(value, str):
        if value.isascii() or _SURROGATE.search(value) is None:
            return value
        found.escaped.append(where)
        return escape(value)
    if isinstance(value, BaseModel):
        _scrub(value, where, depth, found)
        return value
    if not isinstance(value, dict | list | tuple):
        return value
    if depth >= MAX_DEPTH:
        found.cut.append(where)
        return CUT
    changed = False
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            key, kept = clean(k, where, depth, found), clean(v, _at(where, k), depth + 1, found)
            changed = changed or key is not k or kept is not v
            items.append((key, kept))
        return dict(items) if changed else value
    listed = []
    for i, v in enumerate(value):
        kept = clean(v, _at(where, i), depth + 1, found)
        changed = changed or kept is not v
        listed.append(kept)
    return listed if changed else value


def _at(where: str, key: Any) -> str:
    name = escape(key) if isinstance(key, str) else str(key)
    return f"{where}.{name}" if where else name


def scrub(model: BaseModel) -> Cleaned:
    """Make a record fit for its journal line, in place: every string in it, keys too, with
    lone surrogates escaped, every value nested past :data:`MAX_DEPTH` levels cut. Models
    are changed where they stand (the record in memory and its line then agree)."""
    found = Cleaned()
    _scrub(model, "", 0, found)
    return found


def _scrub(model: BaseModel, where: str, depth: int, found: Cleaned) -> None:
    values = model.__dict__
    for name, value in list(values.items()):
        kept = clean(value, _at(where, name), depth + 1, found)
        if kept is not value:
            values[name] = kept


def note(trajectory: Trajectory, t: float, error: str, args: dict[str, Any]) -> None:
    """The trial's note step saying what of the agent's data was escaped or cut, and why."""
    trajectory.add_step("note", t=t, tool=CLEANED, args=args, error=error)
