"""Path expressions (``tables.orders[order_id={id}].status == shipped``) and their evaluation."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import yaml

from chaoseval.errors import ToolError
from chaoseval.loading.yamlform.nodes import Node, did_you_mean
from chaoseval.loading.yamlform.templates import MISSING, dig, interpolate, jsonable
from chaoseval.model import dialogue

ROOTS = ("tables", "givens", "args", "row", "answer", "data", "result")
OPS = ("not in", "contains", "matches", "before", "==", "!=", "<=", ">=", "<", ">", "in")
FUNCS = ("count", "exists")


@dataclass
class Path_:
    root: str  # one of ROOTS, or "$step"
    segments: list[tuple[str, Any]]  # ("field", name) | ("select", [(k, template)]) | ("index", n)
    func: str | None = None


@dataclass
class Talk:
    """A dialogue term (checks and vetoes only): ``asked(order_id)``, ``said("refund")``,
    ``called(issue_refund)``, ``agreed()``, ``turns`` (``chaoseval.model.dialogue``)."""

    func: str  # one of dialogue.EVENTS, or "turns"
    arg: str = ""


@dataclass
class Dialogue:
    """What dialogue terms may name: the user's facts (None: the scenario has no user) and
    the scenario's tools."""

    facts: set[str] | None
    tools: set[str]


Operand = Path_ | Talk | str


@dataclass
class Expr:
    text: str
    left: Operand
    op: str | None = None
    right: Operand | None = None
    negate: bool = False  # ``not said("guarantee")``

    @property
    def on_dialogue(self) -> bool:
        return isinstance(self.left, Talk) or isinstance(self.right, Talk)


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


_TALK = re.compile(rf"^({'|'.join(dialogue.EVENTS)})\((.*)\)$")


def parse_talk(text: str, where: Node, names: Dialogue | None) -> Talk | None:
    """A dialogue term, checked against the scenario's facts and tools; None: not one."""
    if text == "turns":
        if names is None:
            return None
        return Talk("turns")
    m = _TALK.match(text)
    if not m:
        return None
    func, arg = m.group(1), m.group(2).strip()
    if names is None:
        raise where.error(
            f"{func}(...) reads the conversation; write it in a check or a veto, not here"
        )
    if func == "said":
        if len(arg) < 2 or arg[0] not in "'\"" or arg[-1] != arg[0]:
            raise where.error(f'said takes quoted text: said("guarantee"), found {text!r}')
        return Talk(func, arg[1:-1])
    if func in ("agreed", "ended"):
        if arg:
            raise where.error(f"{func}() takes nothing, found {text!r}")
        return Talk(func)
    if func == "called":
        if arg not in names.tools:
            raise where.error(
                f"no tool named {arg!r} in {text!r}{did_you_mean(arg, names.tools)} "
                f"(tools: {', '.join(sorted(names.tools))})"
            )
        return Talk(func, arg)
    if names.facts is None:
        raise where.error(
            f"{text!r} reads the user's turns, and this scenario has no 'user:' section; add "
            "one (goal, opening, facts) or drop the check"
        )
    if arg not in names.facts and not (func == "confirmed" and not arg):
        raise where.error(
            f"the user has no fact named {arg!r} in {text!r}{did_you_mean(arg, names.facts)} "
            f"(user.facts: {', '.join(sorted(names.facts)) or 'none'})"
        )
    return Talk(func, arg)


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


def _unbalanced(text: str) -> str | None:
    """An unclosed quote or bracket, or a closing one with no opening: what is wrong, or None."""
    pairs, stack, quote = {")": "(", "]": "[", "}": "{"}, [], ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            stack.append(ch)
        elif ch in pairs and (not stack or stack.pop() != pairs[ch]):
            return f"a {ch!r} with no matching opening one"
    if quote:
        return f"an unclosed {quote}"
    return f"an unclosed {stack[-1]!r}" if stack else None


_OPERATOR_START = re.compile(r"^(==|!=|<=|>=|<|>|=)")


