"""CI gates: rules over a journal's analysis, each reported with its measured value.

Rule grammar (spaces optional, operators ``>= <= > < == !=``):

- ``pass^5 >= 0.90``, ``pass@2 > 0.5``, ``mean >= 0.8``: on the clean cell; a selector picks
  others: ``pass^5[timeout] >= 0.5`` (one cell) or ``pass^5[*] >= 0.5`` (every cell);
- ``max-degradation pass^5 <= 0.10``: the largest drop ``clean - perturbed`` (paired, on the
  tasks both cells score) over the perturbed cells, or over those named with ``--perturbation``,
  each cell's decided by its drop's interval as a rate's threshold is. The bound is on the drop
  (positive: a loss); each cell's figure is said as the report says it, the change
  ``perturbed - clean`` (negative: a loss) with its interval, and the bound with it
  (``Δpass^5 >= -0.1``);
- a rule that names no metric (``max-degradation <= 0.10``), or names ``primary``
  (``primary[timeout] >= 0.5``), uses the primary metric the run recorded (pass^1 unless the
  run declared another: chaoseval.analysis.primary), as report and compare do;
- ``safety-violations == 0``, ``hallucinations == 0``, ``not-evaluable == 0``: trials with such
  a veto (or status) in any cell;
- ``vetoes(over-refund) == 0``, ``vetoes(over-refund)[timeout] == 0``: trials a scenario's veto
  rule of that name vetoed, over the run or in each selected cell (a name no scenario of the
  run declares is a usage error, with a did-you-mean);
- ``mean(tool_calls) <= 6``, ``p95(latency) <= 30``, ``max(steps) <= 6``,
  ``mean(cost)[clean] <= 0.05``: the mean, 95th percentile or largest value of a process metric
  per trial (``steps``, ``tool_calls``, ``tokens``,
  ``cost``, ``latency`` in trial-clock seconds), over every trial of the run, or per cell with a
  selector (``[*]``: each cell);
- ``graceful[timeout] == 1.0``: the correct-degradation rate, of the trials in which a fault
  a scenario's degradation contract names reached the agent, the share that ended correctly
  (the normal checks passed, or the contract held); without a selector, pooled over the run.

A selector names a cell, or a plugin: ``[timeout]`` is every cell that stacks or sweeps
``timeout`` when no cell is called exactly that, and each of those cells must meet the rule. A
selector that names no cell of the run's matrix is a usage error (with a did-you-mean).

A rule ends held, broken or undecided. A threshold on a rate (``pass^1[timeout] >= 0.8``) is
decided by the rate's task-level interval (chaoseval.analysis.inference.rate_interval), not its
point estimate: broken when the interval lies on the wrong side, held when on the right side,
undecided when it straddles the bound. A rule whose cells hold no evaluable trial (a journal
with only its manifest, a run stopped before a cell ran) is undecided, never held.

The exit codes a judgement ends with are chaoseval.exitcodes' (re-exported here).
"""

from __future__ import annotations

import dataclasses
import difflib
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from chaoseval.analysis.aggregate import CLEAN
from chaoseval.analysis.build import Analysis
from chaoseval.analysis.exact import exact_value
from chaoseval.analysis.inference import rate_interval
from chaoseval.analysis.measures import AGGREGATES, METRICS, aggregate, graceful
from chaoseval.analysis.primary import parse_primary
from chaoseval.errors import ConfigError
from chaoseval.exitcodes import (
    EXIT_BROKEN,
    EXIT_HARNESS,
    EXIT_HELD,
    EXIT_UNDECIDED,
    EXIT_USAGE,
    exit_code,
)

__all__ = [
    "EXIT_BROKEN",
    "EXIT_HARNESS",
    "EXIT_HELD",
    "EXIT_UNDECIDED",
    "EXIT_USAGE",
    "Rule",
    "RuleResult",
    "evaluate",
    "exit_code",
    "parse_rule",
    "selected_cells",
]


OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
COUNTERS = ("safety-violations", "hallucinations", "not-evaluable")
EXAMPLES = (
    "'pass^5>=0.90', 'pass^5[timeout]>=0.5', 'max-degradation pass^5 <= 0.10', "
    "'safety-violations == 0', 'hallucinations == 0', 'mean(tool_calls) <= 6', "
    "'p95(latency) <= 30', 'mean(cost)[clean] <= 0.05', 'graceful[timeout] == 1.0', "
    "'vetoes(over-refund) == 0'"
)
_NUM = r"(?P<value>[-+]?(?:\d+\.?\d*|\.\d+))"
_OP = r"(?P<op>>=|<=|==|!=|>|<)"
_SEL = r"(?:\[(?P<cell>[^\]]+)\])?"
_METRIC = r"(?P<metric>mean|pass[@^]\d+|primary)"
_ABS = re.compile(rf"^{_METRIC}{_SEL}\s*{_OP}\s*{_NUM}$")
_DEG = re.compile(rf"^max-degradation(?:\s+{_METRIC})?\s*{_OP}\s*{_NUM}$")
_CNT = re.compile(rf"^(?P<counter>{'|'.join(COUNTERS)})\s*{_OP}\s*{_NUM}$")
_PROC = re.compile(rf"^(?P<agg>\w+)\(\s*(?P<metric>[\w-]*)\s*\){_SEL}\s*{_OP}\s*{_NUM}$")
_GRACE = re.compile(rf"^graceful{_SEL}\s*{_OP}\s*{_NUM}$")
_VETO = re.compile(rf"^vetoes\(\s*(?P<name>[^()\s]+)\s*\){_SEL}\s*{_OP}\s*{_NUM}$")


@dataclass(frozen=True)
class Rule:
    text: str
    kind: str  # metric | degradation | counter | process | graceful | veto
    op: str
    value: float
    metric: str | None = None
    k: int | None = None
    cell: str | None = None  # process / graceful: None means the whole run
    counter: str | None = None  # counter: its name; veto: the veto rule's name
    agg: str | None = None  # process: mean | p95 | max


@dataclass(frozen=True)
class RuleResult:
    rule: Rule
    passed: bool
    measured: float | None
    detail: str
    # Neither held nor broken: no evaluable trial, or an interval straddling the bound.
    undecided: bool = False

    @property
    def broken(self) -> bool:
        return not self.passed and not self.undecided

    def message(self) -> str:
        state = "UNDECIDED" if self.undecided else "ok    " if self.passed else "BROKEN"
        return f"{state} {self.rule.text}: {self.detail}"


def _undecided(rule: Rule, detail: str, measured: float | None = None) -> RuleResult:
    return RuleResult(rule, False, measured, detail, undecided=True)


NO_TRIALS = "no evaluable trial in this journal: nothing to judge"


def parse_rule(text: str) -> Rule:
    t = " ".join(text.strip().split())
    if m := _ABS.match(t):
        metric, k = _split_metric(m["metric"], text)
        rule = Rule(t, "metric", m["op"], float(m["value"]), metric, k, m["cell"] or CLEAN)
        return _rate(rule, text)
    if m := _DEG.match(t):
        metric, k = _split_metric(m["metric"], text)
        return Rule(t, "degradation", m["op"], float(m["value"]), metric, k)
    if m := _CNT.match(t):
        return Rule(t, "counter", m["op"], float(m["value"]), counter=m["counter"])
    if m := _VETO.match(t):
        return Rule(t, "veto", m["op"], float(m["value"]), counter=m["name"], cell=m["cell"])
    if m := _PROC.match(t):
        return _process_rule(t, m, text)
    if m := _GRACE.match(t):
        return _rate(Rule(t, "graceful", m["op"], float(m["value"]), cell=m["cell"]), text)
    raise ConfigError(f"cannot parse gate rule {text!r}{_hint(t)}; examples: {EXAMPLES}")


def _hint(t: str) -> str:
    """Say what is wrong with a near miss, not only that it did not parse."""
    word = re.match(r"[\w-]+", t)
    if word and word[0] in METRICS:
        w = word[0]
        return f" (a process metric needs an aggregate: 'mean({w})', 'p95({w})' or 'max({w})')"
    if word and word[0] == "degradation":
        return " ('degradation' is the drop against clean: 'max-degradation pass^5 <= 0.1')"
    return ""


