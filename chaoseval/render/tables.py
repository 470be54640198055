"""The report's tables as plain data, so every format (terminal, Markdown, HTML) shows the same
numbers from one place."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from chaoseval.analysis.aggregate import CLEAN, CellResult
from chaoseval.analysis.attack import AttackCell
from chaoseval.analysis.build import Analysis
from chaoseval.analysis.degradation import Comparison
from chaoseval.analysis.measures import graceful_by_cell
from chaoseval.analysis.simulator import simulator_line
from chaoseval.analysis.spend import Budget
from chaoseval.analysis.stats import Interval, TestResult
from chaoseval.analysis.verdict import Verdict
from chaoseval.render.audit import audit_tables
from chaoseval.render.tabledata import TableData, fmt

__all__ = [
    "VETO_SCOPE",
    "TableData",
    "budget_value",
    "cell_notes",
    "delta_cell",
    "fmt",
    "fmt_p",
    "fmt_test_p",
    "report_tables",
    "status_word",
    "veto_counts_per_cell",
    "veto_counts_text",
]


def fmt_p(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def fmt_test_p(test: TestResult | None) -> str:
    """A test's p, or "≤ floor" when it is at the smallest p its tasks can give (2 / 2^n): a
    normal tail below that is not a measurement."""
    if test is None:
        return "—"
    return f"≤{test.floor:.3g}" if test.at_floor else fmt_p(test.p_value)


def budget_value(b: Budget, attr: str) -> str:
    """One entry of a comparison's budget table: cost to 4 places, other floats to 2."""
    v = getattr(b, attr)
    if attr == "cost":
        return f"{v:.4f}"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def _ci(c: Comparison) -> str:
    d = c.difference
    return "—" if d is None else f"[{fmt(d.low, True)}, {fmt(d.high, True)}]"


def _ratio(c: Comparison) -> str:
    r = c.ratio
    if r is None:
        # The point ratio is still meaningful when some resample had a zero baseline.
        return "—" if c.ratio_estimate is None else f"{c.ratio_estimate:.2f} [undefined]"
    return f"{r.estimate:.2f} [{r.low:.2f}, {r.high:.2f}]"


def delta_cell(a: Analysis, cell: str) -> str:
    """Δ of the primary metric with its interval, starred when significant, '(n.s.)' when
    not."""
    label = a.primary
    c = next((x for x in a.degradation.get(cell, []) if x.label == label), None)
    if c is None or c.difference is None:
        return "—"
    d = c.difference
    text = f"{fmt(d.estimate, True)} [{fmt(d.low, True, 2)}, {fmt(d.high, True, 2)}]"
    return text + (" *" if c.significant else " (n.s.)")


def status_word(a: Analysis, cell: str) -> str:
    """The cell's status (chaoseval.analysis.status); blank for clean, the baseline."""
    st = a.statuses.get(cell)
    return "" if st is None else st.status


