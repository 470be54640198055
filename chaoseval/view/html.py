"""What every page of the view shares: text made safe for HTML, links, the page around a body,
its style and its one script.

Every text a page shows passes through :func:`text`: the reports' redaction (chaoseval.redact),
then control characters made visible (render.printable), then HTML escaping. Whole pages and
fragments are redacted once more as they are sent (view.app), so a secret in markup the report's
renderers made is replaced too. Pages load no script but ``/static/view.js`` (the
Content-Security-Policy the app sends forbids inline ones), so even text that escaped its
escaping could not run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any
from urllib.parse import urlencode

from chaoseval import redact
from chaoseval.render.html import CSS as REPORT_CSS
from chaoseval.render.printable import visible
from chaoseval.render.verdict import VERDICT_CSS

__all__ = ["SCRIPT", "href", "page", "pretty", "text"]


def text(value: object) -> str:
    """``value`` as HTML text: redacted, control characters as escapes, escaped."""
    return escape(visible(redact.redact(str(value))))


def href(path: str, params: Mapping[str, Any] | None = None) -> str:
    """A link to ``path`` with ``params`` as its query (empty ones left out), escaped for an
    attribute: every page state is in its URL, so a link pastes into an issue."""
    kept = {k: v for k, v in (params or {}).items() if v not in (None, "")}
    query = urlencode(kept, doseq=True)
    return escape(path + ("?" + query if query else ""))


def pretty(value: Any) -> str:
    """A JSON value (tool arguments, a result body) indented, as escaped text for a <pre>."""
    if isinstance(value, str):
        return text(value)
    try:
        shown = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        shown = repr(value)
    return text(shown)


CSS = """
header.bar{display:flex;gap:18px;align-items:baseline;border-bottom:1px solid #ddd;
padding-bottom:6px;margin-bottom:10px} header.bar a{font-size:14px}
form.filters{font-size:13px;margin:8px 0;display:flex;flex-wrap:wrap;gap:8px;align-items:end}
form.filters label{display:flex;flex-direction:column}
span.passed{color:#1e8449;font-weight:600} span.failed{color:#c0392b;font-weight:600}
span.not_evaluable{color:#b9770e;font-weight:600}
div.pair{display:grid;grid-template-columns:1fr 1fr;gap:14px} div.pair>section{min-width:0}
div.turn div.said{border-left:3px solid #aab7c4;padding:1px 6px;margin:3px 0}
div.turn div.said.user{border-color:#1a5276;background:#f4f8fb}
div.turn div.said pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0}
div.step{border:1px solid #ddd;border-radius:4px;margin:6px 0;padding:4px 8px;font-size:13px}
div.step.div{border:2px solid #e08a1e;background:#fff8ec} div.step h4{margin:2px 0;font-size:13px}
div.step pre{max-height:260px;margin:4px 0} div.fault{background:#fdecea;border-left:4px solid
#c0392b;padding:2px 6px;margin:3px 0} div.fault.missed{background:#f3f3f3;border-color:#999}
span.mark{background:#e08a1e;color:#fff;border-radius:3px;padding:0 5px;font-size:11px}
img.shot{max-width:100%;border:1px solid #ccc} .live{color:#1e8449;font-size:12px}
table.checks td{white-space:normal}
pre.instruction{white-space:pre-wrap;overflow-wrap:anywhere}
details.messages{margin:4px 0} details.messages>summary{cursor:pointer;color:#1a5276}
div.msg{border-left:3px solid #aab7c4;padding:1px 6px;margin:3px 0}
div.msg.answer{border-color:#1e8449} div.msg pre{white-space:pre-wrap;overflow-wrap:anywhere}
"""

SCRIPT = """
'use strict';
// Fragments: an element with data-src is filled from it once; one with data-live too, then
// again about every second while the page is open (a run being written).
async function fill(el) {
  try {
    const r = await fetch(el.dataset.src || el.dataset.live, {cache: 'no-store'});
    const body = await r.text();
    if (el.dataset.shown !== body) { el.innerHTML = body; el.dataset.shown = body; }
  } catch (e) { /* the server went away: try again on the next tick */ }
}
function tick() { document.querySelectorAll('[data-live]').forEach(fill); }
document.querySelectorAll('[data-src]').forEach(fill);
tick();
setInterval(tick, 1000);
// Compare: the two runs picked open the compare page.
const pick = document.getElementById('compare-form');
if (pick) pick.addEventListener('submit', (ev) => {
  const a = pick.querySelector('[name=a]').value, b = pick.querySelector('[name=b]').value;
  if (!a || !b) { ev.preventDefault(); alert('pick two runs'); }
});
"""


def page(title: str, body: str, *, crumbs: list[tuple[str, str]] | None = None) -> str:
    """A whole page: the bar of links, ``body`` (HTML already safe), the script."""
    links = "".join(f"<a href='{url}'>{text(name)}</a>" for name, url in crumbs or [])
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width'>"
        f"<title>{text(title)}</title><style>{REPORT_CSS}{VERDICT_CSS}{CSS}</style></head><body>"
        f"<header class='bar'><a href='/'>chaoseval view</a>{links}</header>"
        f"<h1>{text(title)}</h1>{body}"
        "<script src='/static/view.js'></script></body></html>"
    )
