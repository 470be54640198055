"""CI gates: rules over a journal's analysis, each reported with its measured value.

Rule grammar (spaces optional, operators ``>= <= > < == !=``):

- ``pass^5 >= 0.90``, ``pass@2 > 0.5``, ``mean >= 0.8``: on the clean cell; a selector picks
  others: ``pass^5[timeout] >= 0.5`` (one cell) or ``pass^5[*] >= 0.5`` (every cell);
- ``max-degradation pass^5 <= 0.10``: the largest drop ``clean - perturbed`` (paired, on the
  tasks both cells score) over the perturbed cells, or over those named with ``--perturbation``;
- ``safety-violations == 0``, ``hallucinations == 0``, ``not-evaluable == 0``: trials with such
  a veto (or status) in any cell.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chaoseval.analysis.aggregate import CLEAN
from chaoseval.analysis.build import Analysis
from chaoseval.errors import ConfigError

__all__ = ["Rule", "RuleResult", "evaluate", "parse_rule"]

OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
COUNTERS = ("safety-violations", "hallucinations", "not-evaluable")
_NUM = r"(?P<value>[-+]?(?:\d+\.?\d*|\.\d+))"
_OP = r"(?P<op>>=|<=|==|!=|>|<)"
_METRIC = r"(?P<metric>mean|pass[@^]\d+)"
_ABS = re.compile(rf"^{_METRIC}(?:\[(?P<cell>[^\]]+)\])?\s*{_OP}\s*{_NUM}$")
_DEG = re.compile(rf"^max-degradation\s+{_METRIC}\s*{_OP}\s*{_NUM}$")
_CNT = re.compile(rf"^(?P<counter>{'|'.join(COUNTERS)})\s*{_OP}\s*{_NUM}$")


@dataclass(frozen=True)
class Rule:
    text: str
    kind: str  # metric | degradation | counter
    op: str
    value: float
    metric: str | None = None
    k: int | None = None
    cell: str | None = None
    counter: str | None = None


@dataclass(frozen=True)
class RuleResult:
    rule: Rule
    passed: bool
    measured: float | None
    detail: str

    def message(self) -> str:
        state = "ok    " if self.passed else "BROKEN"
        return f"{state} {self.rule.text}: {self.detail}"


def parse_rule(text: str) -> Rule:
    t = " ".join(text.strip().split())
    if m := _ABS.match(t):
        metric, k = _split_metric(m["metric"])
        return Rule(t, "metric", m["op"], float(m["value"]), metric, k, m["cell"] or CLEAN)
    if m := _DEG.match(t):
        metric, k = _split_metric(m["metric"])
        return Rule(t, "degradation", m["op"], float(m["value"]), metric, k)
    if m := _CNT.match(t):
        return Rule(t, "counter", m["op"], float(m["value"]), counter=m["counter"])
    raise ConfigError(
        f"cannot parse gate rule {text!r}; examples: 'pass^5>=0.90', 'pass^5[timeout]>=0.5', "
        "'max-degradation pass^5 <= 0.10', 'safety-violations == 0', 'hallucinations == 0'"
    )


def _split_metric(s: str) -> tuple[str, int | None]:
    if s == "mean":
        return "mean", None
    return ("pass@k" if s[4] == "@" else "pass^k"), int(s[5:])


def _metric_value(a: Analysis, cell: str, metric: str, k: int | None) -> float | None:
    c = a.cell(cell)
    if c is None:
        return None
    s = c.summary
    if metric == "mean":
        return s.mean
    table = s.pass_at if metric == "pass@k" else s.pass_hat
    return table.get(k or 1)


def _matches(a: Analysis, cell: str, names: Sequence[str]) -> bool:
    if not names:
        return True
    plugins = set(a.plugins.get(cell, []))
    # A stacked or swept cell also matches the name of a plugin it contains.
    return cell in names or bool(plugins & set(names))


def _fmt(x: float | None) -> str:
    return "not measurable" if x is None else f"{x:.4g}"


def evaluate(
    a: Analysis, rules: Sequence[Rule], perturbations: Sequence[str] = ()
) -> list[RuleResult]:
    """Evaluate ``rules`` on an analysis; ``perturbations`` scopes max-degradation rules."""
    out: list[RuleResult] = []
    for rule in rules:
        check = OPS[rule.op]
        if rule.kind == "counter":
            measured = float(_count(a, rule.counter or ""))
            where = ""
            if measured and rule.counter != "not-evaluable":
                kind = "safety" if rule.counter == "safety-violations" else "hallucination"
                ids = sorted({v.trial_id for v in a.vetoes if v.kind == kind})
                where = " (e.g. " + ", ".join(ids[:3]) + ")"
            out.append(
                RuleResult(rule, check(measured, rule.value), measured, f"{measured:g}{where}")
            )
        elif rule.kind == "metric":
            label = "mean" if rule.metric == "mean" else f"{rule.metric}".replace("k", str(rule.k))
            cells = [c.cell for c in a.cells] if rule.cell == "*" else [rule.cell or CLEAN]
            worst: float | None = None
            parts = []
            ok = True
            for cell in cells:
                v = _metric_value(a, cell, rule.metric or "mean", rule.k)
                parts.append(f"{label}[{cell}] = {_fmt(v)}")
                if v is None or not check(v, rule.value):
                    ok = False
                if v is not None and (worst is None or v < worst):
                    worst = v
            out.append(RuleResult(rule, ok, worst, "; ".join(parts)))
        else:
            out.append(_degradation(a, rule, perturbations))
    return out


def _degradation(a: Analysis, rule: Rule, names: Sequence[str]) -> RuleResult:
    check = OPS[rule.op]
    label = "mean" if rule.metric == "mean" else f"{rule.metric}".replace("k", str(rule.k))
    cells = [c for c in a.perturbed if _matches(a, c, names)]
    if names and not cells:
        return RuleResult(
            rule, False, None, f"no perturbed cell matches --perturbation {', '.join(names)}"
        )
    if not cells:
        return RuleResult(rule, False, None, "no perturbed cell in this journal")
    worst: tuple[float, str, str] | None = None
    parts = []
    ok = True
    for cell in cells:
        cmp = next((c for c in a.degradation.get(cell, []) if c.label == label), None)
        if cmp is None or cmp.difference is None:
            ok = False
            parts.append(f"{cell}: not measurable")
            continue
        # 0.0 - x rather than -x: no "-0" in messages.
        drop = 0.0 - cmp.difference.estimate
        ci = f"[{0.0 - cmp.difference.high:+.3f}, {0.0 - cmp.difference.low:+.3f}]"
        if not check(drop, rule.value):
            ok = False
        if worst is None or drop > worst[0]:
            worst = (drop, cell, ci)
        parts.append(f"{cell}: {drop:+.3f}")
    if worst is None:
        return RuleResult(rule, False, None, "; ".join(parts))
    detail = f"largest drop {worst[0]:+.4g} under {worst[1]} (95% CI {worst[2]}); " + "; ".join(
        parts
    )
    return RuleResult(rule, ok, worst[0], detail)


def _count(a: Analysis, counter: str) -> int:
    if counter == "not-evaluable":
        return sum(c.not_evaluable for c in a.cells)
    kind = "safety" if counter == "safety-violations" else "hallucination"
    return len({v.trial_id for v in a.vetoes if v.kind == kind})
