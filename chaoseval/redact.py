"""Secrets never written: one redactor for everything chaoseval writes or prints.

What is replaced by :data:`MARKER`:

- the values of environment variables whose names look secret (KEY, TOKEN, SECRET, PASSWORD)
  and whose values have at least :data:`MIN_SECRET` characters; the upstream model key is one;
- credentials in headers: ``Authorization: Bearer ...``, ``x-api-key: ...`` and the like;
- ``--redact`` patterns (regular expressions) given to the run;
- secrets registered by code that holds them (:func:`add_secret`).

Writers call :func:`current` (journal lines, artifacts, report and investigation output), so
adding a rule here covers all of them. Long strings are cut by :func:`cap` with their full size
in the marker, so a 100 MB answer cannot make a 200 MB journal. Text is always redacted before
it is cut (:func:`head`, :func:`tail`): cut first, a secret across the cut would keep a half
that no rule recognises.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from chaoseval.errors import ConfigError

MARKER = "[REDACTED]"
MIN_SECRET = 8
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
# A credential header's value, in HTTP (``Authorization: Bearer x``), JSON or repr form; only
# with a scheme or a long value, so prose such as "payment authorization: pending" stays.
# A value that is already the marker (then markup or the end) is left alone, so redacting
# twice is redacting once: the view redacts each text and then its whole page, and the second
# pass took ``[REDACTED]</pre></div>`` for a key's value, markup and all.
_DONE = r"(?!\[REDACTED\](?:[\s'\",;}<&]|$))"
HEADER = re.compile(
    r"(?i)((?:proxy-)?authorization['\"]?\s*[:=]\s*['\"]?(?:bearer|basic|token)\s+)"
    + _DONE
    + r"[^\s'\",;}]+"
    r"|((?:x-)?api[-_]key['\"]?\s*[:=]\s*['\"]?)" + _DONE + r"[^\s'\",;}]{8,}"
)
BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")
TEXT_LIMIT = 256 << 10  # characters of one string kept in a journal line
# Characters past a cut redacted with what is kept (head, tail): a secret up to this long
# across the cut is replaced whole, never kept in part.
MARGIN = 4096


@dataclass
class Redactor:
    """Replaces known secret values and secret-looking patterns by the marker."""

    secrets: list[str] = field(default_factory=list)
    patterns: list[re.Pattern[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Longest first, so a secret containing another is replaced whole; both raw and as
        # JSON writes it (quotes and backslashes escaped), since writers see either form.
        forms = {f for s in self.secrets for f in (s, json.dumps(s)[1:-1]) if len(s) >= 1}
        self._literals = sorted(forms, key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self._literals:
            if secret in value:
                value = value.replace(secret, MARKER)
        # The credential patterns scan case-insensitively at every position (~0.1 s a MB);
        # ASCII text without their keywords cannot match them (a 25 MB JSON report).
        if not value.isascii() or _may_hold_credential(value.lower()):
            value = HEADER.sub(lambda m: (m[1] or m[2]) + MARKER, value)
            value = BEARER.sub(lambda m: m[1] + MARKER, value)
        for pattern in self.patterns:
            value = pattern.sub(MARKER, value)
        return value

    def needed(self, value: str) -> bool:
        """Whether :meth:`text` would change ``value`` (cheap enough for every journal line).

        The credential patterns are case-insensitive regular expressions, ~0.2 ms per
        journal line; an ASCII line without their keywords (lower-cased, which for ASCII is
        exactly what IGNORECASE matches) cannot match them and skips them."""
        if (
            value.isascii()
            and not self.patterns
            and not (self._literals and any(secret in value for secret in self._literals))
            and not _may_hold_credential(value.lower())
        ):
            return False
        return self.text(value) != value

    def data(self, value: Any) -> Any:
        """``value`` with every string in it (keys too) redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


def _may_hold_credential(lowered: str) -> bool:
    """Whether HEADER or BEARER could match: each needs one of these words. (Each ``in`` reads
    the whole line: "api" once for both of its words, a pass fewer on a line without it.)"""
    return (
        "authorization" in lowered
        or "bearer" in lowered
        or ("api" in lowered and ("api-key" in lowered or "api_key" in lowered))
    )


def secret_values(env: Mapping[str, str]) -> list[str]:
    """Values of the environment variables whose names look secret and values are long."""
    return [v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET]


_patterns: list[re.Pattern[str]] = []
_extra: set[str] = set()
_cache: tuple[tuple[Any, ...], Redactor] | None = None


def configure(patterns: Iterable[str] = ()) -> None:
    """The run's ``--redact`` patterns (regular expressions), checked here."""
    global _cache
    compiled = []
    for p in patterns:
        try:
            compiled.append(re.compile(p))
        except re.error as exc:
            raise ConfigError(f"--redact {p!r} is not a regular expression: {exc}") from None
    _patterns[:] = compiled
    _cache = None


def add_secret(value: str | None) -> None:
    """A secret the code holds (an upstream key read from a variable of any name)."""
    global _cache
    if value and len(value) >= 4:
        _extra.add(value)
        _cache = None