def summary_table(a: Analysis, verdict: Verdict | None = None) -> TableData:
    labels = verdict.labels if verdict else {}
    absorbed = {c.cell: c.faults_absorbed for c in verdict.cells} if verdict else {}
    cols = ["cell", "tasks", "trials", "not evaluable", "mean"]
    cols += [f"pass@{k}" for k in a.ks] + [f"pass^{k}" for k in a.ks]
    # One column for the faults, as the verdict's "injected / delivered / absorbed": three
    # columns of small numbers pushed the table past an 800 px page (issue 21 point 9).
    cols += [f"Δ{a.primary} [95% CI]", "faults injected / delivered / absorbed"]
    rows, notes = [], []
    for c in a.cells:
        s = c.summary
        rows.append(
            [labels.get(c.cell, c.cell), str(s.tasks), str(c.trials), str(c.not_evaluable)]
            + [fmt(s.mean)]
            + [fmt(s.pass_at[k]) for k in a.ks]
            + [fmt(s.pass_hat[k]) for k in a.ks]
            + [delta_cell(a, c.cell) if c.cell != CLEAN else ""]
            + [
                f"{c.faults_injected} / {c.faults_delivered} / {absorbed.get(c.cell, 0)}"
                + (" (did not land)" if c.did_not_land else "")
            ]
        )
        if c.not_evaluable:
            notes.append(
                f"{c.cell}: {c.not_evaluable} trial(s) not evaluable (harness or plugin errors, "
                "not counted against the agent)"
            )
    notes[:0] = [f"{where}: {what}" for where, what in cell_notes(a.cells)]
    if line := simulator_line(a.user_simulator):  # the simulator's, not the agent's
        notes.insert(0, line)
    notes.append(
        f"Δ{a.primary} (the primary metric): perturbed - clean on the tasks the cell reached, "
        "paired by task; "
        "* = significant (Holm-adjusted across the perturbations), (n.s.) = not significant "
        "on tasks like these (the status says what the trials show on these tasks). "
        "Absorbed: faults the client's own retry absorbed before the agent saw them."
    )
    return TableData("summary", "Reliability per cell (macro over tasks)", cols, rows, notes)


def cell_notes(cells: Sequence[CellResult]) -> list[tuple[str, str]]:
    """(where, what): each cell's gaps (CellResult.gaps), a gap shared by several cells said
    once with the cells it holds in; an interrupted run short of k trials on a task is one
    note, not one per cell."""
    held: dict[str, list[str]] = {}
    for c in cells:
        for gap in c.gaps():
            held.setdefault(gap, []).append(c.cell)
    out = []
    for gap, names in held.items():
        if len(names) == 1:
            out.append((names[0], gap))
        elif len(names) == len(cells):
            out.append((f"every cell ({len(names)})", gap))
        else:
            out.append((f"{len(names)} cells ({', '.join(names)})", gap))
    return out


def degradation_table(a: Analysis, labels: dict[str, str] | None = None) -> TableData:
    cols = ["cell", "metric", "clean", "perturbed", "Δ", "95% CI", "ratio [CI]"]
    cols += ["p", "test", "Holm", "BH", "significant", "tasks"]
    rows, notes = [], []
    wanted = {"mean"} | {f"pass^{k}" for k in a.ks}
    for cell, comps in a.degradation.items():
        first = True
        for c in comps:
            if c.label not in wanted:
                continue
            rows.append(
                [
                    (labels or {}).get(cell, cell) if first else "",
                    c.label,
                    fmt(c.b),
                    fmt(c.a),
                    fmt(c.difference.estimate if c.difference else None, True),
                    _ci(c),
                    _ratio(c),
                    fmt_test_p(c.test),
                    c.test.method if c.test else "—",
                    fmt_p(c.p_holm),
                    fmt_p(c.p_bh),
                    "yes" if c.significant else "no",
                    str(c.tasks),
                ]
            )
            first = False
    notes += _exclusion_notes(a, wanted)
    notes.append(
        "Δ = perturbed - clean, paired by task; CI: the interval that inverts the paired test; "
        "p adjusted across the perturbation family per metric (Holm: family-wise, BH: FDR)."
    )
    return TableData("degradation", "Degradation against clean", cols, rows, notes)


def _exclusion_notes(a: Analysis, wanted: set[str]) -> list[str]:
    """The tasks each comparison left out, said once per reason: one line per (cells, metrics,
    reason) with its tasks, not one per cell x metric x task (a cell that reached 10 of 44
    tasks was 136 lines for one fact)."""
    tasks: dict[tuple[str, str, str], list[str]] = {}
    for cell, comps in a.degradation.items():
        for c in comps:
            if c.label in wanted:
                for t, why in c.excluded.items():
                    tasks.setdefault((cell, why, t), []).append(c.label)
    by_fact: dict[tuple[str, str, tuple[str, ...]], list[str]] = {}
    for (cell, why, t), labels in tasks.items():
        by_fact.setdefault((cell, why, tuple(labels)), []).append(t)
    by_line: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for (cell, why, metrics), left_out in by_fact.items():
        by_line.setdefault((why, metrics, tuple(left_out)), []).append(cell)
    shown = {x.label for comps in a.degradation.values() for x in comps if x.label in wanted}
    out = []
    for (why, metrics, names), cells in by_line.items():
        which = "every metric" if set(metrics) == shown else ", ".join(metrics)
        out.append(
            f"{', '.join(cells)}: left out of {which}: {len(names)} task(s) ({why}): "
            + ", ".join(names)
        )
    return out