def parse_expr(node: Node, steps: set[str] | None = None, talk: Dialogue | None = None) -> Expr:
    """``talk``: dialogue terms are allowed, naming these facts and tools."""
    text = node.str().strip()
    problem = _unbalanced(text)
    if problem:
        raise node.error(f"{problem} in {text!r}")
    negate = text.startswith("not ")
    body = text[4:].strip() if negate else text
    left, op, right = _split_op(body)
    if negate and op is not None:
        raise node.error(f"'not' goes before a term alone (not said(\"x\")), found {text!r}")
    if not left:
        raise node.error(f"empty expression {text!r}")
    if right and _OPERATOR_START.match(right):
        raise node.error(f"two operators in a row in {text!r}; write 'path OP value'")
    if op == "matches" and right and "{" not in right and "$" not in right:
        try:
            re.compile(right.strip("'\""))
        except re.error as exc:
            raise node.error(f"not a valid regular expression {right!r}: {exc}") from None
    lhs: Operand = parse_talk(left, node, talk) or parse_operand(left, node, steps)
    if op is None:
        if not isinstance(lhs, Path_ | Talk):
            raise node.error(
                f"expected a condition such as 'tables.T[k=v].field == value', found {text!r}"
            )
        return Expr(text, lhs, negate=negate)
    if not right:
        raise node.error(f"nothing after {op!r} in {text!r}")
    rhs: Operand = parse_operand(right, node, steps)
    if op == "before":
        found = parse_talk(right, node, talk)
        if not (isinstance(lhs, Talk) and found is not None and found.func != "turns"):
            raise node.error(
                f"'before' orders two events of the conversation, e.g. 'asked(order_id) before "
                f"called(issue_refund)'; found {text!r}"
            )
        rhs = found
    return Expr(text, lhs, op, rhs)


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
    trajectory: Any = None  # what dialogue terms read (checks and vetoes)
    output: Any = None

    def lookup(self, name: str) -> Any:
        head, _, rest = name.partition(".")
        if head in ("now", "today") and self.now is not None:
            t = self.now()
            return dig({"v": t if head == "now" else t.date()}, "v" + ("." + rest if rest else ""))
        for scope in (self.args, self.row if isinstance(self.row, dict) else {}, self.givens):
            if head in scope:
                return dig(scope[head], rest) if rest else scope[head]
        if head == "row" and isinstance(self.row, dict):  # {row.order_id}: a veto rule's row
            return dig(self.row, rest) if rest else self.row
        raise ToolError(f"template names unknown value {name!r}")


def literal_value(text: str, env: Env) -> Any:
    filled = interpolate(text, env.lookup, env.steps)
    if not isinstance(filled, str):
        return filled
    try:
        return yaml.safe_load(filled) if filled else filled
    except yaml.YAMLError:
        return filled


def loose_eq(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return False
    if a == b:
        return True
    scalar = (str, int, float, bool, date)
    return isinstance(a, scalar) and isinstance(b, scalar) and str(jsonable(a)) == str(jsonable(b))


def resolve(operand: Operand, env: Env) -> Any:
    if isinstance(operand, str):
        return literal_value(operand, env)
    if isinstance(operand, Talk):
        if env.trajectory is None:
            return MISSING
        if operand.func == "turns":
            return dialogue.turns(env.trajectory)
        return dialogue.event(operand.func, operand.arg, env.trajectory, env.output)
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
            want = [(k, literal_value(v, env)) for k, v in arg]
            value = [
                r
                for r in value
                if isinstance(r, dict) and all(loose_eq(r.get(k, MISSING), v) for k, v in want)
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
        return ok != expr.negate, f"{expr.text}: found {left!r}"
    right = resolve(expr.right, env)  # type: ignore[arg-type]
    ok = _compare(left, expr.op, right)
    return ok, f"{expr.text}: found {left!r}" + (
        "" if isinstance(expr.right, str) else f" vs {right!r}"
    )


def _compare(a: Any, op: str, b: Any) -> bool:
    if op == "==":
        return loose_eq(a, b) or (a is MISSING and b is None)
    if op == "!=":
        return not (loose_eq(a, b) or (a is MISSING and b is None))
    if a is MISSING or b is MISSING:
        return False
    if op == "before":
        return isinstance(a, list) and isinstance(b, list) and dialogue.before(a, b)
    try:
        if op in ("in", "not in"):
            inside = any(loose_eq(a, x) for x in b) if isinstance(b, list) else str(a) in str(b)
            return inside if op == "in" else not inside
        if op == "contains":
            return any(loose_eq(x, b) for x in a) if isinstance(a, list) else str(b) in str(a)
        if op == "matches":
            return re.search(str(b), str(a)) is not None
        return bool({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])
    except TypeError:
        return False
