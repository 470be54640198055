"""One record per trial, or a clear error (issue 19, item 3): a journal holding a trial twice
or another run's lines is an error naming ``file:line`` in report, compare, gate and
``run --resume`` alike, none of which exits 0 (each once gave different counts and exit 0)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app
from chaoseval.store.columns import read_trials

BASE = ["-n", "3", "-s", "vending-refund-not-dispensed", "-p", "latency"]


def _run(journal: Path, *, agent: str = "naive", seed: int = 1, extra: tuple[str, ...] = ()):
    return CliRunner().invoke(
        app, ["run", "--agent", agent, "--seed", str(seed), *BASE, "--journal", str(journal),
              *extra],
    )  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The journal under test and the two runs appended to it: real runs, real lines."""
    root = tmp_path_factory.mktemp("runs")
    made = {}
    for name, kw in {"own": {}, "seed2": {"seed": 2}, "resilient": {"agent": "resilient"}}.items():
        out = _run(root / f"{name}.jsonl", **kw)  # type: ignore[arg-type]
        assert out.exit_code == 0, out.output
        made[name] = (root / f"{name}.jsonl").read_bytes()
    return made


def _flipped(runs: dict[str, bytes]) -> tuple[bytes, int]:
    """A passed trial's line again, its status flipped to failed."""
    lines = runs["own"].splitlines(keepends=True)
    i = next(i for i, ln in enumerate(lines) if json.loads(ln).get("status") == "passed")
    d = json.loads(lines[i])
    d["status"], d["root_cause"] = "failed", "premature_stop"
    return runs["own"] + json.dumps(d).encode() + b"\n", len(lines) + 1


def _appended(other: str) -> Callable[[dict[str, bytes]], tuple[bytes, int]]:
    def make(runs: dict[str, bytes]) -> tuple[bytes, int]:
        # The appended run's first line is its manifest: the first line of another run.
        return runs["own"] + runs[other], runs["own"].count(b"\n") + 1

    return make


CORRUPT = {"flipped": _flipped, "seed2": _appended("seed2"), "resilient": _appended("resilient")}


def _commands(j: Path, clean: Path) -> dict[str, list[str]]:
    return {
        "report": ["report", str(j)],
        "report-json": ["report", str(j), "--format", "json"],
        "compare": ["compare", str(clean), str(j)],
        "gate": ["gate", str(j), "--rule", "pass^1>=0.0"],
        "resume": ["run", "--agent", "naive", "--seed", "1", *BASE, "--journal", str(j),
                   "--resume"],
    }  # fmt: skip


@pytest.mark.parametrize("kind", list(CORRUPT))
def test_a_corrupt_journal_is_a_file_line_error_everywhere(
    tmp_path: Path, runs: dict[str, bytes], kind: str
) -> None:
    data, line = CORRUPT[kind](runs)
    j, clean = tmp_path / "j.jsonl", tmp_path / "clean.jsonl"
    j.write_bytes(data)
    clean.write_bytes(runs["own"])
    for name, args in _commands(j, clean).items():
        out = CliRunner().invoke(app, args)
        assert out.exit_code not in (0, None), (name, out.output)
        text = " ".join(out.output.split())  # rich wraps long messages
        assert f"{j}:{line}:" in text.replace(" ", "") or f"j.jsonl:{line}:" in text, (
            name,
            out.output,
        )
        expected = "recorded again" if kind == "flipped" else "belongs to another run"
        assert expected in text, (name, out.output)
    assert j.read_bytes() == data  # --resume refused before it wrote a line


def test_a_resumed_rerun_of_a_not_evaluable_trial_is_read_as_one_trial(
    tmp_path: Path, runs: dict[str, bytes]
) -> None:
    """What --resume writes is not an error: a not-evaluable trial, then its re-run."""
    lines = runs["own"].splitlines(keepends=True)
    d = json.loads(lines[1])
    d["status"], d["root_cause"], d["error"] = "not_evaluable", "harness_error", "broke"
    j = tmp_path / "j.jsonl"
    j.write_bytes(lines[0] + json.dumps(d).encode() + b"\n" + b"".join(lines[2:]))
    out = _run(j, extra=("--resume",))
    assert out.exit_code == 0, out.output
    written = j.read_bytes().splitlines()
    assert len(written) == len(lines) + 1  # the re-run's line after the others
    assert json.loads(written[-1])["trial_id"] == d["trial_id"]
    rep = CliRunner().invoke(app, ["report", str(j), "--format", "json"])
    assert rep.exit_code == 0, rep.output
    t = read_trials(j)
    assert len(t) == len(lines) - 1  # one row a trial; the re-run in the first line's place
    assert t.trial_id(0) == d["trial_id"] and int(t.col["status"][0]) != 2