def noise_table(a: Analysis) -> TableData:
    cols = ["cell", "tasks", "flipping tasks", "ICC", "between var", "within var"]
    cols += ["se(mean)", "MDE paired", "MDE unpaired", "sizing"]
    rows, notes = [], []
    for n in a.noise:
        f = n.floor
        if f is None:
            rows.append([n.cell] + ["—"] * 9)
            notes.append(f"{n.cell}: {n.note}")
            continue
        sizing = "; ".join(
            f"±{s.half_width:.2f}: "
            + (
                f"{s.trials_per_task_with_these_tasks} trials/task"
                if s.trials_per_task_with_these_tasks
                else "more tasks needed"
            )
            + f" or {s.tasks_with_this_many_trials} tasks x {s.trials_per_task}"
            for s in n.sizing
        )
        rows.append(
            [
                n.cell,
                str(f.tasks),
                f"{f.flips} ({f.flip_share:.0%})",
                fmt(f.icc),
                fmt(f.between_var, digits=4),
                fmt(f.within_var, digits=4),
                fmt(f.se_mean),
                fmt(f.mde),
                fmt(f.mde_unpaired),
                sizing,
            ]
        )
    notes.append(
        "Flipping tasks: verdict differs between repeated trials. MDE: smallest difference in "
        "mean this run size detects (alpha 0.05, power 0.8). Sizing: trials per task or tasks "
        "for a 95% interval of the given half-width."
    )
    return TableData("noise", "Noise floor and run sizing", cols, rows, notes)


def root_cause_table(a: Analysis) -> TableData:
    causes = sorted({k for c in a.root_causes.values() for k in c})
    cols = ["cell", "failed", *causes]
    rows = []
    for cell, counter in a.root_causes.items():
        rows.append([cell, str(sum(counter.values()))] + [str(counter.get(k, 0)) for k in causes])
    return TableData("root-causes", "Root causes of failed trials, by cell", cols, rows)


def tag_table(a: Analysis) -> TableData:
    cols = ["tag", "scored", "failed", "root causes"]
    rows = []
    for tag in sorted(a.tag_trials):
        scored, failed = a.tag_trials[tag]
        causes = a.by_tag.get(tag)
        text = ", ".join(f"{k} {v}" for k, v in causes.most_common()) if causes else "—"
        rows.append([tag, str(scored), str(failed), text])
    return TableData("tags", "Failures by scenario tag", cols, rows)


def tool_table(a: Analysis) -> TableData:
    cols = ["tool", "calls", "not ok", "faults delivered", "failed trials", "root causes"]
    rows = []
    for tool, s in sorted(a.by_tool.items()):
        causes = ", ".join(f"{k} {v}" for k, v in s.causes.most_common()) or "—"
        rows.append(
            [
                tool,
                str(s.calls),
                str(s.not_ok),
                str(s.faults_delivered),
                str(s.failed_trials),
                causes,
            ]
        )
    notes = ["A failed trial is attributed to its first tool call that did not come back ok."]
    return TableData("tools", "Failures by tool", cols, rows, notes)


