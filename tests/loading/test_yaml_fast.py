"""libyaml's parser (C) under PyYAML's composer gives the very nodes the Python loader gives:
the same values and types, the same lines; a file it cannot read is read again in Python, so
every error reads as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import scenarios
from chaoseval.authoring.scaffold import write_scenario
from chaoseval.errors import ScenarioError
from chaoseval.loading.yamlform import nodes

pytestmark = pytest.mark.skipif(not nodes.LIBYAML, reason="PyYAML built without libyaml")

TRICKY = """\
id: tricky
base: &base
  id: tricky-base
  tags: [a, "b", 'c']
  folded: >
    one
    two
  literal: |
    keep
      indent
  numbers: [1, 0x1f, 1_000, 1:20, .inf, -.5e3, 0o17, 017]
  when: 2026-01-02 03:04:05
  day: 2026-01-02
  flags: [yes, no, on, off, ~, null]
  quoted: "tab\\tnew\\nline \\u00e9 \\x41"
  single: 'it''s'
  ? explicit key
  : explicit value
  empty:
  unicode: café ☕
again: *base
---
- &two
  id: tricky-2
  nested: {a: [1, {b: c}], d: {}}
- <<: *two
  id: tricky-3
- <<: [*two, {extra: 1}]
  id: tricky-4
"""


def _shape(value: Any) -> Any:
    """A value with its type and every line the loader records, for exact comparison."""
    if isinstance(value, dict):
        items = [(k, value.key_lines.get(k), _shape(v)) for k, v in value.items()]
        return ("map", value.line, items)
    if isinstance(value, list):
        return ("seq", value.line, value.item_lines, [_shape(v) for v in value])
    return (type(value).__name__, value)


def _both(text: str, source: str) -> tuple[Any, Any]:
    fast = nodes._compose(nodes._FastLoader, text, source)
    slow = nodes._compose(nodes._Loader, text, source)
    return [_shape(d) for d in fast], [_shape(d) for d in slow]


def _files(tmp: Path) -> list[Path]:
    bundled = sorted(Path(scenarios.__file__).parent.glob("*.yaml"))
    tricky = tmp / "tricky.yaml"
    tricky.write_text(TRICKY, encoding="utf-8")
    return [*bundled, write_scenario("fast-yaml", tmp), tricky]


def test_the_c_parser_composes_what_the_python_loader_composes(tmp_path: Path) -> None:
    files = _files(tmp_path)
    assert len(files) >= 10
    for path in files:
        fast, slow = _both(path.read_text(encoding="utf-8"), str(path))
        assert fast and fast == slow, path.name


@pytest.mark.parametrize(
    "text",
    [
        "id: x\n  bad: indent\n",  # a syntax error
        "id: x\ndescription: a\x07b\n",  # a control character
        "id: [unclosed\n",
        "- 1\n- 2\n",  # documents that are not scenarios
        "id: !!python/object/apply:os.system [true]\n",
    ],
)
def test_a_file_that_fails_reads_as_the_python_loader_says(text: str) -> None:
    with pytest.raises(ScenarioError) as fast:
        nodes.compose_documents(text, "f.yaml")
    with pytest.raises(ScenarioError) as slow:
        nodes._compose(nodes._Loader, text, "f.yaml")
    assert str(fast.value) == str(slow.value)
