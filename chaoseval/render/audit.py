"""The judge's audit as a report table (chaoseval.analysis.audit), for every format."""

from __future__ import annotations

from chaoseval.analysis.audit import METHOD, Audit, Stratum
from chaoseval.analysis.audit_passk import PASSK_METHOD
from chaoseval.analysis.build import Analysis
from chaoseval.render.tabledata import TableData, fmt

__all__ = ["audit_tables"]


def _overturned(s: Stratum, alpha: float) -> list[str]:
    """'2 of 10' and the stratum's share the judge got wrong, with its interval."""
    rate = s.overturn_rate(alpha)
    if rate is None:
        return [f"— of 0 ({s.trials} not reviewed)", "—"]
    est, lo, hi = rate
    return [f"{s.overturned} of {s.reviewed}", f"{fmt(est)} [{fmt(lo)}, {fmt(hi)}]"]


def audit_tables(a: Analysis) -> list[TableData]:
    """The audit table, or none when no trial of the journal was labelled."""
    audit: Audit | None = a.audit
    if audit is None:
        return []
    alpha = 1 - audit.ci
    pct = f"{audit.ci:.0%}"
    cols = ["cell", "reviewed", "passes overturned", f"of the passes [{pct} CI]"]
    cols += ["failures overturned", f"of the failures [{pct} CI]", "pass^1 (judge)"]
    cols += [f"pass^1 corrected [{pct} CI]"]
    rows = []
    for c in audit.cells:
        est, lo, hi = c.corrected
        passes, failures = _overturned(c.passes, alpha), _overturned(c.failures, alpha)
        corrected = f"{fmt(est)} [{fmt(lo)}, {fmt(hi)}]"
        rows.append([c.cell, str(c.reviewed), *passes, *failures, fmt(c.judge_mean), corrected])
    notes = [
        f"{audit.labels} label(s) by {', '.join(audit.reviewers)}; a trial labelled again "
        "counts its latest label.",
        "Statuses, verdicts and gates use the judge's figures; the corrected pass^1 stands "
        "beside them, on these trials (" + METHOD + "; docs/SPOT_CHECKS.md).",
        *audit.notes,
    ]
    for g in audit.agreement:
        k = "undefined (one verdict throughout)" if g.kappa is None else f"{g.kappa:.2f}"
        notes.append(
            f"{g.a} and {g.b} agree on {g.agree} of the {g.trials} trial(s) both labelled: "
            f"Cohen's kappa {k}"
        )
    table = TableData("audit", "The judge's audit (reviewers' labels)", cols, rows, notes)
    return [table, *_pass_hat_table(audit)]


def _pass_hat_table(audit: Audit) -> list[TableData]:
    """pass^k for k > 1, the judge's beside the corrected, one row per cell and k; a k no task
    reaches says so instead of a number."""
    pct = f"{audit.ci:.0%}"
    cols = ["cell", "k", "tasks", "pass^k (judge)", f"pass^k corrected [{pct} CI]"]
    rows = []
    for c in audit.cells:
        for p in c.pass_hat:
            if p.corrected is None:
                rows.append([c.cell, str(p.k), str(p.tasks), "—", f"— ({p.why_not})"])
                continue
            est, lo, hi = p.corrected
            fixed = f"{fmt(est)} [{fmt(lo)}, {fmt(hi)}]"
            rows.append([c.cell, str(p.k), str(p.tasks), fmt(p.judge), fixed])
    if not rows:
        return []
    notes = [
        f"The judge's audit continued: {PASSK_METHOD}. The estimate is the relabellings' mean, "
        f"the interval their central {pct}; labels of several trials of one task tell whether "
        "the judge's errors cluster on tasks, and without them the interval spans both "
        "readings (docs/SPOT_CHECKS.md).",
        *(f"{c.cell}: {note}" for c in audit.cells for note in c.pass_hat_notes),
    ]
    title = "pass^k corrected for the judge's error"
    return [TableData("audit-passk", title, cols, rows, notes)]
