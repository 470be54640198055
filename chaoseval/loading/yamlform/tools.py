"""Declarative tools: lookup, list, create, update, delete, or a registered Python factory."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from pydantic import BaseModel, ConfigDict, Field, create_model

from chaoseval.errors import ToolError, ToolHTTPError
from chaoseval.loading.yamlform.expressions import Env, Expr, evaluate, loose_eq, parse_expr
from chaoseval.loading.yamlform.factories import resolve_callable, tool_registry
from chaoseval.loading.yamlform.nodes import Node, did_you_mean
from chaoseval.loading.yamlform.templates import checked, interpolate
from chaoseval.model.scenario import Row, ToolSpec
from chaoseval.model.scenario import tool as make_tool

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
COMMON_KEYS = {"kind", "description", "args", "requires", "permissions", "errors", "version"}
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
        message = checked(item.child("error")) if item.has("error") else default_message
        if not isinstance(message, str):
            raise item.child("error").expected("a string")
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
        if key not in KIND_KEYS[kind] | COMMON_KEYS:
            raise node.child(key).error(
                f"key {key!r} does not apply to a {kind} tool (it takes: "
                f"{', '.join(sorted(KIND_KEYS[kind]))})"
            )
    version = str(node.child("version").value) if node.has("version") else "1"
    if kind == "python":
        return _python_tool(name, node, version)
    tool = _table_tool(name, node, kind, types, tables)
    action = ACTIONS[kind]

    def fn(world: Any, **args: Any) -> Any:
        env = Env(tables=world.tables, givens=world.givens, args=args, now=world.now)
        row = tool.guard(world, env, args)
        return action(tool, world, env, row, args)

    return ToolSpec(
        name=name,
        description=tool.description,
        fn=fn,
        params=create_model(f"{name}_args", __config__=ConfigDict(extra="forbid"), **tool.fields),
        returns=_returns_model(name, kind, tool.cols, tool.returns, tool.fields, tool.key),
        writes=(tool.table,) if kind in ("create", "update", "delete") else (),
        version=version,
    )


def _python_tool(name: str, node: Node, version: str) -> ToolSpec:
    """``kind: python``: a registered ToolSpec, or a function ``(world, **args)`` to wrap."""
    params = node.child("with").plain() if node.has("with") else {}
    obj = resolve_callable(node.child("function"), tool_registry, params or {})
    if isinstance(obj, ToolSpec):
        return obj.model_copy(update={"name": name})
    if not callable(obj):
        raise node.child("function").expected("a ToolSpec or a function (world, **args)")
    return make_tool(name=name, version=version)(obj)


@dataclass
class TableTool:
    """A declarative tool over one table, as compiled: what its body needs at call time."""

    kind: str
    table: str
    cols: dict[str, Any]
    key: str | None  # the column its key argument matches (lookup, update, delete)
    fields: dict[str, Any]  # the argument model's fields
    description: str
    filters: list[str] = field(default_factory=list)
    returns: list[str] | None = None  # the columns it returns (None: the whole row)
    where: dict[str, Any] = field(default_factory=dict)
    limit: int | None = None
    values: dict[str, Any] = field(default_factory=dict)
    sets: dict[str, Any] = field(default_factory=dict)
    increments: dict[str, Any] = field(default_factory=dict)
    unique: list[str] = field(default_factory=list)
    id_spec: dict[str, Any] | None = None
    not_found: str = ""
    errors: list[Rule] = field(default_factory=list)
    permissions: list[Rule] = field(default_factory=list)
    requires: list[Rule] = field(default_factory=list)

    def project(self, row: Row) -> Row:
        return {k: row.get(k) for k in self.returns} if self.returns else dict(row)

    def guard(self, world: Any, env: Env, args: dict[str, Any]) -> Row | None:
        """Status errors, the keyed row (ToolError when missing), then the other rules.
        Returns the keyed row, if the tool has a key."""
        for rule in self.errors:
            if rule.status is not None and evaluate(rule.expr, env)[0]:
                _fail(rule, env)
        row = None
        if self.key is not None:
            found = world.find(self.table, **{self.key: args[self.key]})
            if not found:
                raise ToolError(str(interpolate(self.not_found, env.lookup)))
            row = found[0]
            env.row = row
        for rule in self.errors:
            if rule.status is None and evaluate(rule.expr, env)[0]:
                _fail(rule, env)
        for rule in self.permissions:
            if not evaluate(rule.expr, env)[0]:
                prefix = "" if rule.message.startswith("permission") else "permission denied: "
                _fail(rule, env, prefix)
        for rule in self.requires:
            if not evaluate(rule.expr, env)[0]:
                _fail(rule, env)
        return row


def _fail(rule: Rule, env: Env, prefix: str = "") -> NoReturn:
    msg = prefix + str(interpolate(rule.message, env.lookup))
    if rule.status is not None:
        raise ToolHTTPError(rule.status, msg, retry_after=rule.retry_after)
    raise ToolError(msg)


def _table_tool(
    name: str, node: Node, kind: str, types: dict[str, dict[str, Any]], tables: set[str]
) -> TableTool:
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
    key = _key_field(node, kind, table, cols, fields)
    if node.has("args"):
        fields.update(_arg_fields(node.child("args")))
    filters = _filter_fields(node, table, cols, fields) if kind == "list" else []
    returns = node.child("returns").strs() if node.has("returns") else None
    _check_returns(node, kind, table, cols, fields, returns)
    incs = node.child("increment").mapping().plain() if node.has("increment") else {}
    for col, n in incs.items():
        if not isinstance(n, int | float):
            raise node.child("increment").child(col).expected("a number")
    tool = TableTool(
        kind=kind,
        table=table,
        cols=cols,
        key=key,
        fields=fields,
        description=(
            node.child("description").str() if node.has("description") else f"{kind} {table}"
        ),
        filters=filters,
        returns=returns,
        where=node.child("where").plain() if node.has("where") else {},
        limit=node.child("limit").value if node.has("limit") else None,
        values=checked(node.child("values").mapping()) if node.has("values") else {},
        sets=checked(node.child("set").mapping()) if node.has("set") else {},
        increments=incs,
        unique=node.child("unique").strs() if node.has("unique") else [],
        id_spec=(
            node.child("id").mapping(allowed={"column", "prefix"}).plain()
            if node.has("id")
            else None
        ),
        not_found=_not_found(node, table, key),
        errors=_rules(node.get("errors"), "the request failed", statuses=True),
        permissions=_rules(node.get("permissions"), "permission denied"),
        requires=_rules(node.get("requires"), "precondition failed"),
    )
    if kind == "update" and not tool.sets and not incs and "args" not in node.value:
        raise node.error("an update tool needs 'set' or 'increment'")
    return tool


def _not_found(node: Node, table: str, key: str | None) -> str:
    if node.has("not_found"):
        node.child("not_found").str()
        return str(checked(node.child("not_found")))
    return f"{table} {{{key}}} not found" if key else ""


def _key_field(
    node: Node, kind: str, table: str, cols: dict[str, Any], fields: dict[str, Any]
) -> str | None:
    """The key column of a lookup, update or delete tool, added to its arguments."""
    if kind not in ("lookup", "update", "delete"):
        return None
    if not node.has("key"):
        raise node.error(f"a {kind} tool needs 'key' (the column its argument matches)")
    key = node.child("key").str()
    if cols and key not in cols:
        raise node.child("key").error(
            f"table {table!r} has no column {key!r}{did_you_mean(key, cols)}"
        )
    kt = cols.get(key, str)
    fields[key] = (Any if kt is Any else kt, ...)
    return key


def _filter_fields(
    node: Node, table: str, cols: dict[str, Any], fields: dict[str, Any]
) -> list[str]:
    """A list tool's optional filter arguments, one per named column."""
    if not node.has("filters"):
        return []
    filters = node.child("filters").strs()
    for i, col in enumerate(filters):
        if cols and col not in cols:
            raise (
                node.child("filters")
                .child(i)
                .error(f"table {table!r} has no column {col!r}{did_you_mean(col, cols)}")
            )
        fields.setdefault(col, (cols.get(col, str) | None, None))
    return filters


