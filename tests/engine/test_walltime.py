"""The trials' wall-time limit: one loop timer for every running trial."""

from __future__ import annotations

import asyncio
import time

import anyio

from chaoseval.engine.walltime import WallLimit


async def _waits(seconds: float, limit_seconds: float, out: dict[str, bool], name: str) -> None:
    limit = WallLimit(limit_seconds)
    with limit:
        await anyio.sleep(seconds)
    out[name] = limit.expired and limit.scope.cancelled_caught


def test_only_the_blocks_past_their_limit_are_cancelled():
    out: dict[str, bool] = {}

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_waits, 10, 0.1, out, "slow")
            tg.start_soon(_waits, 0.01, 5, out, "quick")
            tg.start_soon(_waits, 10, 0.3, out, "slower")
            tg.start_soon(_waits, 0.2, 10, out, "later")

    started = time.monotonic()
    anyio.run(main)
    assert out == {"slow": True, "quick": False, "slower": True, "later": False}
    # The 10 s sleeps were cut short: uncut, the run takes 10 s at least (a bound, not a race
    # with the limits: a loaded machine's late wake-ups are far below the 9.5 s between).
    assert time.monotonic() - started < 9.5


def test_an_early_cancel_is_not_an_expiry():
    async def main() -> tuple[bool, bool]:
        limit = WallLimit(10)
        with limit:
            limit.scope.cancel()
            await anyio.sleep(1)
        return limit.expired, limit.scope.cancelled_caught

    assert anyio.run(main) == (False, True)


def test_limits_that_never_wait_leave_no_timer_each():
    """Trials that never yield run many to one loop iteration: a timer per trial used to pile
    up (cancelled but kept until the loop's next iteration), one per trial."""

    async def main() -> int:
        for _ in range(5_000):
            with WallLimit(30):
                pass
        return len(asyncio.get_running_loop()._scheduled)  # type: ignore[attr-defined]

    assert anyio.run(main) <= 2
