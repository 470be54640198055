"""``chaoseval view``'s server: uvicorn on a socket bound here (loopback unless told), so the
address is known, and allowed as the Host, before the first request."""

from __future__ import annotations

import socket
import webbrowser
from pathlib import Path

import uvicorn

from chaoseval.errors import ConfigError
from chaoseval.view.app import is_loopback, make_app

__all__ = ["bind", "exposure_warning", "serve"]


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: a free one); ConfigError naming the
    address when it cannot be had."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"--host {host} --port {port}: cannot listen there ({exc.strerror or exc}); "
            "choose another --port (0: any free one)"
        ) from None
    sock.listen(128)
    return sock


def exposure_warning(host: str) -> str | None:
    """What is said when the view is served beyond this machine."""
    if is_loopback(host):
        return None
    return (
        f"--host {host} is not a loopback address: anyone who can reach this machine on that "
        "address can read these journals (their trials' arguments, results and answers)"
    )


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def serve(root: Path, sock: socket.socket, host: str, *, open_browser: bool = False) -> None:
    """Serve the view of ``root`` on ``sock`` until interrupted."""
    if not root.is_dir():
        raise ConfigError(f"{root}: not a directory; give the folder that holds the journals")
    app = make_app(root, host)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    if open_browser:
        webbrowser.open(url_of(sock))
    server.run(sockets=[sock])
