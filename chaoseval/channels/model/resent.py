"""A trial's chat requests read where they grew: a conversation is resent whole each turn.

Each request of a tool-using agent repeats its conversation so far and adds the last round (a
question, a tool call, its result): 3.5 kB at a first turn, 20 kB by the tenth, hundreds of kB
later on. Where the channel passes the agent's bytes on (no plugin, forwarding), it reads of a
chat request only its top-level members (:func:`wire.read_top`), looks for ``\\u`` escapes
and takes its fingerprint: three passes over the whole body, most of them over bytes an
earlier request was read for. :class:`ConversationReader` keeps, for each of a trial's last
few requests, its *head* (its bytes up to its last message's end, the sha256 state there, the
members ahead of its messages) and its *tail* (from the messages' closing bracket on, and the
members there). A request that starts with a head is read from there on: where it also ends
with that request's tail only the new messages between are read, else the rest is read as if
an array's items followed by its closing bracket. Either way the answer is the one reading the
whole body gives (tests/channels/test_resent.py holds it to read_top, the fingerprint and the
escape scan). A small request is read whole and not kept (KEEP_FROM).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, cast

import msgspec

from chaoseval.channels.model.wire import (
    JSON_SPACE,
    READ_REST,
    READ_TOP,
    digest,
    fingerprint,
    is_utf8,
    passable,
    read_top,
)

# Where a body holds a \u escape: ``raw.find(b"\\u")``'s answer in a third to a half of its
# time (the needle's last byte, "u", is common in text, and bytes.find checks from it; 19 us
# against 9 at 20 kB, an agent's tenth turn: make bench-wire).
escaped = re.compile(rb"\\u").search
_NAME = b'"messages"'
# After the member's name, up to its array's first item; and from an array's last item to
# its closing bracket.
_OPENING = re.compile(rb"[ \t\r\n]*:[ \t\r\n]*\[").match
_CLOSING = re.compile(rb"[ \t\r\n]*\]").match
# A request's rest (from its last kept message on) is read after an opening of a member no
# chat API has (wire.READ_REST): the new messages are its items, and a "messages" member read
# there is a second one in the body (which the whole read takes in place of the first).
_OPENED = b'{"~":['
_SPACES = re.compile(rb"[ \t\r\n]*").match
_SEPARATOR = re.compile(rb"[ \t\r\n]*,[ \t\r\n]*").match  # between an array's items
_READ_ITEMS = msgspec.json.Decoder(list[msgspec.Raw]).decode
HEADS = 8  # requests kept a trial: a few conversations interleaved (sub-agents, handoffs)
# Bytes below which a request is read whole and not kept: keeping it costs more than a whole
# read saves (a one-message request: 7 us against 2, in process). A tool-using agent's first
# request is larger (its tools' schemas): it is kept, and the next one goes on from it.
KEEP_FROM = 2048

Read = tuple[dict[str, Any] | None, str, bool]


@dataclass(slots=True, eq=False)
class _Read:
    """A request read, as far as a later one may repeat it."""

    prefix: memoryview  # its bytes up to its last message's end (uncopied)
    hashed: Any  # sha256 of the prefix (hashlib's object, to copy and go on from)
    before: dict[str, Any]  # the members read ahead of "messages" (with it, [])
    messages: list[msgspec.Raw]
    tail: memoryview  # its bytes from the messages' closing bracket on
    after: dict[str, Any]  # the members read there


class ConversationReader:
    """One trial's chat requests, each read as :meth:`read` says."""

    def __init__(self, keep_from: int = KEEP_FROM) -> None:
        self._reads: list[_Read] = []  # the latest first
        self._keep_from = keep_from

    def read(self, raw: bytes) -> Read:
        """``(top, fingerprint, plain)`` of a chat request's bytes: ``read_top(raw)`` where
        ``raw`` holds no ``\\u`` escape (else None), ``wire.fingerprint(raw)``, and whether it
        holds none (then its bytes may be passed on)."""
        if len(raw) < self._keep_from:
            return read_whole(raw)
        for place, earlier in enumerate(self._reads):
            if raw.startswith(earlier.prefix):
                # Gone on from: only new messages between it and the earlier one's tail, or
                # everything after its prefix; the whole body where neither reads alone.
                tail = earlier.tail
                if len(raw) >= len(earlier.prefix) + len(tail) and raw.endswith(tail):
                    found = self._between(raw, earlier, place, len(raw) - len(tail))
                else:
                    found = self._after(raw, earlier, place)
                if found is not None:
                    return found
                break
        return self._fresh(raw)

    def _keep(self, read: _Read, replaced: int | None = None) -> None:
        """``read`` as the latest, in place of the ``replaced``-th (which it went on from)."""
        reads = self._reads
        if replaced is not None:
            del reads[replaced]
        reads.insert(0, read)
        del reads[HEADS:]

    def _fresh(self, raw: bytes) -> Read:
        """The whole body read; where it can be gone on from, kept."""
        found = read_whole(raw)
        top = found[0]  # (None where the body holds an escape: not kept)
        messages = None if top is None else top.get("messages")
        if not messages:
            return found
        # The member's name once in the body: it is the top-level one (in JSON with no \u
        # escape it has no other spelling, and a string's quotes would be escaped).
        name = raw.find(_NAME)
        if name < 0 or raw.find(_NAME, name + len(_NAME)) >= 0:
            return found
        opening = _OPENING(raw, name + len(_NAME))
        end = -1 if opening is None else _span(raw, messages, opening.end())
        closing = None if end < 0 else _CLOSING(raw, end)
        if opening is None or closing is None:
            return found
        start, close = opening.end(), closing.end() - 1
        after = _rest(_OPENED + raw[close:])
        if after is None:
            return found
        del after["~"]
        before = cast(dict[str, Any], READ_TOP(raw[:start] + b"]}"))
        view = memoryview(raw)
        # (the prefix hashed a second time: once a conversation, for the state kept)
        kept = hashlib.sha256(view[:end])
        self._keep(_Read(view[:end], kept, before, list(messages), view[close:], after))
        return found

    def _after(self, raw: bytes, earlier: _Read, place: int) -> Read | None:
        """``raw``, which starts with ``earlier``'s prefix, read from there on; None where
        what follows cannot be read alone."""
        end = len(earlier.prefix)
        view = memoryview(raw)
        hashed = earlier.hashed.copy()
        if escaped(raw, end) is not None:
            hashed.update(view[end:])
            return None, digest(hashed), False
        rest = raw[end:]
        text = rest.lstrip(JSON_SPACE)
        comma = text[:1] == b","
        if comma:
            text = text[1:]
        elif text[:1] != b"]":
            return None
        text = _OPENED + text
        read = _rest(text)
        if read is None or "messages" in read:
            return None
        new = read.pop("~")
        grown = _span(text, new, len(_OPENED)) if new or not comma else -1
        closing = None if grown < 0 else _CLOSING(text, grown)
        if closing is None or not is_utf8(rest):
            return None
        offset = len(raw) - len(text)  # text[i] is raw[i + offset] past the opening
        grown += offset
        hashed.update(view[end:grown])
        kept = hashed.copy()
        hashed.update(view[grown:])
        top = earlier.before | read
        top["messages"] = messages = earlier.messages + new
        tail = view[closing.end() - 1 + offset :]
        self._keep(_Read(view[:grown], kept, earlier.before, messages, tail, read), place)
        return (top if passable(top) else None), digest(hashed), True

    def _between(self, raw: bytes, earlier: _Read, place: int, close: int) -> Read | None:
        """``raw`` is ``earlier``'s prefix, then new messages (or none), then its tail: only
        the new messages are read."""
        end = len(earlier.prefix)
        view = memoryview(raw)
        hashed = earlier.hashed.copy()
        middle = raw[end:close]
        if escaped(middle) is not None:
            hashed.update(view[end:])
            return None, digest(hashed), False
        text = middle.lstrip(JSON_SPACE)
        new: list[msgspec.Raw] = []
        grown = end
        # Nothing but spaces between: no new message (a retry, or the history asked again).
        if text:
            if text[:1] != b"," or not is_utf8(middle):
                return None
            text = b"".join((b"[", memoryview(text)[1:], b"]"))  # (one copy, not two)
            try:  # read as an array, they are its items and nothing else (JSON's commas)
                new = _READ_ITEMS(text)
            except msgspec.DecodeError:
                return None
            if not new:  # a comma and no message after it (``[m, ]``) is not JSON
                return None
            grown = end + len(middle.rstrip(JSON_SPACE))
        hashed.update(view[end:grown])
        kept = hashed.copy()
        hashed.update(view[grown:])
        top = earlier.before | earlier.after
        top["messages"] = messages = earlier.messages + new
        # The earlier read goes on as this one (its members ahead of and after the messages
        # are the same): updated in place rather than made anew, and first in line.
        earlier.prefix, earlier.hashed, earlier.messages = view[:grown], kept, messages
        earlier.tail = view[close:]
        if place:
            self._keep(earlier, place)
        return (top if passable(top) else None), digest(hashed), True


def _span(text: bytes, items: list[msgspec.Raw], at: int) -> int:
    """Where ``items``, read from an array in ``text`` whose first item is at ``at`` (after
    spaces), end there; -1 where they are not the bytes there one after the other (each the
    same bytes as the array's item in its place, so its items are these)."""
    gap = _SPACES
    for item in items:
        found = gap(text, at)
        if found is None or not text.startswith(item, found.end()):
            return -1
        at = found.end() + len(item)
        gap = _SEPARATOR
    return at


def _rest(text: bytes) -> dict[str, Any] | None:
    """A request's rest as read after _OPENED: the new messages (``"~"``), the members."""
    try:
        return cast(dict[str, Any], READ_REST(text))
    except msgspec.DecodeError:
        return None


def read_whole(raw: bytes) -> Read:
    """The read of a request as a whole body: no state kept."""
    if escaped(raw) is not None:
        return None, fingerprint(raw), False
    return read_top(raw), fingerprint(raw), True
