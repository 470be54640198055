"""The answer a framework agent meant (issue 42, item 1): such an agent prints its model's final
text inside its own ``{"answer": ...}``; when that text is chaoseval's answer JSON, its
``gave_up`` and ``data`` are the agent's, read one level down and no further."""

from __future__ import annotations

import json

import pytest

from chaoseval.agents.output import Capture, parse_answer
from chaoseval.model import untrusted
from chaoseval.model.records import AgentOutput
from tests.agents.test_exec_agents import run_exec, script

INNER = {"answer": "the machine is out of order", "gave_up": True, "data": {"order": "A1"}}


def read(line: str) -> AgentOutput:
    stdout = Capture(1 << 20, 1 << 16, 1 << 20)
    stdout.add(("working...\n" + line + "\n").encode())
    return parse_answer(stdout)


def test_the_answer_inside_a_frameworks_answer_is_the_answer():
    output = read(json.dumps({"answer": json.dumps(INNER)}))
    assert (output.answer, output.gave_up, output.data) == (
        INNER["answer"], True, INNER["data"]
    )  # fmt: skip


def test_only_one_level_is_unwrapped():
    twice = {"answer": json.dumps({"answer": json.dumps(INNER), "gave_up": False})}
    output = read(json.dumps(twice))
    assert (output.answer, output.gave_up) == (json.dumps(INNER), False)


@pytest.mark.parametrize(
    "inner",
    [
        "refund issued",  # plain text
        '{"status": "done"}',  # a JSON object without an answer
        '["answer"]',  # JSON, not an object
        '{"answer": "cut sho',  # JSON cut short
        "{" * 100_000,  # nothing the parser takes
    ],
)
def test_any_other_answer_string_is_kept_as_it_is(inner: str):
    output = read(json.dumps({"answer": inner, "gave_up": True, "data": {"k": 1}}))
    assert (output.answer, output.gave_up, output.data) == (inner, True, {"k": 1})


def test_what_the_inner_answer_holds_is_made_fit_for_a_record():
    """A lone surrogate in the inner JSON (an escape inside the outer string) is escaped as
    the outer line's would be."""
    inner = '{"answer": "bad \\ud800 answer", "data": {"x": "\\udfff"}}'
    output = read(json.dumps({"answer": inner}))
    assert output.answer == untrusted.escape("bad \ud800 answer")
    assert output.data == {"x": untrusted.escape("\udfff")}
    json.dumps(output.model_dump()).encode()  # UTF-8 holds it


def test_an_exec_agent_that_relays_a_gave_up_answer_gave_up(tmp_path):
    body = f"import json\nprint(json.dumps({{'answer': json.dumps({INNER!r})}}))\n"
    [record] = run_exec(tmp_path, script(tmp_path, "agent", body))
    assert record.answer == INNER["answer"]
    assert record.root_cause == "gave_up"
