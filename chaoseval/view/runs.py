"""The runs under the folder and one run's page: its trials, filtered from the columns, and the
report's verdict and tables (render.html), loaded after the page so it paints at once."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from chaoseval.errors import ChaosevalError
from chaoseval.store.columns import Trials
from chaoseval.view.html import href, page, text
from chaoseval.view.library import Entry, Library, Report

__all__ = ["Filters", "report_fragment", "run_page", "runs_page", "statuses_fragment",
           "trials_fragment"]  # fmt: skip

STATUSES = ("passed", "failed", "not_evaluable")  # the status column's codes 0, 1, 2
PAGE = 200  # trials a page lists: the rest are a page further (a million-trial run too)
MANY = 500  # tasks past which the task filter is typed, not a list of 100k options


@dataclass(frozen=True)
class Filters:
    """A run page's state, all of it in the query (a link is the view it shows)."""

    journal: str
    cell: str = ""
    task: str = ""
    status: str = ""
    cause: str = ""
    page: int = 0

    @classmethod
    def of(cls, query: Mapping[str, str]) -> Filters:
        try:
            number = max(0, int(query.get("page", "0") or 0))
        except ValueError:
            number = 0
        return cls(
            query.get("j", ""), query.get("cell", ""), query.get("task", ""),
            query.get("status", ""), query.get("cause", ""), number,
        )  # fmt: skip

    def params(self, **change: object) -> dict[str, object]:
        base: dict[str, object] = {
            "j": self.journal, "cell": self.cell, "task": self.task, "status": self.status,
            "cause": self.cause, "page": self.page or "",
        }  # fmt: skip
        return base | change

    def rows(self, t: Trials) -> np.ndarray:
        """The rows these filters keep, in journal order (numpy on the columns only)."""
        keep = np.ones(len(t), bool)
        for column, name in (("cell", self.cell), ("scenario", self.task),
                             ("root_cause", self.cause)):  # fmt: skip
            if name:
                keep &= t.col[column] == t.code(column, name)
        if self.status:
            code = STATUSES.index(self.status) if self.status in STATUSES else -9
            keep &= t.col["status"] == code
        return np.flatnonzero(keep)


def _when(entry: Entry) -> str:
    m = entry.manifest
    return m.created_at.strftime("%Y-%m-%d %H:%M UTC") if m is not None else ""


def _config(entry: Entry) -> str:
    m = entry.manifest
    if m is None:
        return ""
    cells = ", ".join(c.name for c in m.cells)
    return (
        f"{len(m.scenarios)} task(s) × {len(m.cells)} cell(s) ({cells}) × {m.trials} trial(s); "
        f"seed {m.seed}; model {m.model.model} T={m.model.temperature:g}; k = "
        + ", ".join(map(str, m.ks))
    )


def _gate_rules(entry: Entry) -> str:
    rules = entry.manifest.gate if entry.manifest is not None else None
    if not rules:
        return "—"
    return "<br>".join(f"<code>{text(r)}</code>" for r in rules)


def runs_page(library: Library) -> str:
    entries = library.scan()
    runs = [e for e in entries if e.manifest is not None]
    rows = []
    for e in runs:
        rows.append(
            f"<tr><td><a href='{href('/run', {'j': e.key})}'>{text(e.key)}</a></td>"
            f"<td class='text'>{text(e.manifest.agent if e.manifest else '')}</td>"
            f"<td>{text(_when(e))}</td><td class='text'>{text(_config(e))}</td>"
            f"<td class='text' data-src='{href('/fragment/statuses', {'j': e.key})}'>…</td>"
            f"<td class='text'>{_gate_rules(e)}</td>"
            f"<td><a href='{href('/trends', {'j': e.key})}'>trends</a></td></tr>"
        )
    options = "".join(f"<option value='{text(e.key)}'>{text(e.key)}</option>" for e in runs)
    skipped = [e for e in entries if e.manifest is None]
    notes = "".join(f"<li>{text(e.key)}: {text(e.error)}</li>" for e in skipped)
    body = (
        f"<p class='meta'>{len(runs)} run(s) under {text(library.root)}</p>"
        "<table class='data' id='runs'><thead><tr><th>run</th><th>agent</th><th>date</th>"
        "<th>configuration</th><th>cells' status</th><th>gate rules recorded</th><th></th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        "<h2>Compare two runs</h2><form id='compare-form' class='filters' action='/compare'>"
        f"<label>A (baseline)<select name='a'><option value=''></option>{options}</select>"
        f"</label><label>B<select name='b'><option value=''></option>{options}</select></label>"
        "<button type='submit'>compare</button></form>"
        + (f"<ul class='notes'>Not runs: {notes}</ul>" if notes else "")
    )
    return page("Runs", body)


def statuses_fragment(library: Library, key: str) -> str:
    """Each perturbed cell's status in its scope (analysis.status), as every report says it."""
    report = _report(library, key)
    if isinstance(report, str):
        return report
    a, v = report.analysis, report.verdict
    parts = []
    for cell, st in a.statuses.items():
        label = v.labels.get(cell, cell)
        scope = f" (on {st.scope})" if st.scope else ""
        word = "nl" if st.status == "did not land" else st.status
        parts.append(f"<span class='{word}'>{text(label)}: {text(st.status + scope)}</span>")
    return "<br>".join(parts) or "clean only"