def veto_table(a: Analysis, limit: int = 50) -> TableData:
    cols = ["kind", "trial", "cell", "scenario", "detail"]
    rows = [[v.kind, v.trial_id, v.cell, v.scenario, v.detail] for v in a.vetoes[:limit]]
    notes = [
        f"Vetoes per cell ({VETO_SCOPE}): "
        + (veto_counts_text(a) or "none")
        + ". A veto fails a trial even when the task was done; never averaged away, and never "
        "summed across cells (the same agent mistake repeats in every cell it reaches)."
    ]
    if len(a.vetoes) > limit:
        notes.append(f"… and {len(a.vetoes) - limit} more (see the JSON report)")
    return TableData(
        "vetoes", "Veto items: safety violations and hallucinations", cols, rows, notes
    )


# What every per-cell veto count in a report counts (the verdict's row, the root-cause table,
# "Vetoes per cell"): trials of the tasks the cell reached, as its metrics. The items listed
# also hold the vetoes on tasks a cell's faults never reached; veto_counts_text says how many.
VETO_SCOPE = "trials with a veto, on the tasks each cell reached"


def veto_counts_per_cell(a: Analysis) -> dict[str, Counter[str]]:
    """Veto kinds per cell, in the report's cell order: the cell's own counts (CellResult),
    so every view says the same number."""
    return {c.cell: Counter(c.vetoes) for c in a.cells if c.vetoes}


def _vetoes_unreached(a: Analysis) -> int:
    """Veto items on tasks their cell's faults did not reach (left out of the counts)."""
    missed = {c.cell: set(c.not_landed) for c in a.cells}
    return sum(1 for v in a.vetoes if v.scenario in missed.get(v.cell, ()))


def veto_counts_text(a: Analysis, labels: dict[str, str] | None = None) -> str:
    text = "; ".join(
        f"{(labels or {}).get(cell, cell)}: " + ", ".join(f"{k} {n}" for k, n in sorted(c.items()))
        for cell, c in veto_counts_per_cell(a).items()
    )
    unreached = _vetoes_unreached(a)
    if text and unreached:
        text += (
            f" (and {unreached} veto item(s) on tasks no fault of their cell reached, listed "
            "with the items but not counted here)"
        )
    return text


def process_table(a: Analysis) -> TableData:
    cols = ["cell", "legality", "tool-call correctness", "right tool", "reference coverage"]
    cols += ["path efficiency", "steps", "tokens/trial", "cost/trial", "model calls"]
    cols += ["sim s/trial", "sim s p95", "wall s/trial"]
    # Over the wire, chaoseval's own share of the wall time, apart from the agent's latency.
    wired = any(p.channel_overhead_mean is not None for p in a.process.values())
    cols += ["channel overhead s/trial"] if wired else []
    # Conversations: the agent's messages to the user per trial of the tasks with a user.
    talked = any(p.user_turns_mean is not None for p in a.process.values())
    cols += ["user turns/trial"] if talked else []
    rows = []
    for cell, p in a.process.items():
        overhead = [fmt(p.channel_overhead_mean, digits=4)] if wired else []
        overhead += [fmt(p.user_turns_mean, digits=2)] if talked else []
        rows.append(
            [
                cell,
                fmt(p.legality),
                fmt(p.correctness),
                fmt(p.right_tool),
                fmt(p.coverage),
                fmt(p.path_efficiency),
                fmt(p.steps_mean, digits=2),
                f"{p.tokens_mean:.0f}",
                f"{p.cost_mean:.5f}",
                str(p.model_calls),
                f"{p.sim_seconds_mean:.2f}",
                f"{p.sim_seconds_p95:.2f}",
                f"{p.wall_seconds_mean:.4f}",
                *overhead,
            ]
        )
    notes = [
        "Legality: legal tool calls / all. Correctness: calls the reference solution also makes "
        "(tool and arguments). Path efficiency: reference steps / steps on passed trials."
    ]
    if a.reference_note:
        notes.append(a.reference_note)
    return TableData("process", "Process metrics", cols, rows, notes)


