"""The smaller top-level sections: budgets and memory, policy, facts, degradation contracts,
drift points, perturbations, ui."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from chaoseval.errors import ChaosevalError
from chaoseval.loading.yamlform.checks import compile_check
from chaoseval.loading.yamlform.nodes import Node, did_you_mean
from chaoseval.loading.yamlform.schema import Schema
from chaoseval.loading.yamlform.templates import spec_problem
from chaoseval.model.drift import DriftPoint
from chaoseval.model.scenario import DegradationContract, FactSpec, Policy


def validated(node: Node, model: type[BaseModel]) -> Any:
    node.mapping(allowed=set(model.model_fields))
    try:
        return model.model_validate(node.plain())
    except ValidationError as exc:
        first = exc.errors()[0]
        key = str(first["loc"][0]) if first["loc"] else None
        where = node.child(key) if key and node.has(key) else node
        raise where.error(f"{first['msg']} (found {first.get('input')!r:.60})") from None


def _tool_names(node: Node, tools: set[str]) -> list[str]:
    """A list of tool names, each one the scenario has (the error points at the bad one)."""
    names = node.strs()
    for i, t in enumerate(names):
        if t not in tools:
            raise node.child(i).error(f"no tool named {t!r}{did_you_mean(t, tools)}")
    return names


def compile_policy(node: Node | None, tools: set[str], tables: Schema) -> Policy:
    if node is None:
        return Policy()
    node.mapping(allowed={"allowed_tools", "forbidden_writes"})
    allowed = _tool_names(node.child("allowed_tools"), tools) if node.has("allowed_tools") else None
    forbidden = node.child("forbidden_writes").strs() if node.has("forbidden_writes") else []
    return Policy(allowed_tools=allowed, forbidden_writes=forbidden)


def compile_facts(node: Node | None, tables: Schema) -> list[FactSpec]:
    out = []
    for item in node.seq() if node is not None else []:
        item.mapping(allowed={"name", "pattern", "values"}, required=("name", "pattern", "values"))
        pattern = item.child("pattern").str()
        try:
            re.compile(pattern)
        except re.error as exc:
            raise item.child("pattern").error(f"not a valid regular expression: {exc}") from None
        vnode = item.child("values")
        if isinstance(vnode.value, list):
            fixed = {str(v) for v in vnode.plain()}
            values: Callable[..., set[str]] = lambda w, fixed=fixed: fixed  # noqa: E731
        else:
            table, dot, column = vnode.str().partition(".")
            if not dot or table not in tables:
                raise vnode.expected(
                    "'table.column' or a list of values", did_you_mean(table, tables)
                )
            values = lambda w, t=table, c=column: {str(r.get(c)) for r in w.table(t)}  # noqa: E731
        out.append(FactSpec(name=item.child("name").str(), pattern=pattern, values=values))
    return out


def compile_contracts(
    node: Node | None, tools: set[str], tables: Schema
) -> list[DegradationContract]:
    """``contracts:``: per tool or fault kind, the degraded outcome that counts as correct.

    ``- name: log down, tools: [read_log], faults: [timeout], checks: [...]`` (the checks as
    under ``checks:``)."""
    out = []
    for item in node.seq() if node is not None else []:
        item.mapping(allowed={"name", "tools", "faults", "checks"}, required=("name", "checks"))
        names = _tool_names(item.child("tools"), tools) if item.has("tools") else []
        faults = item.child("faults").strs() if item.has("faults") else []
        if not names and not faults:
            raise item.error("a contract names the faults it covers: 'tools:', 'faults:' or both")
        checks = [compile_check(c, tools, tables) for c in item.child("checks").seq()]
        if not checks:
            raise item.child("checks").error("a contract needs at least one check")
        out.append(
            DegradationContract(
                name=item.child("name").str(), tools=names, faults=faults, checks=checks
            )
        )
    return out


def compile_perturbations(node: Node | None) -> list[str]:
    from chaoseval.engine.trial import instantiate
    from chaoseval.model.cells import parse_cells

    specs = []
    for item in node.seq() if node is not None else []:
        text = item.str()
        try:
            for cell in parse_cells([text]):
                instantiate(cell)
        except ChaosevalError as exc:
            raise item.error(f"bad perturbation cell {text!r}: {exc}") from None
        specs.append(text)
    return specs


def compile_ui(node: Node | None, source: str) -> str | None:
    if node is None:
        return None
    text = node.str()
    if text.endswith(".html") and "<" not in text:
        # The page is served to the agent: only a file of the scenario's own directory, its
        # path resolved (symlinks followed) before it is checked, then read as resolved.
        home = Path(source).parent.resolve()
        page = (home / text).resolve()
        if not page.is_relative_to(home):
            raise node.error(
                f"UI page {text!r} is {page}, outside the scenario's directory {home}; keep the "
                "page in that directory (no '..', absolute path or symlink out of it)"
            )
        if not page.is_file():
            raise node.error(f"no such UI page file {Path(source).parent / text}")
        html = page.read_text()
        problem = spec_problem(html)
        if problem:
            raise node.error(f"{page}: {problem}")
        return html
    return text


READING_KINDS = ("lookup", "list")


def compile_drift(
    node: Node | None, tools: Node, tables: dict[str, list[dict[str, Any]]], givens: dict[str, Any]
) -> list[DriftPoint]:
    """``drift:``: where the world moves between the agent's read and its write. Each point
    is checked against the world built from seed 0: its table, field and row exist, and some
    tool reads that field (else the point could never trigger)."""
    out = []
    for item in node.seq() if node is not None else []:
        point: DriftPoint = validated(item, DriftPoint)
        table = point.table
        if table not in tables:
            raise item.child("table").error(
                f"no table named {table!r}{did_you_mean(table, tables)} (tables: "
                f"{', '.join(sorted(tables)) or 'none'}); a drift point changes a row of one"
            )
        if not tables[table]:
            raise item.child("table").error(
                f"table {table!r} has no rows in the world built from seed 0; a drift point "
                "changes a row the world starts with"
            )
        columns = {c for r in tables[table] for c in r}
        for column in [point.field, *point.row]:
            if column not in columns:
                at = item.child("field") if column == point.field else item.child("row")
                raise at.error(
                    f"table {table!r} has no column {column!r}{did_you_mean(column, columns)} "
                    f"(its columns: {', '.join(sorted(columns))})"
                )
        try:
            where = point.where(givens)
        except (KeyError, IndexError, ValueError) as exc:
            hint = did_you_mean(str(exc).strip("'"), givens)
            raise item.child("row").error(
                f"the row names {exc}, which is not a given (givens: "
                f"{', '.join(sorted(givens)) or 'none'}){hint}"
            ) from None
        found = [r for r in tables[table] if all(r.get(k) == v for k, v in where.items())]
        if len(found) != 1:
            raise item.child("row").error(
                f"matches {len(found)} rows of {table!r} in the world built from seed 0 "
                f"({where}); name the row by its key, e.g. row: {{id_column: '{{given}}'}}"
            )
        _check_read(item, point, tools)
        out.append(point)
    return out


def _check_read(item: Node, point: DriftPoint, tools: Node) -> None:
    """Some tool shows the drifted field: a lookup or list of its table returning it, or a
    Python tool (which may read anything; lint's canary run tells)."""
    for _, tool in tools.items():
        spec = tool.value if isinstance(tool.value, dict) else {}
        kind = spec.get("kind")
        if kind == "python":
            return
        returns = spec.get("returns")
        shown = returns is None or point.field in (returns or [])
        if kind in READING_KINDS and spec.get("table") == point.table and shown:
            return
    raise item.error(
        f"no tool reads {point.table}.{point.field}, so drift point {point.name!r} could never "
        f"trigger: add a lookup or list tool on table {point.table!r} that returns "
        f"{point.field!r}, or drift a field the agent reads"
    )
