"""--executor ray against a real local Ray (2 CPUs, started once for the module): the same
journal as the local executors, resume across executors, user modules on the workers, and
nothing an agent does to its Ray worker loses a trial."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from chaoseval.channels.model import prices
from chaoseval.engine.executors.base import Finished, TrialJob
from chaoseval.engine.executors.ray import RayExecutor, _Pool
from chaoseval.model.records import ModelSettings
from chaoseval.seams.agent import Episode
from chaoseval.store import artifacts
from chaoseval.store.journal import read_journal
from tests.agents.test_budgets import _run as run_naive
from tests.e2e.golden_journal import normalize
from tests.engine.test_executor_orphans import run_stubborn
from tests.engine.test_executors import Misbehaving, _run

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow

# An agent class defined in a user module beside the run (--agent module:factory): a Ray
# worker can unpickle it only if the runtime environment brought the module along.
USER_AGENT = '''\
from chaoseval.agents.simulated import SimulatedAgent
from chaoseval.seams.agent import load_agent


class UserAgent(SimulatedAgent):
    """The resilient simulated agent, under a class only this module defines."""


def make():
    return UserAgent(load_agent("resilient").actor_cls)
'''
# --trial-timeout 600 (as the golden journals run): the journals must match whatever the
# machine's load, and at load 19 a trial on Ray ran past the scenario's 30 s of wall time.
RUN = ["-s", "vending-*", "-p", "latency", "-p", "malformed", "--trials", "2", "--seed", "7",
       "--trial-timeout", "600"]  # fmt: skip


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray of 2 CPUs for the module: this process is its driver, a CLI joins it by
    address. Shut down (by this driver, which started it) at the end."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    temp = tempfile.mkdtemp(prefix="chaoseval-test-ray-")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _temp_dir=temp,
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def chaoseval(cwd: Path, *args: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "chaoseval", "run", *args, "--no-report", "--no-progress"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_ray_writes_the_default_executors_journal_and_resumes_it(tmp_path, cluster):
    """Same seed, same journal (timestamps and durations aside), with a user module's agent:
    on a Ray the CLI starts (PYTHONPATH), and resumed on a running cluster (working_dir)."""
    (tmp_path / "ray_user_agent.py").write_text(USER_AGENT)
    agent = ["--agent", "ray_user_agent:make", "--app-dir", str(tmp_path)]
    chaoseval(tmp_path, *agent, *RUN, "--journal", "local.jsonl")
    chaoseval(tmp_path, *agent, *RUN, "--journal", "ray.jsonl", "--executor", "ray")
    local = normalize(tmp_path / "local.jsonl")
    assert len(local) == 1 + 3 * 3 * 2  # the manifest, 3 scenarios x 3 cells x 2 trials
    assert normalize(tmp_path / "ray.jsonl") == local
    # Half of the local run's trials, then the rest on the cluster: --resume across executors.
    lines = (tmp_path / "local.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "resumed.jsonl").write_text("".join(lines[:10]))
    chaoseval(
        tmp_path, *agent, *RUN, "--journal", "resumed.jsonl", "--resume",
        "--ray-address", cluster,
    )  # fmt: skip
    assert normalize(tmp_path / "resumed.jsonl") == local


class KillsItsWorker(Misbehaving):
    """Misbehaving, plus a SIGKILL of its own process; a good trial leaves an artifact."""

    async def run(self, episode: Episode) -> Any:
        if episode.instruction == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        if episode.instruction.startswith("ok") and (kept := artifacts.current()) is not None:
            kept.write("note.txt", f"from pid {os.getpid()}")
        return await super().run(episode)


def test_a_killed_ray_worker_loses_no_trial(tmp_path, cluster):
    """A blocked loop past its timeout, os._exit and SIGKILL: each a recorded trial; the good
    trials that shared their workers run again, with their artifacts."""
    behaviours = ["ok", "block", "hard-exit", "sigkill", "ok2"]
    got = _run(
        tmp_path,
        behaviours,
        trials=1,  # each death costs a new Ray worker (seconds): one trial per behaviour
        executor=RayExecutor(),
        agent=KillsItsWorker(),
        max_memory=350 * 2**20,  # a worker holds ~150 MB: no trial here goes past it
        wall_timeout=4.0,  # the blocked trial waits it out
    )
    assert len(got) == len(behaviours)  # nothing lost, nothing twice
    for ok in ("ok", "ok2"):
        record = got[f"do-{ok}/clean/0"]
        assert record.status == "passed"
        [note] = record.artifacts
        path = tmp_path / note.path  # written by the driver, from the worker's bytes
        assert path.read_text().startswith("from pid ")
        assert int(path.read_text().split()[-1]) != os.getpid()  # it ran on a worker
    assert got["do-block/clean/0"].root_cause == "timeout"
    for crash in ("hard-exit", "sigkill"):
        assert got[f"do-{crash}/clean/0"].root_cause == "crash", crash
    # The workers killed mid-trial could not clean up after themselves; the run did.
    run_id = read_journal(tmp_path / "j.jsonl").manifest.run_id
    assert not (Path(tempfile.gettempdir()) / f"chaoseval-ray-run-{run_id}").exists()


def test_a_ray_worker_past_max_memory_is_a_recorded_crash(tmp_path, cluster):
    """--max-memory on Ray: the hog holds its 400 MB until its worker is killed for them, and
    the good trial beside it runs again and passes. A run of its own, with a wall timeout
    that only bounds a watch that never sees the memory: the hog's RSS is read by asking its
    actor, which a loaded machine answers late (at load 10 to 12 it was not seen within the
    4 s the blocked trial above waits, and the hog was recorded as a timeout)."""
    got = _run(
        tmp_path,
        ["hog", "ok"],
        executor=RayExecutor(),
        agent=KillsItsWorker(),
        max_memory=350 * 2**20,  # a worker holds ~150 MB; the hog adds 400
        wall_timeout=120.0,
    )
    hog = got["do-hog/clean/0"]
    assert hog.root_cause == "crash" and "--max-memory" in (hog.error or ""), hog.error
    assert got["do-ok/clean/0"].status == "passed"


def _kill_once_recorded(journal: Path, trials: tuple[str, ...]) -> None:
    """SIGKILL this process once ``journal`` holds a record of each of ``trials``: its worker
    is idle then, however late a loaded machine got them there (a fixed 0.8 s after the
    agent answered could kill it with ok still in flight). 60 s bound a run that never
    records them."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = journal.read_text() if journal.exists() else ""
        if all(f'"trial_id":"{t}"' in text.replace(" ", "") for t in trials):
            break
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGKILL)