_environ_seen: dict[Any, Any] | None = None


def _environ_unchanged() -> bool:
    """Whether os.environ is as when the cached redactor was made: comparing its raw dict is
    a few microseconds, reading every variable again a few hundred (once per journal line)."""
    global _environ_seen
    raw = getattr(os.environ, "_data", None)
    if not isinstance(raw, dict):
        return False
    if raw == _environ_seen:
        return True
    _environ_seen = dict(raw)
    return False


def current() -> Redactor:
    """The redactor for now: the environment as it is, plus the run's patterns and secrets."""
    global _cache
    if _environ_unchanged() and _cache is not None:
        return _cache[1]
    values = secret_values(os.environ)
    key = (tuple(values), tuple(_extra), tuple(p.pattern for p in _patterns))
    if _cache is None or _cache[0] != key:
        _cache = (key, Redactor([*values, *_extra], list(_patterns)))
    return _cache[1]


def redact(value: str) -> str:
    return current().text(value)


class RedactingStream:
    """A text stream that redacts what is written to it (a command's stdout and stderr)."""

    def __init__(self, inner: TextIO):
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(redact(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # flush, isatty, encoding, fileno, buffer...


def guard_output() -> None:
    """Every command's output redacted: print() and rich consoles write through sys.stdout
    and sys.stderr as they are when they write, so wrapping those covers both."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, RedactingStream):
            setattr(sys, name, RedactingStream(stream))


def head(
    value: str, limit: int, redactor: Redactor | None = None, *, more: bool | None = None
) -> str:
    """The first ``limit`` characters of ``value`` once redacted: redact, then cut, never the
    other way round (a secret across the cut would keep its first half, which no rule knows).

    Only ``limit + MARGIN`` characters are redacted, not all of a 100 MB string; when that
    window is itself a cut, its last MARGIN characters are never kept, so a secret up to
    MARGIN long across the window's end is caught or dropped, never half kept. ``more``: the
    text goes on past ``value`` (a stream's kept head), which is then such a cut too."""
    r = redactor or current()
    window = value[: limit + MARGIN]
    kept = r.text(window)
    if more or len(window) < len(value):
        kept = kept[: max(0, len(kept) - MARGIN)]
    return kept[:limit]


def tail(
    value: str, limit: int, redactor: Redactor | None = None, *, more: bool | None = None
) -> str:
    """The last ``limit`` characters of ``value`` once redacted (as :func:`head`, from the
    end: a secret across the cut would keep its second half; ``more``: text came before)."""
    r = redactor or current()
    window = value[-(limit + MARGIN) :] if limit + MARGIN < len(value) else value
    kept = r.text(window)
    if more or len(window) < len(value):
        kept = kept[MARGIN:]
    return kept[-limit:] if limit else ""


def _may_hold_long_string(line: str, limit: int = TEXT_LIMIT) -> bool:
    """Whether JSON text ``line`` may hold a string longer than ``limit`` characters: such a
    string spans a whole block of ``limit // 2`` characters (blocks laid end to end from the
    line's start) with no quote in it, once each escaped backslash and escaped quote is
    written as two other characters (then the only quotes left are the strings' own, and a
    string's escaped text is never shorter than it). Each block is one ``find`` in C: no
    string of the line is made (splitting a 2.9M-character line at its quotes took 41 ms)."""
    if len(line) <= limit:
        return False
    plain = line.replace("\\\\", "__").replace('\\"', "__")
    half = max(1, limit // 2)
    return any(plain.find('"', k, k + half) < 0 for k in range(0, len(plain) - half + 1, half))


def cap(value: Any, limit: int = TEXT_LIMIT, redactor: Redactor | None = None) -> Any:
    """``value`` with every string longer than ``limit`` cut, its full size in the marker;
    each is redacted before it is cut (:func:`head`)."""
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        kept = head(value, limit, redactor)
        return kept + f"[... cut by chaoseval: {len(value)} characters in full]"
    if isinstance(value, dict):
        return {k: cap(v, limit, redactor) for k, v in value.items()}
    if isinstance(value, list):
        return [cap(v, limit, redactor) for v in value]
    return value


def clean_json(line: str, dump: Any) -> str:
    """A JSON line as it may be written: redacted and capped, re-encoded only when needed.

    ``dump()`` gives the same object as plain data; it is only asked for when the line holds
    a secret or may hold a string too long to keep, so ordinary lines are written byte for
    byte: a long line of short strings too (a trial of 6,000 model steps, 2.9M characters, was
    re-encoded through Python in 357 ms where its line took 25).
    """
    if not current().needed(line) and not _may_hold_long_string(line):
        return line
    return json.dumps(clean_data(dump()), ensure_ascii=False, separators=(",", ":"))


def clean_data(data: Any) -> Any:
    """Plain data as :func:`clean_json` writes it: each long string redacted, then cut (what
    a value read back from a journal is compared with, as ``--resume`` compares a manifest)."""
    redactor = current()
    return redactor.data(cap(data, redactor=redactor))
