"""How the browser agents click: the Actor API (chaoseval.agents.actor) on a live page.

A scenario's reference solution drives every browser agent: ``actor.call`` reaches the
trial's tools as always, and ``actor.click(label, role)`` clicks in Chromium. The page's own
script sends the click to the trial's click tool (chaoseval.channels.browser); the actor reads
the tool's answer from that response. Three styles:

- ``naive``: the selectors an agent built against the app would hard-code: the element's CSS id
  on the reference page (the page without perturbation), and failing that the position it had
  there. No waiting: a short timeout and one try.
- ``resilient``: role and label (fuzzy when the exact label is gone), after the layout has been
  still for a moment; closes dialogs first; waits for a control that has not rendered yet;
  retries a refused click.
- ``scripted``: resilient's waiting and dialog handling with exact labels only: the reference
  run that proves each UI task can be done in a browser.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Literal

from chaoseval.agents.actor import Actor
from chaoseval.engine.ui import Element, choose, dismiss_button
from chaoseval.errors import ToolError
from chaoseval.store import artifacts

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from playwright.async_api import Page

    from chaoseval.seams.agent import Episode

Style = Literal["scripted", "naive", "resilient"]

NAIVE_CLICK_MS = 1500  # how long a present but covered element may take to be clickable
# How long a click may take to reach the world and answer: generous, since a click that did
# reach the world but answered late would be retried and refused ("already approved").
RESPONSE_MS = 10_000
NAIVE_RESPONSE_MS = 4000  # the naive script's patience for the same
FIND_S = 6.0  # how long the resilient styles wait for a control to render
QUIET_MS = 300  # the layout counts as stable after this long without a change
SETTLE_S = 3.0  # at most this long waiting for it

# The agent's own watch on the page (not the harness's): when the DOM or layout last changed.
WATCH = """
(() => {
  window.__agent_changed = performance.now();
  const touch = () => { window.__agent_changed = performance.now(); };
  new MutationObserver(touch).observe(document, {subtree: true, childList: true,
                                                 attributes: true, characterData: true});
  try { new PerformanceObserver(touch).observe({type: "layout-shift", buffered: true}); }
  catch (e) {}
})();
"""

CONTROLS = """
() => {
  const ROLES = ["button", "link", "checkbox", "radio", "tab", "menuitem"];
  const roleOf = (el) => ROLES.includes(el.getAttribute("role")) ? el.getAttribute("role")
    : el.tagName === "BUTTON" || (el.tagName === "INPUT" && el.type === "submit") ? "button"
    : el.tagName === "A" ? "link" : null;
  return [...document.querySelectorAll("[id]")].filter((el) => roleOf(el)).map((el) => {
    const r = el.getBoundingClientRect();
    const dialog = el.closest("[role=dialog],[role=alertdialog]");
    const label = (el.getAttribute("aria-label") || el.textContent).trim();
    return {id: el.id, role: roleOf(el), visible: r.width > 0 && r.height > 0,
            label: label.replace(/\\s+/g, " "), x: r.x + r.width / 2, y: r.y + r.height / 2,
            dialog: dialog ? dialog.id || "dialog" : null,
            // a menu button whose menu is closed: what it would show
            controls: el.getAttribute("aria-expanded") === "false"
              ? el.getAttribute("aria-controls") || "" : null};
  });
}
"""


async def accessibility_tree(page: Page) -> str:
    return await page.locator("body").aria_snapshot()


class NoClick(ToolError):
    """The browser could not click (nothing there, covered, not rendered): no request left."""


class BrowserActor(Actor):
    """The Actor whose clicks happen in a browser page."""

    def __init__(self, episode: Episode, page: Page, url: str, style: Style):
        super().__init__(episode)
        self.pw = page
        self.url = url
        self.style = style
        self.learned: list[dict[str, Any]] = []  # the reference page's controls (naive)
        self.failures = 0

    async def open(self) -> None:
        if self.style == "naive":  # what it was written against: the page as designed
            reference = await self.pw.context.new_page()
            await reference.goto(self.url + "reference")
            self.learned = await reference.evaluate(CONTROLS)
            await reference.close()
        else:
            await self.pw.add_init_script(WATCH)
        await self.pw.goto(self.url)

    async def page(self) -> str | None:
        return await self.pw.content()

    async def accessibility(self) -> str:
        """The page as its accessibility tree (roles and names, YAML): what browser-use-style
        agents read instead of the HTML."""
        return await accessibility_tree(self.pw)

    async def click(self, label: str, role: str = "button") -> Any:
        try:
            if self.style == "naive":
                return await self._naive_click(label, role)
            return await self._careful_click(label, role)
        except ToolError:
            await self.screenshot(f"failed-click-{self.failures}.png")
            self.failures += 1
            raise

    async def screenshot(self, name: str) -> None:
        store = artifacts.current()
        if store is not None and not self.pw.is_closed():
            store.write_bytes(name, await self.pw.screenshot())

    # --- naive: hard-coded id, then the remembered position; no waiting ---------------------

    async def _naive_click(self, label: str, role: str) -> Any:
        spot = next((c for c in self.learned if c["label"] == label and c["role"] == role), None)
        if spot is None:
            raise ToolError(f"no {role} labelled {label!r} on the page it was written for")
        selector = self.pw.locator(f"[id='{spot['id']}']")
        try:
            if not await selector.count():  # not there now: no waiting for it to appear
                raise NoClick(f"no element #{spot['id']} on the page")
            return await self._send(
                lambda: selector.click(timeout=NAIVE_CLICK_MS),
                timeout=NAIVE_RESPONSE_MS,
            )
        except NoClick:
            return await self._send(
                lambda: self.pw.mouse.click(spot["x"], spot["y"]), timeout=NAIVE_RESPONSE_MS
            )

    # --- resilient / scripted: stable layout, dialogs closed, role and label, retries -------

    async def _careful_click(self, label: str, role: str) -> Any:
        last = ToolError(f"no {role} labelled {label!r} on the page")
        for _ in range(3):
            await self._settle()
            try:
                await self._close_dialogs()
                target = await self._find(label, role)
                return await self._send(self._clicker(target))
            except ToolError as exc:
                if "already" in str(exc):
                    raise  # the world said no: clicking again would not change that
                last = exc
        raise last

    def _clicker(self, target: Element) -> Callable[[], Awaitable[None]]:
        async def click() -> None:
            await self._locate(target).click(timeout=RESPONSE_MS)

        return click

    def _locate(self, target: Element) -> Any:
        by_role = self.pw.get_by_role(target.role, name=target.label, exact=True)  # type: ignore[arg-type]
        return by_role.first if target.label else self.pw.locator(f"[id='{target.id}']")

    async def _settle(self) -> None:
        """Wait until nothing moved for QUIET_MS (a bounded wait)."""
        loop = asyncio.get_running_loop()
        until = loop.time() + SETTLE_S
        while loop.time() < until:
            quiet = await self.pw.evaluate("performance.now() - (window.__agent_changed || 0)")
            if quiet >= QUIET_MS:
                return
            await asyncio.sleep(0.05)

    async def _controls(self) -> list[Element]:
        found = await self.pw.evaluate(CONTROLS)
        return [
            Element(c["id"], c["role"], c["label"], i, c["dialog"], controls=c["controls"])
            for i, c in enumerate(c for c in found if c["visible"])
        ]

    async def _close_dialogs(self) -> None:
        controls = await self._controls()
        for dialog in sorted({e.dialog for e in controls if e.dialog}):
            button = dismiss_button(dialog, controls)
            if button is not None:
                await self._send(self._clicker(button))
                await self._settle()

    async def _find(self, label: str, role: str) -> Element:
        loop = asyncio.get_running_loop()
        until = loop.time() + FIND_S
        opened: set[str] = set()
        while True:
            outside = [e for e in await self._controls() if not e.dialog]
            found = choose(label, role, outside, fuzzy=self.style == "resilient")
            if found is not None:
                return found
            # Not in sight: a narrow layout may keep it behind a collapsed menu button.
            menu = next((e for e in outside if e.controls is not None and e.id not in opened), None)
            if menu is not None:
                opened.add(menu.id)
                await self._send(self._clicker(menu))
                await self._settle()
                continue
            if loop.time() >= until:
                raise ToolError(f"no {role} labelled {label!r} on the page")
            await asyncio.sleep(0.2)

    # --- one click, answered by the trial's click tool --------------------------------------

    async def _send(self, action: Callable[[], Awaitable[Any]], timeout: int = RESPONSE_MS) -> Any:
        """Do ``action`` and read the click tool's answer from the page's request."""
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        try:
            async with self.pw.expect_response(
                lambda r: r.url.endswith("/click"), timeout=timeout
            ) as info:
                try:
                    await action()
                except PlaywrightError as exc:
                    raise NoClick(f"could not click: {str(exc).splitlines()[0]}") from exc
            body = await (await info.value).json()
        except PlaywrightTimeout as exc:
            raise ToolError(f"the click reached nothing: {str(exc).splitlines()[0]}") from exc
        if not body.get("ok"):
            raise ToolError(str(body.get("error")))
        return body["result"]
