"""Lint's ``conversation`` check: can a scenario's user be talked with to the end of its script?

The reference solution is run once against the default (deterministic, unperturbed) user, with
an actor that checks every fact it asks for is one the user knows. The conversation must:

- ask only for facts the user has (else the solution would fail every trial on a KeyError),
  and none of free text (no agent reads one back from a reply: values are read by kind);
- end before the user leaves (``max_turns``), or the reference itself is cut off;
- reach the script's last line: a line at a turn the reference never gets to is never said,
  so whatever it was meant to test is never tested;

and the demand (said by the ``user_pressure`` perturbation) must name arguments its tool takes
(model validation already checks the tool exists and that no script line comes after
``max_turns``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chaoseval.agents.actor import Actor, run_solution
from chaoseval.engine.runner import RunConfig, run
from chaoseval.model.dialogue import user_turns
from chaoseval.model.trajectory import UserTurnData
from chaoseval.seams.agent import AgentOutput, Episode

if TYPE_CHECKING:
    from chaoseval.model.scenario import Scenario


class _Probe(Actor):
    """The faithful actor, refusing to ask for a fact the user does not have."""

    unknown: list[str]
    free_text: list[str]

    async def ask_for(self, *facts: str) -> dict[str, str | None]:
        known = self.talk.facts
        missing = [f for f in facts if f not in known]
        if missing:
            self.unknown.extend(missing)
            raise _Unknown(missing)
        self.free_text += [f for f in facts if known[f].kind == "text"]
        return await super().ask_for(*facts)


class _Unknown(Exception):
    """The reference asked for facts the user lacks: stops the probe's run."""


class _ProbeAgent:
    clock = "virtual"

    def __init__(self) -> None:
        self.unknown: list[str] = []
        self.free_text: list[str] = []

    async def run(self, episode: Episode) -> AgentOutput:
        actor = _Probe(episode)
        actor.unknown, actor.free_text = self.unknown, self.free_text
        if episode.reference is None:
            return AgentOutput(answer="no reference solution", gave_up=True)
        try:
            return await run_solution(actor, episode.reference)
        except _Unknown as exc:
            return AgentOutput(answer=f"asked for unknown facts {exc}")


def _demand_problems(scenario: Scenario, where: str) -> list[str]:
    user = scenario.user
    if user is None or user.demand is None:
        return []
    tool = scenario.tool(user.demand.tool)
    if tool is None:  # model validation refuses this; kept for a hand-built Scenario
        return [f"{where}: user.demand names tool {user.demand.tool!r}, which the scenario lacks"]
    takes = set(tool.params.model_fields)
    bad = sorted(set(user.demand.args) - takes)
    if not bad:
        return []
    return [
        f"{where}: user.demand.args names {', '.join(map(repr, bad))}, which "
        f"{tool.name} does not take (it takes: {', '.join(sorted(takes)) or 'nothing'}); "
        "fix the argument names"
    ]


def check_conversation(scenario: Scenario, seed: int) -> tuple[list[str], str]:
    """The problems found (each naming the file and the fix) and a summary; lint's
    ``conversation`` finding. Only for a scenario with a ``user``."""
    user = scenario.user
    assert user is not None
    where = scenario.source or scenario.id
    problems = _demand_problems(scenario, where)
    agent = _ProbeAgent()
    config = RunConfig(
        scenarios=[scenario], agent=agent, agent_name="scripted", trials=1, seed=seed,
        concurrency=1, journal=None,
    )  # fmt: skip
    record = run(config).records[0]
    turns = [s for s in user_turns(record.trajectory) if isinstance(s.data, UserTurnData)]
    if agent.unknown:
        problems.append(
            f"{where}: the reference solution asks for {', '.join(map(repr, agent.unknown))}, "
            f"which the user does not know (user.facts: "
            f"{', '.join(f.name for f in user.facts) or 'none'}); add the fact or fix the name"
        )
    if agent.free_text:
        problems.append(
            f"{where}: the reference solution asks for the free-text fact(s) "
            f"{', '.join(map(repr, sorted(set(agent.free_text))))}, which no agent can read "
            "back from a reply (values are read by kind): give the fact a kind (id, amount, "
            "email, date), or have the agent state it in a proposal instead"
        )
    left = next((s.data.turn for s in turns if isinstance(s.data, UserTurnData) and s.data.ended),
                None)  # fmt: skip
    if left is not None:
        problems.append(
            f"{where}: the user left at the reference's message {left} (max_turns "
            f"{user.max_turns}) before it was done; raise user.max_turns to at least "
            f"{len(turns)} or ask for several facts in one message"
        )
    last = max((line.turn for line in user.script), default=0)
    if last > len(turns) and not agent.unknown:
        problems.append(
            f"{where}: the script's line at turn {last} is never said: the reference solution "
            f"sends the user {len(turns)} message(s); move the line to turn {max(len(turns), 1)} "
            "or earlier"
        )
    if record.status == "not_evaluable" and not problems:
        problems.append(f"{where}: the reference conversation could not run: {record.error}")
    summary = (
        f"{len(problems)} problem(s) talking with the user"
        if problems
        else f"the reference talks with the user for {len(turns)} turn(s), the script's last "
        f"line at turn {last or '-'}, the user leaves after {user.max_turns}"
    )
    return problems, summary
