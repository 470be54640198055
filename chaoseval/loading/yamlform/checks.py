"""Verifiers (``checks:``): expectations on the world, the answer and the trajectory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaoseval.loading.yamlform.expressions import (
    Dialogue,
    Env,
    Path_,
    evaluate,
    literal_value,
    loose_eq,
    parse_expr,
)
from chaoseval.loading.yamlform.factories import resolve_callable, verifier_registry
from chaoseval.loading.yamlform.nodes import Node, YMap, did_you_mean, to_plain
from chaoseval.loading.yamlform.schema import Schema, check_names
from chaoseval.loading.yamlform.templates import MISSING, interpolate
from chaoseval.model.records import AgentOutput
from chaoseval.model.scenario import Check
from chaoseval.model.trajectory import Trajectory
from chaoseval.model.world import World

CHECK_KINDS = (
    "expect",
    "table_equals",
    "answer_contains",
    "answer_excludes",
    "called",
    "not_called",
    "unchanged",
    "function",
)


def _output_env(world: World, output: AgentOutput, trajectory: Trajectory | None = None) -> Env:
    return Env(
        tables=world.tables,
        givens=world.givens,
        answer=output.answer,
        data=output.data,
        now=world.now,
        trajectory=trajectory,
        output=output,
    )


CheckFn = Callable[[World, AgentOutput, Trajectory], "bool | tuple[bool, str]"]


def compile_check(
    node: Node, tools: set[str], tables: Schema, facts: set[str] | None = None
) -> Check:
    """``facts``: the user's fact names dialogue terms may name (None: no ``user:``)."""
    if isinstance(node.value, str):
        node = Node(node.source, YMap(expect=node.value), node.keys, node.line)
        node.value.key_lines = {"expect": node.line}
    node.mapping(allowed={*CHECK_KINDS, "name", "kind", "with"})
    present = [k for k in CHECK_KINDS if k in node.value]
    if len(present) != 1:
        unknown = [k for k in node.value if k not in {"name", "kind", "with"}]
        raise node.error(
            f"expected exactly one verifier ({', '.join(CHECK_KINDS)}), found "
            f"{present or unknown or 'none'}"
        )
    which = present[0]
    spec = node.child(which)
    name = node.child("name").str() if node.has("name") else f"{which}: {to_plain(spec.value)}"[:80]
    if which == "function":
        params = node.child("with").plain() if node.has("with") else {}
        fn = resolve_callable(spec, verifier_registry, params or {})
        if not callable(fn):
            raise spec.expected("a function (world, output, trajectory) -> bool | (bool, str)")
        kind = "state"
    elif which == "expect":
        fn, kind = _expect(which, spec, tools, tables, facts)
    else:
        fn, kind = BUILDERS[which](which, spec, tools, tables)
    if node.has("kind"):
        kind = node.child("kind").choice(("state", "output", "process"), "a check kind")
    return Check(name=name, fn=fn, kind=kind)


# Each builder compiles one verifier kind: its check function and the kind of check it is
# (state | output | process), which feeds the root-cause slice.


def _expect(
    which: str, spec: Node, tools: set[str], tables: Schema, facts: set[str] | None = None
) -> tuple[CheckFn, str]:
    nodes = spec.seq(allow_scalar=True)
    exprs = [parse_expr(n, talk=Dialogue(facts, tools)) for n in nodes]
    for e, n in zip(exprs, nodes, strict=True):
        check_names(e, n, tables)

    def fn(world: World, output: AgentOutput, trajectory: Trajectory) -> tuple[bool, str]:
        env = _output_env(world, output, trajectory)
        results = [evaluate(e, env) for e in exprs]
        return all(ok for ok, _ in results), "; ".join(d for _, d in results)

    if any(e.on_dialogue for e in exprs):  # how the agent went about it: a process check
        return fn, "process"
    on_output = all(isinstance(e.left, Path_) and e.left.root in ("answer", "data") for e in exprs)
    return fn, "output" if on_output else "state"


def _answer(which: str, spec: Node, tools: set[str], tables: Schema) -> tuple[CheckFn, str]:
    texts = spec.strs()
    present_wanted = which == "answer_contains"

    def fn(world: World, output: AgentOutput, trajectory: Trajectory) -> tuple[bool, str]:
        env = _output_env(world, output)
        wanted = [str(interpolate(t, env.lookup)) for t in texts]
        hits = [w for w in wanted if w.lower() in output.answer.lower()]
        ok = len(hits) == len(wanted) if present_wanted else not hits
        return ok, f"answer {output.answer[:120]!r}; looked for {wanted}"

    return fn, "output"