def _check_returns(
    node: Node,
    kind: str,
    table: str,
    cols: dict[str, Any],
    fields: dict[str, Any],
    returns: list[str] | None,
) -> None:
    """Every returned column exists (a create tool may also return what it computes)."""
    for col in returns or []:
        extra = set()
        if kind == "create":
            extra = set(fields) | (set(node.child("values").value) if node.has("values") else set())
            if node.has("id"):
                extra.add(str((node.child("id").value or {}).get("column", "id")))
        if cols and col not in cols and col not in extra:
            raise node.child("returns").error(
                f"table {table!r} has no column {col!r}{did_you_mean(col, cols)}"
            )


# --- what each kind does once the guards passed -----------------------------------------


def _lookup(tool: TableTool, world: Any, env: Env, row: Row | None, args: dict[str, Any]) -> Any:
    assert row is not None  # a lookup tool has a key, and guard found its row
    return tool.project(row)


def _list(tool: TableTool, world: Any, env: Env, row: Row | None, args: dict[str, Any]) -> Any:
    want = {**tool.where, **{c: args[c] for c in tool.filters if args.get(c) is not None}}
    rows = [
        r for r in world.table(tool.table) if all(loose_eq(r.get(k), v) for k, v in want.items())
    ]
    items = [tool.project(r) for r in rows[: tool.limit or None]]
    return {"items": items, "count": len(items)}


