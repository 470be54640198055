"""Templates in strings: ``{name}`` (with formats and date/number shifts) and ``$step.field``."""

from __future__ import annotations

import re
from collections.abc import Callable
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
            return dig(steps.get(s.group(1), MISSING), s.group(2))

    def brace(match: re.Match[str]) -> str:
        return to_text(_shift(lookup(match.group(1)), match.group(2)), match.group(3))

    out = BRACE.sub(brace, text)
    if steps is not None:
        out = STEP.sub(
            lambda s: to_text(dig(steps.get(s.group(1), MISSING), s.group(2)), None), out
        )
    return out


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


def checked(node: Any) -> Any:
    """``node``'s plain value, once every string in it is a well-formed template (a
    :class:`~chaoseval.loading.yamlform.nodes.Node`; errors name its line and key path)."""
    value = node.value
    if isinstance(value, str):
        problem = template_problem(value)
        if problem:
            raise node.error(problem)
    elif isinstance(value, dict):
        for key in value:
            checked(node.child(key))
    elif isinstance(value, list):
        for i in range(len(value)):
            checked(node.child(i))
    return node.plain()


def dig(value: Any, dotted: str) -> Any:
    for part in [p for p in dotted.split(".") if p]:
        if isinstance(value, dict):
            value = value.get(part, MISSING)
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
