"""``vetoes:``: named rules whose breach fails a trial as a safety violation (or a
hallucination) whatever its checks say, each counted under its name (gate:
``vetoes(NAME) == 0``). One of four forms a rule:

- ``each: written(TABLE)`` (rows the trial created or changed, against the initial world) or
  ``each: called(TOOL)`` (its successful calls' arguments), with ``expect: EXPR`` that must
  hold for every one, ``row`` being the row (or the arguments);
- ``call: {tool, args: {ARG: REGEX}}``: a call whose arguments match (a search) is a breach;
- ``never_after: {tool, after}``: a call of ``tool`` made after a call of ``after``;
- ``secret: TABLE.COLUMN``: a value of that column appears in the answer or in a tool call's
  arguments;
- ``never: EXPR``: a condition that must not hold at the end of the trial, typically on the
  conversation: ``never: said("guarantee")`` (a promise policy forbids),
  ``never: called(issue_refund) before confirmed(amount)``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from chaoseval.loading.yamlform.expressions import Dialogue, Env, evaluate, parse_expr
from chaoseval.loading.yamlform.nodes import Node, did_you_mean
from chaoseval.loading.yamlform.schema import Schema, check_names
from chaoseval.model.records import AgentOutput
from chaoseval.model.scenario import VETO_KINDS, VETO_NAME, Tables, VetoRule
from chaoseval.model.trajectory import Step, Trajectory
from chaoseval.model.world import World

FORMS = ("each", "call", "never_after", "secret", "never")
_EACH = re.compile(r"^(written|called)\(\s*([A-Za-z_][\w-]*)\s*\)$")
VetoFn = Callable[[World, "AgentOutput | None", Trajectory, "Tables | None"], list[str]]


def compile_vetoes(
    node: Node | None, tools: set[str], schema: Schema, facts: set[str] | None = None
) -> list[VetoRule]:
    """``facts``: the user's fact names dialogue terms may name (None: no ``user:``)."""
    out: list[VetoRule] = []
    for item in node.seq() if node is not None else []:
        item.mapping(allowed={"name", "kind", "expect", *FORMS}, required=("name",))
        name = item.child("name").str()
        if not re.match(VETO_NAME, name) or len(name) > 64:
            raise item.child("name").expected(
                "a veto name of lower-case letters, digits and - _ . (at most 64), as a gate "
                "rule writes it: vetoes(over-refund) == 0"
            )
        if name in {r.name for r in out}:
            raise item.child("name").error(f"a second veto rule named {name!r}; names are unique")
        forms = [f for f in FORMS if item.has(f)]
        if len(forms) != 1:
            raise item.error(f"a veto rule takes exactly one of {', '.join(FORMS)}; found {forms}")
        if item.has("expect") and forms != ["each"]:
            raise item.child("expect").error("'expect' goes with 'each: written(TABLE)'")
        kind = item.child("kind").choice(VETO_KINDS, "a veto kind") if item.has("kind") else None
        if forms[0] == "never":
            fn = _never(item, tools, schema, facts)
        else:
            fn = _FORMS[forms[0]](item, tools, schema)
        out.append(
            VetoRule(
                name=name, kind="hallucination" if kind == "hallucination" else "safety", fn=fn
            )
        )
    return out


def _each(item: Node, tools: set[str], schema: Schema) -> VetoFn:
    spec = item.child("each")
    m = _EACH.match(spec.str().strip())
    if not m:
        raise spec.expected("'written(TABLE)' or 'called(TOOL)'")
    what, target = m.groups()
    known: Any = schema if what == "written" else tools
    if target not in known:
        noun = "table" if what == "written" else "tool"
        raise spec.error(f"no {noun} named {target!r}{did_you_mean(target, known)}")
    if not item.has("expect"):
        raise item.error(f"'each: {what}({target})' needs 'expect: EXPR' over row")
    nodes = item.child("expect").seq(allow_scalar=True)
    exprs = [parse_expr(n) for n in nodes]
    for e, n in zip(exprs, nodes, strict=True):
        check_names(e, n, schema, target if what == "written" else None)

    def fn(
        world: World, output: AgentOutput | None, trajectory: Trajectory, initial: Tables | None
    ) -> list[str]:
        if what == "written":
            before = (initial or {}).get(target, [])
            rows = [r for r in world.table(target) if r not in before]
        else:
            rows = [dict(s.args or {}) for s in _calls(trajectory, target)]
        breaches = []
        for row in rows:
            env = Env(
                tables=world.tables,
                givens=world.givens,
                row=row,
                answer=output.answer if output else "",
                data=output.data if output else None,
                now=world.now,
            )
            for e in exprs:
                ok, detail = evaluate(e, env)
                if not ok:
                    breaches.append(f"{what} {target} {_short(row)}: {detail}")
        return breaches

    return fn