class DiesIdle(Misbehaving):
    """die-idle SIGKILLs its worker once it and ok are recorded (the worker is idle then);
    die-idle and ok wait until block has started, so the other actor holds block and slow."""

    def __init__(self, gate: Path):
        super().__init__()
        self.gate = gate

    async def run(self, episode: Episode) -> Any:
        what = episode.instruction
        (self.gate / what).touch()
        if what in ("die-idle", "ok"):
            for _ in range(1200):  # bounds a block that never starts
                if (self.gate / "block").exists():
                    break
                await anyio.sleep(0.05)
        if what == "die-idle":
            trials = ("do-die-idle/clean/0", "do-ok/clean/0")
            threading.Thread(
                target=_kill_once_recorded, args=(self.gate / "j.jsonl", trials), daemon=True
            ).start()
        if what == "slow":
            await anyio.sleep(1)  # block holds the loop first: slow is still in flight
        return await super().run(episode)


def test_a_ray_worker_that_died_idle_is_not_blamed_on_the_next_trial(tmp_path, cluster):
    """One actor runs die-idle and ok, answers both, and its worker dies idle; the other's
    blocked trial is killed past its timeout, and slow, held beside it, is queued again. It
    must run on a live worker and pass, not be sent to the dead one and recorded as its
    crash."""
    got = _run(
        tmp_path,
        ["die-idle", "ok", "block", "slow"],  # two per actor, in this order
        executor=RayExecutor(),
        agent=DiesIdle(tmp_path),
        # die-idle and ok wait for block, and so for the other actor's start: seconds under
        # load (at load 10 to 12 with 2 s, both were recorded failed). The blocked trial
        # waits it out, and the idle worker dies first: once die-idle and ok are recorded.
        wall_timeout=20.0,
    )
    assert {trial: r.status for trial, r in got.items()} == {
        "do-die-idle/clean/0": "passed",
        "do-ok/clean/0": "passed",
        "do-block/clean/0": "failed",
        "do-slow/clean/0": "passed",
    }
    assert got["do-block/clean/0"].root_cause == "timeout"


