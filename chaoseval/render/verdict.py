"""The verdict and the clean twins, as HTML sections and in the terminal.

The verdict comes first in every report: what degrades significantly, by how much, why, and what
did not land. Each failed perturbed trial is listed with its clean twin (same scenario and trial
seed); the first few per cell are laid out side by side with the faults on the timeline and the
first step where the two part.
"""

from __future__ import annotations

import re
import shlex
from html import escape

from rich.console import Console
from rich.table import Table

from chaoseval.analysis.twins import (
    FaultMark,
    TimelineStep,
    TwinPair,
    TwinSet,
    crash_reason,
    replay_command,
)
from chaoseval.analysis.verdict import CellVerdict, Verdict
from chaoseval.model.records import TrialRecord
from chaoseval.render.printable import escape as rich_escape

__all__ = [
    "VERDICT_CSS",
    "counts_html",
    "legend_html",
    "print_twins",
    "print_verdict",
    "twin_anchor",
    "twins_html",
    "verdict_html",
]

VERDICT_CSS = """
.headline{font-size:16px;font-weight:600;margin:6px 0} p.veto{font-size:13px}
ul.verdict{font-size:14px;margin:4px 0 10px;padding-left:20px} ul.verdict li{margin:3px 0}
tr.broken td:first-child,tr.degraded td:first-child{border-left:4px solid #c0392b}
tr.improved td:first-child{border-left:4px solid #2e6fb7} tr.nl td{color:#888}
tr.inconclusive td:first-child{border-left:4px solid #e08a1e} tr.inconclusive td:nth-child(2)
{background:#fdebd0} tr.held td:first-child{border-left:4px solid #27ae60}
pre.counts{font-size:13px;background:#f7f7f7;padding:6px 10px;margin:4px 0}
pre.counts span.broken,pre.counts span.degraded{color:#c0392b;font-weight:600}
pre.counts span.inconclusive{color:#b9770e;font-weight:600} pre.counts span.held{color:#1e8449}
.badge{display:inline-block;border-radius:3px;padding:0 5px;margin:1px 2px;font-size:11px;
color:#fff;background:#c0392b} .badge.absorbed{background:#e08a1e} .badge.missed{background:#999}
table.verdict{width:100%} table.verdict td,table.verdict th{white-space:normal}
table.twin{width:100%;table-layout:fixed} table.twin td{white-space:normal;text-align:left;
vertical-align:top;word-break:break-word} table.twin col.n{width:34px} table.twin col.t{width:56px}
table.twin tr.div td{background:#fff3cd} table.twin tr.after td{background:#fbfbfb}
.twin-card{border:1px solid #ddd;border-radius:4px;padding:8px 12px;margin:10px 0}
.twin-card h4{margin:0 0 4px;font-size:14px} .twin-card p{font-size:13px;margin:4px 0}
table.twin th{text-align:left} code{font-size:12px;background:#f3f3f3;padding:1px
4px} nav.toc{font-size:13px;columns:3;background:#f7f7f7;padding:8px 16px;border:1px solid #e3e3e3}
nav.toc a{display:block;margin:2px 0} dl.legend{font-size:12px;display:grid;
grid-template-columns:max-content 1fr;gap:2px 12px} dl.legend dt{font-weight:600}
dl.legend dd{margin:0;font-family:monospace;word-break:break-all}
"""


def twin_anchor(trial_id: str) -> str:
    return "twin-" + re.sub(r"[^A-Za-z0-9_-]+", "-", trial_id).strip("-")


def _cell_anchor(cell: str) -> str:
    return "twins-" + re.sub(r"[^A-Za-z0-9_-]+", "-", cell).strip("-")


def _verdict_word(c: CellVerdict) -> str:
    """The status, with its scope: the same word as the terminal, the JSON and the JUnit."""
    if c.status is None or not c.status.scope:
        return c.word
    return f"{c.word} (on {c.status.scope})"


def _status_css(c: CellVerdict) -> str:
    return "nl" if c.word == "did not land" else c.word


def counts_html(v: Verdict) -> str:
    """The counts lines that head the page, each status in its colour."""
    width = max((len(c.label) for c in v.cells), default=0)
    rows = [
        f"<span class='{_status_css(c)}'>{escape(c.status.line(c.label, width))}</span>"
        for c in v.cells
        if c.status is not None
    ]
    return f"<pre class='counts'>{chr(10).join(rows)}</pre>" if rows else ""


