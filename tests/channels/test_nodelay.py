"""Every server chaoseval runs answers at loopback speed: each connection it accepts has
TCP_NODELAY set. Without it, a response written in two pieces (headers, then body) waits for
the client's delayed ACK (Nagle): about 40 ms a request, charged to the agent.

Each server kind is started through its own entry point inside a real trial, a real client
connects and gets an answer, and the accepted socket is read back from the kernel
(``getsockopt`` on the server's side of the connection, found among this process's fds).
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from urllib.parse import urlsplit

import anyio
from model_support import Probe, run_agent
from servers_support import all_servers

import chaoseval
from chaoseval.seams.agent import Episode

# The modules that start a server (each through channels.asgi.serve_asgi), all tested below.
SERVERS = {
    "chaoseval/channels/hub.py",  # MCP and HTTP tools of a run's trials
    "chaoseval/channels/model/server.py",  # the model channel
    "chaoseval/channels/browser/server.py",  # the page server
    "chaoseval/engine/http.py",  # HTTP tools on a server of their own
    # the sandbox's relay to the trial's ports: it sets TCP_NODELAY itself on both sockets of
    # each connection, in the sandbox where this probe cannot look (tests/agents/test_netrelay.py)
    "chaoseval/agents/netrelay.py",
    # `chaoseval view`: a person's browser reading journals, on no trial's path (no agent's
    # request waits on it), so not probed here; tests/view/ drive it
    "chaoseval/view/serve.py",
}
LISTENS = re.compile(
    r"serve_asgi\(|\.listen\(|start_server\(|create_server\(|uvicorn\.(run|Server)"
)


def accepted_nodelay(port: int) -> list[int]:
    """TCP_NODELAY of each connection this process accepted on ``port`` (server side)."""
    flags = []
    for name in os.listdir("/proc/self/fd"):
        try:
            sock = socket.fromfd(int(name), socket.AF_INET, socket.SOCK_STREAM)
        except OSError:
            continue  # not a socket
        with sock:
            try:
                local, peer = sock.getsockname(), sock.getpeername()
            except OSError:
                continue  # a listener (no peer), or not an inet socket
            if isinstance(local, tuple) and local[1] == port and peer[1] != port:
                flags.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
    return flags


async def _ask(url: str, path: str) -> tuple[int, bytes]:
    """One HTTP/1.1 request on a connection left open; the server's port and the status line."""
    parts = urlsplit(url)
    assert parts.port is not None
    stream = await anyio.connect_tcp(parts.hostname or "127.0.0.1", parts.port)
    await stream.send(f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\n\r\n".encode())
    head = await stream.receive()
    _OPEN.append(stream)  # closed when the probe is done
    return parts.port, head.split(b"\r\n", 1)[0]


_OPEN: list[anyio.abc.SocketStream] = []


async def _probe(episode: Episode) -> dict[str, tuple[bytes, list[int]]]:
    seen: dict[str, tuple[bytes, list[int]]] = {}
    async with all_servers(episode) as on:
        asks = {
            "tool hub (HTTP tools)": (on.hub.tools, urlsplit(on.hub.tools).path + "/tools"),
            "tool hub (MCP)": (on.hub.mcp, urlsplit(on.hub.mcp).path),
            "HTTP tools server": (on.tools, "/tools"),
            "model channel": (on.model.base_url, "/v1/models"),
            "page server": (on.page, urlsplit(on.page).path),
        }
        for kind, (url, path) in asks.items():
            port, status = await _ask(url, path)
            seen[kind] = (status, accepted_nodelay(port))
        for stream in _OPEN:
            await stream.aclose()
        _OPEN.clear()
    return seen


def test_every_server_sets_tcp_nodelay_on_the_connections_it_accepts() -> None:
    seen: dict[str, tuple[bytes, list[int]]] = {}

    async def body(episode: Episode) -> str:
        seen.update(await _probe(episode))
        return "probed"

    [record] = run_agent(Probe(body), scenarios=["ui-checkout"], trials=1)
    assert record.answer == "probed", record.error
    assert set(seen) == {
        "tool hub (HTTP tools)", "tool hub (MCP)", "HTTP tools server", "model channel",
        "page server",
    }  # fmt: skip
    for kind, (status, flags) in seen.items():
        assert status.startswith(b"HTTP/1.1 "), (kind, status)
        assert flags, f"{kind}: no accepted connection found"
        assert all(flags), f"{kind}: an accepted connection without TCP_NODELAY ({flags})"


def test_every_module_that_starts_a_server_is_probed_above() -> None:
    """A new listener must be added to the probe: the test cannot vouch for a server it never
    starts. Every listener goes through channels/asgi.py, where the socket is made."""
    root = Path(chaoseval.__file__).parent
    starting = {
        str(path.relative_to(root.parent))
        for path in root.rglob("*.py")
        if LISTENS.search(path.read_text()) and path.name != "asgi.py"
    }
    assert starting == SERVERS
