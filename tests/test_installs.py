"""A system part the tests cannot install skips them outside CI and fails them in CI, after
retrying (tests/installs.py). The install is made to fail by a PATH without bwrap or apt-get:
the real ensure_bubblewrap runs and no package of the machine is touched."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from chaoseval.agents.sandbox import ensure_bubblewrap
from tests.installs import require


def _counted(calls: list[str | None]) -> Callable[[], str | None]:
    def ensure() -> str | None:
        reason = ensure_bubblewrap()
        calls.append(reason)
        return reason

    return ensure


def test_in_ci_a_part_that_cannot_be_installed_fails_its_tests_after_retries(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap, no apt-get
    calls: list[str | None] = []
    with pytest.raises(BaseException) as outcome:  # a skip too (pytest's outcomes are Base)
        require("bubblewrap", _counted(calls), attempts=3, wait=0)
    assert outcome.type is pytest.fail.Exception, f"not a failure: {outcome.value!r}"
    assert len(calls) == 3 and all(calls)
    said = str(outcome.value)
    assert "CI=true and bubblewrap is not installed after 3 tries" in said
    assert "there is no apt-get to install it with" in said  # the reason, from apt_install


def test_outside_ci_it_skips_them_with_the_reason_at_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    calls: list[str | None] = []
    with pytest.raises(pytest.skip.Exception, match="no apt-get to install it with"):
        require("bubblewrap", _counted(calls), attempts=3, wait=0)
    assert len(calls) == 1


def test_in_ci_a_part_that_is_there_passes(bwrap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    calls: list[str | None] = []
    require("bubblewrap", _counted(calls))
    assert calls == [None]
