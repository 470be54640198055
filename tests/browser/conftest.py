"""Real headless Chromium for the browser tests (installed through apt when missing and we
are root: chaoseval.channels.browser.chromium.ensure_chromium); skipped, with the reason, only
when that is impossible."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaoseval.channels.browser.chromium import CHROMIUM, ensure_chromium


@pytest.fixture(scope="session")
def chromium() -> Path:
    pytest.importorskip("playwright", reason="pip install 'chaoseval[browser]'")
    reason = ensure_chromium()
    if reason is not None:
        pytest.skip(reason)
    return CHROMIUM
