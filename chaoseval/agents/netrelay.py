"""The sandbox's side of a trial's network: run as a script inside bubblewrap, stdlib only.

A sandboxed ``exec:`` agent has a network namespace of its own (``--unshare-net``): a loopback
and nothing else, so neither the host's other services nor another machine can be reached.
Its trial's servers (tools, model channel, pages) listen on the host's 127.0.0.1, which is not
that loopback. This script listens on the same ports on the sandbox's 127.0.0.1, so the URLs in
the agent's environment work unchanged, and for each connection asks chaoseval, over a Unix
socket in the trial's directory, for a socket already connected to that port on the host
(passed as a file descriptor, ``SCM_RIGHTS``); then it copies bytes both ways. chaoseval
connects only to the trial's own ports (chaoseval.agents.sandbox.serve_ports): the agent
reaches those and nothing else.

Run as ``python -I -S netrelay.py CONTROL STATUS_FD PORT[,PORT...] -- COMMAND...``: it binds
the ports, starts COMMAND, writes ``STARTED`` to ``STATUS_FD`` (chaoseval's proof that the
agent's command ran, which the agent never holds), and exits as COMMAND exits. It ignores
SIGTERM: the trial's stop signals every process in the sandbox, and the agent must get its
grace before the namespace goes with this process.

No chaoseval import: it starts under ``-I -S`` in milliseconds, with nothing but the standard
library, in any interpreter the sandbox can run.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading

STARTED = b"chaoseval-relay-started"
CHUNK = 1 << 16


async def _upstream(control: str, port: int) -> socket.socket | None:
    """A socket connected to ``port`` on the host, from chaoseval; None when refused."""
    loop = asyncio.get_running_loop()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as ask:
        ask.setblocking(False)
        await loop.sock_connect(ask, control)
        await loop.sock_sendall(ask, port.to_bytes(2, "big"))
        readable = loop.create_future()
        loop.add_reader(ask.fileno(), readable.set_result, None)
        try:
            await readable
        finally:
            loop.remove_reader(ask.fileno())
        _, fds, _, _ = socket.recv_fds(ask, 1, 1)
    if not fds:
        return None
    return socket.socket(fileno=fds[0])


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()  # a half-close passes on: HTTP/1.0 clients end a request so
    except (ConnectionError, OSError):
        writer.close()


async def _serve(control: str, port: int) -> asyncio.Server:
    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            sock = await _upstream(control, port)
        except OSError:
            sock = None
        if sock is None:
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(sock=sock)
        try:
            await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
        finally:
            writer.close()
            up_writer.close()

    return await asyncio.start_server(connection, "127.0.0.1", port)


async def _main(control: str, status_fd: int, ports: list[int], argv: list[str]) -> int:
    servers = [await _serve(control, port) for port in ports]
    try:
        child = subprocess.Popen(argv)  # inherits stdin, stdout, stderr and the environment
    except OSError as exc:  # no STARTED: chaoseval books it as the sandbox's failure
        print(f"chaoseval sandbox: cannot start {argv[0]!r}: {exc}", file=sys.stderr)
        return 127
    os.write(status_fd, STARTED)
    os.close(status_fd)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    threading.Thread(
        target=lambda: loop.call_soon_threadsafe(done.set_result, child.wait()), daemon=True
    ).start()
    code: int = await done
    for server in servers:
        server.close()
    return code


def main(args: list[str]) -> None:
    split = args.index("--")
    control, status_fd, ports = args[:split]
    argv = args[split + 1 :]
    numbers = [int(p) for p in ports.split(",") if p]
    code = asyncio.run(_main(control, int(status_fd), numbers, argv))
    if code < 0:  # killed by a signal: end the same way, so the trial reads the same code
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
