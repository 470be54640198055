"""The page as an accessibility tree: what browser-use-style agents read instead of the HTML.

``aria_snapshot(page)`` renders the text DOM the way Playwright's ``locator.aria_snapshot()``
renders a live page (a YAML list of ``role "name" [state]`` lines, generic containers folded
away, hidden content left out), so the text side and the browser describe one UI in this form
too: a renamed label shows renamed, a collapsed menu shows its button and not what is behind it,
a dialog shows with its title. It covers the markup scenario pages use (landmarks, headings,
links, buttons and ``role`` controls, lists, definition lists, fieldsets, paragraphs), not
every ARIA rule.
"""

from __future__ import annotations

import json
import re

from chaoseval.engine.dom import Node, parse_html

SKIP = {"head", "script", "style", "template", "meta", "link", "title", "noscript"}
TAG_ROLES = {
    "header": "banner",
    "main": "main",
    "nav": "navigation",
    "footer": "contentinfo",
    "aside": "complementary",
    "button": "button",
    "fieldset": "group",
    "ul": "list",
    "ol": "list",
    "li": "listitem",
    "dt": "term",
    "dd": "definition",
    "p": "paragraph",
    "form": "form",
    "table": "table",
    "tr": "row",
    "td": "cell",
    "th": "columnheader",
    "img": "img",
}
# Roles whose name comes from their content (the others are named only by aria-label).
NAMED_BY_CONTENT = {
    "button", "link", "heading", "radio", "checkbox", "tab", "menuitem", "option", "cell",
    "columnheader", "row", "switch", "treeitem",
}  # fmt: skip
INLINE = {
    "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "i", "kbd", "label",
    "mark", "q", "s", "samp", "small", "span", "strong", "sub", "sup", "time", "u", "var",
}  # fmt: skip
QUOTE = re.compile(
    r"^\s|\s$|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|^-|[\n:](\s|$)|\s#|[\n\r]"
    r"|^[&*\],?!>|@\"'#%]|[{}`]|^\["
)


def _role(node: Node) -> str | None:
    role = node.attrs.get("role")
    if role:
        return None if role in ("presentation", "none", "generic") else role
    if node.tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
        return "heading"
    if node.tag == "a":
        return "link" if node.attrs.get("href") is not None else None
    if node.tag == "input":
        kind = node.attrs.get("type") or "text"
        return "button" if kind in ("submit", "button", "reset") else (
            kind if kind in ("checkbox", "radio") else "textbox"
        )  # fmt: skip
    return TAG_ROLES.get(node.tag)


def _hidden(node: Node) -> bool:
    return "hidden" in node.attrs or node.attrs.get("aria-hidden") == "true"


def _text(node: Node | str) -> str:
    """The node's text as a browser joins it: inline elements run on, blocks are apart."""
    if isinstance(node, str):
        return node
    if node.tag in SKIP or _hidden(node):
        return ""
    pad = "" if node.tag in INLINE else " "
    return pad + "".join(_text(c) for c in node.children) + pad


def _squash(text: str) -> str:
    return " ".join(text.split())


def _name(node: Node, role: str, by_id: dict[str, Node]) -> str:
    if node.attrs.get("aria-label"):
        return _squash(node.attrs["aria-label"] or "")
    refs = (node.attrs.get("aria-labelledby") or "").split()
    if refs:
        return _squash(" ".join(_text(by_id[r]) for r in refs if r in by_id))
    if node.tag == "input" and role == "button":
        return node.attrs.get("value") or ""
    return _squash(_text(node)) if role in NAMED_BY_CONTENT else ""


def _states(node: Node, role: str) -> list[str]:
    out = []
    if role == "heading":
        level = node.tag[1] if node.tag[1:].isdigit() else node.attrs.get("aria-level") or 2
        out.append(f"level={level}")
    for attr, state in (("aria-checked", "checked"), ("aria-pressed", "pressed"),
                        ("aria-selected", "selected"), ("aria-expanded", "expanded")):  # fmt: skip
        if node.attrs.get(attr) == "true":
            out.append(state)
    if "disabled" in node.attrs or node.attrs.get("aria-disabled") == "true":
        out.append("disabled")
    return out


def _needs_quotes(text: str) -> bool:
    """Whether YAML would read ``text`` as something else (Playwright's rule)."""
    return bool(
        not text
        or QUOTE.search(text)
        or text.lower() in ("y", "n", "yes", "no", "true", "false", "on", "off", "null")
        or _number(text)
    )


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _value(text: str) -> str:
    return json.dumps(text, ensure_ascii=False) if _needs_quotes(text) else text


def _key(text: str) -> str:
    return "'" + text.replace("'", "''") + "'" if _needs_quotes(text) else text


Item = tuple[str, list["Item | str"]]  # (the line's head, its children) or a text


def _items(node: Node, by_id: dict[str, Node]) -> list[Item | str]:
    """A node's children as tree items: generic containers folded into their parent, runs of
    text joined into one text item (inline elements run on, blocks are apart)."""
    out: list[Item | str] = []
    text: list[str] = []

    def flush() -> None:
        joined = _squash("".join(text))
        text.clear()
        if joined:
            out.append(joined)

    for child in node.children:
        if isinstance(child, str):
            text.append(child)
            continue
        if child.tag in SKIP or _hidden(child):
            continue
        role = _role(child)
        if role is not None:
            flush()
            out.append(_item(child, role, by_id))
            continue
        pad = "" if child.tag in INLINE else " "
        text.append(pad)
        for item in _items(child, by_id):
            if isinstance(item, str):
                text.append(item)
            else:
                flush()
                out.append(item)
        text.append(pad)
    flush()
    return out


def _item(node: Node, role: str, by_id: dict[str, Node]) -> Item:
    name = _name(node, role, by_id)
    head = role + (f" {json.dumps(name, ensure_ascii=False)}" if name else "")
    head += "".join(f" [{s}]" for s in _states(node, role))
    kids = _items(node, by_id)
    if kids == [name]:
        kids = []  # the name says it already
    if role == "link" and node.attrs.get("href"):
        kids.append(("/url: " + (node.attrs.get("href") or ""), []))
    return head, kids


def _lines(items: list[Item | str], depth: int) -> list[str]:
    pad = "  " * depth
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(f"{pad}- text: {_value(item)}")
            continue
        head, kids = item
        if head.startswith("/url: "):
            out.append(f"{pad}- /url: {_value(head[6:])}")
        elif not kids:
            out.append(f"{pad}- {_key(head)}")
        elif len(kids) == 1 and isinstance(kids[0], str):
            out.append(f"{pad}- {_key(head)}: {_value(kids[0])}")
        else:
            out.append(f"{pad}- {_key(head)}:")
            out.extend(_lines(kids, depth + 1))
    return out


def aria_snapshot(page: str) -> str:
    """The page's accessibility tree as Playwright's aria snapshot YAML."""
    root = parse_html(page)
    by_id = {n.attrs["id"] or "": n for n in root.walk() if n.attrs.get("id")}
    return "\n".join(_lines(_items(root, by_id), 0))
