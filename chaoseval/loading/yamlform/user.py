"""``user:``: the customer of a conversational scenario (``UserSpec``), checked as the file
loads: every field by the model (an error at the line of the bad value), the demand's tool
among the scenario's, and every template filled from the sample world's givens, so a
misspelled ``{amount}`` is named here and not in the first trial."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from chaoseval.loading.yamlform.nodes import Node, did_you_mean
from chaoseval.model.conversation import UserSpec

USER_KEYS = set(UserSpec.model_fields)


def _at(node: Node, loc: tuple[Any, ...]) -> Node:
    """The deepest node a validation error's location reaches."""
    for key in loc:
        in_map = isinstance(node.value, dict) and isinstance(key, str) and node.has(key)
        in_seq = isinstance(node.value, list) and isinstance(key, int) and key < len(node.value)
        if not (in_map or in_seq):
            break
        node = node.child(key)
    return node


def compile_user(node: Node | None, tools: set[str], givens: dict[str, Any]) -> UserSpec | None:
    if node is None:
        return None
    node.mapping(allowed=USER_KEYS, required=("goal", "opening"))
    for fact in node.child("facts").seq() if node.has("facts") else []:
        fact.mapping(allowed={"name", "value", "kind", "label", "asked_by", "volunteer"},
                     required=("name", "value"))  # fmt: skip
    try:
        spec = UserSpec.model_validate(node.plain())
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _at(node, tuple(first["loc"]))
        raise where.error(f"{first['msg']} (found {first.get('input')!r:.60})") from None
    if spec.demand is not None and spec.demand.tool not in tools:
        name = spec.demand.tool
        raise (
            node.child("demand")
            .child("tool")
            .error(
                f"no tool named {name!r}{did_you_mean(name, tools)}; the demand names the call "
                f"a pushy user insists on (tools: {', '.join(sorted(tools))})"
            )
        )
    _check_templates(node, givens)
    return spec


def _templates(node: Node) -> list[Node]:
    """The template strings of a user section: opening, goal, each fact's value, each script
    line, the demand's words and string arguments."""
    out = [node.child(k) for k in ("opening", "goal")]
    for fact in node.child("facts").seq() if node.has("facts") else []:
        out.append(fact.child("value"))
    for line in node.child("script").seq() if node.has("script") else []:
        if line.has("say"):
            out.append(line.child("say"))
    if node.has("demand"):
        demand = node.child("demand")
        out.append(demand.child("say"))
        if demand.has("args"):
            out += [a for _, a in demand.child("args").items() if isinstance(a.value, str)]
    return out


def _check_templates(node: Node, givens: dict[str, Any]) -> None:
    for text in _templates(node):
        try:
            str(text.value).format(**givens)
        except (KeyError, IndexError, ValueError, AttributeError) as exc:
            name = str(exc).strip("'")
            raise text.error(
                f"the template {text.value!r:.60} names {exc}, which is not a given (givens: "
                f"{', '.join(sorted(givens)) or 'none'}){did_you_mean(name, givens)}"
            ) from None
