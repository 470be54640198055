"""The run's manifest records the root causes it can produce; older journals still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import SCHEMA_VERSION
from chaoseval.seams.agent import load_agent
from chaoseval.seams.rootcause import CORE_CAUSES
from chaoseval.store.journal import read_journal

runner = CliRunner()


def _run(path: Path, *, resume: bool = False) -> None:
    run(
        RunConfig(
            scenarios=select(installed(), ["vending-refund-not-dispensed"]),
            agent=load_agent("naive"),
            agent_name="naive",
            cells=parse_cells(["malformed", "stale_memory", "layout_shift"]),
            trials=2,
            seed=3,
            ks=[1],
            journal=path,
            resume=resume,
        )
    )


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("causes") / "run.jsonl"
    _run(path)
    return path


def test_manifest_lists_core_causes_and_the_plugins_own(journal: Path) -> None:
    causes = read_journal(journal).manifest.root_causes
    assert causes[: len(CORE_CAUSES)] == list(CORE_CAUSES)
    plugin = {(c.name, c.owner) for c in causes[len(CORE_CAUSES) :]}
    # malformed reuses a core cause; stale_memory and layout_shift bring their own
    assert plugin == {
        ("stale_memory_trusted", "stale_memory"),
        ("ui_element_not_found", "layout_shift"),
    }
    assert len({c.name for c in causes}) == len(causes)
    # every cause a trial was blamed on is one the manifest announced
    seen = {r.root_cause for r in read_journal(journal).records if r.root_cause}
    assert seen and seen <= {c.name for c in causes}


def _downgrade(src: Path, dst: Path) -> None:
    """The journal as chaoseval wrote it before schema 2: no root causes in the manifest."""
    lines = []
    for line in src.read_text().splitlines():
        record = json.loads(line)
        record["schema_version"] = 1
        record.pop("root_causes", None)
        record.pop("references", None)
        lines.append(json.dumps(record))
    dst.write_text("\n".join(lines) + "\n")


def test_a_schema_1_journal_reads_reports_and_resumes(journal: Path, tmp_path: Path) -> None:
    assert SCHEMA_VERSION >= 2  # 3 added the manifest's reference runs
    old = tmp_path / "old.jsonl"
    _downgrade(journal, old)
    data = read_journal(old)
    assert data.manifest.schema_version == 1 and data.manifest.root_causes == []
    assert len(data.records) == len(read_journal(journal).records)
    result = runner.invoke(app, ["report", str(old), "--k", "1"])
    assert result.exit_code == 0, result.output
    assert "Root causes:" not in result.output  # nothing to label them with: bare names only
    # A resumed schema-1 journal keeps its manifest and gains only the missing trials.
    lines = old.read_text().splitlines()
    old.write_text("\n".join(lines[:-2]) + "\n")
    _run(old, resume=True)
    resumed = read_journal(old)
    assert resumed.manifest.schema_version == 1
    assert len(resumed.records) == len(data.records)


def test_report_labels_the_causes_it_shows(journal: Path) -> None:
    result = runner.invoke(app, ["report", str(journal), "--k", "1"])
    assert result.exit_code == 0, result.output
    shown = {r.root_cause for r in read_journal(journal).records if r.root_cause}
    legend = result.output.split("Root causes:\n", 1)[1]
    labels = {c.name: c for c in read_journal(journal).manifest.root_causes}
    for name in shown:
        assert f"{name}: {labels[name].label} ({labels[name].owner})" in legend
    doc = runner.invoke(app, ["report", str(journal), "--format", "json", "--k", "1"])
    assert [c["name"] for c in json.loads(doc.output)["root_causes"]] == list(labels)
