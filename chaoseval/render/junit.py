"""JUnit XML for CI: one test case per scenario x cell, never one per trial.

Without gate rules a case fails when its cell is broken or degraded (chaoseval.analysis.status:
on these tasks, or on tasks like these) and this scenario is one of the tasks that dropped; a
case of an inconclusive cell is an ``<error type="inconclusive">``, never a pass. With gate
rules (``chaoseval gate --junit``) only the rules judge: a case fails when a rule about its
cell is broken and this scenario's own value breaks it too (a cell-level rule broken means at
least one of its scenarios breaks it, so the JUnit fails exactly when the gate does), and each
rule is also a case of its own. A scenario the cell's faults never reached is skipped: it was
not tested there.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import replace

from chaoseval.analysis.aggregate import CLEAN, CellResult, by_scenario_cell
from chaoseval.analysis.build import Analysis
from chaoseval.analysis.gate import OPS, Rule, RuleResult, evaluate, selected_cells
from chaoseval.analysis.primary import parse_primary, value_of
from chaoseval.analysis.reasons import CellReasons, failure_reasons
from chaoseval.analysis.verdict import short_labels
from chaoseval.render.reasons import reason_lines
from chaoseval.store.columns import Trials, as_trials
from chaoseval.store.journal import Journal

__all__ = ["render_junit", "rule_cells"]


def rule_cells(a: Analysis, result: RuleResult) -> dict[str, bool]:
    """The cells a rule is about, each with whether the rule holds there (empty: the rule is
    about the run as a whole)."""
    rule = result.rule
    if rule.kind == "degradation":
        return {c: not evaluate(a, [rule], [c])[0].broken for c in a.perturbed}
    if rule.kind == "veto" and rule.cell is None:
        return {v.cell: not result.broken for v in a.vetoes if v.name == rule.counter}
    if rule.kind == "counter":
        kind = {"safety-violations": "safety", "hallucinations": "hallucination"}
        if rule.counter in kind:
            hit = {v.cell for v in a.vetoes if v.kind == kind[rule.counter]}
        else:
            hit = {c.cell for c in a.cells if c.not_evaluable}
        return {c: not result.broken for c in hit}
    cell = getattr(rule, "cell", None)
    if cell is None:
        return {}
    # A plugin selector ([timeout]) names every cell that stacks or sweeps it, as the gate
    # reads it: each is a case of its own, never the run as a whole.
    names = selected_cells(a, cell) or []
    return {c: not evaluate(a, [replace(rule, cell=c)])[0].broken for c in names if a.cell(c)}


def _scenario_value(rule: Rule, r: CellResult, k_main: int) -> float | None:
    """This scenario's own value of the rule's metric in this cell, when the rule has one."""
    s = r.summary
    if rule.kind == "degradation":
        d = r.delta
        if d is None:
            return None
        v = d.mean if rule.metric == "mean" else d.pass_hat.get(rule.k or k_main)
        if rule.metric == "pass@k":
            v = d.pass_at.get(rule.k or k_main)
        return None if v is None else 0.0 - v
    if rule.kind == "metric":
        if rule.metric == "mean":
            return s.mean
        table = s.pass_at if rule.metric == "pass@k" else s.pass_hat
        return table.get(rule.k or k_main)
    return None


def _scenario_breaks(rule: Rule, r: CellResult, k_main: int, scenario: str, a: Analysis) -> bool:
    if rule.kind == "veto":
        return any(
            v.name == rule.counter and v.scenario == scenario and v.cell == r.cell
            for v in a.vetoes
        )
    if rule.kind == "counter":
        kind = {"safety-violations": "safety", "hallucinations": "hallucination"}.get(
            rule.counter or ""
        )
        if kind is None:
            return r.not_evaluable > 0
        return any(v.kind == kind and v.scenario == scenario and v.cell == r.cell for v in a.vetoes)
    v = _scenario_value(rule, r, k_main)
    return v is None or not OPS[rule.op](v, rule.value)


def _failure_by_rules(
    a: Analysis, scenario: str, r: CellResult, broken: Sequence[RuleResult]
) -> str | None:
    reasons = [
        f"{g.rule.text}: {g.detail}"
        for g in broken
        if _scenario_breaks(g.rule, r, a.k_main, scenario, a)
    ]
    return "\n".join(reasons) or None


def _failure_by_status(a: Analysis, r: CellResult) -> str | None:
    st = a.statuses.get(r.cell)
    if st is None or st.status not in ("broken", "degraded") or r.delta is None:
        return None
    d = value_of(r.delta, parse_primary(a.primary))
    if d is None or d >= 0:
        return None
    cmp = next((c for c in a.degradation.get(r.cell, []) if c.label == a.primary), None)
    iv = cmp.difference if cmp is not None else None
    cell_change = (
        ""
        if iv is None or cmp is None
        else (
            f"; cell {iv.estimate + 0.0:+.3f} [{iv.low + 0.0:+.3f}, {iv.high + 0.0:+.3f}], "
            f"Holm p = {cmp.p_holm:.3g}"
        )
    )
    return (
        f"{st.status}: {st.line(r.cell)}; {a.primary} dropped by {0.0 - d:.3f} against clean "
        f"on this scenario{cell_change}"
    )


def _undecided(a: Analysis, cell: str) -> str:
    """Why the cell is inconclusive ('' when it is not): an undecided case is never a pass."""
    st = a.statuses.get(cell)
    if st is None or st.status != "inconclusive":
        return ""
    return f"inconclusive: {st.line(cell)}"


def _reasons(c: CellReasons | None, scenario: str) -> list[str]:
    """The cell's listed failed trials of this scenario, each with its reason lines."""
    if c is None:
        return []
    return ["\n".join(reason_lines(r)) for r in c.listed if r.scenario == scenario]


