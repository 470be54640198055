"""The world's tables and columns as a file declares them, and the check that every path
expression names them rightly: a misspelled ``tables.refund[...]`` (for ``refunds``) or
column is refused as the file loads, with a did-you-mean, instead of failing every trial as
a wrong final state that would be blamed on the agent."""

from __future__ import annotations

import re
from typing import Any

from chaoseval.loading.yamlform.expressions import Expr, Path_
from chaoseval.loading.yamlform.nodes import Node, did_you_mean

# table -> the columns it is known to have; None: not known (its rows come from Python code).
Schema = dict[str, "set[str] | None"]

WRITING_KINDS = ("create", "update")
_ROW_FIELD = re.compile(r"\{row\.([A-Za-z_]\w*)")


def world_schema(tables: dict[str, list[dict[str, Any]]], tools: Node) -> Schema:
    """Each table of the sample world with its columns: those of its rows, and those the
    file's create and update tools write. A table some Python tool may fill has columns no
    file declares: they are known only from its rows, else not at all."""
    schema: Schema = {name: {c for r in rows for c in r} for name, rows in tables.items()}
    python = False
    for _, tool in tools.items():
        spec = tool.value if isinstance(tool.value, dict) else {}
        python = python or spec.get("kind") == "python"
        table = spec.get("table")
        if spec.get("kind") not in WRITING_KINDS or table not in schema:
            continue
        cols = schema[table]
        assert cols is not None
        for key in ("args", "values", "set", "increment"):
            if isinstance(spec.get(key), dict):
                cols.update(spec[key])
        ident = spec.get("id")
        if isinstance(ident, dict):
            cols.add(str(ident.get("column", "id")))
    if python:  # a Python tool may write rows of any shape into a table with none yet
        schema.update({name: None for name, cols in schema.items() if not cols})
    return schema


def check_names(expr: Expr, node: Node, schema: Schema, row_table: str | None = None) -> None:
    """Every table and column ``expr`` names exists (``row_table``: the table ``row`` is a
    row of, in a veto rule's ``each: written(TABLE)``)."""
    for operand in (expr.left, expr.right):
        if isinstance(operand, Path_):
            check_path(operand, expr.text, node, schema, row_table)


def check_path(
    path: Path_, text: str, node: Node, schema: Schema, row_table: str | None = None
) -> None:
    segments = path.segments
    if path.root == "tables":
        if not segments or segments[0][0] != "field":
            return  # the whole world (count(tables)): nothing named
        table = segments[0][1]
        if table not in schema:
            raise node.error(
                f"no table named {table!r} in {text!r}{did_you_mean(table, schema)} "
                f"(tables: {', '.join(sorted(schema)) or 'none'})"
            )
        _check_columns(table, segments[1:], text, node, schema, row_table)
    elif path.root == "row" and row_table is not None:
        _check_columns(row_table, [("select", []), *segments], text, node, schema, row_table)


def _check_columns(
    table: str,
    segments: list[tuple[str, Any]],
    text: str,
    node: Node,
    schema: Schema,
    row_table: str | None,
) -> None:
    """The columns a path reads of ``table``'s rows: a selector's keys (and the ``{row.X}``
    its values take from the veto rule's row), and the field after the rows are picked (a
    field further on is inside a value, not a column)."""
    for kind, arg in segments:
        if kind == "select":
            if row_table is not None:
                for _, value in arg:
                    _known(row_table, _ROW_FIELD.findall(value), text, node, schema)
            _known(table, [k for k, _ in arg], text, node, schema)
        elif kind == "field":
            _known(table, [arg], text, node, schema)
            return


def _known(table: str, names: list[str], text: str, node: Node, schema: Schema) -> None:
    cols = schema.get(table)
    if not cols:
        return  # columns not known: a table with no rows, filled by code
    for name in names:
        if name not in cols:
            raise node.error(
                f"table {table!r} has no column {name!r} in {text!r}{did_you_mean(name, cols)} "
                f"(its columns: {', '.join(sorted(cols))})"
            )