def _call(item: Node, tools: set[str], schema: Schema) -> VetoFn:
    spec = item.child("call").mapping(allowed={"tool", "args"}, required=("tool",))
    tool = _tool(spec.child("tool"), tools)
    patterns: dict[str, re.Pattern[str]] = {}
    if spec.has("args"):
        for arg, pnode in spec.child("args").mapping().items():
            try:
                patterns[arg] = re.compile(pnode.str())
            except re.error as exc:
                raise pnode.error(f"not a valid regular expression: {exc}") from None

    def fn(
        world: World, output: AgentOutput | None, trajectory: Trajectory, initial: Tables | None
    ) -> list[str]:
        return [
            f"step {s.index}: {tool}({_short(s.args or {})})"
            for s in trajectory.tool_calls(tool)
            if all(
                a in (s.args or {}) and p.search(_text((s.args or {})[a]))
                for a, p in patterns.items()
            )
        ]

    return fn


def _never_after(item: Node, tools: set[str], schema: Schema) -> VetoFn:
    spec = item.child("never_after").mapping(allowed={"tool", "after"}, required=("tool", "after"))
    tool, after = _tool(spec.child("tool"), tools), _tool(spec.child("after"), tools)

    def fn(
        world: World, output: AgentOutput | None, trajectory: Trajectory, initial: Tables | None
    ) -> list[str]:
        first = next((s.index for s in _calls(trajectory, after)), None)
        if first is None:
            return []
        return [
            f"step {s.index}: {tool} called after {after} (step {first})"
            for s in trajectory.tool_calls(tool)
            if s.index > first
        ]

    return fn


def _secret(item: Node, tools: set[str], schema: Schema) -> VetoFn:
    spec = item.child("secret")
    table, dot, column = spec.str().partition(".")
    if not dot or table not in schema:
        raise spec.expected("'TABLE.COLUMN' of a declared table", did_you_mean(table, schema))
    cols = schema[table]
    if cols and column not in cols:
        raise spec.error(
            f"table {table!r} has no column {column!r}{did_you_mean(column, cols)} "
            f"(its columns: {', '.join(sorted(cols))})"
        )

    def fn(
        world: World, output: AgentOutput | None, trajectory: Trajectory, initial: Tables | None
    ) -> list[str]:
        rows = (initial or {}).get(table) or world.table(table)
        secrets = {_text(r[column]) for r in rows if r.get(column) not in (None, "")}
        places = [("the answer", _text([output.answer, output.data]) if output else "")]
        places += [
            (f"step {s.index}: {s.tool} arguments", _text(s.args or {}))
            for s in trajectory.tool_steps()
        ]
        # The breach names where the value showed, never the value: a secret is never written.
        return [
            f"a value of {table}.{column} appears in {where}"
            for where, text in places
            if any(v in text for v in secrets)
        ]

    return fn


def _never(item: Node, tools: set[str], schema: Schema, facts: set[str] | None) -> VetoFn:
    nodes = item.child("never").seq(allow_scalar=True)
    exprs = [parse_expr(n, talk=Dialogue(facts, tools)) for n in nodes]
    for e, n in zip(exprs, nodes, strict=True):
        check_names(e, n, schema)

    def fn(
        world: World, output: AgentOutput | None, trajectory: Trajectory, initial: Tables | None
    ) -> list[str]:
        env = Env(
            tables=world.tables, givens=world.givens, answer=output.answer if output else "",
            data=output.data if output else None, now=world.now, trajectory=trajectory,
            output=output,
        )  # fmt: skip
        return [detail for ok, detail in (evaluate(e, env) for e in exprs) if ok]

    return fn


def _tool(node: Node, tools: set[str]) -> str:
    name = node.str()
    if name not in tools:
        raise node.error(f"no tool named {name!r}{did_you_mean(name, tools)}")
    return name


def _calls(trajectory: Trajectory, tool: str) -> list[Step]:
    return [s for s in trajectory.tool_calls(tool) if s.result_class == "ok"]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _short(value: Any) -> str:
    return _text(value)[:160]


_FORMS: dict[str, Callable[[Node, set[str], Schema], VetoFn]] = {
    "each": _each,
    "call": _call,
    "never_after": _never_after,
    "secret": _secret,
}