def _report(library: Library, key: str) -> Report | str:
    try:
        return library.report(key)
    except (ChaosevalError, ValueError, ZeroDivisionError) as exc:
        # A run with no evaluable trial yet (just started) has nothing to analyse.
        return f"<p class='meta'>no analysis yet: {text(exc)}</p>"


def _select(name: str, label: str, values: list[str], chosen: str) -> str:
    options = "".join(
        f"<option value='{text(v)}'{' selected' if v == chosen else ''}>{text(v)}</option>"
        for v in values
    )
    return (
        f"<label>{text(label)}<select name='{name}'><option value=''>any</option>{options}"
        "</select></label>"
    )


def _filters_form(t: Trials, f: Filters) -> str:
    m = t.manifest
    cells = [c.name for c in m.cells] or sorted(v for v in t.vocab["cell"] if v)
    tasks = sorted(v for v in t.vocab["scenario"] if v)
    causes = sorted(v for v in t.vocab["root_cause"] if v)
    return (
        "<form class='filters' id='filters' action='/run'>"
        f"<input type='hidden' name='j' value='{text(f.journal)}'>"
        + _select("cell", "cell", cells, f.cell)
        + (_select("task", "task", tasks, f.task) if len(tasks) <= MANY else
           f"<label>task<input name='task' value='{text(f.task)}' size='30'></label>")
        + _select("status", "status", list(STATUSES), f.status)
        + _select("cause", "root cause", causes, f.cause)
        + "<button type='submit'>filter</button>"
        f"<a href='{href('/run', {'j': f.journal})}'>clear</a></form>"
    )


def trials_fragment(library: Library, f: Filters) -> str:
    """The trials the filters keep, a page of them, each a link to its page."""
    t, _ = library.trials(f.journal)
    rows = f.rows(t)
    start = min(f.page * PAGE, max(0, len(rows) - 1) // PAGE * PAGE)
    shown = rows[start : start + PAGE].tolist()
    out = []
    for row in shown:
        trial = t.trial_id(row)
        status = STATUSES[int(t.col["status"][row])]
        cause = t.value("root_cause", row) or ""
        error = t.errors.get(row) or ""
        link = href("/trial", {"j": f.journal, "id": trial})
        out.append(
            f"<tr class='trial'><td><a href='{link}'>{text(trial)}</a></td>"
            f"<td><span class='{status}'>{text(status)}</span></td>"
            f"<td class='text'>{text(cause)}</td><td class='text'>{text(error[:200])}</td></tr>"
        )
    pager = []
    if start > 0:
        pager.append(f"<a href='{href('/run', f.params(page=start // PAGE - 1))}'>previous</a>")
    if start + PAGE < len(rows):
        pager.append(f"<a href='{href('/run', f.params(page=start // PAGE + 1))}'>next</a>")
    warn = "".join(f"<p class='warn'>{text(w)}</p>" for w in t.warnings)
    return (
        f"<p class='meta' id='count'>{len(rows)} of {len(t)} trial(s) in the journal match; "
        f"{start + 1 if shown else 0}–{start + len(shown)} shown {' '.join(pager)}</p>{warn}"
        "<table class='data' id='trials'><thead><tr><th>trial</th><th>status</th>"
        f"<th>root cause</th><th>error</th></tr></thead><tbody>{''.join(out)}</tbody></table>"
    )


def run_page(library: Library, f: Filters) -> str:
    entry = library.entry(f.journal)
    t, _ = library.trials(f.journal)
    m = t.manifest
    meta = (
        f"<p class='meta'>agent {text(m.agent)} · run {text(m.run_id)} · {text(_when(entry))} · "
        f"{text(_config(entry))}</p><p class='meta'>gate rules recorded: {_gate_rules(entry)}</p>"
    )
    live = href("/fragment/trials", f.params())
    body = (
        meta
        + _filters_form(t, f)
        + "<h2>Trials <span class='live'>(live: re-read as the journal grows)</span></h2>"
        + f"<div id='trial-list' data-live='{live}'>{trials_fragment(library, f)}</div>"
        + f"<div id='report' data-src='{href('/fragment/report', {'j': f.journal})}'>"
        "<p class='meta'>reading the verdict…</p></div>"
    )
    crumbs = [(entry.key, href("/run", {"j": entry.key})),
              ("trends", href("/trends", {"j": entry.key}))]  # fmt: skip
    return page(f"Run {entry.key}", body, crumbs=crumbs)


def report_fragment(library: Library, key: str) -> str:
    """The report's verdict and tables (render.html's page, its body), and the recorded gate
    judged again."""
    from chaoseval.render.html import render_html

    report = _report(library, key)
    if isinstance(report, str):
        return report
    html = render_html(report.analysis, verdict=report.verdict)
    body = html.split("<body>", 1)[1].rsplit("</body>", 1)[0]
    body = body.split("</h1>", 1)[1] if "</h1>" in body else body
    return _gate_html(report) + body


def _gate_html(report: Report) -> str:
    if report.gate_error:
        return (
            f"<section id='gate'><h2>Gate</h2><p class='warn'>{text(report.gate_error)}</p>"
            "</section>"
        )
    if not report.gate:
        return ""
    items = "".join(
        f"<li class='{'held' if r.passed else 'inconclusive' if r.undecided else 'broken'}'>"
        f"{text(r.message())}</li>"
        for r in report.gate
    )
    return (
        "<section id='gate'><h2>Gate (the rules the run recorded, judged again)</h2>"
        f"<ul class='verdict'>{items}</ul></section>"
    )

