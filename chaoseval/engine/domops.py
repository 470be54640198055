"""One UI, two renderings: a trial's layout perturbations as one list of DOM operations.

The layout plugins (``layout_shift``, ``modal``, ``slow_render``) append what they did to the
page to :attr:`chaoseval.engine.ui.UiState.ops`, one JSON object per operation, each naming the
fault it belongs to. Python applies them to the text DOM the simulated agents read
(:mod:`chaoseval.engine.ui` and the helpers here); the page server
(:mod:`chaoseval.channels.browser`) sends the same list to the browser, where a script applies
them to the live DOM and reports back (a beacon) when each one has rendered. Delays are trial
clock times (``at``, seconds of the trial's monotonic clock): virtual time on the text side,
the remaining wall time in the browser.

=========  ==============================================================================
op         fields
=========  ==============================================================================
order      ``ids``: the page's own ids of sibling elements, in their new order
rename     ``id`` (the page's own), ``to`` (the new id), ``label`` (new text or None)
class      ``name``, ``to``: a class renamed on every element carrying it
dialog     ``id``, ``button_id``, ``title``, ``body``, ``button``: an overlay over the page
banner     ``at``, ``text``: a non-interactive block inserted at the top, pushing content down
slow       ``ids``, ``at``: elements absent from the page until ``at``
viewport   ``device`` (chaoseval.model.device.Viewport's fields), ``menus``: the narrow
           layout, each action bar collapsed behind a menu button (``toggle_id``,
           ``menu_id``, ``label``, ``anchor``: the page's own id of a control directly in
           the bar, ``ids``: every control it hides, ``open``); applied before first paint
plant      ``html``: markup planted at the end of the body (``injection_page``); the page
           server writes it into the page it serves (readers without a script get it too)
           and the text side already carries it, so neither replays it
=========  ==============================================================================
"""

from __future__ import annotations

import html
import random
import re
from typing import Any

from chaoseval.engine.dom import Node, parse_html, serialize
from chaoseval.engine.ui import DIALOG_ROLES, MenuPlan, UiState, role_of

Op = dict[str, Any]


def _containers(root: Node) -> list[list[str]]:
    """Each container's interactive children (with ids), in page order, outside dialogs."""
    out: list[list[str]] = []

    def visit(node: Node, in_dialog: bool) -> None:
        in_dialog = in_dialog or node.attrs.get("role") in DIALOG_ROLES
        kids = [c for c in node.children if isinstance(c, Node)]
        ids = [c.attrs["id"] or "" for c in kids if role_of(c) and c.attrs.get("id")]
        if len(ids) >= 2 and not in_dialog:
            out.append(ids)
        for c in kids:
            visit(c, in_dialog)

    visit(root, False)
    return out


def layout_ops(before: str, after: str, state: UiState, fault: int | None) -> list[Op]:
    """The order and rename operations that turn ``before`` into ``after`` (apply_layout's
    result), named by the page's own ids so the browser can find them before renaming."""
    original = {shown: orig for shown, orig in state.aliases.items()}
    ops: list[Op] = []
    old = {frozenset(c): c for c in _containers(parse_html(before))}
    for ids in _containers(parse_html(after)):
        own = [original.get(i, i) for i in ids]
        if frozenset(own) in old and old[frozenset(own)] != own:
            ops.append({"op": "order", "ids": own, "fault": fault})
    labels = {n.attrs.get("id"): _label(n) for n in parse_html(before).walk()}
    for node in parse_html(after).walk():
        shown = node.attrs.get("id") or ""
        if shown in original:
            label = _label(node)
            changed = label if label != labels.get(original[shown]) else None
            ops.append(
                {
                    "op": "rename",
                    "id": original[shown],
                    "to": shown,
                    "label": changed,
                    "fault": fault,
                }
            )
    return ops


def _label(node: Node) -> str:
    return node.attrs.get("aria-label") or node.text()


def class_ops(page: str, seed: int, fault: int | None) -> list[Op]:
    """New names for the page's classes (a redesign's new stylesheet), drawn from ``seed``."""
    names = sorted(
        {c for n in parse_html(page).walk() for c in (n.attrs.get("class") or "").split()}
    )
    rng = random.Random(f"{seed}:classes")
    return [
        {"op": "class", "name": c, "to": f"{c}-{rng.getrandbits(16):04x}", "fault": fault}
        for c in names
    ]


def rename_classes(page: str, ops: list[Op]) -> str:
    """The text DOM with the ``class`` operations applied."""
    new = {op["name"]: op["to"] for op in ops if op["op"] == "class"}
    if not new:
        return page
    root = parse_html(page)
    for node in root.walk():
        if node.attrs.get("class"):
            node.attrs["class"] = " ".join(
                new.get(c, c) for c in (node.attrs["class"] or "").split()
            )
    return serialize(root)


