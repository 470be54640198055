"""Serve an ASGI app on 127.0.0.1 from inside the running event loop, with uvicorn.

The channels run in the trial's own event loop (the ToolBox, its clock and the fault ledger are
only ever touched from there), so uvicorn is driven as a task rather than as a process. It must
not take over the process: no signal handlers (Ctrl-C belongs to the run), no logging setup.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from collections.abc import AsyncIterator, Iterator

import anyio
import uvicorn
from starlette.types import ASGIApp, Send

from chaoseval.errors import HarnessError

HOST = "127.0.0.1"
KEEP_ALIVE = 3600  # seconds an idle client connection stays open
BACKLOG = 2048  # uvicorn's default
STOP_WITHIN = 5.0  # seconds a shutdown may take before the listeners are closed anyway


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, stopping: anyio.Event):
        super().__init__(config)
        self.stopping = stopping

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # the run handles Ctrl-C; a served channel must not swallow it

    async def main_loop(self) -> None:
        # uvicorn polls should_exit every 0.1 s; a trial's server is stopped as soon as asked.
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864_000
            with anyio.move_on_after(0.1):
                await self.stopping.wait()


@contextlib.asynccontextmanager
async def serve_asgi(app: ASGIApp, *, shutdown_grace: float = 1.0) -> AsyncIterator[str]:
    """Serve ``app`` on a free port of 127.0.0.1 for the block; yields ``http://127.0.0.1:PORT``."""
    # IPPROTO_TCP, not the default protocol 0: asyncio sets TCP_NODELAY on an accepted
    # connection only when its socket says TCP (sockets accepted inherit the listener's
    # protocol). Without it a response written in two pieces waits for the client's delayed
    # ACK (Nagle): ~40 ms a request on loopback, which the trial would charge to the agent.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    # Bound and listening here, so the port is known before uvicorn starts, and taken: no
    # SO_REUSEADDR, or two trials binding port 0 at once could be handed the same port.
    sock.bind((HOST, 0))
    sock.listen(BACKLOG)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_config=None,
        log_level="warning",
        access_log=False,
        # uvicorn annotates whole seconds but waits with asyncio, which takes a float.
        timeout_graceful_shutdown=shutdown_grace,  # type: ignore[arg-type]
        # uvicorn closes a keep-alive connection idle for 5 s by default. A client that sends
        # on it just then gets a reset it did not cause (a spurious ToolConnectionError, a
        # retry the SDK absorbs): under load, a trial's calls can be that far apart. Idle
        # connections are cheap here, and they end with the server.
        timeout_keep_alive=KEEP_ALIVE,
        backlog=BACKLOG,
        # http="auto": httptools (a dependency) parses requests; the pure-Python h11, used only
        # where httptools cannot be installed, costs the servers 1.4 to 1.7x the CPU a request.
    )
    server = _Server(config, anyio.Event())
    stopped = anyio.Event()

    async def serve() -> None:
        try:
            await server.serve([sock])
        finally:
            stopped.set()

    try:
        async with _unwrapped(), anyio.create_task_group() as tg:
            tg.start_soon(serve)
            while not server.started:
                if stopped.is_set():
                    raise HarnessError(f"the 127.0.0.1 server for {app!r} did not start")
                await anyio.sleep(0.002)
            try:
                yield f"http://{HOST}:{port}"
            finally:
                await _stop(server, stopped)
    finally:
        sock.close()


async def _stop(server: _Server, stopped: anyio.Event) -> None:
    """Shut uvicorn down through its own path, even when the block raised or was cancelled.

    Cancelling serve() instead would skip closing its asyncio server: the socket's fd closes
    but the loop's selector keeps a stale entry for the number, and the next socket handed
    that number (another trial's listener or connection) is never polled: connections hang
    or fail. Shielded, so a trial's timeout cannot cut the shutdown short; bounded all the same.
    """
    server.should_exit = True
    server.stopping.set()
    with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_WITHIN):
        await stopped.wait()
    if not stopped.is_set():  # pragma: no cover - uvicorn did not finish in time
        for listener in server.servers:
            listener.close()


async def drop_connection(send: Send, *, reset: bool = False) -> None:
    """End the exchange with no response at all: a FIN (the peer closed), or with ``reset`` a
    TCP RST (SO_LINGER 0), as a crashed server or proxy does.

    ASGI has no message for this; uvicorn's ``send`` is a bound method of the request cycle,
    which holds the asyncio transport. Elsewhere, raising makes the server end the exchange.
    """
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if transport is None:
        raise ConnectionResetError("chaoseval: injected connection drop")
    if transport.is_closing():
        return
    sock = transport.get_extra_info("socket")
    try:
        if reset and sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass  # the peer is already gone: closing is all that is left
    if reset:
        transport.abort()
    else:
        transport.close()
    await anyio.sleep(0)  # let the server see the connection lost before the app returns


@contextlib.asynccontextmanager
async def _unwrapped() -> AsyncIterator[None]:
    """Whatever the block raised, not the task group's wrapping of it: a caller (the judge, a
    test) must see the agent's own ToolTimeout or crash, not an exception group."""
    try:
        yield
    except BaseExceptionGroup as group:
        raise single(group) from None


def single(group: BaseExceptionGroup) -> BaseException:
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
