"""A cell as a report prints it is a cell `-p` reads: labels copied from a report name the
same cells (they were refused: `timeout(probability=0.3)`)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app
from chaoseval.model.cells import parse_cells

SPECS = [
    "latency",
    "timeout:probability=0.3",
    "timeout:modes=[hang,429],probability=0.5",
    "latency:mean=2+timeout:probability=0.3",
    "malformed:rate=1.0+sampling",
]


@pytest.mark.parametrize("spec", SPECS)
def test_a_printed_label_parses_to_the_cell_it_labels(spec: str) -> None:
    [cell] = parse_cells([spec])
    assert parse_cells([cell.name]) == [cell]


def test_a_label_copied_from_the_report_runs_the_same_cell(tmp_path) -> None:
    journal = tmp_path / "j.jsonl"
    args = ["run", "--agent", "naive", "-s", "vending-refund-log-down", "-n", "1"]
    out = CliRunner().invoke(
        app, [*args, "-p", "timeout(probability=0.3)", "--journal", str(journal), "--no-report"]
    )
    assert out.exit_code == 0, out.output
    assert '"name":"timeout(probability=0.3)"' in journal.read_text()
