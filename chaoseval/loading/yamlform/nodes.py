"""The YAML node tree (every value knows its line) and errors an author can act on."""

from __future__ import annotations

import builtins
import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from chaoseval.errors import ScenarioError


class YMap(dict[str, Any]):
    line: int = 0
    key_lines: dict[str, int]


class YList(list[Any]):
    line: int = 0
    item_lines: list[int]


def _convert(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out = YMap()
        out.line, out.key_lines = line, {}
        for knode, vnode in node.value:
            if knode.tag == "tag:yaml.org,2002:merge":
                merged = _convert(loader, vnode)
                for part in merged if isinstance(merged, list) else [merged]:
                    if isinstance(part, YMap):
                        for k, v in part.items():
                            if k not in out:
                                out[k] = v
                                out.key_lines[k] = part.key_lines.get(k, line)
                continue
            key = str(loader.construct_object(knode, deep=True))
            out[key] = _convert(loader, vnode)
            out.key_lines[key] = knode.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        seq = YList(_convert(loader, n) for n in node.value)
        seq.line, seq.item_lines = line, [n.start_mark.line + 1 for n in node.value]
        return seq
    return loader.construct_object(node, deep=True)


def compose_documents(text: str, source: str) -> list[YMap]:
    loader = yaml.SafeLoader(text)
    docs = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            doc = _convert(loader, node)
            # A document is one scenario, or a list of them (anchors and ``<<:`` merges let
            # variants share a common body within one document).
            for i, item in enumerate(doc if isinstance(doc, YList) else [doc]):
                if not isinstance(item, YMap):
                    line = doc.item_lines[i] if isinstance(doc, YList) else node.start_mark.line + 1
                    raise ScenarioError(
                        f"expected a mapping (a scenario), found {_found(item)}",
                        source=f"{source}:{line}",
                    )
                docs.append(item)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ScenarioError(
            f"not valid YAML: {exc.problem or exc.context}", source=f"{source}{line}"
        ) from None
    finally:
        loader.dispose()
    return docs


# --- errors an author can act on --------------------------------------------------------------


def did_you_mean(word: Any, choices: Any) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _found(value: Any) -> str:
    if isinstance(value, dict):
        return f"a mapping with keys {sorted(value)}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"{type(value).__name__} {value!r:.60}"


@dataclass
class Node:
    """A value of the document with its key path and line, for error messages."""

    source: str
    value: Any
    keys: tuple[str | int, ...] = ()
    line: int = 0

    @property
    def path(self) -> str:
        out = ""
        for k in self.keys:
            out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
        return out or "(scenario)"

    def error(self, message: str) -> ScenarioError:
        return ScenarioError(message, source=f"{self.source}:{self.line}", where=self.path)

    def expected(self, what: str, hint: str = "") -> ScenarioError:
        return self.error(f"expected {what}, found {_found(self.value)}{hint}")

    def child(self, key: str | int) -> Node:
        v = self.value
        if isinstance(key, int):
            lines = getattr(v, "item_lines", [])
            line = lines[key] if key < len(lines) else self.line
            return Node(self.source, v[key], (*self.keys, key), line)
        line = getattr(v, "key_lines", {}).get(key, self.line)
        return Node(self.source, v.get(key), (*self.keys, key), line)

    def has(self, key: str) -> bool:
        return isinstance(self.value, dict) and key in self.value

    def get(self, key: str) -> Node | None:
        return self.child(key) if self.has(key) else None

    def mapping(self, allowed: Any = None, required: Any = ()) -> Node:
        if not isinstance(self.value, dict):
            raise self.expected("a mapping")
        if allowed is not None:
            for key in self.value:
                if key not in allowed:
                    choices = ", ".join(sorted(allowed))
                    raise self.child(key).error(
                        f"unknown key {key!r}{did_you_mean(key, allowed)} (expected one of: "
                        f"{choices})"
                    )
        for key in required:
            if key not in self.value:
                raise self.error(f"missing required key {key!r}")
        return self

    def items(self) -> Iterator[tuple[str, Node]]:
        self.mapping()
        for key in self.value:
            yield key, self.child(key)

    def seq(self, allow_scalar: bool = False) -> list[Node]:
        if allow_scalar and not isinstance(self.value, list):
            return [self]
        if not isinstance(self.value, list):
            raise self.expected("a list")
        return [self.child(i) for i in range(len(self.value))]

    def str(self) -> str:
        if not isinstance(self.value, str):
            raise self.expected("a string")
        return self.value

    def strs(self) -> list[builtins.str]:
        return [n.str() for n in self.seq(allow_scalar=True)]

    def plain(self) -> Any:
        return to_plain(self.value)

    def choice(self, options: Any, what: builtins.str) -> builtins.str:
        v = self.value
        if not isinstance(v, str) or v not in options:
            raise self.expected(
                f"{what}: one of {', '.join(sorted(options))}", did_you_mean(v, options)
            )
        return v


def to_plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    return value
