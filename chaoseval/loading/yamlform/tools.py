"""Declarative tools: lookup, list, create, update, delete, or a registered Python factory."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from chaoseval.errors import ToolError, ToolHTTPError
from chaoseval.loading.yamlform.expressions import Env, Expr, evaluate, loose_eq, parse_expr
from chaoseval.loading.yamlform.factories import resolve_callable, tool_registry
from chaoseval.loading.yamlform.nodes import Node, did_you_mean
from chaoseval.loading.yamlform.templates import interpolate
from chaoseval.model.scenario import ToolSpec

TOOL_KINDS = ("lookup", "list", "create", "update", "delete", "python")
TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list": list,
    "dict": dict,
    "any": Any,
}
TOOL_KEYS = {
    "kind", "description", "table", "key", "args", "returns", "requires", "permissions",
    "errors", "not_found", "filters", "where", "limit", "values", "id", "unique", "set",
    "increment", "function", "with", "version",
}  # fmt: skip
KIND_KEYS = {
    "lookup": {"table", "key", "returns", "not_found"},
    "list": {"table", "filters", "where", "limit", "returns"},
    "create": {"table", "values", "id", "unique", "returns"},
    "update": {"table", "key", "set", "increment", "returns", "not_found"},
    "delete": {"table", "key", "not_found"},
    "python": {"function", "with"},
}


@dataclass
class Rule:
    expr: Expr
    message: str
    status: int | None = None
    retry_after: float | None = None


def column_types(tables: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, rows in tables.items():
        cols: dict[str, set[type]] = {}
        nullable: set[str] = set()
        for row in rows:
            for k, v in row.items():
                if v is None:
                    nullable.add(k)
                else:
                    cols.setdefault(k, set()).add(type(v))
        for row in rows:
            nullable.update(k for k in cols if k not in row)
        types: dict[str, Any] = {}
        for k, ts in cols.items():
            t: Any = Any
            if ts == {int, float}:
                t = float
            elif len(ts) == 1 and next(iter(ts)) in (str, int, float, bool):
                t = next(iter(ts))
            types[k] = t | None if (k in nullable and t is not Any) else t
        out[name] = types
    return out


def _arg_fields(node: Node) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, spec in node.items():
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            raise spec.error(f"argument names are lower_snake_case, found {name!r}")
        if isinstance(spec.value, str):
            t = spec.choice(TYPES, "an argument type")
            fields[name] = (TYPES[t], ...)
        else:
            spec.mapping(allowed={"type", "default", "description"})
            t = spec.child("type").choice(TYPES, "an argument type") if spec.has("type") else "str"
            default = spec.child("default").plain() if spec.has("default") else ...
            desc = spec.child("description").str() if spec.has("description") else None
            fields[name] = (TYPES[t], Field(default=default, description=desc))
    return fields


def _rules(node: Node | None, default_message: str, statuses: bool = False) -> list[Rule]:
    if node is None:
        return []
    rules = []
    for item in node.seq():
        if isinstance(item.value, str):
            rules.append(Rule(parse_expr(item), default_message))
            continue
        allowed = {"when", "check", "error", "status", "retry_after"}
        item.mapping(allowed=allowed)
        cond_key = "when" if statuses else "check"
        if not item.has(cond_key):
            raise item.error(f"missing required key {cond_key!r}")
        status = item.child("status").value if item.has("status") else None
        if status is not None and (not isinstance(status, int) or not 400 <= status <= 599):
            raise item.child("status").expected("an HTTP status 400-599")
        retry = item.child("retry_after").value if item.has("retry_after") else None
        message = item.child("error").str() if item.has("error") else default_message
        rules.append(Rule(parse_expr(item.child(cond_key)), message, status, retry))
    return rules


def compile_tool(
    name: str, node: Node, types: dict[str, dict[str, Any]], tables: set[str]
) -> ToolSpec:
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise node.error(f"tool names are lower_snake_case, found {name!r}")
    node.mapping(allowed=TOOL_KEYS, required=("kind",))
    kind = node.child("kind").choice(TOOL_KINDS, "a tool kind")
    for key in node.value:
        if key not in KIND_KEYS[kind] | {
            "kind",
            "description",
            "args",
            "requires",
            "permissions",
            "errors",
            "version",
        }:
            raise node.child(key).error(
                f"key {key!r} does not apply to a {kind} tool (it takes: "
                f"{', '.join(sorted(KIND_KEYS[kind]))})"
            )
    version = str(node.child("version").value) if node.has("version") else "1"
    if kind == "python":
        params = node.child("with").plain() if node.has("with") else {}
        obj = resolve_callable(node.child("function"), tool_registry, params or {})
        if isinstance(obj, ToolSpec):
            return obj.model_copy(update={"name": name})
        if not callable(obj):
            raise node.child("function").expected("a ToolSpec or a function (world, **args)")
        from chaoseval.model.scenario import tool as make_tool

        return make_tool(name=name, version=version)(obj)

    table = node.child("table").str() if node.has("table") else None
    if table is None:
        raise node.error(f"a {kind} tool needs 'table'")
    if table not in tables:
        raise node.child("table").error(
            f"no table named {table!r}{did_you_mean(table, tables)} "
            f"(tables: {', '.join(sorted(tables))})"
        )
    cols = types.get(table, {})
    fields: dict[str, Any] = {}
    key = None
    if kind in ("lookup", "update", "delete"):
        if not node.has("key"):
            raise node.error(f"a {kind} tool needs 'key' (the column its argument matches)")
        key = node.child("key").str()
        if cols and key not in cols:
            raise node.child("key").error(
                f"table {table!r} has no column {key!r}{did_you_mean(key, cols)}"
            )
        kt = cols.get(key, str)
        fields[key] = (Any if kt is Any else kt, ...)
    if node.has("args"):
        fields.update(_arg_fields(node.child("args")))
    filters: list[str] = []
    if kind == "list" and node.has("filters"):
        filters = node.child("filters").strs()
        for i, col in enumerate(filters):
            if cols and col not in cols:
                raise (
                    node.child("filters")
                    .child(i)
                    .error(f"table {table!r} has no column {col!r}{did_you_mean(col, cols)}")
                )
            fields.setdefault(col, (cols.get(col, str) | None, None))
    returns_cols: list[str] | None = node.child("returns").strs() if node.has("returns") else None
    for col in returns_cols or []:
        extra = set()
        if kind == "create":
            extra = set(fields) | (set(node.child("values").value) if node.has("values") else set())
            if node.has("id"):
                extra.add(str((node.child("id").value or {}).get("column", "id")))
        if cols and col not in cols and col not in extra:
            raise node.child("returns").error(
                f"table {table!r} has no column {col!r}{did_you_mean(col, cols)}"
            )
    where_fixed = node.child("where").plain() if node.has("where") else {}
    limit = node.child("limit").value if node.has("limit") else None
    values = node.child("values").mapping().plain() if node.has("values") else {}
    sets = node.child("set").mapping().plain() if node.has("set") else {}
    incs = node.child("increment").mapping().plain() if node.has("increment") else {}
    for col, n in incs.items():
        if not isinstance(n, int | float):
            raise node.child("increment").child(col).expected("a number")
    unique = node.child("unique").strs() if node.has("unique") else []
    id_spec = (
        node.child("id").mapping(allowed={"column", "prefix"}).plain() if node.has("id") else None
    )
    not_found = (
        node.child("not_found").str()
        if node.has("not_found")
        else f"{table} {{{key}}} not found"
        if key
        else ""
    )
    description = node.child("description").str() if node.has("description") else f"{kind} {table}"
    errors = _rules(node.get("errors"), "the request failed", statuses=True)
    permissions = _rules(node.get("permissions"), "permission denied")
    requires = _rules(node.get("requires"), "precondition failed")
    if kind == "update" and not sets and not incs and "args" not in node.value:
        raise node.error("an update tool needs 'set' or 'increment'")

    def project(row: dict[str, Any]) -> dict[str, Any]:
        return {k: row.get(k) for k in returns_cols} if returns_cols else dict(row)

    def fn(world: Any, **args: Any) -> Any:
        env = Env(tables=world.tables, givens=world.givens, args=args, now=world.now)

        def fail(rule: Rule, prefix: str = "") -> None:
            msg = prefix + str(interpolate(rule.message, env.lookup))
            if rule.status is not None:
                raise ToolHTTPError(rule.status, msg, retry_after=rule.retry_after)
            raise ToolError(msg)

        for rule in errors:
            if rule.status is not None and evaluate(rule.expr, env)[0]:
                fail(rule)
        row = None
        if key is not None:
            found = world.find(table, **{key: args[key]})
            if not found:
                raise ToolError(str(interpolate(not_found, env.lookup)))
            row = found[0]
            env.row = row
        for rule in errors:
            if rule.status is None and evaluate(rule.expr, env)[0]:
                fail(rule)
        for rule in permissions:
            if not evaluate(rule.expr, env)[0]:
                fail(rule, "" if rule.message.startswith("permission") else "permission denied: ")
        for rule in requires:
            if not evaluate(rule.expr, env)[0]:
                fail(rule)
        if kind == "lookup":
            return project(row)  # type: ignore[arg-type]
        if kind == "list":
            want = {**where_fixed, **{c: args[c] for c in filters if args.get(c) is not None}}
            rows = [
                r for r in world.table(table) if all(loose_eq(r.get(k), v) for k, v in want.items())
            ]
            items = [project(r) for r in rows[: limit or None]]
            return {"items": items, "count": len(items)}
        if kind == "delete":
            world.delete(table, key, args[key])
            return {"deleted": args[key]}
        if kind == "update":
            changes = {c: interpolate(v, env.lookup) for c, v in sets.items()}
            for c, n in incs.items():
                changes[c] = (row or {}).get(c, 0) + n
            for a in fields:
                if a != key and a not in changes and a in (row or {}) and a in args:
                    changes[a] = args[a]
            updated = world.update(table, key, args[key], **changes)
            return project(updated)
        new = {k: v for k, v in args.items()}
        new.update({c: interpolate(v, env.lookup) for c, v in values.items()})
        id_col = None
        if id_spec is not None:
            id_col = str(id_spec.get("column", "id"))
            new = {id_col: world.next_id(str(id_spec.get("prefix", table[:2].upper()))), **new}
        if unique and world.find(table, **{c: new.get(c) for c in unique}):
            raise ToolError(
                f"{table} with {', '.join(f'{c}={new.get(c)!r}' for c in unique)} already exists"
            )
        world.insert(table, new, key=id_col or (unique[0] if unique else "id"))
        return project(new)

    params = create_model(f"{name}_args", __config__=ConfigDict(extra="forbid"), **fields)
    returns = _returns_model(name, kind, cols, returns_cols, fields, key)
    return ToolSpec(
        name=name,
        description=description,
        fn=fn,
        params=params,
        returns=returns,
        writes=(table,) if kind in ("create", "update", "delete") else (),
        version=version,
    )


def _returns_model(
    name: str,
    kind: str,
    cols: dict[str, Any],
    returns_cols: list[str] | None,
    fields: dict[str, Any],
    key: str | None,
) -> type[BaseModel] | None:
    if not cols or kind == "create":
        return None  # created rows mix arguments and computed columns: nothing sure to check
    if kind == "delete":
        return create_model(f"{name}_result", deleted=(cols.get(key or "", Any), ...))
    chosen = {c: (cols.get(c, Any), ...) for c in (returns_cols or cols)}
    row_model = create_model(f"{name}_row", **chosen)
    if kind == "list":
        return create_model(f"{name}_result", items=(list[row_model], ...), count=(int, ...))
    return row_model
