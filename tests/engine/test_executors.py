"""Executors: nothing an agent does sinks the run, and where trials ran changes no record."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from chaoseval.engine.executors import default_executor, make_executor, parse_size
from chaoseval.engine.executors.process import ProcessExecutor, _rss
from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import ConfigError
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import AgentOutput, Budgets
from chaoseval.model.scenario import Check, Scenario, tool
from chaoseval.seams.agent import Episode, load_agent
from chaoseval.store import artifacts
from chaoseval.store.journal import read_journal
from tests.e2e.golden_journal import normalize


@tool()
def ping(world: Any) -> dict[str, bool]:
    """Answer ok."""
    return {"ok": True}


async def _solution(actor: Any) -> AgentOutput:
    await actor.call("ping")
    return AgentOutput(answer="ok")


def _scenario(behaviour: str) -> Scenario:
    """A one-tool scenario whose instruction tells the misbehaving agent what to do."""
    return Scenario(
        id=f"do-{behaviour}",
        description=behaviour,
        domain="test",
        instruction=behaviour,
        tools=[ping],
        checks=[Check(name="answered", fn=lambda world, output, trajectory: output.answer == "ok")],
        solution=_solution,
        reference_steps=1,
        budgets=Budgets(max_steps=5),
    )


class Misbehaving:
    """Does what the scenario's instruction says: a real-clock agent at its worst."""

    def __init__(self, clock: str = "real"):
        self.clock = clock

    async def run(self, episode: Episode) -> AgentOutput:
        what = episode.instruction
        if what == "block":
            time.sleep(600)  # blocks the event loop: nothing else in its process runs
        elif what == "spin":
            while True:  # retries forever and swallows everything, cancellation included
                try:
                    await episode.tools.call("ping")
                except BaseException:
                    pass
        elif what == "swallow":
            while True:  # retries forever, swallowing every Exception, never sleeping
                try:
                    await episode.tools.call("ping")
                except Exception:
                    pass
        elif what == "exit":
            sys.exit(3)
        elif what == "hard-exit":
            os._exit(3)
        elif what == "hog":
            hoard = bytearray(400 * 2**20)  # RSS well past the limit the test sets
            hoard[::4096] = b"x" * len(hoard[::4096])
            # Held until the memory watch kills the worker: no hold of a few seconds for the
            # watch to see it in (under load it may take longer), and the test's long wall
            # timeout only bounds a watch that never does (then a "timeout" fails the test).
            await anyio.sleep_forever()
        await episode.tools.call("ping")
        return AgentOutput(answer="ok")


def _run(tmp_path: Path, behaviours: list[str], **kw: Any) -> dict[str, Any]:
    journal = tmp_path / "j.jsonl"
    config = RunConfig(
        scenarios=[_scenario(b) for b in behaviours],
        agent=kw.pop("agent", Misbehaving()),
        agent_name="misbehaving",
        trials=kw.pop("trials", 1),
        seed=3,
        concurrency=kw.pop("concurrency", 4),
        journal=journal,
        references=False,
        # The misbehaving trials wait it out; the good ones must finish within it, once sent
        # to a worker, on a machine that may be loaded: 3 s (1 s before) for one ping.
        wall_timeout=kw.pop("wall_timeout", 3.0),
        keep_records=False,
        **kw,
    )
    result = run(config)
    records = read_journal(journal).records
    assert result.written == len(records)
    return {r.trial_id: r for r in records}


@pytest.mark.slow
def test_the_default_executor_records_every_misbehaviour_and_the_run_completes(tmp_path):
    """Blocked loop, a spin that swallows cancellation, sys.exit, os._exit: each a recorded
    trial; the good trials beside them in the same workers are re-run, never lost."""
    executor = default_executor(Misbehaving())  # what `chaoseval run` picks for it
    assert executor == "process"
    behaviours = ["ok", "block", "spin", "exit", "hard-exit", "ok2"]
    got = _run(tmp_path, behaviours, trials=2, executor=executor)
    assert len(got) == 2 * len(behaviours)  # nothing lost, nothing twice
    for i in range(2):
        for ok in ("ok", "ok2"):
            assert got[f"do-{ok}/clean/{i}"].status == "passed"
        block = got[f"do-block/clean/{i}"]
        assert (block.status, block.root_cause) == ("failed", "timeout")
        assert "blocked the event loop" in (block.error or "")
        spin = got[f"do-spin/clean/{i}"]
        assert spin.status == "failed" and spin.root_cause in {"timeout", "budget_exceeded"}
        exit_ = got[f"do-exit/clean/{i}"]
        assert (exit_.root_cause, exit_.error) == ("crash", "SystemExit: 3")
        hard = got[f"do-hard-exit/clean/{i}"]
        assert hard.root_cause == "crash" and "exited with code 3" in (hard.error or "")


