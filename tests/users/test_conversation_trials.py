"""Conversational trials in process: the reference agents converse, every turn recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCENARIO = "conv-vending-refund"


def run(agent: str, journal: Path, *extra: str) -> list[dict]:
    subprocess.run(
        [sys.executable, "-m", "chaoseval", "run", "--agent", agent, "-s", SCENARIO,
         "-n", "3", "--seed", "5", "--journal", str(journal), "--overwrite", "--quiet", *extra],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    return [r for r in lines if r.get("type") == "trial"]


@pytest.mark.parametrize("agent", ["scripted", "naive", "resilient"])
def test_reference_agents_converse_and_pass_clean(agent: str, tmp_path: Path) -> None:
    trials = run(agent, tmp_path / "j.jsonl")
    assert [t["status"] for t in trials] == ["passed"] * 3
    turns = [s for s in trials[0]["trajectory"]["steps"] if s["kind"] == "user"]
    assert turns, "no user step recorded"
    last = turns[-1]
    assert last["data"]["confirm"] and last["data"]["agreed"]
    assert "amount" in last["data"]["stated"] and last["result"].startswith("Yes")
    refund = next(s for s in trials[0]["trajectory"]["steps"] if s.get("tool") == "issue_refund")
    assert refund["index"] > last["index"]  # confirmed before refunding


def test_same_seed_same_conversation(tmp_path: Path) -> None:
    def turns(path: Path) -> list[tuple[str, str]]:
        return [
            (s["args"]["text"], s["result"])
            for t in run("naive", path)
            for s in t["trajectory"]["steps"]
            if s["kind"] == "user"
        ]

    assert turns(tmp_path / "a.jsonl") == turns(tmp_path / "b.jsonl")
