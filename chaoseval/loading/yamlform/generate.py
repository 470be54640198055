"""Tables made by faker from the seed (``generate:``) and the task's row (``target:``)."""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from faker import Faker

from chaoseval.loading.yamlform.expressions import loose_eq
from chaoseval.loading.yamlform.nodes import Node, did_you_mean
from chaoseval.loading.yamlform.templates import BRACE, jsonable, spec_problem, to_text

_NOT_PROVIDERS = {
    "add_provider", "cache_pattern", "del_arguments", "format", "get_arguments",
    "get_formatter", "get_providers", "items", "locales", "optional", "parse", "provider",
    "providers", "random", "seed", "seed_instance", "seed_locale", "set_arguments",
    "set_formatter", "unique", "weights", "factories", "generator_attrs",
}  # fmt: skip


def faker_providers() -> list[str]:
    return list(_faker_providers())


@functools.cache  # a Faker and its dir() cost ~3 ms; the names are the installed Faker's
def _faker_providers() -> tuple[str, ...]:
    fake = Faker()
    return tuple(sorted(n for n in dir(fake) if not n.startswith("_") and n not in _NOT_PROVIDERS))


@dataclass
class FieldGen:
    node: Node
    make: Callable[[Faker, dict[str, Any], dict[str, list[dict[str, Any]]], int], Any]


def _provider_args(raw: str | None) -> list[Any]:
    if not raw:
        return []
    m = re.fullmatch(r"(-?\d+)-(-?\d+)", raw.strip())
    if m:
        return [int(m.group(1)), int(m.group(2))]
    return [yaml.safe_load(p.strip()) for p in raw.split(",")]


def _template_field(node: Node, v: str, providers: set[str], earlier: set[str]) -> FieldGen:
    """A field written as a template: its placeholders faker providers (``{name:args}``), the
    row number ``{n}`` or earlier fields (``{name:format spec}``, bounded: templates)."""
    for m in BRACE.finditer(v):
        name = m.group(1)
        if name not in providers and name != "n" and name not in earlier:
            raise node.error(
                f"template {v!r}: {{{name}}} is neither a faker provider, the row number "
                f"{{n}}, nor an earlier field{did_you_mean(name, [*providers, *earlier, 'n'])}"
            )
        # After ':' a format spec for {n} and earlier fields (a provider's are its args).
        problem = spec_problem(m.group(0)) if name == "n" or name in earlier else None
        if problem:
            raise node.error(f"template {v!r:.80}: {problem}")

    def template(f: Faker, row: dict[str, Any], tables: Any, n: int) -> Any:
        def sub(m: re.Match[str]) -> str:
            name, raw = m.group(1), m.group(3)
            if name == "n":
                return format(n, raw) if raw else str(n)
            if name in row:
                return to_text(row[name], raw)
            return str(jsonable(getattr(f, name)(*_provider_args(raw))))

        return BRACE.sub(sub, v)

    return FieldGen(node, template)


def _compile_field(node: Node, providers: set[str], earlier: set[str]) -> FieldGen:
    v = node.value
    if isinstance(v, str) and "{" not in v:
        if v not in providers:
            raise node.error(
                f"expected a faker provider name (a bare string), found {v!r}"
                f"{did_you_mean(v, providers)}; write {{value: {v}}} for a literal string"
            )
        return FieldGen(node, lambda f, row, tables, n: jsonable(getattr(f, v)()))
    if isinstance(v, str):
        return _template_field(node, v, providers, earlier)
    if not isinstance(v, dict):
        return FieldGen(node, lambda f, row, tables, n: copy.deepcopy(v))  # a literal scalar
    node.mapping(allowed={"choice", "int", "float", "digits", "from", "value", "date", "weights"})
    if "value" in v:
        literal = node.child("value").plain()
        return FieldGen(node, lambda f, row, tables, n: copy.deepcopy(literal))
    if "choice" in v:
        options = node.child("choice").seq()
        values = [o.plain() for o in options]
        if not values:
            raise node.child("choice").expected("a non-empty list of values")
        return FieldGen(node, lambda f, row, tables, n: f.random.choice(values))
    if "int" in v or "float" in v:
        key = "int" if "int" in v else "float"
        rng = node.child(key)
        bounds = rng.value
        if isinstance(bounds, str) and re.fullmatch(r"-?\d+(\.\d+)?\s*-\s*-?\d+(\.\d+)?", bounds):
            lo_s, hi_s = re.match(r"(-?[\d.]+)\s*-\s*(-?[\d.]+)", bounds).groups()  # type: ignore[union-attr]
            bounds = [float(lo_s), float(hi_s)]
        if (
            not isinstance(bounds, list)
            or len(bounds) != 2
            or not all(isinstance(b, int | float) for b in bounds)
        ):
            raise rng.expected("a range [low, high] or 'low-high'")
        lo, hi = bounds
        if key == "int":
            return FieldGen(node, lambda f, row, tables, n: f.random.randint(int(lo), int(hi)))
        digits = int(v.get("digits", 2))
        return FieldGen(node, lambda f, row, tables, n: round(f.random.uniform(lo, hi), digits))
    if "date" in v:
        spec = node.child("date")
        parts = spec.value if isinstance(spec.value, list) else None
        if not parts or len(parts) != 2:
            raise spec.expected("[start, end] such as ['-30d', 'today']")
        return FieldGen(
            node, lambda f, row, tables, n: f.date_between(parts[0], parts[1]).isoformat()
        )
    ref = node.child("from")
    table, dot, column = ref.str().partition(".")
    if not dot:
        raise ref.expected("'table.column' naming an earlier generated or literal table")

    def pick(f: Faker, row: Any, tables: dict[str, list[dict[str, Any]]], n: int) -> Any:
        rows = tables.get(table) or []
        if not rows:
            raise ValueError(f"from: {table}.{column}: table {table!r} is empty or comes later")
        return f.random.choice(rows).get(column)

    return FieldGen(node, pick)


