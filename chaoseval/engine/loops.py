"""The event loop trials run on: uvloop where it is installed (a dependency on Linux and macOS).

The channels' servers (uvicorn), the forwarding client (aiohttp) and an in-process agent's
sockets all run on a trial's loop, in the runner's process or in a worker's. uvloop's
transports cost each request a quarter to a third less CPU than asyncio's (make bench:
bench_wire, every kind, side by side). Where uvloop is not installed, asyncio's own loop.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any


def loop_options() -> dict[str, Any]:
    """anyio's ``backend_options`` for a loop that runs trials."""
    return {"use_uvloop": True} if find_spec("uvloop") is not None else {}
