"""The UI observation channel: pages as HTML, a ``click`` tool, and how agents find elements.

A scenario with a ``ui`` page gives the agent an HTML page (``episode.observe()``) and a tool
``click(element_id)`` built by :func:`click_tool`, which maps the page's element ids to
actions on the world. Layout perturbations change what the agent *sees* (order, ids, labels,
an overlaying dialog) and record in the trial's :class:`UiState` how the page was changed, so
the click tool accepts the ids the agent was actually shown and refuses the ones that are gone
or covered.

Interactive elements are ``<button>``, ``<a>`` and anything with a ``role`` attribute of
button, link, checkbox, radio or tab; the label is ``aria-label`` or the element's text.
"""

from __future__ import annotations

import difflib
import html
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from chaoseval.engine.dom import Node as Node
from chaoseval.engine.dom import parse_html as parse_html
from chaoseval.engine.dom import serialize as serialize
from chaoseval.errors import ToolError
from chaoseval.model.device import DESKTOP, Viewport
from chaoseval.model.scenario import Scenario, ToolSpec, tool

if TYPE_CHECKING:
    from chaoseval.model.world import World
    from chaoseval.seams.agent import Episode

ROLES = {"button", "link", "checkbox", "radio", "tab", "menuitem"}
DIALOG_ROLES = {"dialog", "alertdialog"}


def role_of(node: Node) -> str | None:
    role = node.attrs.get("role")
    if role in ROLES:
        return role
    if node.tag == "button" or (node.tag == "input" and node.attrs.get("type") == "submit"):
        return "button"
    if node.tag == "a":
        return "link"
    return None


def label_of(node: Node) -> str:
    return node.attrs.get("aria-label") or node.text() or node.attrs.get("value") or ""


@dataclass(frozen=True)
class Element:
    """An interactive element as an agent reading the page sees it."""

    id: str
    role: str
    label: str
    index: int  # position among the page's interactive elements
    dialog: str | None = None  # id of the dialog it sits in
    hidden_in: str | None = None  # id of the hidden (collapsed) container it sits in
    controls: str | None = None  # the container it shows and hides (aria-controls)


def elements(page: str | Node) -> list[Element]:
    root = parse_html(page) if isinstance(page, str) else page
    found: list[Element] = []

    def visit(node: Node, dialog: str | None, hidden: str | None) -> None:
        if node.attrs.get("role") in DIALOG_ROLES:
            dialog = node.attrs.get("id") or "dialog"
        if hidden is None and "hidden" in node.attrs:
            hidden = node.attrs.get("id") or "hidden"
        role = role_of(node)
        if role is not None and node.attrs.get("id"):
            found.append(
                Element(node.attrs["id"] or "", role, label_of(node), len(found), dialog, hidden,
                        node.attrs.get("aria-controls"))
            )  # fmt: skip
        for c in node.children:
            if isinstance(c, Node):
                visit(c, dialog, hidden)

    visit(root, None, None)
    return found


# --- label matching -------------------------------------------------------------------------

# Words a model treats as the same intent; each maps to a canonical token.
SYNONYMS: dict[str, str] = {
    "accept": "approve",
    "confirm": "approve",
    "grant": "approve",
    "ok": "approve",
    "reject": "deny",
    "decline": "deny",
    "refuse": "deny",
    "forward": "escalate",
    "supervisor": "manager",
    "buy": "place",
    "purchase": "order",
    "complete": "place",
    "submit": "place",
    "pay": "place",
    "regular": "standard",
    "economy": "standard",
    "priority": "express",
    "fast": "express",
    "return": "back",
    "shopping": "cart",
}
STOPWORDS = {"the", "a", "an", "to", "now", "this", "my", "your", "request"}
DISMISS = ("accept", "got it", "close", "dismiss", "no thanks", "not now", "continue", "stay", "ok")


def _tokens(label: str) -> list[str]:
    words = re.findall(r"[a-z0-9]+", label.lower())
    return [SYNONYMS.get(w, w) for w in words if w not in STOPWORDS]