def test_in_process_sys_exit_and_a_swallowed_budget_end_their_trials(tmp_path):
    agent = Misbehaving(clock="virtual")
    executor = default_executor(agent)
    assert executor == "inprocess"
    got = _run(tmp_path, ["exit", "swallow", "ok"], agent=agent, executor=executor)
    assert (got["do-exit/clean/0"].root_cause, got["do-exit/clean/0"].error) == (
        "crash",
        "SystemExit: 3",
    )
    swallow = got["do-swallow/clean/0"]
    assert (swallow.status, swallow.root_cause) == ("failed", "budget_exceeded")
    assert swallow.steps == 7  # the budget of 5, the call told so, the call that ended it
    assert got["do-ok/clean/0"].status == "passed"


@pytest.mark.slow
def test_a_worker_past_max_memory_is_a_recorded_crash(tmp_path):
    # A forked worker's RSS starts with the pages it shares with this process: the limit
    # sits 200 MB above that, the hog allocates 400 MB.
    limit = (_rss(os.getpid()) or 0) + 200 * 2**20
    got = _run(tmp_path, ["hog", "ok"], executor="process", max_memory=limit, wall_timeout=120.0)
    hog = got["do-hog/clean/0"]
    assert hog.root_cause == "crash" and "--max-memory" in (hog.error or "")
    assert got["do-ok/clean/0"].status == "passed"


def _journal_lines(tmp_path: Path, executor: str) -> list[str]:
    journal = tmp_path / f"{executor}.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), ["vending-*", "orders-*"])[:2],
            agent=load_agent("naive"),
            agent_name="naive",
            cells=parse_cells(["latency", "malformed"]),
            trials=2,
            seed=11,
            concurrency=3,
            journal=journal,
            executor=executor,
            references=False,
        )
    )
    return normalize(journal)


@pytest.mark.slow
def test_the_same_seed_gives_the_same_journal_in_either_executor(tmp_path):
    inprocess = _journal_lines(tmp_path, "inprocess")
    process = _journal_lines(tmp_path, "process")
    assert len(inprocess) > 6
    assert [json.loads(x) for x in process] == [json.loads(x) for x in inprocess]


def test_executor_names_and_sizes_are_checked():
    with pytest.raises(ConfigError, match="inprocess, process"):
        make_executor("threads")
    with pytest.raises(ConfigError, match="512M"):
        parse_size("lots", "--max-memory")
    assert parse_size("1.5G", "--max-memory") == 3 * 2**29


@pytest.mark.slow
def test_two_workers_lost_at_the_same_moment_lose_no_trial(tmp_path):
    """Both spinning trials overdue at once, one per worker: each worker is killed and each
    trial recorded (the first worker settled must not end the run before the second)."""
    got = _run(tmp_path, ["spin"], trials=2, concurrency=2, executor="process")
    assert sorted(got) == ["do-spin/clean/0", "do-spin/clean/1"]
    assert {r.root_cause for r in got.values()} == {"timeout"}


class WritesOnce(Misbehaving):
    """note writes an artifact on its first attempt only, then waits; block blocks its
    worker's loop once note has written, so both are in the worker when it is killed."""

    def __init__(self, marker: Path):
        super().__init__()
        self.marker = marker

    async def run(self, episode: Episode) -> AgentOutput:
        if episode.instruction == "note" and not self.marker.exists():
            kept = artifacts.current()
            assert kept is not None
            kept.write("note.txt", "from the attempt that was killed")
            self.marker.touch()
            await anyio.sleep(30)  # held: block takes the loop first
        if episode.instruction == "block":
            while not self.marker.exists():
                await anyio.sleep(0.02)
        return await super().run(episode)


@pytest.mark.slow
def test_a_trial_queued_again_leaves_nothing_of_its_killed_attempt(tmp_path):
    """note's worker is killed for block's timeout; note runs again and writes nothing, so
    nothing of the killed attempt may be left in its artifact directory."""
    got = _run(
        tmp_path,
        ["note", "block"],
        agent=WritesOnce(tmp_path / "written"),
        executor=ProcessExecutor(workers=1),  # one worker, both trials in it
        concurrency=2,
    )
    assert got["do-block/clean/0"].root_cause == "timeout"
    assert (got["do-note/clean/0"].status, got["do-note/clean/0"].artifacts) == ("passed", [])
    trial_dir = artifacts.store_root(tmp_path / "j.jsonl") / "do-note/clean/0"
    assert not (trial_dir / "note.txt").exists()