def due(op: Op, now: float) -> bool:
    """Whether a delayed operation has happened by trial time ``now``."""
    return float(op.get("at", 0.0)) <= now


def banner_html(op: Op) -> str:
    return (
        '<div class="chaoseval-banner" role="status" style="padding:40px 16px;'
        f'background:#fff3cd;font-size:18px">{html.escape(str(op["text"]))}</div>'
    )


def insert_banner(page: str, op: Op) -> str:
    """The text DOM with the late banner at the top of the body."""
    match = re.search(r"<body[^>]*>", page)
    at = match.end() if match else 0
    return page[:at] + banner_html(op) + page[at:]


def without(page: str, ids: list[str]) -> str:
    """The text DOM without the elements that have not rendered yet."""
    gone = set(ids)
    root = parse_html(page)
    for node in root.walk():
        node.children = [
            c for c in node.children if not (isinstance(c, Node) and c.attrs.get("id") in gone)
        ]
    return serialize(root)


def browser_ops(state: UiState, now: float) -> list[Op]:
    """The operations a page loaded at trial time ``now`` applies: a dismissed dialog stays
    gone, and delays become what is left of them (an element already rendered shows at once)."""
    out: list[Op] = []
    for op in state.ops:
        if op["op"] == "dialog" and not (state.modal is not None and state.modal.open):
            continue
        copy = dict(op)
        if op["op"] == "viewport":  # a menu opened stays open on the next load
            copy["menus"] = [_menu(state.menus.get(m["toggle_id"]) or MenuPlan(**m))
                             for m in op["menus"]]  # fmt: skip
        if "at" in op:
            copy["delay"] = max(0.0, float(op["at"]) - now)
        out.append(copy)
    return out


# --- the narrow layout (viewport): action bars collapsed behind a menu button ---------------

MENU_LABEL = "More actions"
MENU_ICON = "\u2630"  # the hamburger a narrow layout shows instead of the bar
NOT_COLLAPSED = {"#root", "html", "body"}


def action_bars(page: str) -> list[tuple[str, list[str]]]:
    """The page's action bars outside dialogs: (the page's own id of a button directly in the
    bar, the ids of every control inside it), in page order."""
    bars: list[tuple[str, list[str]]] = []

    def visit(node: Node) -> None:
        if node.attrs.get("role") in DIALOG_ROLES:
            return
        kids = [c for c in node.children if isinstance(c, Node)]
        direct = [c.attrs["id"] for c in kids if role_of(c) == "button" and c.attrs.get("id")]
        if direct and node.tag not in NOT_COLLAPSED:
            inside = [n.attrs["id"] for n in node.walk()[1:] if role_of(n) and n.attrs.get("id")]
            bars.append((direct[0] or "", [i or "" for i in inside]))
            return
        for c in kids:
            visit(c)

    visit(parse_html(page))
    return bars


def menu_plans(page: str, seed: int) -> list[MenuPlan]:
    """One collapsed menu per action bar, its ids drawn from ``seed``."""
    rng = random.Random(f"{seed}:menus")
    plans = []
    for anchor, ids in action_bars(page):
        toggle = f"menu-{rng.getrandbits(24):06x}"
        plans.append(MenuPlan(toggle, f"{toggle}-items", MENU_LABEL, ids, anchor=anchor))
    return plans


def collapse(page: str, menus: list[MenuPlan], aliases: dict[str, str]) -> str:
    """The text DOM in its narrow layout: each bar's content moved into a container hidden
    until its menu button opens it (the button first, as the page script builds it). A bar is
    found by its anchor's own id, through ``aliases`` when a layout shift renamed it."""
    if not menus:
        return page
    root = parse_html(page)
    by_anchor = {m.anchor: m for m in menus}

    def own(c: Node | str) -> str:
        shown = c.attrs.get("id") or "" if isinstance(c, Node) else ""
        return aliases.get(shown, shown)

    for node in root.walk():
        menu = next((by_anchor[own(c)] for c in node.children if own(c) in by_anchor), None)
        if menu is None:
            continue
        toggle = Node(
            "button",
            {"id": menu.toggle_id, "aria-expanded": "true" if menu.open else "false",
             "aria-controls": menu.menu_id, "aria-label": menu.label},
            [MENU_ICON],
        )  # fmt: skip
        items = Node("div", {"id": menu.menu_id}, node.children)
        if not menu.open:
            items.attrs["hidden"] = None
        node.children = [toggle, items]
    return serialize(root)


def viewport_op(device: dict[str, Any], menus: list[MenuPlan], fault: int | None) -> Op:
    return {"op": "viewport", "device": device, "menus": [_menu(m) for m in menus],
            "fault": fault}  # fmt: skip


def _menu(m: MenuPlan) -> dict[str, Any]:
    return {"toggle_id": m.toggle_id, "menu_id": m.menu_id, "label": m.label,
            "anchor": m.anchor, "ids": m.ids, "open": m.open}  # fmt: skip
