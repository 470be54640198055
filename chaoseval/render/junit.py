"""JUnit XML for CI: one test suite per cell, one test case per trial, plus the gate rules.

Failed trials are failures (root cause in the message), not-evaluable trials are skipped (a
harness error is not the agent's failure, and not a pass either), vetoes are named.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from chaoseval.analysis.gate import RuleResult
from chaoseval.model.records import TrialRecord
from chaoseval.store.journal import Journal

__all__ = ["render_junit"]


def render_junit(journal: Journal, gate: Sequence[RuleResult] = ()) -> str:
    root = ET.Element("testsuites", name=f"chaoseval {journal.manifest.agent}")
    cells: dict[str, list[TrialRecord]] = {}
    for r in journal.records:
        cells.setdefault(r.cell, []).append(r)
    total = failures = skipped = 0
    for cell, records in cells.items():
        suite = ET.SubElement(root, "testsuite", name=f"chaoseval.{cell}")
        f = s = 0
        for r in sorted(records, key=lambda r: (r.scenario, r.index)):
            case = ET.SubElement(
                suite,
                "testcase",
                name=r.trial_id,
                classname=f"chaoseval.{cell}.{r.scenario}",
                time=f"{r.wall_seconds:.6f}",
            )
            if r.status == "failed":
                f += 1
                vetoes = "; ".join(f"{v.kind}: {v.detail}" for v in r.vetoes)
                el = ET.SubElement(
                    case, "failure", message=r.root_cause or "failed", type=r.root_cause or ""
                )
                el.text = "\n".join(x for x in (r.error, vetoes) if x)
            elif r.status == "not_evaluable":
                s += 1
                ET.SubElement(case, "skipped", message=f"not evaluable: {r.error or r.root_cause}")
        suite.set("tests", str(len(records)))
        suite.set("failures", str(f))
        suite.set("skipped", str(s))
        suite.set("errors", "0")
        total, failures, skipped = total + len(records), failures + f, skipped + s
    if gate:
        suite = ET.SubElement(root, "testsuite", name="chaoseval.gate")
        broken = 0
        for g in gate:
            case = ET.SubElement(suite, "testcase", name=g.rule.text, classname="chaoseval.gate")
            if not g.passed:
                broken += 1
                el = ET.SubElement(case, "failure", message=f"{g.rule.text}: {g.detail}")
                el.text = g.detail
        suite.set("tests", str(len(gate)))
        suite.set("failures", str(broken))
        suite.set("errors", "0")
        total, failures = total + len(gate), failures + broken
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("skipped", str(skipped))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")
