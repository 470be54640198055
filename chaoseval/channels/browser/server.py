"""A trial's UI as a web page on 127.0.0.1: the page server the browser agents open.

``serve_pages(episode)`` serves, under a secret path ``/ui/<token>/``,

- ``GET  /``          the scenario's page rendered from the trial's world, with the trial's
  layout operations (chaoseval.engine.domops) replayed on it by a script (channels.browser.script);
  loading it is the observation: the observation perturbations fire on it as on the text DOM,
  but their faults are delivered only when the script reports the change rendered; markup
  planted in the page (``plant`` operations: an injection's hidden text, aria-label, alt text)
  is in the HTML as served, delivered when the page's last byte is written;
- ``GET  /reference`` the same page without perturbation and without behaviour: what an agent
  built against the app learned its selectors and positions from;
- ``POST /click``     ``{"element_id"}``: the trial's ``click`` tool (policy, budgets, ledger and
  judge exactly as for any other tool call); ``{"ok", "result"}`` or ``{"ok": false, "error"}``;
- ``POST /beacon``    ``{"fault", "cls", "shifts"}``: the script's reports (``width``: the
  window width the page was laid out at, for the viewport's narrow layout);
- ``GET  /device``    the device the trial's browser should be (chaoseval.model.device: the
  scenario's ``viewport``, or the one the ``viewport`` perturbation drew for this trial), with
  Playwright's ``new_context`` arguments under ``playwright``: ``exec:`` agents size their
  browser from it before opening the page;
- ``GET  /a11y``      the page as an accessibility tree (roles and names, Playwright's
  aria-snapshot YAML; chaoseval.engine.a11y) rendered from the text DOM: a page observation
  like ``GET /``, for agents that read the tree instead of the HTML.

When the block ends, the page's Cumulative Layout Shift goes into the trajectory as a ``note``
step (``tool="browser"``, ``result={"cls", "layout_shifts", "page_loads"}``), and into the
detail of each layout fault delivered in the browser.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from chaoseval.channels.asgi import serve_asgi
from chaoseval.channels.browser.script import SCRIPT, SETTLE_MS
from chaoseval.channels.limits import BodyTooLarge, bounded_body, record_oversized
from chaoseval.engine.a11y import aria_snapshot
from chaoseval.engine.domops import browser_ops
from chaoseval.engine.observation import Observation
from chaoseval.engine.ui import ui_state
from chaoseval.errors import AgentVisibleError, HarnessError
from chaoseval.model.device import Viewport
from chaoseval.seams.agent import Episode

PATH = re.compile(r"^/ui/(?P<token>[A-Za-z0-9_-]+)/(?P<rest>[a-z0-9]*)$")
BODY_END = re.compile(r"</body\s*>", re.IGNORECASE)
# A responsive page lays out at the device's width (without it a mobile browser lays it out
# 980 px wide and zooms out); before <html>, the parser puts it in the head.
META = '<meta name="viewport" content="width=device-width, initial-scale=1">'


class PageApp:
    """One trial's page server (an ASGI app)."""

    def __init__(self, episode: Episode):
        observation = episode._observe
        if not isinstance(observation, Observation):
            raise HarnessError("the page server needs a scenario with a ui page")
        self.episode = episode
        self.observation = observation
        self.token = secrets.token_urlsafe(12)
        self.base = ""
        self.cls = 0.0
        self.shifts = 0
        self.loads = 0
        self.delivered: set[int] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        match = PATH.match(scope["path"])
        if match is None or not secrets.compare_digest(match["token"], self.token):
            await PlainTextResponse("no such page", 404)(scope, receive, send)
            return
        # The page server's own time, measured as the tool hub's is: the request's, less the
        # click tool's (the tool and its faults are not the channel's).
        tools = self.episode.tools
        started, busy = time.perf_counter(), getattr(tools, "busy_seconds", 0.0)
        try:
            await self._serve(match["rest"], scope, receive, send)
        finally:
            self.observation.state.add_overhead(
                time.perf_counter() - started - (getattr(tools, "busy_seconds", 0.0) - busy)
            )

    async def _serve(self, rest: str, scope: Scope, receive: Receive, send: Send) -> None:
        obs = self.observation
        try:
            receive = await bounded_body(scope, receive, obs.state.request_limit)
        except BodyTooLarge as exc:
            record_oversized(obs.state, obs.world.clock, "page", scope["path"], exc)
            await JSONResponse({"ok": False, "error": str(exc)}, 413)(scope, receive, send)
            return
        request = Request(scope, receive)
        route = (request.method, rest)
        handler = {
            ("GET", ""): self.page,
            ("GET", "reference"): self.reference,
            ("POST", "click"): self.click,
            ("POST", "beacon"): self.beacon,
            ("GET", "device"): self.device,
            ("GET", "a11y"): self.a11y,
        }.get(route)
        response = await handler(request) if handler else PlainTextResponse("not here", 404)
        await response(scope, receive, send)
        if isinstance(response, PageResponse):  # the page's bytes are out: its planted text read
            obs.state.deliver(response.planted)

    async def page(self, request: Request) -> Response:
        obs = self.observation
        await obs.observe(deliver=False)  # the plugins fire and plan; the script delivers
        self.loads += 1
        ops = browser_ops(ui_state(obs.world), obs.world.clock.monotonic())
        # Planted markup (an injection) is part of the page as served, so a reader without a
        # script (httpx, curl) gets it too; the script replays only the layout's changes.
        planted = [op for op in ops if op["op"] == "plant"]
        config = {
            "base": self.base,
            "ops": [op for op in ops if op["op"] != "plant"],
            "settle_ms": SETTLE_MS,
        }
        data = json.dumps(config).replace("</", "<\\/")
        tail = (
            '<div id="chaoseval-status" role="status" aria-live="polite"></div>'
            f'<script id="chaoseval-config" type="application/json">{data}</script>'
            f"<script>{SCRIPT}</script>"
        )
        page = obs.reference()
        for op in planted:
            page = _before_body_end(page, str(op["html"]))
        return PageResponse(
            META + _before_body_end(page, tail),
            planted=[op["fault"] for op in planted if isinstance(op.get("fault"), int)],
        )

    async def device(self, request: Request) -> Response:
        device = trial_device(self.episode)
        return JSONResponse({**device.model_dump(), "playwright": device.playwright()})

    async def a11y(self, request: Request) -> Response:
        page = await self.observation.observe() or ""
        return PlainTextResponse(aria_snapshot(page))

    async def reference(self, request: Request) -> Response:
        return HTMLResponse(META + self.observation.reference())

    async def click(self, request: Request) -> Response:
        body = await _json(request)
        element_id = body.get("element_id")
        if not isinstance(element_id, str):
            return JSONResponse({"ok": False, "error": "click needs an element_id"}, 400)
        try:
            result = await self.episode.tools.call("click", element_id=element_id)
        except AgentVisibleError as exc:
            return JSONResponse({"ok": False, "error": str(exc)})
        return JSONResponse({"ok": True, "result": result})

    async def beacon(self, request: Request) -> Response:
        body = await _json(request)
        self.cls = max(self.cls, float(body.get("cls") or 0.0))
        self.shifts = max(self.shifts, int(body.get("shifts") or 0))
        fault = body.get("fault")
        faults = self.observation.state.trajectory.faults
        # The script reports only observation faults (its own DOM changes).
        if (
            isinstance(fault, int)
            and 0 <= fault < len(faults)
            and faults[fault].channel == "observation"
        ):
            self.observation.state.deliver([fault])
            self.delivered.add(fault)
            if isinstance(body.get("width"), int | float):
                faults[fault].detail["rendered_width"] = body["width"]
        return Response(status_code=204)

    def finish(self) -> None:
        """The page's layout stability, into the trajectory (when the page was opened)."""
        if not self.loads:
            return
        state, clock = self.observation.state, self.observation.world.clock
        cls = round(self.cls, 4)
        for i in self.delivered:
            state.trajectory.faults[i].detail["cls"] = cls
        result = {"cls": cls, "layout_shifts": self.shifts, "page_loads": self.loads}
        state.trajectory.add_step("note", t=clock.monotonic(), tool="browser", result=result)


