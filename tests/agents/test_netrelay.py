"""The sandbox's relay (chaoseval.agents.netrelay) with chaoseval's side of it
(sandbox.serve_ports), on real sockets: bytes both ways, the end of a request passed on, no
Nagle wait on either socket, and nothing for a port that is not the trial's."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal

from chaoseval.agents import netrelay
from chaoseval.agents.sandbox import serve_ports


def _echo(server: socket.socket) -> None:
    try:
        conn, _ = server.accept()
    except OSError:  # closed unused: the test asked for nothing it serves
        return
    with conn:
        while data := conn.recv(1 << 16):
            conn.sendall(data)


@pytest.fixture
def echo() -> Iterator[int]:
    """A host service on 127.0.0.1 that sends back what it gets: a trial's server."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        threading.Thread(target=_echo, args=(server,), daemon=True).start()
        yield server.getsockname()[1]


def _agent_side() -> tuple[socket.socket, socket.socket]:
    """A connection as the agent makes it to the relay's listener: (client, accepted)."""
    with socket.create_server(("127.0.0.1", 0)) as front:
        client = socket.create_connection(front.getsockname(), timeout=60)  # bounds a hang
        accepted, _ = front.accept()
    return client, accepted


def test_the_relay_carries_a_connection_both_ways_without_nagle(tmp_path: Path, echo: int):
    control = tmp_path / "net.sock"
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(serve_ports(control, {echo})),
    ):
        client, accepted = _agent_side()
        relay = threading.Thread(
            target=netrelay._connection, args=(accepted, str(control), echo), daemon=True
        )
        relay.start()
        with client:
            client.sendall(b"ping")
            assert client.recv(4) == b"ping"
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            client.shutdown(socket.SHUT_WR)  # the request's end reaches the server...
            assert client.recv(4) == b""  # ...which ends, and so does the relay
        relay.join(60)  # bounds a relay that never ends; one that does is joined at once
        assert not relay.is_alive()


def test_a_port_that_is_not_the_trial_s_gets_nothing(tmp_path: Path, echo: int):
    control = tmp_path / "net.sock"
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(serve_ports(control, {echo + 1})),
    ):
        assert netrelay._upstream(str(control), echo) is None
        client, accepted = _agent_side()
        netrelay._connection(accepted, str(control), echo)  # refused: closes at once
        with client:
            assert client.recv(4) == b""
