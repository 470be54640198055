"""Agent and scenario text made safe to print: data never drives the terminal.

An agent's answer, a tool's arguments, a cell name or a journal's error can hold anything: an
ESC that starts a colour or sets the terminal's title, a BEL, a NUL, a carriage return that
overwrites what was printed, a bidi override that reorders it, or ``[bold red]`` that rich
would read as markup. :func:`visible` writes every such character as its Python escape
(``\\x1b``, ``\\u202e``), so it is seen, never obeyed; :func:`escape` also escapes rich markup,
for text that goes into a rich console or table.
"""

from __future__ import annotations

from rich.markup import escape as _markup_escape

__all__ = ["CONTROL", "escape", "visible"]

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI to some terminals),
# and the bidirectional overrides and isolates.
CONTROL = frozenset(
    [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F),
     *range(0x2066, 0x206A)]
)  # fmt: skip
_TABLE = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in CONTROL}


def visible(text: str) -> str:
    """``text`` with every control character written as its escape (one C pass)."""
    return text.translate(_TABLE)


def escape(text: str) -> str:
    """``text`` for a rich console: control characters visible, markup escaped."""
    return _markup_escape(visible(text))
