"""The system parts the tests drive (Chromium, bubblewrap), installed when missing, or said why not.

Outside CI a part that cannot be installed skips its tests, with the reason. In CI (``CI=true``,
as CI services set it) a skip would pass a run that never tested the part: there the install is
tried again (another apt-get holding the lock lets go in a while) and then the test fails,
naming the reason.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
from tenacity import RetryError, Retrying, retry_if_result, stop_after_attempt, wait_exponential

ATTEMPTS = 4  # 1 + 3 retries, 10 s, 20 s then 40 s apart: longer than an apt-get update holds
WAIT = 10.0  # seconds before the first retry; each later one waits twice as long


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def require(
    part: str,
    ensure: Callable[[], str | None],
    attempts: int = ATTEMPTS,
    wait: float = WAIT,
) -> None:
    """Return once ``ensure()`` (None when the part is there, installed now if need be, else
    why not) says the part is there; else skip, or in CI retry and then fail."""
    if not in_ci():
        reason = ensure()
        if reason is not None:
            pytest.skip(reason)
        return
    retrying = Retrying(
        stop=stop_after_attempt(attempts),
        wait=wait_exponential(multiplier=wait, min=wait, max=wait * 8),
        retry=retry_if_result(lambda reason: reason is not None),
    )
    try:
        retrying(ensure)
    except RetryError as exc:
        reason = exc.last_attempt.result()
        pytest.fail(
            f"CI=true and {part} is not installed after {attempts} tries: {reason}. Install "
            f"{part} on the CI machine (make {part}), or see why apt-get failed above",
            pytrace=False,
        )
