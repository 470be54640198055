"""Scenarios written in YAML, with no code: tables, declarative tools, verifiers, a plan.

The file format is documented in docs/AUTHORING.md. In short, one YAML document is one
scenario (``---`` separates several in a file)::

    id: library-renew-loan
    description: ...
    domain: library
    instruction: "Member {member_id} asks to renew loan {loan_id}."
    tables: {policies: [{clause: L1, text: ...}]}          # literal rows
    generate:                                                # rows made by faker from the seed
      loans: {count: 6, key: loan_id,
              fields: {loan_id: "LN-{random_int:1000-9999}", email: email,
                       status: {choice: [open, overdue]}}}
    target: {table: loans, where: {status: open}}            # the task's row -> givens
    tools: {lookup_loan: {kind: lookup, table: loans, key: loan_id}, ...}
    checks: [{name: renewed, expect: "tables.loans[loan_id={loan_id}].status == renewed"}]
    solution: {steps: [{id: loan, call: lookup_loan, args: {loan_id: "{loan_id}"}}],
               answer: "Renewed $loan.loan_id."}

Only ``module:function`` references (``kind: python`` tools, ``function:`` checks) run
code; they resolve through the ``custom_tool`` / ``verifier`` registries, which Python
authors fill with decorated factories. Every error names the file, the line, the key path,
what was expected and what was found, with a "did you mean" for misspelled names.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from faker import Faker
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from .errors import ChaosevalError, ScenarioError, ToolError, ToolHTTPError
from .registry import Registry
from .scenario import Budgets, Check, FactSpec, MemoryItem, Policy, Scenario, ToolSpec

# --- the Python form: decorated factories YAML files can name ---------------------------------

tool_registry: Registry[Callable[..., Any]] = Registry("custom tool", "chaoseval.tools")
verifier_registry: Registry[Callable[..., Any]] = Registry("verifier", "chaoseval.verifiers")


def custom_tool(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a factory ``(**with) -> ToolSpec | fn(world, **args)`` for ``kind: python``."""

    def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
        factory.__chaoseval_factory__ = True  # type: ignore[attr-defined]
        return tool_registry.register(name)(factory)

    return decorate