def trial_device(episode: Episode) -> Viewport:
    """The device the trial's page is seen on: a ``viewport``-like plugin's draw for this
    trial (any observation plugin with ``device_for``), else the scenario's own."""
    observation = episode._observe
    if not isinstance(observation, Observation):
        raise HarnessError("a device belongs to a scenario with a ui page")
    link = episode.link
    for plugin in link.plugins if link is not None else []:
        draw = getattr(plugin, "device_for", None)
        if plugin.channel == "observation" and draw is not None:
            device = draw(link.run_seed, link.scenario, link.trial)  # type: ignore[union-attr]
            if isinstance(device, Viewport):
                return device
    return ui_state(observation.world).base


class PageResponse(HTMLResponse):
    """The page, and the faults of the markup planted in it (delivered once it is written)."""

    def __init__(self, content: str, planted: list[int]):
        super().__init__(content)
        self.planted = planted


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _before_body_end(page: str, tail: str) -> str:
    found = list(BODY_END.finditer(page))
    if not found:
        return page + tail
    at = found[-1].start()
    return page[:at] + tail + page[at:]


@asynccontextmanager
async def serve_pages(episode: Episode) -> AsyncIterator[str]:
    """The trial's pages on a server of their own for the block; yields the page's URL."""
    app = PageApp(episode)
    async with serve_asgi(app) as url:
        app.base = f"{url}/ui/{app.token}/"
        try:
            yield app.base
        finally:
            app.finish()
