"""Framework agents converse with a scenario's user, one in each form (docs/AGENTS.md,
"Conversing"): examples/openai_mcp_agent.py through the ``ask_user`` tool its MCP client lists,
and examples/pydantic_ai_agent.py on the line protocol (``CHAOSEVAL_USER=lines``), against
every bundled conversational task (``tag:conversation``).

chaoseval-sim speaks for the model in both and reads the user's replies from what each agent
sends it (an ask_user result, or the user message the agent added), so an agent that relays the
conversation faithfully has the same conversation as the other on the same seed, and the same
outcome: these tests measure that the user channel works through each, not the frameworks.
Every other framework agent here converses through ``ask_user`` unchanged, checked on
conv-vending-refund against the example's conversation.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from chaoseval.model.records import TrialRecord
from chaoseval.store.journal import read_journal
from tests.frameworks.matrix import EXAMPLE, FRAMEWORKS, Framework, installed

pytestmark = pytest.mark.frameworks

TASKS = "tag:conversation"
REFUND = "conv-vending-refund"
TRIALS = 2
SEED = 7


def start(command: str, journal: Path, tasks: str = TASKS) -> subprocess.Popen[bytes]:
    chaoseval = Path(sys.executable).with_name("chaoseval")
    argv = [str(chaoseval), "run", "--agent", f"exec:{command}", "-s", tasks]
    argv += ["-n", str(TRIALS), "--seed", str(SEED), "-j", "2", "--trial-timeout", "300"]
    argv += ["--journal", str(journal), "--overwrite", "--quiet"]
    return subprocess.Popen(
        argv, cwd=journal.parent, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def finish(process: subprocess.Popen[bytes], journal: Path, name: str) -> list[TrialRecord]:
    _, err = process.communicate(timeout=900)
    assert process.returncode == 0, f"{name}: exit {process.returncode}\n{err.decode()[-3000:]}"
    return sorted(read_journal(journal).records, key=lambda r: (r.scenario, r.index))


@pytest.fixture(scope="module")
def conversations() -> dict[str, list[TrialRecord]]:
    """The example over MCP and pydantic-ai on the line protocol, both runs at once."""
    pydantic_ai: Framework = installed(FRAMEWORKS["pydantic-ai"])
    commands = {
        "tool": EXAMPLE.command,
        "lines": f"CHAOSEVAL_USER=lines {pydantic_ai.command}",
    }
    with tempfile.TemporaryDirectory(prefix="chaoseval-conv-") as tmp:
        journals = {form: Path(tmp) / f"{form}.jsonl" for form in commands}
        started = {form: start(cmd, journals[form]) for form, cmd in commands.items()}
        return {form: finish(p, journals[form], form) for form, p in started.items()}


@pytest.fixture(scope="module")
def through_the_tool() -> dict[str, list[TrialRecord]]:
    """Each installed framework agent on conv-vending-refund, all the runs at once."""
    with tempfile.TemporaryDirectory(prefix="chaoseval-conv-fw-") as tmp:
        started = {}
        for name, framework in sorted(FRAMEWORKS.items()):
            if framework.needs.exists():
                journal = Path(tmp) / f"{name}.jsonl"
                started[name] = (start(framework.command, journal, REFUND), journal)
        return {name: finish(p, journal, name) for name, (p, journal) in started.items()}


def conversation(record: TrialRecord) -> list[tuple[str, str | None]]:
    return [(s.args["text"], s.result) for s in record.trajectory.steps if s.kind == "user"]


def asked(record: TrialRecord) -> set[str]:
    """The tools the model called over the trial."""
    return {
        name
        for s in record.trajectory.steps
        if s.kind == "model" and isinstance(s.result, dict)
        for name in s.result.get("tool_calls") or []
    }


@pytest.mark.parametrize("form", ["tool", "lines"])
def test_every_trial_converses_and_is_judged(
    conversations: dict[str, list[TrialRecord]], form: str
):
    records = conversations[form]
    assert records and {r.scenario for r in records} >= {"conv-vending-refund"}
    assert not [(r.trial_id, r.error) for r in records if r.status == "not_evaluable"]
    assert not [(r.trial_id, r.error) for r in records if r.root_cause in ("crash", "timeout")]
    assert all(conversation(r) for r in records), "a trial without a user step"
    assert any(r.status == "passed" for r in records)
    # The tool form speaks through ask_user; the line protocol never sees it listed.
    assert all(("ask_user" in asked(r)) == (form == "tool") for r in records), form


def test_both_forms_carry_the_same_conversation_to_the_same_outcome(
    conversations: dict[str, list[TrialRecord]],
):
    tool, lines = conversations["tool"], conversations["lines"]
    assert [r.trial_id for r in tool] == [r.trial_id for r in lines]
    differ = {
        a.trial_id: (conversation(a), conversation(b))
        for a, b in zip(tool, lines, strict=True)
        if conversation(a) != conversation(b)
    }
    assert not differ
    assert [(r.status, r.root_cause) for r in tool] == [(r.status, r.root_cause) for r in lines]


@pytest.mark.parametrize("name", sorted(FRAMEWORKS))
def test_each_framework_converses_through_ask_user_as_the_example_does(
    conversations: dict[str, list[TrialRecord]],
    through_the_tool: dict[str, list[TrialRecord]],
    name: str,
):
    installed(FRAMEWORKS[name])
    records = through_the_tool[name]
    example = [r for r in conversations["tool"] if r.scenario == REFUND]
    assert [r.trial_id for r in records] == [r.trial_id for r in example]
    if name != "smolagents-code":  # (its model calls ask_user in code, not as a tool call)
        assert all("ask_user" in asked(r) for r in records), name
    assert [conversation(r) for r in records] == [conversation(r) for r in example], name
    assert [(r.status, r.root_cause) for r in records] == [
        (r.status, r.root_cause) for r in example
    ], name
