"""Report renderers: terminal (rich), Markdown, self-contained HTML with inline SVG, JUnit XML."""

from __future__ import annotations

from .html import render_html
from .junit import render_junit
from .markdown import render_markdown
from .tables import TableData, report_tables

__all__ = ["TableData", "render_html", "render_junit", "render_markdown", "report_tables"]