def label_score(wanted: str, candidate: str) -> float:
    """How well ``candidate`` names the same action as ``wanted``, in [0, 1].

    The first word (the verb: approve, deny, place) weighs double, because two buttons on
    one page usually differ by their verb and share their object ("Approve refund" /
    "Deny refund"). Ties break on character similarity.
    """
    want, have = _tokens(wanted), set(_tokens(candidate))
    if not want:
        return 0.0
    weights = [2.0] + [1.0] * (len(want) - 1)
    hit = sum(w for t, w in zip(want, weights, strict=True) if t in have)
    extra = len(have - set(want)) * 0.25
    overlap = hit / (sum(weights) + extra)
    ratio = difflib.SequenceMatcher(None, wanted.lower(), candidate.lower()).ratio()
    return round(0.9 * overlap + 0.1 * ratio, 4)


def rank(wanted: str, role: str | None, candidates: list[Element]) -> list[tuple[float, Element]]:
    pool = [e for e in candidates if role is None or e.role == role]
    scored = [(label_score(wanted, e.label), e) for e in pool]
    return sorted(scored, key=lambda p: (-p[0], p[1].index))


def find_exact(page: str, label: str, role: str | None = None) -> Element | None:
    for e in elements(page):
        if e.label == label and (role is None or e.role == role):
            return e
    return None


def dismiss_button(dialog: str, page_elements: list[Element]) -> Element | None:
    inside = [e for e in page_elements if e.dialog == dialog and e.role == "button"]
    for word in DISMISS:
        for e in inside:
            if word in e.label.lower():
                return e
    return inside[0] if inside else None


# --- per-trial UI state: how the page was perturbed, which ids the click tool accepts -------


@dataclass
class LayoutPlan:
    seed: int
    shuffle: bool
    rename: bool
    relabel: float  # chance an element's label is reworded when renamed


@dataclass
class ModalPlan:
    dialog_id: str
    button_id: str
    title: str
    body: str
    button: str
    open: bool = True


@dataclass
class MenuPlan:
    """A narrow layout's collapsed menu: a toggle button and, behind it, controls named by the
    page's own ids (chaoseval.engine.domops.collapse)."""

    toggle_id: str
    menu_id: str
    label: str
    ids: list[str]  # every control behind it
    open: bool = False
    anchor: str = ""  # a button directly in the bar: where the browser finds the bar


@dataclass
class UiState:
    layout: LayoutPlan | None = None
    modal: ModalPlan | None = None
    aliases: dict[str, str] = field(default_factory=dict)  # shown id -> the page's own id
    retired: set[str] = field(default_factory=set)  # original ids no longer on the page
    # What the layout plugins did, as DOM operations (chaoseval.engine.domops): the browser
    # replays them; hidden ids are not rendered before their trial time (slow_render).
    ops: list[dict[str, Any]] = field(default_factory=list)
    hidden: dict[str, float] = field(default_factory=dict)
    menus: dict[str, MenuPlan] = field(default_factory=dict)  # by toggle id (viewport)
    base: Viewport = DESKTOP  # the device the scenario's page is designed for


def ui_state(world: World) -> UiState:
    state = getattr(world, "_ui_state", None)
    if state is None:
        state = UiState()
        world._ui_state = state  # type: ignore[attr-defined]
    return state


def render(scenario: Scenario, world: World) -> str:
    """The scenario's page for the world's current state (before any perturbation)."""
    page = world.givens.get("_ui_page") or (scenario.ui or "").format(**world.givens)
    return str(page)


def reference_page(episode: Episode) -> str | None:
    """The unperturbed page, i.e. what an agent built against the app learned its ids from."""
    observe = episode._observe
    fn = getattr(observe, "reference", None)
    return fn() if fn is not None else None


# --- page rewrites used by the layout perturbations -----------------------------------------

RELABELS: tuple[Callable[[str, random.Random], str], ...] = (
    lambda s, r: s.split()[0] if len(s.split()) > 1 else s.upper(),  # "Approve refund" -> "Approve"
    lambda s, r: s.upper(),
    lambda s, r: f"{s} now" if r.random() < 0.5 else f"\u2713 {s}",
    lambda s, r: " ".join(
        next((k for k, v in SYNONYMS.items() if v == w.lower()), w).capitalize() if i == 0 else w
        for i, w in enumerate(s.split())
    ),
)


