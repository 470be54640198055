"""The sandbox's side of a trial's network: run as a script inside bubblewrap, stdlib only.

A sandboxed ``exec:`` agent has a network namespace of its own (``--unshare-net``): a loopback
and nothing else, so neither the host's other services nor another machine can be reached.
Its trial's servers (tools, model channel, pages) listen on the host's 127.0.0.1, which is not
that loopback. This script listens on the same ports on the sandbox's 127.0.0.1, so the URLs in
the agent's environment work unchanged, and for each connection asks chaoseval, over a Unix
socket in the trial's directory, for a socket already connected to that port on the host
(passed as a file descriptor, ``SCM_RIGHTS``); then it copies bytes both ways, a thread a
direction (threads, not asyncio: importing asyncio alone doubled the relay's start, paid by
every trial). chaoseval
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

import os
import signal
import socket
import subprocess
import sys
import threading

STARTED = b"chaoseval-relay-started"
CHUNK = 1 << 16


def _upstream(control: str, port: int) -> socket.socket | None:
    """A socket connected to ``port`` on the host, from chaoseval; None when refused."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as ask:
        ask.connect(control)
        ask.sendall(port.to_bytes(2, "big"))
        _, fds, _, _ = socket.recv_fds(ask, 1, 1)
    return socket.socket(fileno=fds[0]) if fds else None


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Bytes from ``source`` to ``sink`` until its end, which is passed on (a half-close)."""
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:  # a reset on either side ends both ways at once
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _connection(agent: socket.socket, control: str, port: int) -> None:
    with agent:
        try:
            host = _upstream(control, port)
        except OSError:
            host = None
        if host is None:
            return
        with host:
            host.setblocking(True)  # chaoseval connected it without blocking: the flag came too
            for sock in (agent, host):  # as the servers do: no Nagle wait on a split answer
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            back = threading.Thread(target=_pump, args=(host, agent), daemon=True)
            back.start()
            _pump(agent, host)
            back.join()


def _accept(server: socket.socket, control: str, port: int) -> None:
    while True:
        agent, _ = server.accept()
        threading.Thread(target=_connection, args=(agent, control, port), daemon=True).start()


def _run(control: str, status_fd: int, ports: list[int], argv: list[str]) -> int:
    for port in ports:
        server = socket.create_server(("127.0.0.1", port), backlog=128)
        threading.Thread(target=_accept, args=(server, control, port), daemon=True).start()
    try:
        child = subprocess.Popen(argv)  # inherits stdin, stdout, stderr and the environment
    except OSError as exc:  # no STARTED: chaoseval books it as the sandbox's failure
        print(f"chaoseval sandbox: cannot start {argv[0]!r}: {exc}", file=sys.stderr)
        return 127
    os.write(status_fd, STARTED)
    os.close(status_fd)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    return child.wait()


def main(args: list[str]) -> None:
    split = args.index("--")
    control, status_fd, ports = args[:split]
    numbers = [int(p) for p in ports.split(",") if p]
    code = _run(control, int(status_fd), numbers, args[split + 1 :])
    if code < 0:  # killed by a signal: end the same way, so the trial reads the same code
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