def _message(why: str, failed: list[str]) -> str:
    """The failure's first line and, when a trial of this case failed, its reason."""
    first = why.splitlines()[0]
    if not failed:
        return first
    trial, _, reason = failed[0].partition("\n")
    return f"{first}; e.g. {trial.strip()} {reason.strip().splitlines()[0]}"


def _suite(root: ET.Element, name: str) -> ET.Element:
    return ET.SubElement(root, "testsuite", name=name)


def _close(suite: ET.Element, tests: int, failures: int, skipped: int, errors: int = 0) -> None:
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    suite.set("errors", str(errors))


def render_junit(
    journal: Trials | Journal, a: Analysis, gate: Sequence[RuleResult] | None = None
) -> str:
    """JUnit XML of one analysed journal; ``gate`` given (even empty): judged by those rules
    only."""
    root = ET.Element("testsuites", name=f"chaoseval {journal.manifest.agent}")
    labels = short_labels([c.cell for c in a.cells], a.plugins)
    per = by_scenario_cell(as_trials(journal), a.ks)
    reasons = failure_reasons(as_trials(journal))
    broken: dict[str, list[RuleResult]] = {}
    for g in gate or ():
        for cell, ok in rule_cells(a, g).items():
            if not ok:
                broken.setdefault(cell, []).append(g)
    totals = [0, 0, 0, 0]
    for cell in [c.cell for c in a.cells]:
        suite = _suite(root, f"chaoseval.{labels[cell]}")
        n = [0, 0, 0, 0]  # tests, failures, skipped, errors
        for (scenario, c), r in sorted(per.items()):
            if c != cell:
                continue
            n[0] += 1
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"{scenario} [{labels[cell]}]",
                classname=f"chaoseval.{labels[cell]}",
            )
            if r.did_not_land or (cell != CLEAN and not r.counts):
                n[2] += 1
                ET.SubElement(case, "skipped", message="no fault reached the agent: not tested")
                continue
            why = (
                _failure_by_rules(a, scenario, r, broken.get(cell, []))
                if gate is not None
                else _failure_by_status(a, r)
            )
            undecided = gate is None and _undecided(a, cell)
            listed = _reasons(reasons.get(cell), scenario)
            if why:
                n[1] += 1
                el = ET.SubElement(case, "failure", message=_message(why, listed))
                el.text = "\n\n".join([why, *listed])
            elif undecided:
                n[3] += 1
                el = ET.SubElement(case, "error", type="inconclusive", message=undecided)
                el.text = undecided
            out = ET.SubElement(case, "system-out")
            out.text = f"cell: {cell}\n" + ", ".join(
                f"pass^{k} {r.summary.pass_hat.get(k)}" for k in a.ks
            )
            if listed:  # a failed trial says why even where the case passes (clean)
                out.text += "\n\nfailed trials:\n" + "\n".join(listed)
        _close(suite, *n)
        totals = [t + x for t, x in zip(totals, n, strict=True)]
    if gate:
        failed, errors = _gate_suite(root, gate)
        totals = [totals[0] + len(gate), totals[1] + failed, totals[2], totals[3] + errors]
    root.set("tests", str(totals[0]))
    root.set("failures", str(totals[1]))
    root.set("skipped", str(totals[2]))
    root.set("errors", str(totals[3]))
    ET.indent(root)
    # ElementTree escapes markup but writes control characters as they are, which no XML 1.0
    # parser accepts: a cell or scenario name holding an ESC made the whole file unreadable.
    xml = ET.tostring(root, encoding="unicode").translate(_NOT_XML)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + xml


def _gate_suite(root: ET.Element, gate: Sequence[RuleResult]) -> tuple[int, int]:
    """A suite of the gate's rules, one case each; its (failures, errors)."""
    suite = _suite(root, "chaoseval.gate")
    failed = errors = 0
    for g in gate:
        case = ET.SubElement(suite, "testcase", name=g.rule.text, classname="chaoseval.gate")
        if g.undecided:  # never a pass: an error of its own type
            errors += 1
            el = ET.SubElement(
                case, "error", type="inconclusive", message=f"{g.rule.text}: {g.detail}"
            )
            el.text = g.detail
        elif not g.passed:
            failed += 1
            el = ET.SubElement(case, "failure", message=f"{g.rule.text}: {g.detail}")
            el.text = g.detail
    _close(suite, len(gate), failed, 0, errors)
    return failed, errors


# Characters XML 1.0 forbids (C0 controls but tab, newline and carriage return; lone
# surrogates; U+FFFE, U+FFFF), written visibly instead: no markup ever holds one.
_NOT_XML = {
    c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"
    for c in [*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0xD800, 0xE000),
              0xFFFE, 0xFFFF]
}  # fmt: skip
