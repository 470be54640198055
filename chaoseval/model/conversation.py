"""A scenario's simulated user: what they want, what they know, who they are, when they leave.

A conversational scenario (``Scenario.user``) has a customer on the other side. The default
user is deterministic: a seeded policy (``chaoseval.users``) that answers the agent's questions
from the facts it knows and follows its script. The agent reaches it through ``episode.user``
in process, ``ask_user`` on the trial's tool servers, or the ``CHAOSEVAL_USER=lines`` protocol;
perturbations on the ``user`` channel change what it says (docs/CONVERSATIONS.md).

Every text here is a ``str.format`` template over the world's givens, as the instruction is.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# How a fact is written, so the user can tell whether an agent's message states it (and states
# it right) and a reader of the reply can find it: an id (ORD-1042), an amount (2.75), an
# e-mail, an ISO date, or free text (matched as written).
FactKind = Literal["id", "amount", "email", "date", "text"]
Persona = Literal["plain", "terse", "chatty", "upset"]
FACT_NAME = r"^[a-z][a-z0-9_]*$"


class Fact(BaseModel):
    """One thing the user knows: given when asked for, volunteered only if ``volunteer``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=FACT_NAME, max_length=64)
    value: str  # a template over the givens: "{order_id}"
    kind: FactKind = "text"
    label: str | None = None  # how people call it ("order number"); else the name, spaced
    # Words that, in an agent's message, ask for it; the label and the name by default.
    asked_by: list[str] = Field(default_factory=list)
    volunteer: bool = False  # said in the first reply without being asked (unless withheld)

    @property
    def spoken(self) -> str:
        return self.label or self.name.replace("_", " ")

    def cues(self) -> list[str]:
        return [c.casefold() for c in (self.asked_by or [self.spoken, self.name])]


class ScriptLine(BaseModel):
    """A line the user says in their reply to the agent's ``turn``-th message."""

    model_config = ConfigDict(extra="forbid")

    turn: int = Field(ge=1)
    say: str


class Demand(BaseModel):
    """What a pushy user insists on, said by the ``pressure`` perturbation: a call the policy
    does not allow here. An agent that makes the call (``tool`` with ``args``, as far as given)
    gave in: a safety veto."""

    model_config = ConfigDict(extra="forbid")

    say: str  # "I want a full refund of {amount}, not a ticket."
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)  # templates; values compared as text


class UserSpec(BaseModel):
    """The user of a conversational scenario (YAML ``user:``)."""

    model_config = ConfigDict(extra="forbid")

    goal: str  # what they want, in a sentence: an LLM user is told it, never the agent
    opening: str  # their first message: the agent's instruction ends with it
    facts: list[Fact] = Field(default_factory=list)
    persona: Persona = "plain"
    script: list[ScriptLine] = Field(default_factory=list)
    # The user answers this many of the agent's messages, then says goodbye and leaves.
    max_turns: int = Field(default=8, ge=1, le=100)
    demand: Demand | None = None

    @model_validator(mode="after")
    def _consistent(self) -> UserSpec:
        names = [f.name for f in self.facts]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"user facts must have unique names; repeated: {repeated}")
        late = [line.turn for line in self.script if line.turn > self.max_turns]
        if late:
            raise ValueError(
                f"user script says a line at turn {late[0]}, after the user leaves "
                f"(max_turns {self.max_turns}): raise max_turns or move the line"
            )
        return self

    def render(self, givens: dict[str, Any]) -> RenderedUser:
        """The user of one world: every template filled from its givens."""
        return RenderedUser(
            spec=self,
            opening=self.opening.format(**givens),
            goal=self.goal.format(**givens),
            values={f.name: f.value.format(**givens) for f in self.facts},
            script=_by_turn([(line.turn, line.say.format(**givens)) for line in self.script]),
            demand=None if self.demand is None else self.demand.say.format(**givens),
            demand_args={
                k: v.format(**givens) if isinstance(v, str) else v
                for k, v in (self.demand.args if self.demand else {}).items()
            },
        )


def _by_turn(lines: list[tuple[int, str]]) -> dict[int, str]:
    """Script lines of the same turn said together, in the order written."""
    out: dict[int, str] = {}
    for turn, text in lines:
        out[turn] = f"{out[turn]} {text}" if turn in out else text
    return out


class RenderedUser(BaseModel):
    """A user spec with the world's values in: what a trial's simulator works from."""

    model_config = ConfigDict(extra="forbid")

    spec: UserSpec
    opening: str
    goal: str
    values: dict[str, str]  # fact name -> its true value
    script: dict[int, str]
    demand: str | None
    demand_args: dict[str, Any]

    def fact(self, name: str) -> Fact:
        return next(f for f in self.spec.facts if f.name == name)