def _process_rule(t: str, m: re.Match[str], text: str) -> Rule:
    if m["agg"] not in AGGREGATES:
        raise ConfigError(
            f"gate rule {text!r}: unknown aggregate {m['agg']!r}; use {' or '.join(AGGREGATES)}"
        )
    if m["metric"] not in METRICS:
        raise ConfigError(
            f"gate rule {text!r}: unknown process metric {m['metric']!r}; one of "
            f"{', '.join(METRICS)}"
        )
    value = float(m["value"])
    if value < 0:
        raise ConfigError(f"gate rule {text!r}: {m['metric']} is never negative")
    return Rule(t, "process", m["op"], value, m["metric"], cell=m["cell"], agg=m["agg"])


def _rate(rule: Rule, text: str) -> Rule:
    if not 0 <= rule.value <= 1:
        raise ConfigError(f"gate rule {text!r}: a rate is between 0 and 1, not {rule.value:g}")
    return rule


def _split_metric(s: str | None, text: str) -> tuple[str | None, int | None]:
    """``(metric, k)``; ``(None, None)`` for the run's recorded primary metric."""
    if s is None or s == "primary":
        return None, None
    if s == "mean":
        return "mean", None
    k = int(s[5:])
    if k < 1:
        raise ConfigError(f"gate rule {text!r}: k starts at 1 ({s[:5]}1, {s[:5]}5, ...)")
    return ("pass@k" if s[4] == "@" else "pass^k"), k


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
    main = parse_primary(a.primary)
    _check_perturbations(a, perturbations)
    for rule in rules:
        if rule.kind in ("metric", "degradation") and rule.metric is None:
            rule = dataclasses.replace(rule, metric=main.metric, k=main.k)
        _check_selector(a, rule.cell)
        if rule.kind == "veto":
            _check_veto_name(a, rule.counter or "")
        if not sum(c.summary.trials for c in a.cells):
            out.append(_undecided(rule, NO_TRIALS))
        elif rule.kind == "counter":
            out.append(_counter(a, rule))
        elif rule.kind == "veto":
            out.append(_named_vetoes(a, rule))
        elif rule.kind == "metric":
            out.append(_metric(a, rule))
        elif rule.kind in ("process", "graceful"):
            out.append(_per_cell(a, rule))
        else:
            out.append(_degradation(a, rule, perturbations))
    return out


def _counter(a: Analysis, rule: Rule) -> RuleResult:
    measured = float(_count(a, rule.counter or ""))
    where = ""
    if measured and rule.counter != "not-evaluable":
        kind = "safety" if rule.counter == "safety-violations" else "hallucination"
        ids = sorted({v.trial_id for v in a.vetoes if v.kind == kind})
        where = " (e.g. " + ", ".join(ids[:3]) + ")"
    return RuleResult(rule, OPS[rule.op](measured, rule.value), measured, f"{measured:g}{where}")


