"""Fixtures of the framework matrix: every run of the session started at once (the bundled
example's and each installed framework's), each test waiting for the run it reads. See
matrix.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.frameworks.matrix import (
    EXAMPLE,
    FRAMEWORK_CELLS,
    FRAMEWORKS,
    Framework,
    Matrix,
    Running,
    installed,
    start_matrix,
)


def _wanted(session: pytest.Session) -> set[str]:
    """The frameworks the selected tests ask for (``-k langgraph`` runs one)."""
    return {
        str(item.callspec.params["framework"])
        for item in session.items
        if isinstance(item, pytest.Function)
        and hasattr(item, "callspec")
        and "framework" in item.callspec.params
    }


@pytest.fixture(scope="session")
def runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Running]]:
    """The example's run and each selected, installed framework's, all under way at once (a
    framework that is not installed is skipped or failed by ``installed`` when asked for)."""
    started = {
        EXAMPLE.name: start_matrix(
            EXAMPLE, FRAMEWORK_CELLS, tmp_path_factory.mktemp("example") / "j.jsonl"
        )
    }
    wanted = _wanted(request.session)
    for name, framework in sorted(FRAMEWORKS.items()):
        if name in wanted and framework.needs.exists():
            journal = tmp_path_factory.mktemp(name) / "j.jsonl"
            started[name] = start_matrix(framework, FRAMEWORK_CELLS, journal)
    yield started
    for running in started.values():
        if running.process.poll() is None:  # a test failed before waiting for it
            running.process.kill()
            running.process.wait()


@pytest.fixture(scope="session")
def baseline(runs: dict[str, Running]) -> Matrix:
    """The bundled example on the same scenarios, cells and seeds: what a framework that passes
    the same information on to its model must match."""
    return runs[EXAMPLE.name].wait()


@pytest.fixture(scope="module", params=sorted(FRAMEWORKS))
def framework(request: pytest.FixtureRequest) -> Framework:
    return installed(FRAMEWORKS[request.param])


@pytest.fixture(scope="module")
def matrix(framework: Framework, runs: dict[str, Running]) -> Matrix:
    return runs[framework.name].wait()