def verifier(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a factory ``(**with) -> fn(world, output, trajectory)`` for ``function:``."""

    def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
        factory.__chaoseval_factory__ = True  # type: ignore[attr-defined]
        return verifier_registry.register(name)(factory)

    return decorate


class YamlScenario(Scenario):
    """A Scenario that also carries the perturbation cells its author wants it tested under."""

    perturbations: list[str] = Field(default_factory=list)


# --- the node tree: every value knows its line ------------------------------------------------


class YMap(dict):
    line: int = 0
    key_lines: dict[str, int]


class YList(list):
    line: int = 0
    item_lines: list[int]


def _convert(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out = YMap()
        out.line, out.key_lines = line, {}
        for knode, vnode in node.value:
            if knode.tag == "tag:yaml.org,2002:merge":
                merged = _convert(loader, vnode)
                for part in merged if isinstance(merged, list) else [merged]:
                    if isinstance(part, YMap):
                        for k, v in part.items():
                            if k not in out:
                                out[k] = v
                                out.key_lines[k] = part.key_lines.get(k, line)
                continue
            key = str(loader.construct_object(knode, deep=True))
            out[key] = _convert(loader, vnode)
            out.key_lines[key] = knode.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        seq = YList(_convert(loader, n) for n in node.value)
        seq.line, seq.item_lines = line, [n.start_mark.line + 1 for n in node.value]
        return seq
    return loader.construct_object(node, deep=True)


def compose_documents(text: str, source: str) -> list[YMap]:
    loader = yaml.SafeLoader(text)
    docs = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            doc = _convert(loader, node)
            # A document is one scenario, or a list of them (anchors and ``<<:`` merges let
            # variants share a common body within one document).
            for i, item in enumerate(doc if isinstance(doc, YList) else [doc]):
                if not isinstance(item, YMap):
                    line = doc.item_lines[i] if isinstance(doc, YList) else node.start_mark.line + 1
                    raise ScenarioError(
                        f"expected a mapping (a scenario), found {_found(item)}",
                        source=f"{source}:{line}",
                    )
                docs.append(item)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ScenarioError(
            f"not valid YAML: {exc.problem or exc.context}", source=f"{source}{line}"
        ) from None
    finally:
        loader.dispose()
    return docs


# --- errors an author can act on --------------------------------------------------------------


def did_you_mean(word: Any, choices: Any) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _found(value: Any) -> str:
    if isinstance(value, dict):
        return f"a mapping with keys {sorted(value)}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"{type(value).__name__} {value!r:.60}"


@dataclass
class Node:
    """A value of the document with its key path and line, for error messages."""

    source: str
    value: Any
    keys: tuple[str | int, ...] = ()
    line: int = 0

    @property
    def path(self) -> str:
        out = ""
        for k in self.keys:
            out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
        return out or "(scenario)"

    def error(self, message: str) -> ScenarioError:
        return ScenarioError(message, source=f"{self.source}:{self.line}", where=self.path)

    def expected(self, what: str, hint: str = "") -> ScenarioError:
        return self.error(f"expected {what}, found {_found(self.value)}{hint}")

    def child(self, key: str | int) -> Node:
        v = self.value
        if isinstance(key, int):
            lines = getattr(v, "item_lines", [])
            line = lines[key] if key < len(lines) else self.line
            return Node(self.source, v[key], (*self.keys, key), line)
        line = getattr(v, "key_lines", {}).get(key, self.line)
        return Node(self.source, v.get(key), (*self.keys, key), line)

    def has(self, key: str) -> bool:
        return isinstance(self.value, dict) and key in self.value

    def get(self, key: str) -> Node | None:
        return self.child(key) if self.has(key) else None

    def mapping(self, allowed: Any = None, required: Any = ()) -> Node:
        if not isinstance(self.value, dict):
            raise self.expected("a mapping")
        if allowed is not None:
            for key in self.value:
                if key not in allowed:
                    choices = ", ".join(sorted(allowed))
                    raise self.child(key).error(
                        f"unknown key {key!r}{did_you_mean(key, allowed)} (expected one of: "
                        f"{choices})"
                    )
        for key in required:
            if key not in self.value:
                raise self.error(f"missing required key {key!r}")
        return self

    def items(self) -> Iterator[tuple[str, Node]]:
        self.mapping()
        for key in self.value:
            yield key, self.child(key)

    def seq(self, allow_scalar: bool = False) -> list[Node]:
        if allow_scalar and not isinstance(self.value, list):
            return [self]
        if not isinstance(self.value, list):
            raise self.expected("a list")
        return [self.child(i) for i in range(len(self.value))]

    def str(self) -> str:
        if not isinstance(self.value, str):
            raise self.expected("a string")
        return self.value

    def strs(self) -> list[str]:
        return [n.str() for n in self.seq(allow_scalar=True)]

    def plain(self) -> Any:
        return _plain(self.value)

    def choice(self, options: Any, what: str) -> str:
        v = self.value
        if not isinstance(v, str) or v not in options:
            raise self.expected(
                f"{what}: one of {', '.join(sorted(options))}", did_you_mean(v, options)
            )
        return v


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class _Collector:
    """Collects errors section by section so one file reports more than its first mistake."""

    def __init__(self) -> None:
        self.errors: list[ScenarioError] = []

    def run(self, fn: Callable[[], Any], default: Any = None) -> Any:
        try:
            return fn()
        except ScenarioError as exc:
            self.errors.append(exc)
            return default


# --- templates: {name} and $step.field --------------------------------------------------------

MISSING: Any = type(
    "Missing", (), {"__repr__": lambda self: "<missing>", "__bool__": lambda s: False}
)()
_BRACE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)([+-]\d+(?:\.\d+)?[dhm]?)?(?::([^{}]*))?\}")
_STEP = re.compile(r"\$([A-Za-z_]\w*)((?:\.\w+)*)")


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


def _to_text(value: Any, spec: str | None) -> str:
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
    m = _BRACE.fullmatch(text)
    if m and not m.group(3):
        return _jsonable(_shift(lookup(m.group(1)), m.group(2)))
    if steps is not None:
        s = _STEP.fullmatch(text)
        if s:
            return _dig(steps.get(s.group(1), MISSING), s.group(2))

    def brace(match: re.Match[str]) -> str:
        return _to_text(_shift(lookup(match.group(1)), match.group(2)), match.group(3))

    out = _BRACE.sub(brace, text)
    if steps is not None:
        out = _STEP.sub(
            lambda s: _to_text(_dig(steps.get(s.group(1), MISSING), s.group(2)), None), out
        )
    return out


def _dig(value: Any, dotted: str) -> Any:
    for part in [p for p in dotted.split(".") if p]:
        if isinstance(value, dict):
            value = value.get(part, MISSING)
        else:
            return MISSING
    return None if value is MISSING else value


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


# --- path expressions -------------------------------------------------------------------------

ROOTS = ("tables", "givens", "args", "row", "answer", "data", "result")
OPS = ("not in", "contains", "matches", "==", "!=", "<=", ">=", "<", ">", "in")
FUNCS = ("count", "exists")


@dataclass
class Path_:
    root: str  # one of ROOTS, or "$step"
    segments: list[tuple[str, Any]]  # ("field", name) | ("select", [(k, template)]) | ("index", n)
    func: str | None = None


@dataclass
class Expr:
    text: str
    left: Path_ | str
    op: str | None = None
    right: Path_ | str | None = None


def _split_op(text: str) -> tuple[str, str | None, str | None]:
    depth, quote = 0, ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[({":
            depth += 1
        elif ch in "])}":
            depth -= 1
        elif depth == 0 and ch == " ":
            for op in OPS:
                if text.startswith(f" {op} ", i):
                    return text[:i].strip(), op, text[i + len(op) + 2 :].strip()
        i += 1
    return text.strip(), None, None


_PATH_START = re.compile(r"^(count|exists)\((.*)\)$|^(\$[A-Za-z_]\w*|[A-Za-z_]\w*)(.*)$")


def parse_operand(text: str, where: Node, steps: set[str] | None) -> Path_ | str:
    """A path into the world (``tables.orders[order_id={id}].status``) or a literal."""
    m = _PATH_START.match(text)
    if not m:
        return text
    if m.group(1):
        inner = parse_operand(m.group(2).strip(), where, steps)
        if not isinstance(inner, Path_):
            raise where.error(f"{m.group(1)}() expects a path such as tables.NAME, found {text!r}")
        inner.func = m.group(1)
        return inner
    root, rest = m.group(3), m.group(4)
    if root.startswith("$"):
        if steps is None:
            raise where.error(f"{root} refers to a solution step; only the solution can use it")
        if root[1:] not in steps:
            raise where.error(
                f"{root} names no earlier solution step (steps with an id: "
                f"{', '.join(sorted(steps)) or 'none'}){did_you_mean(root[1:], steps)}"
            )
    elif root not in ROOTS:
        if rest.startswith((".", "[")):
            raise where.error(
                f"unknown root {root!r} in {text!r}; expected one of {', '.join(ROOTS)} or "
                f"$step{did_you_mean(root, ROOTS)}"
            )
        return text  # a literal word such as `cancelled`
    segments: list[tuple[str, Any]] = []
    pos = 0
    while pos < len(rest):
        if rest[pos] == ".":
            fm = re.match(r"\.([A-Za-z_][\w-]*)", rest[pos:])
            if not fm:
                raise where.error(f"bad field name after '.' in {text!r}")
            segments.append(("field", fm.group(1)))
            pos += fm.end()
        elif rest[pos] == "[":
            end = _closing(rest, pos)
            if end < 0:
                raise where.error(f"unclosed '[' in {text!r}")
            inner = rest[pos + 1 : end].strip()
            if re.fullmatch(r"-?\d+", inner):
                segments.append(("index", int(inner)))
            else:
                conds = []
                for part in inner.split(","):
                    k, eq, v = part.partition("=")
                    if not eq or not k.strip():
                        raise where.error(
                            f"bad row selector [{inner}] in {text!r}; write [column=value,...]"
                        )
                    conds.append((k.strip(), v.strip()))
                segments.append(("select", conds))
            pos = end + 1
        else:
            raise where.error(f"unexpected {rest[pos:]!r} in path {text!r}")
    return Path_(root, segments)


def _closing(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "[":
            depth += 1
        elif text[i] == "]":
            depth -= 1
            if depth == 0:
                return i
    return -1


def parse_expr(node: Node, steps: set[str] | None = None) -> Expr:
    text = node.str().strip()
    left, op, right = _split_op(text)
    if not left:
        raise node.error(f"empty expression {text!r}")
    lhs = parse_operand(left, node, steps)
    if op is None:
        if not isinstance(lhs, Path_):
            raise node.error(
                f"expected a condition such as 'tables.T[k=v].field == value', found {text!r}"
            )
        return Expr(text, lhs)
    if not right:
        raise node.error(f"nothing after {op!r} in {text!r}")
    return Expr(text, lhs, op, parse_operand(right, node, steps))


@dataclass
class Env:
    """What an expression can see."""

    tables: dict[str, Any] = field(default_factory=dict)
    givens: dict[str, Any] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)
    row: Any = MISSING
    answer: Any = MISSING
    data: Any = MISSING
    result: Any = MISSING
    steps: dict[str, Any] = field(default_factory=dict)
    now: Callable[[], datetime] | None = None

    def lookup(self, name: str) -> Any:
        head, _, rest = name.partition(".")
        if head in ("now", "today") and self.now is not None:
            t = self.now()
            return _dig({"v": t if head == "now" else t.date()}, "v" + ("." + rest if rest else ""))
        for scope in (self.args, self.row if isinstance(self.row, dict) else {}, self.givens):
            if head in scope:
                return _dig(scope[head], rest) if rest else scope[head]
        raise ToolError(f"template names unknown value {name!r}")


def _literal(text: str, env: Env) -> Any:
    filled = interpolate(text, env.lookup, env.steps)
    if not isinstance(filled, str):
        return filled
    try:
        return yaml.safe_load(filled) if filled else filled
    except yaml.YAMLError:
        return filled


def _loose_eq(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return False
    if a == b:
        return True
    scalar = (str, int, float, bool, date)
    return (
        isinstance(a, scalar) and isinstance(b, scalar) and str(_jsonable(a)) == str(_jsonable(b))
    )


def resolve(operand: Path_ | str, env: Env) -> Any:
    if isinstance(operand, str):
        return _literal(operand, env)
    if operand.root.startswith("$"):
        value: Any = env.steps.get(operand.root[1:], MISSING)
    else:
        value = getattr(env, operand.root)
    for kind, arg in operand.segments:
        if value is MISSING or value is None:
            value = MISSING
            break
        if kind == "field":
            if isinstance(value, dict):
                value = value.get(arg, MISSING)
            elif isinstance(value, list):
                rows = [r.get(arg, MISSING) for r in value if isinstance(r, dict)]
                value = rows[0] if len(rows) == 1 else (rows or MISSING)
            else:
                value = MISSING
        elif kind == "index":
            value = (
                value[arg]
                if isinstance(value, list) and -len(value) <= arg < len(value)
                else MISSING
            )
        else:
            if isinstance(value, dict):
                value = [value]
            if not isinstance(value, list):
                value = MISSING
                continue
            want = [(k, _literal(v, env)) for k, v in arg]
            value = [
                r
                for r in value
                if isinstance(r, dict) and all(_loose_eq(r.get(k, MISSING), v) for k, v in want)
            ]
    if operand.func == "count":
        return len(value) if isinstance(value, list) else (0 if value is MISSING else 1)
    if operand.func == "exists":
        return bool(value) if isinstance(value, list) else value is not MISSING
    return value


def evaluate(expr: Expr, env: Env) -> tuple[bool, str]:
    """The condition's truth and what was found (for check details and tool errors)."""
    left = resolve(expr.left, env)
    if expr.op is None:
        ok = bool(left) and left is not MISSING
        return ok, f"{expr.text}: found {left!r}"
    right = resolve(expr.right, env)  # type: ignore[arg-type]
    ok = _compare(left, expr.op, right)
    return ok, f"{expr.text}: found {left!r}" + (
        "" if isinstance(expr.right, str) else f" vs {right!r}"
    )


def _compare(a: Any, op: str, b: Any) -> bool:
    if op == "==":
        return _loose_eq(a, b) or (a is MISSING and b is None)
    if op == "!=":
        return not (_loose_eq(a, b) or (a is MISSING and b is None))
    if a is MISSING or b is MISSING:
        return False
    try:
        if op in ("in", "not in"):
            inside = any(_loose_eq(a, x) for x in b) if isinstance(b, list) else str(a) in str(b)
            return inside if op == "in" else not inside
        if op == "contains":
            return any(_loose_eq(x, b) for x in a) if isinstance(a, list) else str(b) in str(a)
        if op == "matches":
            return re.search(str(b), str(a)) is not None
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    except TypeError:
        return False


# --- generated tables -------------------------------------------------------------------------

_NOT_PROVIDERS = {
    "add_provider", "cache_pattern", "del_arguments", "format", "get_arguments",
    "get_formatter", "get_providers", "items", "locales", "optional", "parse", "provider",
    "providers", "random", "seed", "seed_instance", "seed_locale", "set_arguments",
    "set_formatter", "unique", "weights", "factories", "generator_attrs",
}  # fmt: skip


def faker_providers() -> list[str]:
    fake = Faker()
    return sorted(n for n in dir(fake) if not n.startswith("_") and n not in _NOT_PROVIDERS)


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


def _compile_field(node: Node, providers: set[str], earlier: set[str]) -> FieldGen:
    v = node.value
    if isinstance(v, str) and "{" not in v:
        if v not in providers:
            raise node.error(
                f"expected a faker provider name (a bare string), found {v!r}"
                f"{did_you_mean(v, providers)}; write {{value: {v}}} for a literal string"
            )
        return FieldGen(node, lambda f, row, tables, n: _jsonable(getattr(f, v)()))
    if isinstance(v, str):
        for m in _BRACE.finditer(v):
            name = m.group(1)
            if name not in providers and name != "n" and name not in earlier:
                raise node.error(
                    f"template {v!r}: {{{name}}} is neither a faker provider, the row number "
                    f"{{n}}, nor an earlier field{did_you_mean(name, [*providers, *earlier, 'n'])}"
                )

        def template(f: Faker, row: dict[str, Any], tables: Any, n: int) -> Any:
            def sub(m: re.Match[str]) -> str:
                name, raw = m.group(1), m.group(3)
                if name == "n":
                    return format(n, raw) if raw else str(n)
                if name in row:
                    return _to_text(row[name], raw)
                return str(_jsonable(getattr(f, name)(*_provider_args(raw))))

            return _BRACE.sub(sub, v)

        return FieldGen(node, template)
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


def _compile_generate(node: Node) -> list[TableGen]:
    providers = set(faker_providers())
    out = []
    for name, spec in node.items():
        spec.mapping(allowed={"count", "key", "fields"}, required=("count", "fields"))
        count = spec.child("count").value
        if not isinstance(count, int) or count < 0:
            raise spec.child("count").expected("a whole number of rows")
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


def _generate_rows(gen: TableGen, fake: Faker, tables: dict[str, Any]) -> list[dict[str, Any]]:
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


# --- tools ------------------------------------------------------------------------------------

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


def _column_types(tables: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
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


def _resolve_callable(node: Node, reg: Registry[Any], params: dict[str, Any]) -> Any:
    name = node.str()
    try:
        obj = reg.get(name)
    except ChaosevalError as exc:
        raise node.error(str(exc)) from None
    if getattr(obj, "__chaoseval_factory__", False):
        try:
            return obj(**params)
        except TypeError as exc:
            raise node.error(f"factory {name!r} rejected its `with:` parameters: {exc}") from None
    if params:
        raise node.error(f"{name!r} is a plain callable; `with:` needs a decorated factory")
    return obj


def _compile_tool(
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
        obj = _resolve_callable(node.child("function"), tool_registry, params or {})
        if isinstance(obj, ToolSpec):
            return obj.model_copy(update={"name": name})
        if not callable(obj):
            raise node.child("function").expected("a ToolSpec or a function (world, **args)")
        from .scenario import tool as make_tool

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
                r
                for r in world.table(table)
                if all(_loose_eq(r.get(k), v) for k, v in want.items())
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


# --- checks -----------------------------------------------------------------------------------

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


def _output_env(world: Any, output: Any) -> Env:
    return Env(
        tables=world.tables,
        givens=world.givens,
        answer=output.answer,
        data=output.data,
        now=world.now,
    )


def _compile_check(node: Node, tools: set[str], tables: set[str]) -> Check:
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
    name = node.child("name").str() if node.has("name") else f"{which}: {_plain(spec.value)}"[:80]
    kind = "state"
    fn: Callable[..., Any]
    if which == "expect":
        exprs = [parse_expr(n) for n in spec.seq(allow_scalar=True)]

        def fn(world: Any, output: Any, trajectory: Any) -> tuple[bool, str]:
            env = _output_env(world, output)
            results = [evaluate(e, env) for e in exprs]
            return all(ok for ok, _ in results), "; ".join(d for _, d in results)

        if all(isinstance(e.left, Path_) and e.left.root in ("answer", "data") for e in exprs):
            kind = "output"
    elif which in ("answer_contains", "answer_excludes"):
        kind = "output"
        texts = spec.strs()
        present_wanted = which == "answer_contains"

        def fn(world: Any, output: Any, trajectory: Any) -> tuple[bool, str]:
            env = _output_env(world, output)
            wanted = [str(interpolate(t, env.lookup)) for t in texts]
            hits = [w for w in wanted if w.lower() in output.answer.lower()]
            ok = len(hits) == len(wanted) if present_wanted else not hits
            return ok, f"answer {output.answer[:120]!r}; looked for {wanted}"
    elif which in ("called", "not_called"):
        kind = "process"
        items = spec.seq(allow_scalar=True)
        calls = []
        for item in items:
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

        def fn(world: Any, output: Any, trajectory: Any) -> tuple[bool, str]:
            env = _output_env(world, output)
            details, oks = [], []
            for tname, args, times in calls:
                want = {k: interpolate(v, env.lookup) for k, v in args.items()}
                n = sum(
                    1
                    for s in trajectory.tool_calls(tname)
                    if s.result_class == "ok"
                    and all(_loose_eq((s.args or {}).get(k), v) for k, v in want.items())
                )
                ok = (n == times if times is not None else n > 0) if not negate else n == 0
                oks.append(ok)
                details.append(f"{tname}{want or ''}: {n} successful call(s)")
            return all(oks), "; ".join(details)
    elif which == "unchanged":
        names = spec.strs()
        for t in names:
            if t not in tables:
                raise spec.error(f"no table named {t!r}{did_you_mean(t, tables)}")

        def fn(world: Any, output: Any, trajectory: Any) -> tuple[bool, str]:
            touched = [w for w in world.writes if w.table in names]
            return not touched, f"writes to {names}: {len(touched)}"
    elif which == "table_equals":
        spec.mapping(allowed={"table", "where", "rows", "count"}, required=("table",))
        table = spec.child("table").str()
        if table not in tables:
            raise spec.child("table").error(
                f"no table named {table!r}{did_you_mean(table, tables)}"
            )
        where = spec.child("where").mapping().plain() if spec.has("where") else {}
        rows = spec.child("rows").plain() if spec.has("rows") else None
        count = spec.child("count").value if spec.has("count") else None
        if rows is None and count is None:
            raise spec.error("table_equals needs 'rows' (the expected rows) or 'count'")

        def fn(world: Any, output: Any, trajectory: Any) -> tuple[bool, str]:
            env = _output_env(world, output)
            want_where = {
                k: _literal(str(v), env) if isinstance(v, str) else v for k, v in where.items()
            }
            found = [
                r
                for r in world.table(table)
                if all(_loose_eq(r.get(k), v) for k, v in want_where.items())
            ]
            if count is not None and len(found) != count:
                return False, f"{table}: {len(found)} matching row(s), expected {count}"
            if rows is not None:
                want = [
                    {k: _literal(str(v), env) if isinstance(v, str) else v for k, v in r.items()}
                    for r in rows
                ]
                if len(found) != len(want):
                    return False, f"{table}: {len(found)} matching row(s), expected {len(want)}"
                for r, w in zip(found, want, strict=True):
                    bad = [k for k, v in w.items() if not _loose_eq(r.get(k, MISSING), v)]
                    if bad:
                        return False, f"{table} row {r}: differs in {bad} (expected {w})"
            return True, f"{table}: {len(found)} matching row(s)"
    else:
        params = node.child("with").plain() if node.has("with") else {}
        fn = _resolve_callable(spec, verifier_registry, params or {})
        if not callable(fn):
            raise spec.expected("a function (world, output, trajectory) -> bool | (bool, str)")
    if node.has("kind"):
        kind = node.child("kind").choice(("state", "output", "process"), "a check kind")
    return Check(name=name, fn=fn, kind=kind)


# --- the reference solution -------------------------------------------------------------------


@dataclass
class SolStep:
    id: str | None
    tool: str | None
    args: dict[str, Any]
    when: Expr | None
    optional: bool
    recall: str | None = None
    click: str | None = None
    role: str = "button"
    page: bool = False


@dataclass
class SolAnswer:
    text: str
    data: dict[str, Any]
    when: Expr | None
    give_up: bool = False


def _compile_solution(
    node: Node, tools: dict[str, ToolSpec], named: set[str]
) -> tuple[Callable[..., Any], int]:
    node.mapping(allowed={"steps", "answer", "data", "give_up"}, required=("answer",))
    steps: list[SolStep] = []
    ids: set[str] = set()
    for item in node.child("steps").seq() if node.has("steps") else []:
        item.mapping(
            allowed={"id", "call", "args", "when", "optional", "recall", "click", "role", "page"}
        )
        sid = item.child("id").str() if item.has("id") else None
        when = parse_expr(item.child("when"), ids) if item.has("when") else None
        tool_name = None
        args: dict[str, Any] = {}
        if item.has("call"):
            tool_name = item.child("call").str()
            if tool_name not in named:
                raise item.child("call").error(
                    f"no tool named {tool_name!r}{did_you_mean(tool_name, tools)} "
                    f"(tools: {', '.join(sorted(tools))})"
                )
            spec = tools.get(tool_name)
            accepted = spec.params.model_fields if spec is not None else None
            if item.has("args"):
                for aname, anode in item.child("args").items():
                    if accepted is not None and aname not in accepted:
                        raise anode.error(
                            f"tool {tool_name!r} takes no argument {aname!r}"
                            f"{did_you_mean(aname, accepted)} (it takes: {', '.join(accepted)})"
                        )
                    for m in _STEP.finditer(str(anode.value)):
                        if m.group(1) not in ids:
                            raise anode.error(
                                f"${m.group(1)} names no earlier step with an id"
                                f"{did_you_mean(m.group(1), ids)}"
                            )
                    args[aname] = anode.plain()
        elif not item.has("click") and not item.has("page"):
            raise item.error("a step needs 'call' (a tool), 'click' (a UI label) or 'page'")
        steps.append(
            SolStep(
                id=sid,
                tool=tool_name,
                args=args,
                when=when,
                optional=bool(item.child("optional").value) if item.has("optional") else False,
                recall=item.child("recall").str() if item.has("recall") else None,
                click=item.child("click").str() if item.has("click") else None,
                role=item.child("role").str() if item.has("role") else "button",
                page=bool(item.child("page").value) if item.has("page") else False,
            )
        )
        if sid:
            ids.add(sid)

    answers: list[SolAnswer] = []
    ans = node.child("answer")
    default_data = node.child("data").mapping().plain() if node.has("data") else {}
    if isinstance(ans.value, str):
        answers.append(SolAnswer(ans.value, default_data, None))
    else:
        for opt in ans.seq():
            opt.mapping(allowed={"when", "text", "data", "give_up"}, required=("text",))
            for m in _STEP.finditer(opt.child("text").str()):
                if m.group(1) not in ids:
                    raise opt.child("text").error(
                        f"${m.group(1)} names no step with an id{did_you_mean(m.group(1), ids)}"
                    )
            answers.append(
                SolAnswer(
                    opt.child("text").str(),
                    opt.child("data").mapping().plain() if opt.has("data") else default_data,
                    parse_expr(opt.child("when"), ids) if opt.has("when") else None,
                    bool(opt.child("give_up").value) if opt.has("give_up") else False,
                )
            )
        if answers and answers[-1].when is not None:
            raise ans.error("the last answer option must have no 'when' (it is the fallback)")

    async def solve(actor: Any) -> Any:
        results: dict[str, Any] = {}
        env = Env(givens=actor.task, steps=results, now=actor.now)
        for step in steps:
            if step.when is not None and not actor.decide(evaluate(step.when, env)[0]):
                continue
            value: Any = None
            if step.tool is not None:
                args = {k: _fill(v, env) for k, v in step.args.items()}
                tool = step.tool

                async def do(
                    tool: str = tool, args: dict[str, Any] = args, optional: bool = step.optional
                ) -> Any:
                    if optional:
                        return await actor.try_call(tool, **args)
                    return await actor.call(tool, **args)

                value = await (actor.recall(step.recall, do) if step.recall else do())
            elif step.click is not None:
                value = await actor.click(step.click, step.role)
            elif step.page:
                value = await actor.page()
            if step.id:
                results[step.id] = value
        for option in answers:
            if option.when is None or actor.decide(evaluate(option.when, env)[0]):
                text = str(interpolate(option.text, env.lookup, results))
                if option.give_up:
                    return actor.give_up(text)
                return actor.answer(text, **{k: _fill(v, env) for k, v in option.data.items()})
        return actor.answer("")

    reference = sum(1 for s in steps if s.tool and s.when is None) or 1
    return solve, reference


def _fill(value: Any, env: Env) -> Any:
    if isinstance(value, dict):
        return {k: _fill(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, env) for v in value]
    return interpolate(value, env.lookup, env.steps)


# --- the document -----------------------------------------------------------------------------

TOP_KEYS = {
    "id", "description", "domain", "tags", "instruction", "tables", "generate", "target",
    "givens", "tools", "checks", "policy", "facts", "budgets", "solution", "reference_steps",
    "start_time", "freeze_time", "memory", "ui", "difficulty", "perturbations",
}  # fmt: skip


def _compile_target(node: Node) -> tuple[str, dict[str, Any], dict[str, Any], str | None]:
    node.mapping(allowed={"table", "where", "set", "as"}, required=("table",))
    where = node.child("where").mapping().plain() if node.has("where") else {}
    sets = node.child("set").mapping().plain() if node.has("set") else {}
    prefix = node.child("as").str() if node.has("as") else None
    return node.child("table").str(), where, sets, prefix


def compile_document(doc: YMap, source: str) -> YamlScenario:
    root = Node(source, doc, (), doc.line)
    root.mapping(allowed=TOP_KEYS)
    for key in ("id", "description", "instruction", "tools", "checks", "solution"):
        if key not in doc:
            raise root.error(f"missing required key {key!r}")
    errs = _Collector()

    literal: dict[str, list[dict[str, Any]]] = {}
    if root.has("tables"):
        for tname, tnode in root.child("tables").items():
            rows = []
            for r in tnode.seq():
                r.mapping()
                rows.append(_jsonable(r.plain()))
            literal[tname] = rows
    gens = (
        errs.run(lambda: _compile_generate(root.child("generate")), [])
        if root.has("generate")
        else []
    )
    target = _compile_target(root.child("target")) if root.has("target") else None
    givens_lit = root.child("givens").mapping().plain() if root.has("givens") else {}

    def generate(fake: Faker) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
        tables = copy.deepcopy(literal)
        for g in gens:
            tables[g.name] = _generate_rows(g, fake, tables)
        givens: dict[str, Any] = {}
        if target is not None:
            tname, where, sets, prefix = target
            rows = [
                r
                for r in tables.get(tname, [])
                if all(_loose_eq(r.get(k), v) for k, v in where.items())
            ]
            if not rows:
                raise root.child("target").error(
                    f"no row of table {tname!r} matches {where} in the world made from this seed"
                )
            row = fake.random.choice(rows)
            row.update(copy.deepcopy(sets))
            givens.update({f"{prefix}_{k}" if prefix else k: v for k, v in row.items()})
        return tables, {**givens, **copy.deepcopy(givens_lit)}

    if errs.errors:  # a broken generator makes every later table reference look wrong
        _raise_collected(errs.errors)
    if target is not None and target[0] not in {*literal, *(g.name for g in gens)}:
        known = {*literal, *(g.name for g in gens)}
        errs.errors.append(
            root.child("target")
            .child("table")
            .error(f"no table named {target[0]!r}{did_you_mean(target[0], known)}")
        )
    sample_tables, sample_givens = literal, dict(givens_lit)
    if not errs.errors:
        sample_fake = Faker()
        sample_fake.seed_instance(0)
        try:
            sample_tables, sample_givens = generate(sample_fake)
        except ScenarioError as exc:
            errs.errors.append(exc)
    if errs.errors:  # a broken world makes every later table reference look wrong: stop here
        _raise_collected(errs.errors)
    types = _column_types(sample_tables)
    table_names = set(sample_tables)

    tools: dict[str, ToolSpec] = {}
    for tname, tnode in root.child("tools").items():
        spec = errs.run(
            lambda tname=tname, tnode=tnode: _compile_tool(tname, tnode, types, table_names)
        )
        if spec is not None:
            tools[tname] = spec
    # A tool that failed to compile still exists for the references below: no cascade of
    # "no tool named ..." errors after its own.
    named = set(root.child("tools").value)
    checks = []
    for cnode in root.child("checks").seq():
        c = errs.run(lambda cnode=cnode: _compile_check(cnode, named, table_names))
        if c is not None:
            checks.append(c)

    policy = errs.run(lambda: _compile_policy(root.get("policy"), named, table_names), Policy())
    facts = errs.run(lambda: _compile_facts(root.get("facts"), table_names), [])
    solution = errs.run(lambda: _compile_solution(root.child("solution"), tools, named))
    perturbations = errs.run(lambda: _compile_perturbations(root.get("perturbations")), [])
    instruction = root.child("instruction").str()
    try:
        instruction.format(**sample_givens)
    except (KeyError, IndexError, ValueError) as exc:
        errs.errors.append(
            root.child("instruction").error(
                f"the instruction template names {exc} which is not a given "
                f"(givens: {', '.join(sorted(sample_givens)) or 'none'})"
                f"{did_you_mean(str(exc).strip(chr(39)), sample_givens)}"
            )
        )
    if errs.errors:
        _raise_collected(errs.errors)

    fields: dict[str, Any] = {
        "id": root.child("id").value,
        "description": root.child("description").value,
        "domain": doc.get("domain", "general"),
        "tags": root.child("tags").strs() if root.has("tags") else [],
        "instruction": instruction,
        "tables": literal,
        "generate": generate if (gens or target) else None,
        "givens": givens_lit,
        "tools": list(tools.values()),
        "checks": checks,
        "policy": policy,
        "facts": facts,
        "solution": solution[0],
        "reference_steps": doc.get("reference_steps", solution[1]),
        "freeze_time": doc.get("freeze_time", False),
        "ui": _ui(root.get("ui"), source),
        "difficulty": doc.get("difficulty", 0.05),
        "perturbations": perturbations,
        "source": source,
    }
    if root.has("start_time"):
        fields["start_time"] = doc["start_time"]
    if root.has("budgets"):
        fields["budgets"] = _validated(root.child("budgets"), Budgets)
    if root.has("memory"):
        fields["memory"] = [_validated(m, MemoryItem) for m in root.child("memory").seq()]
    try:
        return YamlScenario(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = str(first["loc"][0]) if first["loc"] else ""
        node = root.child(key) if root.has(key) else root
        raise node.error(f"{first['msg']} (found {first.get('input')!r:.60})") from None


def _raise_collected(errors: list[ScenarioError]) -> None:
    if len(errors) == 1:
        raise errors[0]
    from .loader import ScenarioLoadErrors

    raise ScenarioLoadErrors(errors)


def _validated(node: Node, model: type[BaseModel]) -> Any:
    node.mapping(allowed=set(model.model_fields))
    try:
        return model.model_validate(node.plain())
    except ValidationError as exc:
        first = exc.errors()[0]
        key = str(first["loc"][0]) if first["loc"] else None
        where = node.child(key) if key and node.has(key) else node
        raise where.error(f"{first['msg']} (found {first.get('input')!r:.60})") from None


def _compile_policy(node: Node | None, tools: set[str], tables: set[str]) -> Policy:
    if node is None:
        return Policy()
    node.mapping(allowed={"allowed_tools", "forbidden_writes"})
    allowed = None
    if node.has("allowed_tools"):
        allowed = node.child("allowed_tools").strs()
        for i, t in enumerate(allowed):
            if t not in tools:
                raise (
                    node.child("allowed_tools")
                    .child(i)
                    .error(f"no tool named {t!r}{did_you_mean(t, tools)}")
                )
    forbidden = node.child("forbidden_writes").strs() if node.has("forbidden_writes") else []
    return Policy(allowed_tools=allowed, forbidden_writes=forbidden)


def _compile_facts(node: Node | None, tables: set[str]) -> list[FactSpec]:
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


def _compile_perturbations(node: Node | None) -> list[str]:
    from .cells import parse_cells
    from .trial import instantiate

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


def _ui(node: Node | None, source: str) -> str | None:
    if node is None:
        return None
    text = node.str()
    if text.endswith(".html") and "<" not in text:
        page = Path(source).parent / text
        if not page.is_file():
            raise node.error(f"no such UI page file {page}")
        return page.read_text()
    return text


def load_yaml_file(path: Path) -> list[Scenario]:
    """Every scenario document in one YAML file (ScenarioError on the first broken one)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(f"cannot read: {exc}", source=str(path)) from None
    docs = compose_documents(text, str(path))
    if not docs:
        raise ScenarioError("the file holds no scenario", source=str(path))
    return [compile_document(d, str(path)) for d in docs]
