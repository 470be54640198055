"""The YAML node tree (every value knows its line) and errors an author can act on."""

from __future__ import annotations

import builtins
import codecs
import difflib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from chaoseval.errors import ScenarioError

# libyaml, when PyYAML was built with it (its wheels are); else the Python loader alone.
LIBYAML: bool = yaml.__with_libyaml__


class YMap(dict[str, Any]):
    line: int = 0
    key_lines: dict[str, int]


class YList(list[Any]):
    line: int = 0
    item_lines: list[int]


# Hostile files must fail fast and small (issue 12: within 10 s and 512 MB a file). PyYAML
# composes recursively, and aliases share nodes that _convert expands into copies: a few lines
# of anchors (a "billion laughs") would expand to 10^9 values. So nesting, expanded values and
# expanded characters are bounded, far above what a real scenario needs.
MAX_DEPTH = 64
MAX_VALUES = 200_000
MAX_CHARS = 32 << 20
_STANDARD = {"tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"}


class _Bounded:
    """Refuses nesting past MAX_DEPTH while composing, before PyYAML's recursive composer can
    exhaust the stack, and counts expanded values (``count``) for the bomb bounds."""

    source: str
    depth: int
    values: int
    chars: int

    if TYPE_CHECKING:  # what the loaders this is mixed into provide

        def construct_object(self, node: yaml.Node, deep: bool = False) -> Any: ...

    def _start(self, source: str) -> None:
        self.source = source
        self.depth = 0
        self.values = 0
        self.chars = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1  # type: ignore[attr-defined]
                raise ScenarioError(
                    f"nested more than {MAX_DEPTH} levels deep; a scenario never needs that",
                    source=f"{self.source}:{line}",
                )
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self.depth -= 1

    def count(self, node: yaml.Node, value: Any = None) -> None:
        """Count one expanded value; refuse a document whose aliases expand past the bounds."""
        self.values += 1
        if isinstance(value, str | bytes):
            self.chars += len(value)
        if self.values > MAX_VALUES or self.chars > MAX_CHARS:
            self.refuse_bomb(node)

    def refuse_bomb(self, node: yaml.Node) -> NoReturn:
        raise ScenarioError(
            f"expands to more than {MAX_VALUES:,} values or {MAX_CHARS >> 20} MB of text "
            "(aliases that repeat aliases: a YAML bomb?)",
            source=f"{self.source}:{node.start_mark.line + 1}",
        )


class _Loader(_Bounded, yaml.SafeLoader):
    """SafeLoader (no tag ever runs code), all in Python: the reference, and what every file
    that fails to load is read with, so each error reads as PyYAML words it."""

    def __init__(self, text: str, source: str) -> None:
        yaml.SafeLoader.__init__(self, text)
        self._start(source)


if LIBYAML:
    from yaml._yaml import CParser

    class _FastLoader(_Bounded, Composer, CParser, SafeConstructor, Resolver):
        """libyaml's scanner and parser (C) under PyYAML's composer, constructor and resolver:
        the same nodes, values and lines as ``_Loader`` (tests/loading/test_yaml_fast) in a
        quarter of the CPU (the bundled library: 0.33 -> 0.08 s, at every command start)."""

        def __init__(self, text: str, source: str) -> None:
            CParser.__init__(self, text)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self._start(source)


def _refuse_tag(loader: _Bounded, node: yaml.Node) -> None:
    if node.tag.startswith("tag:yaml.org,2002:python/"):
        name = node.tag.removeprefix("tag:yaml.org,2002:")
        raise ScenarioError(
            f"the tag !!{name} is refused: a YAML scenario never runs code (use a kind: python "
            "tool or a function: check, which name a registered factory)",
            source=f"{loader.source}:{node.start_mark.line + 1}",
        )
    if not isinstance(node, yaml.ScalarNode) and node.tag not in _STANDARD:
        raise ScenarioError(
            f"the tag {node.tag!r} is not allowed here; write a plain mapping or list",
            source=f"{loader.source}:{node.start_mark.line + 1}",
        )


def _key(loader: _Bounded, knode: yaml.Node) -> str:
    _refuse_tag(loader, knode)
    if not isinstance(knode, yaml.ScalarNode):
        raise ScenarioError(
            "a key must be a plain word or string, not a mapping or list",
            source=f"{loader.source}:{knode.start_mark.line + 1}",
        )
    key = str(loader.construct_object(knode, deep=True))
    loader.count(knode, key)
    return key


