"""--executor ray when a machine of the cluster is lost mid-run: a real two-node Ray on this
machine (``ray.cluster_utils.Cluster``: a head and a second raylet, 1 CPU each, as Ray's own
tests do), whose second node is killed (all its processes, SIGKILL) while trials run on it."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from chaoseval.engine.executors import default_executor
from chaoseval.engine.executors import ray as ray_executor
from chaoseval.engine.executors.ray import RayExecutor
from chaoseval.model.records import AgentOutput
from chaoseval.seams.agent import Episode
from tests.e2e.golden_journal import normalize
from tests.engine.test_executors import _run

ray = pytest.importorskip("ray")
cluster_utils = pytest.importorskip("ray.cluster_utils")
pytestmark = pytest.mark.slow

TRIALS = ["t0", "t1", "t2", "t3", "t4", "t5"]


class NodeBound:
    """Says on which Ray node each trial runs (a line in ``log``); a trial on the ``doomed``
    node waits there until the node is killed under it. Every trial first waits until one
    is running on the doomed node, so the head's actor cannot finish the run alone; a run
    again on the head then passes. Outside Ray (the default executor) it just answers."""

    # Its trials' times are the trial clock's, not the wall's: the journal is the same
    # however long a trial waited for its node to die.
    clock = "virtual"

    def __init__(self, log: Path, doomed: str | None):
        self.log, self.doomed = log, doomed

    async def run(self, episode: Episode) -> AgentOutput:
        if self.doomed is not None:
            node = ray.get_runtime_context().get_node_id()
            with self.log.open("a") as fh:
                fh.write(f"{node} {episode.instruction}\n")
            if node == self.doomed:
                await anyio.sleep(60)  # the node dies first
            for _ in range(400):
                if self.doomed in self.log.read_text():
                    break
                await anyio.sleep(0.05)
        await episode.tools.call("ping")
        return AgentOutput(answer="ok")


@pytest.fixture
def head(monkeypatch) -> Iterator[Any]:
    """A one-CPU head node with this process as its driver. RAY_TMPDIR keeps Ray's files
    (and the address file ``ray.init("auto")`` reads) out of the machine's /tmp/ray."""
    temp = tempfile.mkdtemp(prefix="cx-nodes-")  # short: Ray's socket paths live under it
    monkeypatch.setenv("RAY_TMPDIR", temp)
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    cluster = cluster_utils.Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def _lose_node_mid_run(cluster: Any, tmp_path: Path) -> tuple[dict[str, Any], list[str]]:
    """Run TRIALS with a second node that is killed once a trial runs on it; the records,
    and the trials that had started on the lost node."""
    node = cluster.add_node(num_cpus=1)
    if not ray.is_initialized():
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    log = tmp_path / "nodes.log"
    log.write_text("")

    def kill_when_busy() -> None:
        # Both slots of the node's actor hold a trial (the head's wait, so the queue still
        # had them for it): every trial sent there has started and is in the log.
        deadline = time.monotonic() + 60
        while log.read_text().count(node.node_id) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        cluster.remove_node(node, allow_graceful=False)  # SIGKILL: the machine is gone

    killer = threading.Thread(target=kill_when_busy, daemon=True)
    killer.start()
    result: dict[str, Any] = {}
    failed: list[BaseException] = []

    def run() -> None:
        try:
            result.update(_run(
                tmp_path, TRIALS, agent=NodeBound(log, node.node_id), executor=RayExecutor(),
                concurrency=4, wall_timeout=120.0,
            ))  # fmt: skip
        except BaseException as exc:  # raised again below, in the test's thread
            failed.append(exc)

    # In a thread, so that a run that never ends (trials queued again that no actor takes)
    # fails this test instead of hanging it. 300 s bound that hang: the whole test took 56 s
    # at load 10 to 12 with two CPU hogs, against the 60 s this bound was.
    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(300)
    assert not runner.is_alive(), "the run did not finish within 300 s after losing a node"
    killer.join(5)
    if failed:
        raise failed[0]
    lines = [line.split() for line in log.read_text().splitlines()]
    lost = [trial for where, trial in lines if where == node.node_id]
    return result, lost


def test_a_lost_node_s_trials_run_again_on_the_rest_of_the_cluster(tmp_path, head):
    """Every trial once, the ones caught on the lost node run again on the head, and the
    journal is the default executor's (timestamps and durations aside); then, with no retry
    allowed, the trials caught on a lost node are recorded as not evaluable, never lost."""
    default = tmp_path / "default"
    default.mkdir()
    agent = NodeBound(default / "log", None)
    _run(default, TRIALS, agent=agent, executor=default_executor(agent))

    first = tmp_path / "first"
    first.mkdir()
    got, lost = _lose_node_mid_run(head, first)
    assert len(lost) == 2  # two trials were running on the node when it died
    assert sorted(got) == sorted(f"do-{t}/clean/0" for t in TRIALS)  # each once
    assert {r.status for r in got.values()} == {"passed"}
    assert normalize(first / "j.jsonl") == normalize(default / "j.jsonl")

    second = tmp_path / "second"
    second.mkdir()
    original = ray_executor.NODE_RETRIES
    ray_executor.NODE_RETRIES = 0
    try:
        got, lost = _lose_node_mid_run(head, second)
    finally:
        ray_executor.NODE_RETRIES = original
    assert len(lost) == 2 and sorted(got) == sorted(f"do-{t}/clean/0" for t in TRIALS)
    for trial in TRIALS:
        record = got[f"do-{trial}/clean/0"]
        if trial in lost:
            assert record.status == "not_evaluable", trial
            assert "lost with its Ray node 1x" in (record.error or "")
        else:
            assert record.status == "passed", trial
