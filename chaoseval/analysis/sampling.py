"""The sampling settings of a run: what was configured, and what the model requests sent.

The manifest holds what was configured (``--temperature``, ``--model-seed``). An agent on the
model channel may send its own values or none; the channel applies the configured ones to a
request that sends none, and the sampling plugin may rewrite them. Each model step records
both (``sent_temperature`` / ``temperature`` ...), and the journal's columns count the
requests by what they sent and used (``Trials.sampling``). This says it in one place, so a
report never shows a temperature the agent's model did not sample with.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chaoseval.model.records import ModelSettings

SETTINGS = (("temperature", "T"), ("seed", "seed"))


def sampling_json(configured: ModelSettings, tally: Counter[tuple[Any, ...]]) -> dict[str, Any]:
    """Per setting: the configured value, requests by the value they sent (``"none"``: left
    it to the channel) and by the value they used; ``overridden`` when the agent sent values
    other than the configured one. Empty when no request went through a model channel."""
    total = sum(tally.values())
    if not total:
        return {}
    out: dict[str, Any] = {"requests": total}
    for i, (name, _) in enumerate(SETTINGS):
        conf = getattr(configured, name)
        sent: Counter[Any] = Counter()
        used: Counter[Any] = Counter()
        given: Counter[Any] = Counter()  # used by the requests that sent none
        for key, n in tally.items():
            sent[key[2 * i]] += n
            used[key[2 * i + 1]] += n
            if key[2 * i] is None:
                given[key[2 * i + 1]] += n
        own = {v for v in sent if v is not None}
        out[name] = {
            "configured": conf,
            "sent": {_label(v): n for v, n in sorted(sent.items(), key=_order)},
            "used": {_label(v): n for v, n in sorted(used.items(), key=_order)},
            # What the channel gave a request that sent none: the configured value, or a
            # perturbation's rewrite of it (-p sampling).
            "given": {_label(v): n for v, n in sorted(given.items(), key=_order)},
            "overridden": bool(own - {conf}),
        }
    return out


def sampling_lines(configured: ModelSettings, tally: Counter[tuple[Any, ...]]) -> list[str]:
    """The same, in words: one line per setting."""
    doc = sampling_json(configured, tally)
    if not doc:
        return []
    total = doc["requests"]
    lines = []
    for name, short in SETTINGS:
        d = doc[name]
        conf = "none" if d["configured"] is None else f"{short}={_label(d['configured'])}"
        sent = d["sent"]
        if d["configured"] is None and set(sent) == {"none"}:
            lines.append(f"{name}: none configured, none sent")
            continue
        parts = []
        if sent.get("none"):
            parts.append(f"{sent['none']} of {total} requests sent no {name}" + _given(d, short))
        own = {v: n for v, n in sent.items() if v != "none"}
        if own:
            values = ", ".join(f"{short}={v} ({n})" for v, n in own.items())
            parts.append(f"the agent sent {values}")
        used = ", ".join(f"{short}={v} ({n})" for v, n in d["used"].items())
        line = f"{name}: configured {conf}; " + "; ".join(parts) + f"; used {used}"
        if d["overridden"]:
            line += " (the agent overrides the configured value)"
        lines.append(line)
    return lines


def _given(d: dict[str, Any], short: str) -> str:
    """What the requests that sent none of a setting were given: ', T=0.7 applied' when that is
    the configured value for all of them, else each value with its count."""
    conf = None if d["configured"] is None else _label(d["configured"])
    if conf is None:
        return ""
    if set(d["given"]) == {conf}:
        return f", {short}={conf} applied"
    values = [
        f"{short}={v} ({n})"
        if v == conf
        else f"{short}={v} ({n}: not the configured value, a perturbation's)"
        for v, n in d["given"].items()
    ]
    return " and were given " + ", ".join(values)


def _label(value: Any) -> str:
    return "none" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _order(item: tuple[Any, int]) -> tuple[bool, float]:
    value = item[0]
    return (value is not None, float(value) if isinstance(value, int | float) else 0.0)
