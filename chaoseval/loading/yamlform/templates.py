"""Templates in strings: ``{name}`` (with formats and date/number shifts) and ``$step.field``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

MISSING: Any = type(
    "Missing", (), {"__repr__": lambda self: "<missing>", "__bool__": lambda s: False}
)()
BRACE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)([+-]\d+(?:\.\d+)?[dhm]?)?(?::([^{}]*))?\}")
STEP = re.compile(r"\$([A-Za-z_]\w*)((?:\.\w+)*)")


def _shift(value: Any, delta: str | None) -> Any:
    """``{due+14d}`` on dates, ``{renewals+1}`` on numbers."""
    if not delta:
        return value
    if delta[-1] in "dhm":
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value) if "T" in value else date.fromisoformat(value)
            except ValueError:
                return value
        if not isinstance(value, datetime | date):
            return value
        n = int(float(delta[:-1]))
        units = {"d": timedelta(days=n), "h": timedelta(hours=n), "m": timedelta(minutes=n)}
        return value + units[delta[-1]]
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    step = float(delta) if "." in delta else int(delta)
    return value + step


def to_text(value: Any, spec: str | None) -> str:
    if isinstance(value, datetime | date) and not spec:
        return value.isoformat()
    return format(value, spec) if spec else str(value)


def interpolate(
    text: Any, lookup: Callable[[str], Any], steps: dict[str, Any] | None = None
) -> Any:
    """``{name}`` (with ``{name:.2f}``, ``{today+14d}``) and ``$step.field`` in a string.

    A string that is exactly one placeholder keeps the value's own type (an int stays an int).
    """
    if not isinstance(text, str):
        return text
    m = BRACE.fullmatch(text)
    if m and not m.group(3):
        return jsonable(_shift(lookup(m.group(1)), m.group(2)))
    if steps is not None:
        s = STEP.fullmatch(text)
        if s:
            # A field of a scalar (a malformed response's string) is MISSING to dig; as a
            # value (a tool call's argument) it is None: the marker cannot be written to a
            # record. In text it stays "<missing>", as the golden journals have it.
            value = dig(steps.get(s.group(1), MISSING), s.group(2))
            return None if value is MISSING else value

    def brace(match: re.Match[str]) -> str:
        return to_text(_shift(lookup(match.group(1)), match.group(2)), match.group(3))

    out = BRACE.sub(brace, text)
    if steps is not None:
        out = STEP.sub(
            lambda s: to_text(dig(steps.get(s.group(1), MISSING), s.group(2)), None), out
        )
    return out


def fill_templates(
    value: Any, lookup: Callable[[str], Any], steps: dict[str, Any] | None = None
) -> Any:
    """``interpolate`` on every string inside ``value`` (mappings and lists kept as they are)."""
    if isinstance(value, dict):
        return {k: fill_templates(v, lookup, steps) for k, v in value.items()}
    if isinstance(value, list):
        return [fill_templates(v, lookup, steps) for v in value]
    return interpolate(value, lookup, steps)


def template_problem(text: str) -> str | None:
    """What is wrong with a template string, or None: a ``{`` or ``}`` that is not part of a
    ``{name}`` placeholder would otherwise run as a literal brace."""
    rest = BRACE.sub("", text)
    opening, closing = rest.find("{"), rest.find("}")
    if opening < 0 and closing < 0:
        return None
    if opening >= 0:
        what = "a '{' that does not open a {name} placeholder"
    else:
        what = "a '}' that closes no placeholder"
    return (
        f"broken template {text!r:.80}: {what} (placeholders are {{name}}, {{name:.2f}} or "
        "{date+14d}, with name a given, an argument or a column)"
    )


# A placeholder with a format spec, as str.format and the templates here read it (a name, a
# conversion, then the spec after ':'); a spec built from another placeholder ({x:{w}}) too.
_SPECIFIED = re.compile(r"\{[A-Za-z_][\w.]*(?:\[\w*\])*(?:![rsa])?:([^{}]*)(\{?)")
MAX_WIDTH = 1000  # widths and precisions in a format spec: far above any real template's


def spec_problem(text: str) -> str | None:
    """What is wrong with the format specs in ``text``, or None: a width or precision past
    :data:`MAX_WIDTH` builds a string that long (``{n:999999999d}``: ~1 GB a value, the
    process out of memory), and one taken from a given could be anything."""
    for m in _SPECIFIED.finditer(text):
        spec, nested = m.group(1), m.group(2)
        if nested:
            return (
                f"the format spec of {m.group(0)[:-1]!r:.80}... is built from another "
                f"placeholder; write its width as a number (at most {MAX_WIDTH})"
            )
        for digits in re.findall(r"\d+", spec):
            if len(digits) > len(str(MAX_WIDTH)) or int(digits) > MAX_WIDTH:
                return (
                    f"format spec {spec!r:.40} asks for a width or precision of {digits:.20}; "
                    f"at most {MAX_WIDTH} (a wider one makes a string that long for each value)"
                )
    return None


def _strings(node: Any, skip: tuple[str, ...] = ()) -> Iterator[Any]:
    """The string nodes under ``node`` (a :class:`~chaoseval.loading.yamlform.nodes.Node`),
    its keys in ``skip`` left out."""
    value = node.value
    if isinstance(value, str):
        yield node
    elif isinstance(value, dict):
        for key in value:
            if key not in skip:
                yield from _strings(node.child(key))
    elif isinstance(value, list):
        for i in range(len(value)):
            yield from _strings(node.child(i))


def bounded_specs(node: Any, skip: tuple[str, ...] = ()) -> None:
    """Every string under ``node`` (its keys in ``skip`` left out) without a format spec past
    :data:`MAX_WIDTH`: the error names the string's line and key path. Checked before anything
    is formatted (the sample world built at load time formats its generators' templates)."""
    for string in _strings(node, skip):
        problem = spec_problem(string.value)
        if problem:
            raise string.error(problem)


def checked(node: Any) -> Any:
    """``node``'s plain value, once every string in it is a well-formed template (errors name
    its line and key path)."""
    for string in _strings(node):
        problem = template_problem(string.value)
        if problem:
            raise string.error(problem)
    return node.plain()


def dig(value: Any, dotted: str) -> Any:
    """A field of a value by its dotted path; a number picks an item of a list
    (``$subs.items.0.sub_id``)."""
    for part in [p for p in dotted.split(".") if p]:
        if isinstance(value, dict):
            value = value.get(part, MISSING)
        elif isinstance(value, list) and re.fullmatch(r"-?\d+", part):
            i = int(part)
            value = value[i] if -len(value) <= i < len(value) else MISSING
        else:
            return MISSING
    return None if value is MISSING else value


def jsonable(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value
