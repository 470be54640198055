"""Fixtures of the framework matrix: the bundled example's run (once), each framework's run
(once per framework). See matrix.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.frameworks.matrix import (
    BASELINE_CELLS,
    EXAMPLE,
    FRAMEWORK_CELLS,
    FRAMEWORKS,
    Framework,
    Matrix,
    installed,
    run_matrix,
)


@pytest.fixture(scope="session")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    """The bundled example on the same scenarios, cells and seeds: what a framework that passes
    the same information on to its model must match."""
    return run_matrix(EXAMPLE, BASELINE_CELLS, tmp_path_factory.mktemp("example") / "j.jsonl")


@pytest.fixture(scope="module", params=sorted(FRAMEWORKS))
def framework(request: pytest.FixtureRequest) -> Framework:
    return installed(FRAMEWORKS[request.param])


@pytest.fixture(scope="module")
def matrix(framework: Framework, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Matrix]:
    journal = tmp_path_factory.mktemp(framework.name) / "j.jsonl"
    yield run_matrix(framework, FRAMEWORK_CELLS, journal)