def _delete(tool: TableTool, world: Any, env: Env, row: Row | None, args: dict[str, Any]) -> Any:
    world.delete(tool.table, tool.key, args[tool.key or ""])
    return {"deleted": args[tool.key or ""]}


def _update(tool: TableTool, world: Any, env: Env, row: Row | None, args: dict[str, Any]) -> Any:
    changes = {c: interpolate(v, env.lookup) for c, v in tool.sets.items()}
    for c, n in tool.increments.items():
        changes[c] = (row or {}).get(c, 0) + n
    for a in tool.fields:
        if a != tool.key and a not in changes and a in (row or {}) and a in args:
            changes[a] = args[a]
    updated = world.update(tool.table, tool.key, args[tool.key or ""], **changes)
    return tool.project(updated)


def _create(tool: TableTool, world: Any, env: Env, row: Row | None, args: dict[str, Any]) -> Any:
    new = dict(args)
    new.update({c: interpolate(v, env.lookup) for c, v in tool.values.items()})
    id_col = None
    if tool.id_spec is not None:
        id_col = str(tool.id_spec.get("column", "id"))
        prefix = str(tool.id_spec.get("prefix", tool.table[:2].upper()))
        new = {id_col: world.next_id(prefix), **new}
    unique = tool.unique
    if unique and world.find(tool.table, **{c: new.get(c) for c in unique}):
        raise ToolError(
            f"{tool.table} with {', '.join(f'{c}={new.get(c)!r}' for c in unique)} already exists"
        )
    world.insert(tool.table, new, key=id_col or (unique[0] if unique else "id"))
    return tool.project(new)


Action = Callable[[TableTool, Any, Env, "Row | None", dict[str, Any]], Any]
ACTIONS: dict[str, Action] = {
    "lookup": _lookup,
    "list": _list,
    "create": _create,
    "update": _update,
    "delete": _delete,
}


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
    chosen: dict[str, Any] = {c: (cols.get(c, Any), ...) for c in (returns_cols or cols)}
    row_model: type[BaseModel] = create_model(f"{name}_row", **chosen)
    if kind == "list":
        # A model built at run time is a value to mypy, not a type it can parametrise list with.
        items: Any = list[row_model]  # type: ignore[valid-type]
        return create_model(f"{name}_result", items=(items, ...), count=(int, ...))
    return row_model