def _verdict_row(v: Verdict, c: CellVerdict) -> str:
    css = _status_css(c)
    vetoes = ", ".join(f"{k} {n}" for k, n in sorted(c.vetoes.items())) or "0"
    if c.leading_cause and c.new_failures:
        cause = escape(f"{c.leading_cause} ({c.leading_count} of {c.new_failures})")
    elif c.leading_cause:  # every failure also failed in clean: name what, but not as new
        cause = escape(
            f"none new; of all {c.failed} failures: {c.leading_cause} ({c.leading_count})"
        )
    else:
        cause = "—"
    tw = v.twins.get(c.cell)
    link = (
        f"<a href='#{_cell_anchor(c.cell)}'>{tw.failed} failed, {tw.clean_passed} with a passing "
        "clean twin</a>"
        if tw
        else "no failure"
    )
    cells = [
        f"<td>{escape(c.label)}</td>",
        f"<td>{escape(_verdict_word(c))}</td>",
        f"<td>{escape(c.metric)} {escape(c.change())}</td>",
        f"<td>{c.tasks_reached}/{c.tasks_total}</td>",
        f"<td class='text'>{cause}</td>",
        f"<td>{c.faults_injected} / {c.faults_delivered} / {c.faults_absorbed}</td>",
        f"<td class='{'veto' if c.vetoes else ''}'>{escape(vetoes)}</td>",
        f"<td class='text'>{link}</td>",
    ]
    return f"<tr class='{css}'>{''.join(cells)}</tr>"


def verdict_html(v: Verdict) -> str:
    skip = 1 + len(v.status_lines())  # the headline and the counts lines, shown above
    items = "".join(f"<li>{escape(line)}</li>" for line in v.lines(compact=True)[skip:])
    head = (
        "<tr><th>cell</th><th>verdict</th><th>"
        + escape(f"Δ{v.metric} [95% CI], adjusted p")
        + "</th><th>tasks reached</th><th>leading root cause (new failures)</th>"
        "<th>faults injected / delivered / absorbed</th><th>vetoes (tasks reached)</th>"
        "<th>failed trials and clean twins</th></tr>"
    )
    rows = "".join(_verdict_row(v, c) for c in v.cells)
    return (
        "<section id='verdict'><h2>Verdict</h2>"
        f"<p class='headline'>{escape(v.headline())}.</p>{counts_html(v)}"
        f"<ul class='verdict'>{items}</ul>"
        f"<div class='wide'><table class='data verdict' id='table-verdict'><thead>{head}</thead>"
        f"<tbody>{rows}</tbody></table></div>"
        "<ul class='notes'><li>Status: degraded when the change of the primary metric "
        f"({escape(v.metric)}, recorded in the run) against clean on the tasks the cell "
        "reached, paired by task (tasks as the units: on tasks like these), is a significant "
        "drop, adjusted across the perturbations (Holm); broken when only the one-sided exact "
        "test with trials as the units, stratified by task (on these tasks), finds a drop at "
        "p <= 0.05 after Holm; improved for the mirror image; held when the drop's upper bound "
        "is under the margin; inconclusive otherwise (amber: never a pass). Only decided cells "
        "are coloured in the heatmap. New failures: the clean twin (same scenario, same "
        "trial seed) passed. Vetoes: trials with a safety violation or hallucination on the "
        "tasks the cell reached, as in every per-cell count of the report.</li>"
        "</ul></section>"
    )


def legend_html(v: Verdict) -> str:
    rows = "".join(
        f"<dt>{escape(short)}</dt><dd>{escape(cell)}</dd>" for cell, short in v.labels.items()
    )
    return (
        "<section id='legend'><h2>Cell labels</h2><p class='meta'>Plots and tables use the short "
        f"label; the perturbation spec is on the right.</p><dl class='legend'>{rows}</dl></section>"
    )


def _badges(marks: tuple[FaultMark, ...] | list[FaultMark]) -> str:
    out = []
    for m in marks:
        css = "absorbed" if m.absorbed else "" if m.delivered else "missed"
        out.append(
            f"<span class='badge {css}' title='{escape(m.describe())}'>{escape(m.short())}</span>"
        )
    return "".join(out)


