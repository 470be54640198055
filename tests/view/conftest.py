"""Real journals (written by real runs) and a real view server on 127.0.0.1 for the view's tests."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn

from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.seams.agent import load_agent
from chaoseval.view.app import make_app
from chaoseval.view.serve import bind

TASKS = ["vending-refund-not-dispensed", "helpdesk-reset-password"]
GATE = ["pass^1 >= 0.5"]


def write_run(path: Path, seed: int, gate: list[str] | None = None) -> Path:
    """A real run of the naive agent under timeouts: failures with passing clean twins."""
    path.parent.mkdir(parents=True, exist_ok=True)
    run(
        RunConfig(
            scenarios=select(installed(), TASKS),
            agent=load_agent("naive"),
            agent_name="naive",
            cells=parse_cells(["timeout"]),
            trials=3,
            seed=seed,
            ks=[1, 2],
            journal=path,
            references=False,
            gate=gate or [],
        )
    )
    return path


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with two runs of the same agent on the same scenarios (a release and the
    next), one recording a gate, in a subfolder each."""
    root = tmp_path_factory.mktemp("view-runs")
    write_run(root / "release-1" / "run.jsonl", seed=1, gate=GATE)
    write_run(root / "release-2" / "run.jsonl", seed=2)
    return root


def copy_runs(runs: Path, into: Path) -> Path:
    """A copy of the runs folder a test may change."""
    shutil.copytree(runs, into)
    return into


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@dataclass
class Served:
    url: str
    port: int
    root: Path

    def get(self, path: str, **kw: object) -> httpx.Response:
        return httpx.get(self.url + path, timeout=60, **kw)  # type: ignore[arg-type]


@pytest.fixture
def serve() -> Iterator[object]:
    """``serve(root)``: the view of ``root`` on a free port of 127.0.0.1, in a thread,
    stopped after the test."""
    servers: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(root: Path) -> Served:
        sock = bind("127.0.0.1", 0)
        port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(make_app(root), log_level="warning",
                                               lifespan="off"))  # fmt: skip
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        servers.append((server, thread))
        # Started when it answers (no fixed wait: a loaded machine takes what it takes).
        with httpx.Client(timeout=60) as client:
            for _ in range(600):
                try:
                    client.get(f"http://127.0.0.1:{port}/static/view.js")
                    break
                except httpx.TransportError:
                    threading.Event().wait(0.1)
        return Served(f"http://127.0.0.1:{port}", port, root)

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=60)