def _expanded_size(node: yaml.Node, memo: dict[int, int], source: str, inside: set[int]) -> int:
    """How many values ``node`` becomes once aliases are copied out: linear in the node graph
    (shared nodes are sized once), so a bomb is measured without expanding it. An alias to a
    node it is inside of (``a: &a {b: *a}``) would expand forever: refused, with its line."""
    known = memo.get(id(node))
    if known is not None:
        return known
    if id(node) in inside:
        raise ScenarioError(
            "an alias refers to a mapping or list it is inside of (a recursive anchor, such as "
            "a: &a {b: *a}): a scenario's value cannot contain itself; write the inner part out",
            source=f"{source}:{node.start_mark.line + 1}",
        )
    inside.add(id(node))
    size = 1
    children = (
        [n for kv in node.value for n in kv]
        if isinstance(node, yaml.MappingNode)
        else (node.value if isinstance(node, yaml.SequenceNode) else [])
    )
    for child in children:
        size += _expanded_size(child, memo, source, inside)
    inside.discard(id(node))
    memo[id(node)] = size
    return size


def _convert(loader: _Bounded, node: yaml.Node) -> Any:
    line = node.start_mark.line + 1
    _refuse_tag(loader, node)
    if isinstance(node, yaml.MappingNode):
        loader.count(node)
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
            key = _key(loader, knode)
            out[key] = _convert(loader, vnode)
            out.key_lines[key] = knode.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        loader.count(node)
        seq = YList(_convert(loader, n) for n in node.value)
        seq.line, seq.item_lines = line, [n.start_mark.line + 1 for n in node.value]
        return seq
    value = loader.construct_object(node, deep=True)
    loader.count(node, value)
    return value


MAX_FILE_BYTES = 4 << 20  # a scenario file is a few KB; 4 MB parses within seconds
_BOMS = {
    codecs.BOM_UTF32_LE: "UTF-32",
    codecs.BOM_UTF32_BE: "UTF-32",
    codecs.BOM_UTF16_LE: "UTF-16",
    codecs.BOM_UTF16_BE: "UTF-16",
}


def read_text(path: Path) -> str:
    """A scenario file's text: UTF-8 (a BOM allowed), else a ScenarioError that says what the
    file is instead (binary data, UTF-16, another encoding) and how to fix it."""
    source = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ScenarioError(
                f"the file is {size / (1 << 20):.1f} MB; scenario files are limited to "
                f"{MAX_FILE_BYTES >> 20} MB (generate big tables with 'generate:')",
                source=source,
            )
        raw = path.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"cannot read: {exc.strerror or exc}", source=source) from None
    for bom, name in _BOMS.items():  # UTF-32 first: its LE BOM starts with UTF-16's
        if raw.startswith(bom):
            raise ScenarioError(f"the file is {name} text; save it as UTF-8", source=source)
    # find, not `in`: bytes' `in` tries its needle as an int first, a TypeError raised and
    # dropped in C on every call (tests/cerrors.py)
    if raw.find(b"\x00") >= 0:
        raise ScenarioError("binary data, not a YAML text file", source=source)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ScenarioError(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); save the "
            "file as UTF-8",
            source=f"{source}:{line}",
        ) from None


# PyYAML's scanner is quadratic in pending flow levels ("[[[[..."); refuse the obvious case
# before it starts (the composer's depth bound catches the rest).
_FLOW_BOMB = re.compile(rf"(?:[\[{{]\s*){{{MAX_DEPTH + 1}}}")


def compose_documents(text: str, source: str) -> list[YMap]:
    bomb = _FLOW_BOMB.search(text)
    if bomb:
        raise ScenarioError(
            f"nested more than {MAX_DEPTH} levels deep; a scenario never needs that",
            source=f"{source}:{text.count(chr(10), 0, bomb.start()) + 1}",
        )
    if LIBYAML:
        try:
            return _compose(_FastLoader, text, source)
        except Exception:  # read again in Python below: every error reads as it always has
            pass
    return _compose(_Loader, text, source)


def _compose(make: Callable[[str, str], _Bounded], text: str, source: str) -> list[YMap]:
    docs = []
    loader: _Bounded | None = None
    try:
        loader = make(text, source)  # PyYAML's reader checks the characters here
        while loader.check_node():  # type: ignore[attr-defined]
            node = loader.get_node()  # type: ignore[attr-defined]
            if node is None:
                continue
            if _expanded_size(node, {}, source, set()) > MAX_VALUES:
                loader.refuse_bomb(node)  # before expanding anything
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
    except yaml.reader.ReaderError as exc:  # a control character, or a byte that is not text
        line = text[: exc.position].count("\n") + 1
        raise ScenarioError(
            f"not valid YAML: character {exc.character!r} is not allowed in a YAML file",
            source=f"{source}:{line}",
        ) from None
    finally:
        if loader is not None:
            loader.dispose()  # type: ignore[attr-defined]
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