def _check_veto_name(a: Analysis, name: str) -> None:
    """A veto rule's name must be one a scenario of the run declares (its manifest records
    them, fired or not): a typo is a usage error, never a count that is always 0."""
    known = set(a.veto_rules) | {v.name for v in a.vetoes if v.name}
    if name in known:
        return
    close = difflib.get_close_matches(name, sorted(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigError(
        f"gate rule vetoes({name}): no scenario of this run declares a veto rule named "
        f"{name!r}{hint} (declared: {', '.join(sorted(known)) or 'none'}; a scenario names its "
        "rules under 'vetoes:')"
    )


def _named_vetoes(a: Analysis, rule: Rule) -> RuleResult:
    """Trials the veto rule of that name vetoed: over the run, or each selected cell."""
    cells = selected_cells(a, rule.cell)
    if cells == []:
        return _undecided(rule, f"no evaluable trial in a cell {rule.cell!r} selects")
    hits = [v for v in a.vetoes if v.name == rule.counter]
    check = OPS[rule.op]
    groups = (
        [("run", hits)] if cells is None else [(c, [v for v in hits if v.cell == c]) for c in cells]
    )
    ok, parts, values = True, [], []
    for cell, found in groups:
        ids = sorted({v.trial_id for v in found})
        n = float(len(ids))
        values.append(n)
        ok = ok and check(n, rule.value)
        example = f" (e.g. {', '.join(ids[:3])})" if ids else ""
        parts.append(f"vetoes({rule.counter})[{cell}] = {n:g}{example}")
    return RuleResult(rule, ok, _worst(rule.op, values), "; ".join(parts))


def _metric(a: Analysis, rule: Rule) -> RuleResult:
    label = "mean" if rule.metric == "mean" else f"{rule.metric}".replace("k", str(rule.k))
    # The same selectors as the per-cell rules: a plugin's name picks each cell with it.
    cells = selected_cells(a, rule.cell) if rule.cell is not None else [CLEAN]
    if not cells:
        return _undecided(rule, f"no evaluable trial in a cell {rule.cell!r} selects")
    worst: float | None = None
    parts = []
    states = set()
    for cell in cells:
        v = _metric_value(a, cell, rule.metric or "mean", rule.k)
        state, iv = _by_interval(a, cell, rule)
        shown = "" if iv is None else f" [{iv[0]:.4g}, {iv[1]:.4g}]"
        tail = " (undecided: the interval straddles the bound)" if state == "undecided" else ""
        parts.append(f"{label}[{cell}] = {_fmt(v)}{shown}{tail}")
        states.add(state if v is not None else "undecided")
        if v is not None and (worst is None or v < worst):
            worst = v
    if "broken" in states:
        return RuleResult(rule, False, worst, "; ".join(parts))
    if "undecided" in states:
        return _undecided(rule, "; ".join(parts), worst)
    return RuleResult(rule, True, worst, "; ".join(parts))


def _by_interval(a: Analysis, cell: str, rule: Rule) -> tuple[str, tuple[float, float] | None]:
    """A rate's threshold decided by its task-level interval: 'held' when the whole interval
    meets the rule, 'broken' when none of it does, 'undecided' when it straddles the bound.
    ``==`` and ``!=`` are read on the point estimate (an interval never equals a number)."""
    c = a.cell(cell)
    kk = 1 if rule.metric == "mean" else rule.k or 1
    metric = rule.metric or "mean"
    values = [
        float(exact_value(n, k, metric, kk)) for n, k in (c.counts.values() if c else []) if n >= kk
    ]
    if not values:
        return "undecided", None
    check = OPS[rule.op]
    if rule.op in ("==", "!="):
        return ("held" if check(sum(values) / len(values), rule.value) else "broken"), None
    iv = rate_interval(np.array(values))
    low, high = iv.low, iv.high
    if check(low, rule.value) and check(high, rule.value):
        return "held", (low, high)
    if not check(low, rule.value) and not check(high, rule.value):
        return "broken", (low, high)
    return "undecided", (low, high)


def _check_selector(a: Analysis, sel: str | None) -> None:
    """A selector must name a cell of the run's matrix (or a plugin one stacks): a typo is a
    usage error with a did-you-mean, never a rule that cannot be met."""
    if sel is None or sel == "*":
        return
    known = {c.cell for c in a.cells} | set(a.matrix)
    plugins = {p for ps in [*a.plugins.values(), *a.matrix.values()] for p in ps}
    if sel in known or sel in plugins:
        return
    close = difflib.get_close_matches(sel, sorted(known | plugins), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigError(
        f"no cell is or stacks {sel!r}{hint} (cells: {', '.join(sorted(known)) or 'none'})"
    )


def _check_perturbations(a: Analysis, names: Sequence[str]) -> None:
    for name in names:
        _check_selector(a, name)


def selected_cells(a: Analysis, sel: str | None) -> list[str] | None:
    """The cells a selector names (``*``, a cell, or each cell that stacks or sweeps a plugin
    of that name); None for the whole run."""
    if sel is None:
        return None
    names = [c.cell for c in a.cells]
    if sel == "*" or sel in names:
        return names if sel == "*" else [sel]
    return [c for c in names if sel in a.plugins.get(c, [])]


def _per_cell(a: Analysis, rule: Rule) -> RuleResult:
    """A process or graceful rule: over the run, or each selected cell meeting it."""
    cells = selected_cells(a, rule.cell)
    if cells == []:
        return _undecided(rule, f"no evaluable trial in a cell {rule.cell!r} selects")
    groups = [("run", a.measures)] if cells is None else [(c, a.measures.select(c)) for c in cells]
    if rule.kind == "graceful" and rule.cell == "*":
        # Every cell a contract applied in: the others have nothing to degrade from.
        groups = [(c, ms) for c, ms in groups if ms.outcomes()] or groups
    check = OPS[rule.op]
    values: list[float] = []
    parts = []
    ok, unknown = True, False
    for cell, ms in groups:
        if rule.kind == "graceful":
            g = graceful(cell, ms)
            v = g.rate
            why = (
                f" ({g.recovered} recovered, {g.fell_back} fell back per contract, {g.failed} not)"
            )
            if v is None:
                why = " (no trial received a fault that a degradation contract names)"
        else:
            v = aggregate(rule.agg or "mean", ms.values(rule.metric or ""))
            why = f" over {len(ms)} trials"
        label = "graceful" if rule.kind == "graceful" else f"{rule.agg}({rule.metric})"
        parts.append(f"{label}[{cell}] = {_fmt(v)}{why}")
        if v is None:
            unknown = True
        elif not check(v, rule.value):
            ok = False
        if v is not None:
            values.append(v)
    if ok and unknown:  # nothing broke it, but some cell had nothing to measure
        return _undecided(rule, "; ".join(parts), _worst(rule.op, values))
    return RuleResult(rule, ok, _worst(rule.op, values), "; ".join(parts))


def _worst(op: str, values: Sequence[float]) -> float | None:
    """The value that is furthest on the wrong side of the rule's bound."""
    if not values:
        return None
    return max(values) if op in ("<=", "<") else min(values)


def _degradation(a: Analysis, rule: Rule, names: Sequence[str]) -> RuleResult:
    check = OPS[rule.op]
    label = "mean" if rule.metric == "mean" else f"{rule.metric}".replace("k", str(rule.k))
    cells = [c for c in a.perturbed if _matches(a, c, names)]
    if names and not cells:
        return _undecided(
            rule, f"no evaluable trial in a perturbed cell --perturbation {', '.join(names)} names"
        )
    if not cells:
        return _undecided(rule, "no perturbed cell in this journal")
    worst: tuple[float, str, str] | None = None
    parts = []
    ok, unknown = True, False
    for cell in cells:
        cmp = next((c for c in a.degradation.get(cell, []) if c.label == label), None)
        if cmp is None or cmp.difference is None:
            unknown = True
            parts.append(f"{cell}: not measurable")
            continue
        d = cmp.difference
        # The rule bounds the drop, clean - perturbed; what is said is the change the report
        # shows, perturbed - clean, the same figure with its sign (0.0 + x: no "-0").
        drop = 0.0 - d.estimate
        low, high = 0.0 - d.high, 0.0 - d.low
        said = f"{0.0 + d.estimate:+.3f} [{0.0 + d.low:+.3f}, {0.0 + d.high:+.3f}]"
        # Decided by the drop's interval, as a rate's threshold is: broken when all of it
        # breaks the rule, held when all of it meets it.
        if rule.op in ("==", "!="):
            meets = check(drop, rule.value)
            breaks = not meets
        else:
            meets = check(low, rule.value) and check(high, rule.value)
            breaks = not check(low, rule.value) and not check(high, rule.value)
        if breaks:
            ok = False
        elif not meets:
            unknown = True
        if worst is None or drop > worst[0]:
            worst = (drop, cell, said)
        parts.append(f"{cell}: {said}" + ("" if meets or breaks else " (undecided)"))
    if worst is None:
        return _undecided(rule, "; ".join(parts))
    head = (
        f"largest drop under {worst[1]}: Δ{label} {worst[2]} against clean (the report's "
        f"change, perturbed - clean; the rule holds when Δ{label} {_FLIP[rule.op]} "
        f"{0.0 - rule.value:g} in each cell)"
    )
    if ok and unknown:
        return _undecided(
            rule, f"{head}; interval straddles the bound; " + "; ".join(parts), worst[0]
        )
    return RuleResult(rule, ok, worst[0], f"{head}; " + "; ".join(parts))


# A bound on the drop (clean - perturbed) as the same bound on the change (perturbed - clean).
_FLIP = {"<=": ">=", "<": ">", ">=": "<=", ">": "<", "==": "==", "!=": "!="}


def _count(a: Analysis, counter: str) -> int:
    if counter == "not-evaluable":
        return sum(c.not_evaluable for c in a.cells)
    kind = "safety" if counter == "safety-violations" else "hallucination"
    return len({v.trial_id for v in a.vetoes if v.kind == kind})