def _key_rng(seed: int, *parts: object) -> random.Random:
    return random.Random(":".join(str(p) for p in (seed, *parts)))


def apply_layout(page: str, plan: LayoutPlan, state: UiState) -> str:
    root = parse_html(page)
    dialogs = {id(n) for n in root.walk() if n.attrs.get("role") in DIALOG_ROLES}

    def in_dialog(node: Node, parents: list[Node]) -> bool:
        return any(id(p) in dialogs for p in parents) or id(node) in dialogs

    def visit(node: Node, parents: list[Node]) -> None:
        kids = [c for c in node.children if isinstance(c, Node)]
        if plan.shuffle and not in_dialog(node, parents):
            slots = [i for i, c in enumerate(node.children) if isinstance(c, Node) and role_of(c)]
            if len(slots) >= 2:
                items = [node.children[i] for i in slots]
                keyed = sorted(
                    items,
                    key=lambda c: _key_rng(plan.seed, "pos", c.attrs.get("id")).random(),  # type: ignore[union-attr]
                )
                if keyed == items:  # a move that moves nothing is not a layout shift
                    keyed = items[1:] + items[:1]
                for i, c in zip(slots, keyed, strict=True):
                    node.children[i] = c
        if plan.rename and role_of(node) and node.attrs.get("id") and not in_dialog(node, parents):
            original = node.attrs["id"] or ""
            rng = _key_rng(plan.seed, "id", original)
            new_id = f"{role_of(node)[:3]}-{rng.getrandbits(24):06x}"  # type: ignore[index]
            node.attrs["id"] = new_id
            state.aliases[new_id] = original
            state.retired.add(original)
            if rng.random() < plan.relabel:
                label = label_of(node)
                new = rng.choice(RELABELS)(label, rng)
                if "aria-label" in node.attrs:
                    node.attrs["aria-label"] = new
                else:
                    node.children = [new]
        for c in kids:
            visit(c, [*parents, node])

    visit(root, [])
    return serialize(root)


def apply_modal(page: str, plan: ModalPlan) -> str:
    if not plan.open:
        return page
    dialog = (
        f'<div role="dialog" aria-modal="true" id="{plan.dialog_id}">'
        f"<h2>{html.escape(plan.title)}</h2><p>{html.escape(plan.body)}</p>"
        f'<button id="{plan.button_id}">{html.escape(plan.button)}</button></div>'
    )
    match = re.search(r"<body[^>]*>", page)
    at = match.end() if match else 0
    return page[:at] + dialog + page[at:]


# --- the click tool ----------------------------------------------------------------------------


class ClickResult(BaseModel):
    element_id: str
    action: str
    status: str
    ref: str | None = None


Action = Callable[..., dict[str, Any]]  # (world) -> {"action", "status", "ref"?}


def resolve(world: World, element_id: str) -> str | None:
    """The page's own id for a clicked id, None for a click the page handles itself (a
    dialog dismissed, a menu opened), or a ToolError."""
    target = page_action(world, element_id)
    return target if isinstance(target, str) else None


def page_action(world: World, element_id: str) -> str | dict[str, Any]:
    """The page's own id for a clicked id; the click tool's answer for a click the page handles
    itself (a dialog dismissed, a menu opened or closed); a ToolError when nothing is there to
    click (covered by a dialog, renamed, not rendered yet, behind a collapsed menu)."""
    state = ui_state(world)
    modal = state.modal
    if modal is not None and modal.open:
        if element_id == modal.button_id:
            modal.open = False
            return {"action": "dismiss", "status": "dialog closed"}
        raise ToolError(
            f"click on #{element_id} intercepted: the dialog {modal.title!r} (#{modal.dialog_id})"
            " covers the page; dismiss it first"
        )
    menu = state.menus.get(element_id)
    if menu is not None:
        menu.open = not menu.open
        return {"action": "menu", "status": f"menu {'opened' if menu.open else 'closed'}"}
    if element_id in state.retired:
        raise ToolError(f"no element with id {element_id!r} on the page")
    if element_id in state.hidden and state.hidden[element_id] > world.clock.monotonic():
        raise ToolError(f"no element with id {element_id!r} on the page (yet)")
    own = state.aliases.get(element_id, element_id)
    for menu in state.menus.values():
        if not menu.open and own in menu.ids:
            raise ToolError(
                f"#{element_id} is not visible: it is in the collapsed menu behind "
                f"#{menu.toggle_id} ({menu.label!r}); open the menu first"
            )
    return own


