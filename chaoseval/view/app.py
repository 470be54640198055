"""The view's web app (Starlette): routes, and the guards every request passes.

- The Host header must name this server (loopback names, or the host it was told to bind):
  a page on another site cannot reach it through a DNS name rebound to 127.0.0.1.
- Every page is sent with a Content-Security-Policy that runs no inline script and loads
  nothing from elsewhere, and ``nosniff``: an artifact is an image or plain text, never HTML.
- Pages are GET only; nothing a request says writes anything.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from chaoseval import redact
from chaoseval.errors import ChaosevalError
from chaoseval.view import runs
from chaoseval.view.files import read_text, served
from chaoseval.view.html import SCRIPT, page, text
from chaoseval.view.library import Library, NotServed

__all__ = ["HostGuard", "allowed_hosts", "make_app"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(bind: str) -> set[str]:
    """Host names a request may name: the loopback ones, and the bound host's own."""
    names = set(LOOPBACK_NAMES)
    if bind not in ("0.0.0.0", "::", ""):
        names.add(bind.strip("[]").lower())
    else:  # every address: requests may name this machine by its host name
        names.add(socket.gethostname().lower())
    return names


def _hostname(header: str) -> str:
    header = header.strip().lower()
    if header.startswith("["):  # [::1]:8000
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class HostGuard:
    """Refuses (421) a request whose Host header names another host, or none."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = {h.lower() for h in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            host = headers.get(b"host", b"").decode("latin-1")
            if _hostname(host) not in self.hosts:
                response = PlainTextResponse(
                    f"refused: Host {host!r} is not this server's (chaoseval view answers "
                    "only requests for its own address)",
                    status_code=421,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _html(body: str, status: int = 200) -> HTMLResponse:
    """A page or fragment, redacted whole as it is sent: a secret in markup the report's
    renderers made (or a pattern added since the journal was written) is replaced too."""
    return HTMLResponse(redact.redact(body), status_code=status, headers=HEADERS)


def _guarded(
    handler: Callable[[Library, Request], Response],
) -> Callable[[Request], Awaitable[Response]]:
    """A route: its errors a page naming them (404 for what is not served), never a trace."""

    async def endpoint(request: Request) -> Response:
        from starlette.concurrency import run_in_threadpool

        library: Library = request.app.state.library
        try:
            return await run_in_threadpool(handler, library, request)
        except NotServed as exc:
            return _html(page("Not served", f"<p class='warn'>{text(exc)}</p>"), 404)
        except ChaosevalError as exc:
            return _html(page("Cannot show this", f"<p class='warn'>{text(exc)}</p>"), 422)

    return endpoint


def _runs(library: Library, request: Request) -> Response:
    return _html(runs.runs_page(library))


def _run(library: Library, request: Request) -> Response:
    return _html(runs.run_page(library, runs.Filters.of(request.query_params)))


def _trials(library: Library, request: Request) -> Response:
    return _html(runs.trials_fragment(library, runs.Filters.of(request.query_params)))


def _report(library: Library, request: Request) -> Response:
    return _html(runs.report_fragment(library, request.query_params.get("j", "")))


def _statuses(library: Library, request: Request) -> Response:
    return _html(runs.statuses_fragment(library, request.query_params.get("j", "")))


def _trial(library: Library, request: Request) -> Response:
    from chaoseval.view.trial import trial_page

    q = request.query_params
    return _html(trial_page(library, q.get("j", ""), q.get("id", "")))


def _compare(library: Library, request: Request) -> Response:
    from chaoseval.view.compare import compare_page

    q = request.query_params
    return _html(compare_page(library, q.get("a", ""), q.get("b", "")))


def _trends(library: Library, request: Request) -> Response:
    from chaoseval.view.compare import trends_page

    return _html(trends_page(library, request.query_params.get("j", "")))


def _artifact(library: Library, request: Request) -> Response:
    from chaoseval.view.trial import find_row

    q = request.query_params
    key = q.get("j", "")
    t, _ = library.trials(key)
    record = t.record(find_row(t, q.get("id", "")))
    try:
        art = record.artifacts[int(q.get("n", ""))]
    except (ValueError, IndexError):
        raise NotServed(f"{record.trial_id} has no artifact {q.get('n')!r}") from None
    file = served(library.root, library.entry(key).path, record, art)
    if file.image:
        return Response(file.path.read_bytes(), media_type=file.media_type, headers=HEADERS)
    return PlainTextResponse(read_text(file), headers=HEADERS)


async def _script(request: Request) -> Response:
    return Response(SCRIPT, media_type="text/javascript", headers=HEADERS)


def make_app(root: Path, bind: str = "127.0.0.1") -> ASGIApp:
    """The view of the journals under ``root``, answering requests for ``bind``'s names."""
    routes = [
        Route("/", _guarded(_runs)),
        Route("/run", _guarded(_run)),
        Route("/trial", _guarded(_trial)),
        Route("/compare", _guarded(_compare)),
        Route("/trends", _guarded(_trends)),
        Route("/artifact", _guarded(_artifact)),
        Route("/fragment/trials", _guarded(_trials)),
        Route("/fragment/report", _guarded(_report)),
        Route("/fragment/statuses", _guarded(_statuses)),
        Route("/static/view.js", _script),
    ]
    app = Starlette(routes=routes)
    app.state.library = Library(root)
    return HostGuard(app, allowed_hosts(bind))
