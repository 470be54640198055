"""JUnit cases for gate rules with a plugin selector: each cell the selector names is a case."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from chaoseval.analysis.build import analyze
from chaoseval.analysis.gate import evaluate, parse_rule
from chaoseval.engine.runner import RunConfig, run
from chaoseval.model.cells import parse_cells
from chaoseval.render import render_junit
from chaoseval.render.junit import rule_cells
from chaoseval.seams.agent import load_agent
from chaoseval.store.journal import read_journal
from tests.conftest import make_scenario


def test_a_plugin_selector_rule_fails_in_the_cells_that_stack_the_plugin(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    run(
        RunConfig(
            scenarios=[make_scenario()],
            agent=load_agent("naive"),
            agent_name="naive",
            # No cell is called "timeout": the selector [timeout] names the one that sweeps it.
            cells=parse_cells(["timeout:probability=1.0"]),
            trials=2,
            seed=3,
            journal=path,
            references=False,
        )
    )
    journal = read_journal(path)
    analysis = analyze(journal, n_resamples=200, references=False)
    cell = next(c.cell for c in analysis.cells if c.cell.startswith("timeout"))
    # A process rule no trial can meet, on the timeout cells only.
    results = evaluate(analysis, [parse_rule("mean(tool_calls)[timeout] <= 0")])
    assert not results[0].passed
    assert rule_cells(analysis, results[0]) == {cell: False}
    root = ET.fromstring(render_junit(journal, analysis, results))
    failed = {c.get("classname") for c in root.iter("testcase") if c.find("failure") is not None}
    # The case of the timeout cell fails, and the clean cell's does not (it was the whole run).
    assert any(name and "timeout" in name for name in failed), failed
    assert "chaoseval.clean" not in failed
