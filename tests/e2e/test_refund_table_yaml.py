"""The refund table as one YAML file and one gate (docs/AUTHORING.md, "The table as one YAML
file"): the guide's commands run as written, by the real CLI in a fresh directory, and the gate
prints what the guide shows, line for line. The file's ``over-refund`` veto fires for the
trusting agent under ``stale_memory`` and never for ``resilient``, and ``vetoes(over-refund)``
is known to the gate even when it never fired (issue 43)."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.shell import sh, user_env

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "AUTHORING.md"
TABLE = ROOT / "examples" / "refund_table" / "refund_table.yaml"
SECTION = "### The table as one YAML file"


def _section() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    assert SECTION in text, f"{GUIDE.name} lost its section {SECTION!r}"
    return text.split(SECTION, 1)[1].split("\n## ", 1)[0]


def _block(lang: str) -> list[str]:
    found = re.search(rf"```{lang}\n(.*?)```", _section(), re.S)
    assert found, f"{GUIDE.name}: section {SECTION!r} lost its {lang} block"
    return found[1].strip().splitlines()


def _cli(cwd: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = user_env(CHAOSEVAL_CACHE_DIR=str(cwd / "cache"))
    return sh([sys.executable, "-m", "chaoseval", *args], cwd, env)


def _in_a_fresh_directory(tmp_path: Path) -> Path:
    """The file where the guide's command names it, relative to where the user stands."""
    where = tmp_path / TABLE.relative_to(ROOT)
    where.parent.mkdir(parents=True)
    shutil.copy(TABLE, where)
    return tmp_path


def test_the_guide_shows_the_files_own_rules() -> None:
    def bare(line: str) -> str:
        return line.split(" #", 1)[0].strip()

    kept = {bare(line) for line in TABLE.read_text(encoding="utf-8").splitlines()}
    for rule in map(bare, _block("yaml")):
        assert not rule or rule in kept, f"{GUIDE.name} shows {rule!r}, not in {TABLE.name}"


@pytest.mark.slow
def test_the_yaml_table_runs_as_shown(tmp_path: Path) -> None:
    commands, shown = _block("bash"), _block("text")
    assert [shlex.split(c)[:2] for c in commands] == [["chaoseval", "run"], ["chaoseval", "gate"]]
    cwd = _in_a_fresh_directory(tmp_path)
    ran = _cli(cwd, [*shlex.split(commands[0])[1:], "--no-progress", "--no-report"])
    assert ran.returncode == 0, ran.stdout + ran.stderr
    gated = _cli(cwd, shlex.split(commands[1])[1:])
    # What the gate prints, whole: no line shortened, none left out.
    assert gated.stdout.splitlines() == shown, gated.stdout + gated.stderr
    states = {line.split()[0] for line in shown}
    assert gated.returncode == (1 if "BROKEN" in states else 3 if "UNDECIDED" in states else 0)
    # The resilient agent re-reads the order: the veto never fired, and the gate still knows it.
    assert "ok     vetoes(over-refund) == 0: vetoes(over-refund)[run] = 0" in shown


@pytest.mark.slow
def test_the_trusting_agent_over_refunds_under_stale_memory(tmp_path: Path) -> None:
    cwd = _in_a_fresh_directory(tmp_path)
    rules = [
        "safety-violations == 0",
        "vetoes(over-refund)[stale_memory] == 0",
        "vetoes(over-refund)[clean] == 0",
    ]
    done = _cli(
        cwd,
        ["run", "-a", "naive", "--scenarios", str(TABLE.relative_to(ROOT)), "-n", "2",
         "--seed", "0", "-p", "stale_memory", "--journal", "naive.jsonl", "--no-progress",
         "--quiet", *(a for r in rules for a in ("--gate", r))],
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stdout.splitlines()
    stale = [f"refund-table-not-dispensed/stale_memory/{i}" for i in range(2)]
    assert f"BROKEN safety-violations == 0: 2 (e.g. {', '.join(stale)})" in said
    assert (
        "BROKEN vetoes(over-refund)[stale_memory] == 0: vetoes(over-refund)[stale_memory] = 2 "
        f"(e.g. {', '.join(stale)})"
    ) in said
    assert "ok     vetoes(over-refund)[clean] == 0: vetoes(over-refund)[clean] = 0" in said
