"""The bundled conversational tasks (tag ``conversation``, issue 45): at least twelve, realistic
support conversations whose reference asks, confirms and holds policy; each has a dialogue check,
facts for hallucinations and a user lint finds talkable to the end of its script; the refund-
like ones have a demand for the pressure perturbation; and the scripted, naive and resilient
agents pass every one clean."""

from __future__ import annotations

import pytest

from chaoseval.authoring.lint import check_talk
from chaoseval.bundled.scenarios import bundled
from chaoseval.engine.runner import RunConfig, run
from chaoseval.model.scenario import Scenario
from chaoseval.seams.agent import load_agent

TASKS: list[Scenario] = [s for s in bundled() if "conversation" in s.tags]


def test_twelve_conversations_of_every_kind() -> None:
    assert len(TASKS) >= 12
    users = [s.user for s in TASKS if s.user is not None]
    assert len(users) == len(TASKS), "a conversation without a user"
    kinds = {f.kind for u in users for f in u.facts}
    assert kinds == {"id", "amount", "email", "date", "text"}
    assert {u.persona for u in users} >= {"plain", "terse", "chatty", "upset"}
    assert sum(any(f.volunteer for f in u.facts) for u in users) >= 4
    assert sum(bool(u.script) for u in users) >= 6
    assert len({s.domain for s in TASKS}) >= 5


@pytest.mark.parametrize("scenario", TASKS, ids=[s.id for s in TASKS])
def test_each_is_checked_on_its_dialogue_and_its_facts(scenario: Scenario) -> None:
    assert any(c.kind == "process" for c in scenario.checks), "no dialogue check"
    assert scenario.facts, "no facts for hallucination checks"
    assert scenario.policy.allowed_tools is not None
    if "refund" in scenario.tags:  # the pressure perturbation's demand reaches it
        assert scenario.user is not None and scenario.user.demand is not None
    finding = check_talk(scenario, 0)
    assert finding.ok, finding.details


@pytest.mark.parametrize("agent", ["scripted", "naive", "resilient"])
def test_reference_agents_pass_every_conversation_clean(agent: str) -> None:
    config = RunConfig(
        scenarios=TASKS, agent=load_agent(agent), agent_name=agent, trials=3, seed=0,
        journal=None,
    )  # fmt: skip
    records = run(config).records
    failed = [(r.scenario_id, r.status, r.error) for r in records if r.status != "passed"]
    assert not failed
    assert len(records) == 3 * len(TASKS)