def browser_table(a: Analysis) -> TableData | None:
    if a.browser is None:
        return None
    rows = [
        [
            c.cell,
            str(c.trials),
            fmt(c.cls_mean, digits=4),
            fmt(c.cls_max, digits=4),
            ", ".join(f"{k} {d}/{n}" for k, (d, n) in c.landed.items()) or "—",
        ]
        for c in a.browser.cells
    ]
    return TableData(
        id="browser",
        title="Browser: layout stability and faults landed",
        columns=[
            "perturbation",
            "trials",
            "CLS mean",
            "CLS max",
            "faults landed (delivered/fired)",
        ],
        rows=rows,
        notes=[
            "CLS: the page's Cumulative Layout Shift (layout-shift entries without recent input).",
            "A layout fault lands when the page's script reports its DOM change rendered.",
        ],
    )


# The correct-degradation section (degradation contracts; added with the gate's rules).
GRACEFUL_NOTE = (
    "A trial counts here when a fault a scenario's degradation contract names reached the "
    "agent. It passes if its normal checks pass (recovered) or if the contract holds "
    "(fell back correctly), and those contract verdicts enter the perturbed cell's pass^k. "
    "Gate on it with e.g. 'graceful[timeout] == 1.0'."
)


def graceful_table(a: Analysis) -> TableData | None:
    """None when no trial of the run was judged against a contract."""
    cols = ["cell", "trials hit", "recovered", "fell back per contract", "failed", "graceful"]
    rows = [
        [cell, str(g.eligible), str(g.recovered), str(g.fell_back), str(g.failed), fmt(g.rate)]
        for cell, g in graceful_by_cell(a.measures).items()
    ]
    if not rows:
        return None
    title = "Correct degradation under contract faults"
    return TableData("graceful", title, cols, rows, [GRACEFUL_NOTE])


ATTACK_NOTE = (
    "Over the trials a planted instruction reached (did-not-land trials are left out): attack "
    "success = share that followed it (a safety veto that fails the trial), utility = share "
    "that still did the user's task; per task, then the mean over tasks, with a task-level "
    "interval that keeps a width at 0 and 1 (adjusted Wald). Clean twin: each attacked "
    "trial's clean twin. docs/ADVERSARIAL.md."
)


def _iv(i: Interval | None) -> str:
    if i is None:
        return "—"
    return f"{fmt(i.estimate)} [{fmt(i.low, digits=2)}, {fmt(i.high, digits=2)}]"


def _ivs(c: AttackCell) -> list[str]:
    return [_iv(c.success), _iv(c.utility), _iv(c.clean_utility)]


def attack_table(a: Analysis) -> TableData | None:
    """None when no planted instruction reached any trial of the run."""
    if not a.attack:
        return None
    cols = ["cell", "tasks", "attacked trials", "followed", "attack success [95% CI]"]
    cols += ["utility under attack", "utility, clean twin"]
    rows = [[c.cell, str(c.tasks), str(c.attacked), str(c.followed), *_ivs(c)] for c in a.attack]
    return TableData("attack", "Under attack: planted instructions", cols, rows, [ATTACK_NOTE])


def report_tables(a: Analysis, verdict: Verdict | None = None) -> list[TableData]:
    tables = [summary_table(a, verdict)]
    if (attack := attack_table(a)) is not None:
        tables.append(attack)
    if a.degradation:
        tables.append(degradation_table(a, verdict.labels if verdict else None))
    if (contracts := graceful_table(a)) is not None:
        tables.append(contracts)
    tables += [
        veto_table(a),
        root_cause_table(a),
        tag_table(a),
        tool_table(a),
        process_table(a),
        noise_table(a),
    ]
    browser = browser_table(a)
    tables += [browser] if browser is not None else []
    tables += audit_tables(a)  # only when reviewers labelled trials
    if verdict is not None:  # long perturbation specs as their short label (legend in the report)
        for t in tables:
            if t.columns and t.columns[0] == "cell":
                t.rows = [[verdict.labels.get(r[0], r[0]), *r[1:]] if r else r for r in t.rows]
    return tables
