"""Two runs compared as ``chaoseval compare`` judges them (paired by task and cell, B - A), and
a run's trend: each cell's pass^k across the runs of the same agent on the same scenarios (ids
and file hashes, as the manifests recorded them), oldest first."""

from __future__ import annotations

from chaoseval.analysis.status import DEFAULT_MARGIN
from chaoseval.errors import ConfigError
from chaoseval.model.records import CLEAN
from chaoseval.view.html import href, page, text
from chaoseval.view.library import RESAMPLES, Entry, Library

__all__ = ["compare_page", "trends_page"]


def _picker(library: Library, a: str, b: str) -> str:
    runs = [e.key for e in library.scan() if e.manifest is not None]

    def options(chosen: str) -> str:
        return "".join(
            f"<option value='{text(k)}'{' selected' if k == chosen else ''}>{text(k)}</option>"
            for k in runs
        )

    return (
        "<form id='compare-form' class='filters' action='/compare'>"
        f"<label>A (baseline)<select name='a'><option value=''></option>{options(a)}</select>"
        f"</label><label>B<select name='b'><option value=''></option>{options(b)}</select>"
        "</label><button type='submit'>compare</button></form>"
    )


def compare_page(library: Library, a: str, b: str) -> str:
    """B against A: each cell's status, the conclusions and the tables of ``compare``."""
    from chaoseval.analysis.aggregate import task_names
    from chaoseval.analysis.compare import compare_journals
    from chaoseval.analysis.compare_status import judge_comparison, status_lines
    from chaoseval.render.comparison import comparison_tables
    from chaoseval.render.html import table_html

    picker = _picker(library, a, b)
    if not (a and b):
        return page("Compare two runs", picker + "<p>Pick a baseline (A) and a run (B).</p>")
    ta, _ = library.trials(a)
    tb, _ = library.trials(b)
    if not task_names(ta) & task_names(tb):
        raise ConfigError(f"{a} and {b} share no task, so nothing can be paired")
    h = compare_journals(ta, tb, None, n_resamples=RESAMPLES)
    lines = status_lines(judge_comparison(h, ta, tb, DEFAULT_MARGIN))
    warnings = "".join(f"<p class='warn'>warning: {text(w)}</p>" for w in h.warnings)
    sizing = "".join(f"<li>{text(s)}</li>" for s in [f"primary metric: {h.primary}", *h.sizing])
    conclusions = "".join(f"<li>{text(c)}</li>" for c in h.conclusions)
    tables = "".join(table_html(t) for t in comparison_tables(h) if t.rows)
    body = (
        picker
        + f"<p class='meta'>B = {text(b)} ({text(h.b_label)}) against A = {text(a)} "
        f"({text(h.a_label)}), paired by task and cell</p>{warnings}"
        + f"<pre class='counts' id='statuses'>{text(chr(10).join(lines))}</pre>"
        + f"<ul class='notes'>{sizing}</ul><h2>Conclusions</h2>"
        + f"<ul class='verdict' id='conclusions'>{conclusions}</ul>{tables}"
    )
    crumbs = [(a, href("/run", {"j": a})), (b, href("/run", {"j": b}))]
    return page(f"Compare {b} (B) with {a} (A)", body, crumbs=crumbs)


def _suite(library: Library, key: str) -> list[Entry]:
    """The runs of ``key``'s agent on the same scenarios, oldest first."""
    me = library.entry(key)
    same = [e for e in library.scan() if e.manifest is not None and e.suite == me.suite]
    return sorted(same, key=lambda e: (e.manifest.created_at, e.key) if e.manifest else ())


def trends_page(library: Library, key: str) -> str:
    runs = _suite(library, key)
    me = library.entry(key)
    assert me.manifest is not None  # entry() serves runs only
    k = max(me.manifest.ks)
    cells: list[str] = []
    table: dict[str, dict[str, str]] = {}
    for e in runs:
        report = library.report(e.key)
        row = table.setdefault(e.key, {})
        for r in report.analysis.cells:
            if r.cell not in cells:
                cells.append(r.cell)
            value = r.summary.pass_hat.get(k)
            st = report.analysis.statuses.get(r.cell)
            shown = "—" if value is None else f"{value:.3f}"
            row[r.cell] = shown + (f" ({st.status})" if st is not None else "")
    cells.sort(key=lambda c: (c != CLEAN, c))
    head = "".join(f"<th>{text(c)}</th>" for c in cells)
    rows = "".join(
        f"<tr><td><a href='{href('/run', {'j': e.key})}'>{text(e.key)}</a></td>"
        f"<td>{text(e.manifest.created_at.strftime('%Y-%m-%d %H:%M') if e.manifest else '')}</td>"
        f"<td>{text(e.manifest.chaoseval_version if e.manifest else '')}</td>"
        + "".join(f"<td>{text(table[e.key].get(c, '—'))}</td>" for c in cells)
        + "</tr>"
        for e in runs
    )
    body = (
        f"<p class='meta'>pass^{k} per cell across the {len(runs)} run(s) of agent "
        f"{text(me.manifest.agent)} on the same {len(me.manifest.scenarios)} scenario(s) (ids "
        "and file hashes as recorded), oldest first; the status beside each is the cell's "
        "against that run's clean cell.</p>"
        f"<table class='data' id='trend'><thead><tr><th>run</th><th>date</th><th>chaoseval</th>"
        f"{head}</tr></thead><tbody>{rows}</tbody></table>"
    )
    return page(f"Trends of {key}", body, crumbs=[(key, href("/run", {"j": key}))])
