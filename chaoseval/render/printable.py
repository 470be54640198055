"""Agent and scenario text made safe to print: data never drives the terminal.

An agent's answer, a tool's arguments, a cell name or a journal's error can hold anything: an
ESC that starts a colour or sets the terminal's title, a BEL, a NUL, a carriage return that
overwrites what was printed, a bidi override that reorders it, or ``[bold red]`` that rich
would read as markup. :func:`visible` writes every such character as its Python escape
(``\\x1b``, ``\\u202e``), so it is seen, never obeyed; :func:`escape` also escapes rich markup,
for text that goes into a rich console or table; ``md_text``, ``md_quote`` and ``md_code`` put
it into Markdown (report -f markdown, compare, sample) as text, never as markup or HTML.
"""

from __future__ import annotations

import re

from rich.markup import escape as _markup_escape

__all__ = ["CONTROL", "escape", "md_code", "md_quote", "md_text", "visible", "writable"]

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


# Markdown: what could make agent text a link or an image (a ']' that closes a link's text or
# label), a code span, a table cell, raw HTML or an entity is escaped; emphasis is left alone
# (it changes only how text looks, and escaping every '_' of a tool name would litter reports).
_MARKDOWN = str.maketrans({"\\": "\\\\", "`": "\\`", "|": "\\|", "<": "&lt;", "&": "&amp;"})
_LINK = re.compile(r"\](?=[(\[:])")
# What starts a block at the start of a line: its first mark (an ordered list's '.' or ')').
_BLOCK = re.compile(r"^(\s*)([#>+\-*=_])|^(\s*\d+)([.)])")


def writable(text: str) -> str:
    """Control characters and lone surrogates (text no file can hold as UTF-8) as escapes:
    what any view writes (cli._reading.emit), agent text in Markdown."""
    return visible(text.encode("utf-8", "backslashreplace").decode("utf-8"))


def md_text(text: object) -> str:
    """``text`` for a line of Markdown (a table cell, a list item, a heading): escaped, its
    newlines spaces."""
    return _LINK.sub(r"\\]", writable(str(text)).translate(_MARKDOWN)).replace("\n", " ")


def _escaped(m: re.Match[str]) -> str:
    lead, mark = (m.group(1), m.group(2)) if m.group(2) else (m.group(3), m.group(4))
    return f"{lead}\\{mark}"


def md_quote(text: object) -> str:
    """``text`` as a Markdown block quote, each of its lines escaped and quoted, and one that
    would start a block in the quote (a heading, a list, a rule, another quote) escaped too."""
    lines = (_BLOCK.sub(_escaped, md_text(line)) for line in str(text).split("\n"))
    return "\n".join(f"> {line}".rstrip() for line in lines)


def md_code(text: object) -> str:
    """``text`` as a Markdown code span: fenced by more backticks than any run inside it
    (nothing in a code span is markup or HTML, and no backslash escapes it)."""
    inner = writable(str(text)).replace("\n", " ")
    longest = max((len(r) for r in re.findall(r"`+", inner)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if inner.startswith("`") or inner.endswith("`") else ""
    return f"{fence}{pad}{inner}{pad}{fence}"
