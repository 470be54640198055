"""Report renderers: terminal (rich), Markdown, self-contained HTML with inline SVG, JUnit XML.

The names below are resolved on first use (PEP 562), so a command that needs only
:mod:`chaoseval.render.printable` (every CLI message) does not import the analysis."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chaoseval.render.html import render_html
    from chaoseval.render.junit import render_junit
    from chaoseval.render.markdown import render_markdown
    from chaoseval.render.tables import TableData, report_tables

__all__ = ["TableData", "render_html", "render_junit", "render_markdown", "report_tables"]

_WHERE = {
    "TableData": "chaoseval.render.tables",
    "render_html": "chaoseval.render.html",
    "render_junit": "chaoseval.render.junit",
    "render_markdown": "chaoseval.render.markdown",
    "report_tables": "chaoseval.render.tables",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'chaoseval.render' has no attribute {name!r}")
