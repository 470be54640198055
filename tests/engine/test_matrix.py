"""The trial matrix made on demand, and the pools' queue of plan indices."""

from __future__ import annotations

import pytest

from chaoseval.engine.executors.queue import TrialQueue
from chaoseval.engine.matrix import Plans
from chaoseval.engine.runner import CLEAN_CELL
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells


@pytest.fixture(scope="module")
def matrix() -> tuple[list, list]:
    return [CLEAN_CELL, *parse_cells(["latency", "timeout"])], select(installed(), ["vending-*"])


def _ids(plans) -> list[str]:
    return [p.trial_id for p in plans]


def test_plans_are_the_matrix_in_run_order(matrix):
    cells, scenarios = matrix
    plans = Plans(cells, scenarios, 3)
    expected = [f"{s.id}/{c.name}/{i}" for c in cells for s in scenarios for i in range(3)]
    assert len(plans) == len(expected) and _ids(plans) == expected
    assert [plans[i].trial_id for i in range(len(plans))] == expected  # by index, as workers ask
    assert plans[-1].trial_id == expected[-1] and _ids(plans[2:5]) == expected[2:5]
    with pytest.raises(IndexError):
        plans[len(expected)]


def test_without_skips_the_done_trials_and_keeps_the_order(matrix):
    cells, scenarios = matrix
    plans = Plans(cells, scenarios, 3)
    everything = _ids(plans)
    done = {everything[0], everything[4], everything[-1], "not/in/the-matrix"}
    todo = plans.without(done)
    assert _ids(todo) == [t for t in everything if t not in done]
    assert len(todo) == len(everything) - 3
    assert [todo[i].trial_id for i in range(len(todo))] == _ids(todo)
    assert _ids(todo.without({everything[1]})) == [t for t in _ids(todo) if t != everything[1]]
    assert plans.without(set()) is plans


def test_the_queue_hands_out_indices_in_order_after_those_queued_again():
    queue = TrialQueue(4)
    assert len(queue) == 4 and queue[0] == (0, False, False)
    assert queue.popleft() == (0, False, False)
    queue.appendleft((0, True, True))
    assert queue[0] == (0, True, True) and len(queue) == 4
    taken = [queue.popleft() for _ in range(4)]
    assert taken == [(0, True, True), (1, False, False), (2, False, False), (3, False, False)]
    assert not queue
    with pytest.raises(IndexError):
        queue.popleft()
