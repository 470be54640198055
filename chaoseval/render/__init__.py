"""Report renderers: terminal (rich), Markdown, self-contained HTML with inline SVG, JUnit XML."""

from __future__ import annotations

from chaoseval.render.html import render_html
from chaoseval.render.junit import render_junit
from chaoseval.render.markdown import render_markdown
from chaoseval.render.tables import TableData, report_tables

__all__ = ["TableData", "render_html", "render_junit", "render_markdown", "report_tables"]