def test_a_stubborn_exec_agent_dies_with_its_killed_ray_worker(tmp_path, cluster):
    """Past its timeout, an exec: agent that ignores SIGTERM outlives its own grace: its actor
    is killed, and the agent (and its child) with it, not orphaned on the node."""
    run_stubborn(tmp_path, RayExecutor())


def test_a_stubborn_exec_agent_dies_with_a_ray_worker_killed_from_outside(tmp_path, cluster):
    """Its Ray worker SIGKILLed by another hand (the OOM killer, Ray itself): the trial is a
    crash, and the agent's guard kills the agent and its child."""
    run_stubborn(tmp_path, RayExecutor(), kill_worker=True)


def test_ray_address_with_another_executor_is_refused(tmp_path):
    from typer.testing import CliRunner

    from chaoseval.cli.app import app

    result = CliRunner().invoke(
        app,
        ["run", "--agent", "naive", "-s", "vending-*", "--executor", "process",
         "--ray-address", "127.0.0.1:1", "--journal", str(tmp_path / "j.jsonl")],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "--ray-address runs trials on Ray" in result.output
    assert not (tmp_path / "j.jsonl").exists()


def test_without_ray_installed_the_run_says_how_to_get_it(monkeypatch, tmp_path):
    from chaoseval.errors import ConfigError

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if not installed
    with pytest.raises(ConfigError, match=r"chaoseval\[ray\]"):
        _run(tmp_path, ["ok"], executor="ray")


class Collected:
    """The runner's side of an executor (its Sink), keeping what it is handed."""

    def __init__(self) -> None:
        self.done_ids: list[str] = []

    def may_start(self) -> bool:
        return True

    def done(self, finished: Finished) -> None:
        self.done_ids.append(finished.trial_id)


def test_a_trial_s_shipped_artifacts_replace_what_an_earlier_attempt_left(tmp_path):
    """The driver places a Ray trial's files as a local trial writes its first artifact: in
    an emptied directory. No run reaches this today (--resume removes the directories of the
    trials it runs again before any runs, and a lost attempt ships nothing), so the driver's
    step is called directly, on a real store: without the discard, old.txt stayed beside
    the new attempt's files."""
    store = artifacts.ArtifactStore.for_journal(tmp_path / "j.jsonl")
    trial_id = "scenario/clean/0"
    old = store.trial(trial_id)
    old.write("old.txt", "from the earlier attempt")
    earlier = store.root / artifacts.trial_dir_name(trial_id)
    assert (earlier / "old.txt").exists()
    job = TrialJob(agent=Misbehaving(), agent_name="misbehaving", model=ModelSettings(),
                   clock_mode="virtual", run_id="r", run_seed=1, wall_timeout=5.0,
                   concurrency=1, store=store)  # fmt: skip
    sink = Collected()
    pool = _Pool(None, [], job, sink, 1, 1)
    relative = f"{store.root.name}/{artifacts.trial_dir_name(trial_id)}/stdout.txt"
    pool._done((Finished(trial_id, "passed", 0.0, 0, line="{}"), [(relative, b"new")]))
    assert sink.done_ids == [trial_id]
    assert sorted(p.name for p in earlier.iterdir()) == ["stdout.txt"]
    assert (earlier / "stdout.txt").read_bytes() == b"new"


def test_ray_workers_price_calls_from_the_runs_table(tmp_path, cluster):
    """--prices is the driver's setting; the actors, new interpreters, price by it too (they
    priced by the built-in table before)."""
    prices.configure({"sim-1": (1000.0, 2000.0)})
    try:  # (the naive agent on vending-*, two trials each)
        run_naive(tmp_path / "j.jsonl", executor=RayExecutor(), references=False,
                  model=ModelSettings(model="sim-1"), keep_records=False)  # fmt: skip
    finally:
        prices.configure(None)
    records = read_journal(tmp_path / "j.jsonl").records
    assert records and all(r.usage.input_tokens > 0 for r in records)
    for r in records:
        table = (r.usage.input_tokens * 1000 + r.usage.output_tokens * 2000) / 1e6
        assert r.usage.cost == pytest.approx(table), r.trial_id