def _step_td(s: TimelineStep | None) -> str:
    if s is None:
        return "<td></td><td></td>"
    return f"<td>{s.t:.2f}</td><td>{escape(s.text)} {_badges(s.faults)}</td>"


def _twin_table(p: TwinPair) -> str:
    rows = []
    for i in range(max(len(p.clean_steps), len(p.perturbed_steps))):
        c = p.clean_steps[i] if i < len(p.clean_steps) else None
        m = p.perturbed_steps[i] if i < len(p.perturbed_steps) else None
        css = (
            ""
            if p.diverge_at is None or i < p.diverge_at
            else ("div" if i == p.diverge_at else "after")
        )
        rows.append(f"<tr class='{css}'><td>{i + 1}</td>{_step_td(c)}{_step_td(m)}</tr>")
    return (
        "<table class='twin'><colgroup><col class='n'><col class='t'><col><col class='t'><col>"
        "</colgroup><thead><tr><th>#</th><th>t (s)</th><th>clean twin</th><th>t (s)</th>"
        f"<th>perturbed</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _status(r: TrialRecord) -> str:
    """'failed (timeout)', or for a crash what the agent raised: 'failed (crashed: ...)'."""
    cause = crash_reason(r) or r.root_cause
    return r.status + (f" ({cause})" if cause else "")


def _cause(r: TrialRecord) -> str:
    return crash_reason(r) or r.root_cause or ""


def _twin_card(p: TwinPair, journal: str) -> str:
    r, c = p.perturbed, p.clean
    twin = (
        f"clean twin <b>{escape(c.trial_id)}</b>: {escape(_status(c))}"
        if c
        else "no clean twin in this journal"
    )
    loose = f"<p>Faults tied to no step: {_badges(p.loose_faults)}</p>" if p.loose_faults else ""
    replays = f"<code>{escape(replay_command(journal, r.trial_id, p.scenarios))}</code>" + (
        f"<br><code>{escape(replay_command(journal, c.trial_id, p.scenarios))}</code>" if c else ""
    )
    return (
        f"<div class='twin-card' id='{twin_anchor(r.trial_id)}'>"
        f"<h4>{escape(r.trial_id)}: {escape(_status(r))}</h4>"
        f"<p>{twin}. First divergence: <b>{escape(p.label)}</b></p>{loose}"
        f"{_twin_table(p)}<p>Replay: {replays}</p></div>"
    )


# Failed trials per cell the HTML report lists with their divergence (each read again from the
# journal with its twin); more are left to --twins 0 and diverge, so a million-trial page stays
# a page and reads a bounded number of trajectories.
LISTED = 200


def _listed(ts: TwinSet) -> int:
    """How many of the cell's failed trials the page lists: all with --twins 0 (every one laid
    out), else the laid-out ones and up to LISTED."""
    return ts.failed if ts.detailed == ts.failed else max(ts.detailed, min(LISTED, ts.failed))


def _all_rows(ts: TwinSet, journal: str) -> str:
    rows = []
    for i, p in enumerate(ts.pairs[: _listed(ts)]):
        name = escape(p.perturbed.trial_id)
        if i < ts.detailed:
            name = f"<a href='#{twin_anchor(p.perturbed.trial_id)}'>{name}</a>"
        twin = escape(f"{p.clean.trial_id}: {_status(p.clean)}") if p.clean else "—"
        replay = replay_command(journal, p.perturbed.trial_id, p.scenarios)
        rows.append(
            f"<tr><td>{name}</td><td class='text'>{escape(_cause(p.perturbed))}</td>"
            f"<td class='text'>{twin}</td><td class='text'>{escape(p.label)}</td>"
            f"<td class='text'><code>{escape(replay)}</code></td></tr>"
        )
    return (
        "<div class='wide'><table class='data'><thead><tr><th>failed trial</th><th>root cause</th>"
        "<th>clean twin</th><th>first divergence</th><th>replay</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _listing(ts: TwinSet, label: str, journal: str) -> str:
    listed = _listed(ts)
    if listed == ts.failed:
        summary = f"Every failed trial of {escape(label)} with its clean twin ({ts.failed})"
        return f"<details><summary>{summary}</summary>{_all_rows(ts, journal)}</details>"
    quoted = escape(shlex.quote(journal))
    return (
        f"<details><summary>The first {listed} of the {ts.failed} failed trials of "
        f"{escape(label)} with their clean twins</summary>{_all_rows(ts, journal)}"
        f"<p class='meta'>{ts.failed - listed} more are not listed here. Every one beside its "
        f"clean twin: <code>chaoseval report {quoted} -f html --twins 0 -o twins.html</code>; "
        f"all failures grouped by where they left the successful path: "
        f"<code>chaoseval diverge {quoted}</code></p></details>"
    )


def twins_html(v: Verdict, journal: str) -> str:
    parts = [
        "<section id='twins'><h2>Failed trials beside their clean twins</h2><p class='meta'>"
        "A clean twin is the clean trial with the same scenario and trial seed (common random "
        "numbers): the same agent with the same draws, without the fault. The highlighted row "
        "is the first step where the two part; red badges are delivered faults, orange ones "
        "were absorbed by the client's retry. All of them side by side: "
        f"<code>chaoseval report {escape(shlex.quote(journal))} -f html --twins 0 -o twins.html"
        "</code></p>"
    ]
    if not v.twins:
        parts.append("<p>No perturbed trial failed.</p>")
    for c in v.cells:
        ts = v.twins.get(c.cell)
        if ts is None:
            continue
        parts.append(
            f"<h3 id='{_cell_anchor(c.cell)}'>{escape(c.label)}: {ts.failed} failed trial(s), "
            f"{ts.clean_passed} whose clean twin passed</h3>"
        )
        parts += [_twin_card(p, journal) for p in ts.pairs[: ts.detailed]]
        parts.append(_listing(ts, c.label, journal))
    parts.append("</section>")
    return "".join(parts)


# --- terminal --------------------------------------------------------------------------------


_TERMINAL = {"broken": "red", "degraded": "red", "inconclusive": "yellow", "held": "green"}


def print_verdict(v: Verdict, console: Console) -> None:
    lines = v.lines()
    style = (
        "bold red"
        if v.count("broken") or v.count("degraded")
        else "bold yellow"
        if v.count("inconclusive") or not v.evaluable
        else "bold green"
    )
    console.print(f"[{style}]Verdict:[/] {rich_escape(lines[0])}", highlight=False)
    counted = [c for c in v.cells if c.status is not None]
    for c, line in zip(counted, lines[1 : 1 + len(counted)], strict=True):
        colour = _TERMINAL.get(c.word)
        shown = rich_escape(line)
        console.print(f"  [{colour}]{shown}[/]" if colour else f"  {shown}", highlight=False)
    for line in lines[1 + len(counted) :]:
        console.print(f"  {rich_escape(line)}", highlight=False)
    legend = {cell: short for cell, short in v.labels.items() if cell != short}
    for cell, short in legend.items():
        console.print(f"  [dim]{rich_escape(short)} = {rich_escape(cell)}[/]", highlight=False)


def print_twins(v: Verdict, console: Console, journal: str) -> None:
    if not v.twins:
        return
    table = Table(
        title="Failed trials beside their clean twins (same scenario and trial seed)",
        title_justify="left",
    )
    for col in ("cell", "failed trial", "clean twin", "first divergence"):
        table.add_column(col, overflow="fold")
    hidden = 0
    for c in v.cells:
        ts = v.twins.get(c.cell)
        if ts is None:
            continue
        hidden += ts.failed - ts.detailed
        for p in ts.pairs[: ts.detailed]:
            twin = _status(p.clean) if p.clean else "—"
            table.add_row(
                rich_escape(c.label),
                rich_escape(f"{p.perturbed.scenario}/{p.perturbed.index}"),
                rich_escape(twin),
                rich_escape(p.label),
            )
    console.print(table)
    first = next(iter(v.twins.values())).pairs[0]
    line = replay_command(journal, first.perturbed.trial_id, first.scenarios)
    console.print(f"  [dim]replay one: {rich_escape(line)}[/]")
    if hidden:
        console.print(
            f"  [dim]{hidden} more failed trial(s), each beside its clean twin: chaoseval report "
            f"{rich_escape(shlex.quote(journal))} -f html --twins 0 -o twins.html[/]",
            highlight=False,
        )