def _called(which: str, spec: Node, tools: set[str], tables: Schema) -> tuple[CheckFn, str]:
    calls: list[tuple[str, dict[str, Any], Any]] = []
    for item in spec.seq(allow_scalar=True):
        args: dict[str, Any]
        if isinstance(item.value, str):
            tname, args, times = item.value, {}, None
        else:
            item.mapping(allowed={"tool", "args", "times"}, required=("tool",))
            tname = item.child("tool").str()
            args = item.child("args").mapping().plain() if item.has("args") else {}
            times = item.child("times").value if item.has("times") else None
        if tname not in tools:
            raise item.error(f"no tool named {tname!r}{did_you_mean(tname, tools)}")
        calls.append((tname, args, times))
    negate = which == "not_called"

    def fn(world: World, output: AgentOutput, trajectory: Trajectory) -> tuple[bool, str]:
        env = _output_env(world, output)
        details, oks = [], []
        for tname, args, times in calls:
            want = {k: interpolate(v, env.lookup) for k, v in args.items()}
            n = sum(
                1
                for s in trajectory.tool_calls(tname)
                if s.result_class == "ok"
                and all(loose_eq((s.args or {}).get(k), v) for k, v in want.items())
            )
            ok = (n == times if times is not None else n > 0) if not negate else n == 0
            oks.append(ok)
            details.append(f"{tname}{want or ''}: {n} successful call(s)")
        return all(oks), "; ".join(details)

    return fn, "process"


def _unchanged(which: str, spec: Node, tools: set[str], tables: Schema) -> tuple[CheckFn, str]:
    names = spec.strs()
    for t in names:
        if t not in tables:
            raise spec.error(f"no table named {t!r}{did_you_mean(t, tables)}")

    def fn(world: World, output: AgentOutput, trajectory: Trajectory) -> tuple[bool, str]:
        touched = [w for w in world.writes if w.table in names]
        return not touched, f"writes to {names}: {len(touched)}"

    return fn, "state"


def _table_equals(which: str, spec: Node, tools: set[str], tables: Schema) -> tuple[CheckFn, str]:
    spec.mapping(allowed={"table", "where", "rows", "count"}, required=("table",))
    table = spec.child("table").str()
    if table not in tables:
        raise spec.child("table").error(f"no table named {table!r}{did_you_mean(table, tables)}")
    where = spec.child("where").mapping().plain() if spec.has("where") else {}
    rows = spec.child("rows").plain() if spec.has("rows") else None
    count = spec.child("count").value if spec.has("count") else None
    if rows is None and count is None:
        raise spec.error("table_equals needs 'rows' (the expected rows) or 'count'")
    cols = tables[table]
    for named in [where, *(r for r in rows or [] if isinstance(r, dict))]:
        bad = [c for c in named if cols and c not in cols]
        if bad:
            raise spec.error(
                f"table {table!r} has no column {bad[0]!r}{did_you_mean(bad[0], cols or ())} "
                f"(its columns: {', '.join(sorted(cols or ()))})"
            )

    def fn(world: World, output: AgentOutput, trajectory: Trajectory) -> tuple[bool, str]:
        env = _output_env(world, output)
        want_where = _literal_row(where, env)
        found = [
            r
            for r in world.table(table)
            if all(loose_eq(r.get(k), v) for k, v in want_where.items())
        ]
        if count is not None and len(found) != count:
            return False, f"{table}: {len(found)} matching row(s), expected {count}"
        if rows is not None:
            want = [_literal_row(r, env) for r in rows]
            if len(found) != len(want):
                return False, f"{table}: {len(found)} matching row(s), expected {len(want)}"
            for r, w in zip(found, want, strict=True):
                bad = [k for k, v in w.items() if not loose_eq(r.get(k, MISSING), v)]
                if bad:
                    return False, f"{table} row {r}: differs in {bad} (expected {w})"
        return True, f"{table}: {len(found)} matching row(s)"

    return fn, "state"


def _literal_row(row: dict[str, Any], env: Env) -> dict[str, Any]:
    """Expected column values: strings are literals or expressions over the output env."""
    return {k: literal_value(str(v), env) if isinstance(v, str) else v for k, v in row.items()}


Builder = Callable[[str, Node, set[str], Schema], tuple[CheckFn, str]]
BUILDERS: dict[str, Builder] = {
    "expect": _expect,
    "answer_contains": _answer,
    "answer_excludes": _answer,
    "called": _called,
    "not_called": _called,
    "unchanged": _unchanged,
    "table_equals": _table_equals,
}