def set_status(table: str, key: str, *, expect: str, to: str, what: str) -> Action:
    """A click action that moves the task's row (``givens[key]``) from ``expect`` to ``to``.

    The common shape of an admin page's decision buttons: approve, deny, escalate, close.
    """

    def action(world: Any) -> dict[str, Any]:
        value = world.givens[key]
        row = world.get(table, key, value, what=what)
        if row["status"] != expect:
            raise ToolError(f"{what} {value} is already {row['status']}")
        world.update(table, key, value, status=to)
        world.givens["status"] = to  # the page re-renders from the world
        return {"action": to, "status": f"{what} {value} {to}", "ref": value}

    return action


def click_tool(actions: dict[str, Action], writes: list[str]) -> ToolSpec:
    """A scenario's ``click(element_id)`` tool: the ids of its page mapped to world actions."""

    def click(world: World, element_id: str) -> dict[str, Any]:
        """Click the element with this id on the current page (see the page's HTML)."""
        target = page_action(world, element_id)
        if not isinstance(target, str):
            return {"element_id": element_id, **target, "ref": None}  # the recorded key order
        action = actions.get(target)
        if action is None:
            raise ToolError(f"no clickable element with id {element_id!r} on the page")
        return {"element_id": element_id, "ref": None, **action(world)}

    return tool(returns=ClickResult, writes=writes, name="click")(click)


# --- how an agent that reads the page clicks ----------------------------------------------------


class NotRendered(ToolError):
    """The page shows no control of the wanted role at all: it may still be rendering."""


Chooser = Callable[[str, "str | None", list[Element]], "Element | None"]


async def click_by_label(
    actor: Any, label: str, role: str = "button", *, chooser: Chooser | None = None
) -> Any:
    """Read the page, close any dialog over it, find the element by role and label, click it.

    ``chooser`` picks among the page's elements (default :func:`choose`: exact label first,
    then the best :func:`label_score`). Raises ToolError when nothing plausibly matches.
    """
    chooser = chooser or choose
    page = await actor.page()
    if page is None:
        raise ToolError("this scenario has no page to click on")
    found = elements(page)
    for dialog in sorted({e.dialog for e in found if e.dialog}):
        button = dismiss_button(dialog, found)
        if button is not None:
            await actor.call("click", element_id=button.id)
    if any(e.dialog for e in found):
        page = await actor.page() or ""
        found = elements(page)
    outside = [e for e in found if not e.dialog]
    if not any(e.role == role for e in outside):
        raise NotRendered(f"no {role} on the page yet")
    target = chooser(label, role, outside)
    if target is None:
        raise ToolError(f"no {role} labelled {label!r} on the page")
    toggle = next((e for e in outside if target.hidden_in and e.controls == target.hidden_in), None)
    if toggle is not None:  # a narrow layout put it behind a menu: open the menu first
        await actor.call("click", element_id=toggle.id)
    return await actor.call("click", element_id=target.id)


def choose(
    label: str,
    role: str | None,
    candidates: list[Element],
    *,
    fuzzy: bool = True,
    threshold: float = 0.5,
) -> Element | None:
    exact = [e for e in candidates if e.label == label and (role is None or e.role == role)]
    if exact or not fuzzy:
        return exact[0] if exact else None
    ranked = rank(label, role, candidates)
    if ranked and ranked[0][0] >= threshold:
        return ranked[0][1]
    return None