@dataclass
class TableGen:
    name: str
    node: Node
    count: int
    key: str | None
    fields: list[tuple[str, FieldGen]]


MAX_ROWS = 10_000


def compile_generate(node: Node) -> list[TableGen]:
    providers = set(faker_providers())
    out = []
    for name, spec in node.items():
        spec.mapping(allowed={"count", "key", "fields"}, required=("count", "fields"))
        count = spec.child("count").value
        if not isinstance(count, int) or count < 0:
            raise spec.child("count").expected("a whole number of rows")
        if count > MAX_ROWS:
            # Every load builds a sample world: a hostile count must not take minutes.
            raise spec.child("count").error(f"at most {MAX_ROWS:,} rows a table, found {count:,}")
        key = spec.child("key").str() if spec.has("key") else None
        fields: list[tuple[str, FieldGen]] = []
        for fname, fnode in spec.child("fields").items():
            fields.append((fname, _compile_field(fnode, providers, {f for f, _ in fields})))
        if key is not None and key not in {f for f, _ in fields}:
            raise spec.child("key").error(
                f"key {key!r} is not one of the fields{did_you_mean(key, [f for f, _ in fields])}"
            )
        out.append(TableGen(name, spec, count, key, fields))
    return out


def generate_rows(gen: TableGen, fake: Faker, tables: dict[str, Any]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    seen: set[Any] = set()
    for n in range(1, gen.count + 1):
        for _attempt in range(200):
            row: dict[str, Any] = {}
            for fname, fg in gen.fields:
                try:
                    row[fname] = fg.make(fake, row, tables, n)
                except Exception as exc:
                    raise fg.node.error(
                        f"generating this field failed: {type(exc).__name__}: {exc}"
                    ) from None
            if gen.key is None or row[gen.key] not in seen:
                break
        else:
            raise gen.node.error(
                f"could not make {gen.count} distinct values of key {gen.key!r}; widen its range"
            )
        if gen.key is not None:
            seen.add(row[gen.key])
        rows.append(row)
    return rows


Target = tuple[str, dict[str, Any], dict[str, Any], str | None]


def compile_target(node: Node) -> Target:
    node.mapping(allowed={"table", "where", "set", "as"}, required=("table",))
    where = node.child("where").mapping().plain() if node.has("where") else {}
    sets = node.child("set").mapping().plain() if node.has("set") else {}
    prefix = node.child("as").str() if node.has("as") else None
    return node.child("table").str(), where, sets, prefix


def world_maker(
    literal: dict[str, list[dict[str, Any]]],
    gens: list[TableGen],
    target: Target | None,
    target_node: Node,
    givens_lit: dict[str, Any],
) -> Callable[[Faker], tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]]:
    """The scenario's ``generate(fake)``: literal and generated tables, the target's givens."""

    def generate(fake: Faker) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
        tables = copy.deepcopy(literal)
        for g in gens:
            tables[g.name] = generate_rows(g, fake, tables)
        givens: dict[str, Any] = {}
        if target is not None:
            tname, where, sets, prefix = target
            rows = [
                r
                for r in tables.get(tname, [])
                if all(loose_eq(r.get(k), v) for k, v in where.items())
            ]
            if not rows:
                raise target_node.error(
                    f"no row of table {tname!r} matches {where} in the world made from this seed"
                )
            row = fake.random.choice(rows)
            row.update(copy.deepcopy(sets))
            givens.update({f"{prefix}_{k}" if prefix else k: v for k, v in row.items()})
        return tables, {**givens, **copy.deepcopy(givens_lit)}

    return generate
