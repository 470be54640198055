"""A scenario file's text (chaoseval.loading.yamlform.nodes.read_text) read with no exception
made and dropped on the way, and binary data still refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from chaoseval.errors import ScenarioError
from chaoseval.loading.yamlform import nodes
from chaoseval.loading.yamlform.nodes import read_text
from tests.cerrors import raised_in


def test_reading_a_scenario_file_raises_nothing_in_read_text(tmp_path: Path) -> None:
    """Before, ``b"\\x00" in raw`` made a TypeError in C on every file read (bytes' ``in``
    tries its needle as an int first). What the standard library's own ``open`` makes and
    drops (FileIO tries a path as a file descriptor first) is its own: only read_text's lines
    are asked about. The first read warms what is cached on first use (pathlib's str)."""
    path = tmp_path / "scenario.yaml"
    path.write_text("id: x\ndescription: a text file\n")
    setup = f"""
    from pathlib import Path
    from chaoseval.loading.yamlform import nodes
    path = Path({str(path)!r})
    nodes.read_text(path)
    """
    raised = raised_in(setup, "text = nodes.read_text(path)", tmp_path)
    assert [(kind, at) for kind, at in raised if at.startswith(f"{nodes.__file__}:")] == []


def test_a_nul_byte_is_still_binary_data(tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_bytes(b"id: x\n\x00\n")
    with pytest.raises(ScenarioError, match="binary data"):
        read_text(path)
    path.write_bytes(b"id: x\n")
    assert read_text(path) == "id: x\n"
