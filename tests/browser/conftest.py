"""The browser tests drive real headless Chromium (the shared ``chromium`` fixture in
tests/conftest.py installs it when missing) with Playwright's Python package."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright", reason="pip install 'chaoseval[browser]'")
