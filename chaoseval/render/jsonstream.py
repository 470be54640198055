"""A JSON document written as ``json.dumps(doc, indent=2)`` writes it, its long lists item by
item: a report of 100k tasks has 300k (task, cell) results and 200k heatmap entries, which
as one list of dicts and one string were most of its memory."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, TextIO

import msgspec

__all__ = ["Streamed", "write_json"]

BATCH = 256  # items indented and written at once (one redaction pass per write)


class Streamed:
    """A list in a document that :func:`write_json` writes one item at a time (``items`` is
    read once, when it is written); or, made by :meth:`rendered`, whose items come as text
    already written as ``json.dumps(indent=2)`` writes them."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items
        self.render: Callable[[str], Iterable[str]] | None = None
        # A string json.dumps escapes (NUL): no value of the document can write it.
        self.marker = f"\x00streamed {id(self)}\x00"

    @classmethod
    def rendered(cls, render: Callable[[str], Iterable[str]]) -> Streamed:
        """A list whose text ``render(pad)`` writes: runs of items, each item as
        ``"\n" + pad`` and its lines at ``pad`` as ``json.dumps(indent=2)`` writes them
        (the items of a run joined by ","); no empty run. A long list of objects of one shape
        written this way costs a fraction of making each object and encoding it."""
        out = cls(())
        out.render = render
        return out


def write_json(doc: Any, out: TextIO) -> None:
    """``doc`` as ``json.dumps(doc, indent=2, default=str)`` writes it, then a newline; each
    :class:`Streamed` in it written item by item, ~64 KB at a time, to ``out`` (which redacts
    each piece it is given, as a command's output streams do: redact.RedactingStream)."""
    found: list[Streamed] = []

    def default(value: Any) -> str:
        if isinstance(value, Streamed):
            found.append(value)
            return value.marker
        return str(value)

    rest = _indented(doc, default=default)
    for streamed in dict.fromkeys(found):  # met twice when json's own indenting took over
        head, rest = rest.split(json.dumps(streamed.marker), 1)
        out.write(head)
        line = head.rsplit("\n", 1)[-1]  # '    "key": ' (or the indent alone in a list)
        indent = len(line) - len(line.lstrip(" "))
        pad = " " * (indent + 2)
        if streamed.render is not None:
            wrote = _runs(streamed.render(pad), out)
        else:
            wrote = _items(streamed.items, pad, out)
        out.write(f"\n{' ' * indent}]" if wrote else "[]")
    out.write(rest + "\n")


def _items(items: Iterable[Any], pad: str, out: TextIO) -> bool:
    """The items after '[', each on its own lines at ``pad``; whether there was any."""
    wrote = False
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == BATCH:
            out.write(_batch(batch, pad, wrote))
            wrote, batch = True, []
    if batch:
        out.write(_batch(batch, pad, wrote))
        wrote = True
    return wrote


def _runs(runs: Iterable[str], out: TextIO) -> bool:
    """Runs of items' text after '[', joined by ","; whether there was any."""
    wrote = False
    for run in runs:
        out.write(("," if wrote else "[") + run)
        wrote = True
    return wrote


def _batch(batch: list[Any], pad: str, after: bool) -> str:
    """Items as they follow '[' (or an item, ``after``): each on its own lines at ``pad``.
    The whole batch indented at once (one C call each from json and msgspec): a list
    indented by two holds its items at two spaces, moved to ``pad`` on every line."""
    try:
        text = _indented(batch, strict=True)[1:-2]  # '\n  item,\n  item' without '[', '\n]'
    except ValueError:  # NaN or infinity: json's own indenting, item by item
        each = (json.dumps(item, indent=2, default=str) for item in batch)
        text = ",".join("\n  " + t.replace("\n", "\n  ") for t in each)
    return ("," if after else "[") + text.replace("\n", "\n" + pad[2:])


def _indented(item: Any, strict: bool = False, default: Any = str) -> str:
    """``json.dumps(item, indent=2, default=default)``, a third of its time: json's C encoder
    (which only writes without indent) and msgspec's reformatting, which indents as json
    does and keeps each token as written. A NaN or infinity, which msgspec refuses as JSON,
    takes json's own indenting (``strict``: raises ValueError instead)."""
    text = json.dumps(item, default=default)
    try:
        return msgspec.json.format(text, indent=2)
    except msgspec.DecodeError:
        if strict:
            raise ValueError("not strict JSON") from None
        return json.dumps(item, indent=2, default=default)
