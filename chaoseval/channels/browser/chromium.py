"""Debian's Chromium, driven by Playwright: one browser per run, never a browser download.

``ensure_chromium()`` installs the system package when it is missing and we may (root, apt-get):
the tests and ``make test`` share it. ``chromium()`` launches it headless for a block.

Browser features chaoseval relies on, each exercised by tests/browser against Debian's Chromium
(156 here): Playwright's clock installed with timers running, ``timezone_id``, tracing,
``layout-shift`` performance entries, device emulation (``viewport``, ``device_scale_factor``,
``is_mobile``, ``has_touch``: the page sees the width, pixel ratio and touch points asked for)
and ``locator.aria_snapshot()``. What needed care: with ``is_mobile`` a page without a
``<meta name="viewport">`` is laid out 980 px wide and zoomed out, as phones do, so the page
server adds one; ``aria_snapshot()`` marks ``[expanded]`` only when true, so a closed menu
button reads like any button (the text rendering, chaoseval.engine.a11y, does the same).
Playwright's named device descriptors (``playwright.devices``) are not used: several default to
WebKit and carry Safari user agents; chaoseval.model.device names its own.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from chaoseval.debian import apt_install
from chaoseval.errors import ConfigError

if TYPE_CHECKING:
    from playwright.async_api import Browser

CHROMIUM = Path(os.environ.get("CHAOSEVAL_CHROMIUM", "/usr/bin/chromium"))
# Root in a container needs --no-sandbox; the rest keeps a headless run quiet and offline.
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def ensure_chromium() -> str | None:
    """None when Chromium is there (installed now if need be), else why it cannot be."""
    if CHROMIUM.exists():
        return None
    reason = apt_install("chromium")
    if reason is not None:
        return reason
    return None if CHROMIUM.exists() else f"apt-get installed chromium but {CHROMIUM} is missing"


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Headless Chromium for the block."""
    try:
        from playwright.async_api import async_playwright
    except ImportError as exc:
        raise ConfigError(
            "the browser agents need Playwright's Python package: pip install 'chaoseval[browser]'"
        ) from exc
    if not CHROMIUM.exists():
        raise ConfigError(
            f"the browser agents drive the system Chromium at {CHROMIUM}: apt-get install "
            "chromium (or point CHAOSEVAL_CHROMIUM at a Chromium binary)"
        )
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            yield browser
        finally:
            await browser.close()
