"""The declarative reference solution, compiled to an async plan over an Actor."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chaoseval.loading.yamlform.expressions import Env, Expr, evaluate, parse_expr
from chaoseval.loading.yamlform.nodes import Node, did_you_mean
from chaoseval.loading.yamlform.templates import STEP, fill_templates, interpolate
from chaoseval.model.scenario import Solution, ToolSpec


@dataclass
class SolStep:
    id: str | None
    tool: str | None
    args: dict[str, Any]
    when: Expr | None
    optional: bool
    recall: str | None = None
    click: str | None = None
    role: str = "button"
    page: bool = False
    ask_for: list[str] | None = None  # the user's facts, asked for when not yet heard
    confirm: str | None = None  # a proposal; the step's value is whether the user agreed
    say: str | None = None  # a message; the step's value is the user's reply
    # The plan ends here with this answer: an ask_for's give-up when a fact is still missing
    # (a default one unless written), a confirm's ``otherwise`` when the user did not agree.
    stop: str | None = None


@dataclass
class SolAnswer:
    text: str
    data: dict[str, Any]
    when: Expr | None
    give_up: bool = False


def compile_solution(
    node: Node,
    tools: dict[str, ToolSpec],
    named: set[str],
    facts: Mapping[str, str] | None = None,
) -> tuple[Solution, int]:
    """``facts``: the user's facts by name, with their kinds (None: no ``user:``)."""
    node.mapping(allowed={"steps", "answer", "data", "give_up"}, required=("answer",))
    steps: list[SolStep] = []
    ids: set[str] = set()
    for item in node.child("steps").seq() if node.has("steps") else []:
        step = _compile_step(item, tools, named, ids, facts)
        steps.append(step)
        if step.id:
            ids.add(step.id)
    answers = _compile_answers(node, ids)
    reference = sum(1 for s in steps if s.tool and s.when is None) or 1
    return _plan(steps, answers), reference


CONVERSING = ("ask_for", "confirm", "say")
STEP_KEYS = {"id", "call", "args", "when", "optional", "recall", "click", "role", "page"}
TALK_KEYS = {"give_up", "otherwise"}  # how a conversing step ends the plan (SolStep.stop)
GIVE_UP = "I could not get your {missing}, so I cannot go on."  # an ask_for's default


def _compile_step(
    item: Node,
    tools: dict[str, ToolSpec],
    named: set[str],
    ids: set[str],
    facts: Mapping[str, str] | None,
) -> SolStep:
    item.mapping(allowed=STEP_KEYS | set(CONVERSING) | TALK_KEYS)
    sid = item.child("id").str() if item.has("id") else None
    when = parse_expr(item.child("when"), ids) if item.has("when") else None
    talk = [k for k in CONVERSING if item.has(k)]
    if talk:
        return _conversing_step(item, talk, sid, when, ids, facts)
    tool_name = None
    args: dict[str, Any] = {}
    if item.has("call"):
        tool_name = item.child("call").str()
        if tool_name not in named:
            raise item.child("call").error(
                f"no tool named {tool_name!r}{did_you_mean(tool_name, tools)} "
                f"(tools: {', '.join(sorted(tools))})"
            )
        if item.has("args"):
            args = _step_args(item.child("args"), tool_name, tools.get(tool_name), ids)
    elif not item.has("click") and not item.has("page"):
        raise item.error(
            "a step needs 'call' (a tool), 'click' (a UI label), 'page', or, with a user, "
            "'ask_for', 'confirm' or 'say'"
        )
    return SolStep(
        id=sid,
        tool=tool_name,
        args=args,
        when=when,
        optional=bool(item.child("optional").value) if item.has("optional") else False,
        recall=item.child("recall").str() if item.has("recall") else None,
        click=item.child("click").str() if item.has("click") else None,
        role=item.child("role").str() if item.has("role") else "button",
        page=bool(item.child("page").value) if item.has("page") else False,
    )


def _conversing_step(
    item: Node,
    talk: list[str],
    sid: str | None,
    when: Expr | None,
    ids: set[str],
    facts: Mapping[str, str] | None,
) -> SolStep:
    """A step that talks with the user: ``ask_for: [order_id]`` (its value the facts heard,
    by name, None for one never given), ``confirm: TEXT`` (whether the user agreed), ``say:
    TEXT`` (the user's reply)."""
    key = talk[0]
    others = [k for k in (*talk[1:], "call", "click", "page", "args", "recall") if item.has(k)]
    if others:
        raise item.error(f"a step does one thing: {key!r} or {others[0]!r}, not both")
    ends = {"ask_for": "give_up", "confirm": "otherwise"}.get(key)
    for word in TALK_KEYS - {ends}:
        if item.has(word):
            raise item.child(word).error(
                f"{word!r} goes with {'ask_for' if word == 'give_up' else 'confirm'}, not {key!r}"
            )
    if facts is None:
        raise item.child(key).error(
            f"{key!r} talks with the scenario's user, and it has none: add a 'user:' section "
            "(goal, opening, facts) or use 'call'"
        )
    node = item.child(key)
    if key == "ask_for":
        names = node.strs()
        if not names:
            raise node.error("ask_for names at least one of the user's facts")
        for i, name in enumerate(names):
            if name not in facts:
                at = node.child(i) if isinstance(node.value, list) else node
                raise at.error(
                    f"the user has no fact named {name!r}{did_you_mean(name, facts)} "
                    f"(user.facts: {', '.join(sorted(facts)) or 'none'})"
                )
            if facts[name] == "text":
                raise node.error(
                    f"fact {name!r} is free text, which no agent can read back from a reply "
                    "(values are read by kind): give it a kind (id, amount, email, date), or "
                    "let the agent state it in a confirm and check confirmed("
                    f"{name})"
                )
        stop = _text(item.child("give_up"), ids) if item.has("give_up") else GIVE_UP
        return SolStep(
            id=sid, tool=None, args={}, when=when, optional=False, ask_for=names, stop=stop
        )
    text = _text(node, ids)
    step = SolStep(id=sid, tool=None, args={}, when=when, optional=False)
    step.stop = _text(item.child("otherwise"), ids) if item.has("otherwise") else None
    if key == "confirm":
        step.confirm = text
    else:
        step.say = text
    return step


def _text(node: Node, ids: set[str]) -> str:
    """A message template: ``$step`` references name earlier steps."""
    text = node.str()
    for m in STEP.finditer(text):
        if m.group(1) not in ids:
            raise node.error(
                f"${m.group(1)} names no earlier step with an id{did_you_mean(m.group(1), ids)}"
            )
    return text


def _step_args(node: Node, tool_name: str, spec: ToolSpec | None, ids: set[str]) -> dict[str, Any]:
    """A call's arguments: names the tool takes, ``$step`` references to earlier steps."""
    accepted = spec.params.model_fields if spec is not None else None
    args: dict[str, Any] = {}
    for aname, anode in node.items():
        if accepted is not None and aname not in accepted:
            raise anode.error(
                f"tool {tool_name!r} takes no argument {aname!r}"
                f"{did_you_mean(aname, accepted)} (it takes: {', '.join(accepted)})"
            )
        for m in STEP.finditer(str(anode.value)):
            if m.group(1) not in ids:
                raise anode.error(
                    f"${m.group(1)} names no earlier step with an id{did_you_mean(m.group(1), ids)}"
                )
        args[aname] = anode.plain()
    return args


def _compile_answers(node: Node, ids: set[str]) -> list[SolAnswer]:
    answers: list[SolAnswer] = []
    ans = node.child("answer")
    default_data = node.child("data").mapping().plain() if node.has("data") else {}
    if isinstance(ans.value, str):
        return [SolAnswer(ans.value, default_data, None)]
    for opt in ans.seq():
        opt.mapping(allowed={"when", "text", "data", "give_up"}, required=("text",))
        for m in STEP.finditer(opt.child("text").str()):
            if m.group(1) not in ids:
                raise opt.child("text").error(
                    f"${m.group(1)} names no step with an id{did_you_mean(m.group(1), ids)}"
                )
        answers.append(
            SolAnswer(
                opt.child("text").str(),
                opt.child("data").mapping().plain() if opt.has("data") else default_data,
                parse_expr(opt.child("when"), ids) if opt.has("when") else None,
                bool(opt.child("give_up").value) if opt.has("give_up") else False,
            )
        )
    if answers and answers[-1].when is not None:
        raise ans.error("the last answer option must have no 'when' (it is the fallback)")
    return answers


def _plan(steps: list[SolStep], answers: list[SolAnswer]) -> Solution:
    """The compiled steps and answers as an async plan over an Actor."""

    async def solve(actor: Any) -> Any:
        results: dict[str, Any] = {}
        env = Env(givens=actor.task, steps=results, now=actor.now)
        for step in steps:
            if step.when is not None and not actor.decide(evaluate(step.when, env)[0]):
                continue
            value = await _run_step(actor, step, env)
            if step.id:
                results[step.id] = value
            ended = _ended(actor, step, value, env)
            if ended is not None:
                return ended
        for option in answers:
            if option.when is None or actor.decide(evaluate(option.when, env)[0]):
                text = str(interpolate(option.text, env.lookup, results))
                if option.give_up:
                    return actor.give_up(text)
                return actor.answer(text, **{k: _fill(v, env) for k, v in option.data.items()})
        return actor.answer("")

    return solve


async def _run_step(actor: Any, step: SolStep, env: Env) -> Any:
    if step.tool is not None:
        args = {k: _fill(v, env) for k, v in step.args.items()}
        tool = step.tool

        async def do(
            tool: str = tool, args: dict[str, Any] = args, optional: bool = step.optional
        ) -> Any:
            if optional:
                return await actor.try_call(tool, **args)
            return await actor.call(tool, **args)

        return await (actor.recall(step.recall, do) if step.recall else do())
    if step.ask_for is not None:
        return await actor.ask_for(*step.ask_for)
    if step.confirm is not None:
        return await actor.confirm(str(_fill(step.confirm, env)))
    if step.say is not None:
        return await actor.say(str(_fill(step.say, env)))
    if step.click is not None:
        return await actor.click(step.click, step.role)
    if step.page:
        return await actor.page()
    return None


def _ended(actor: Any, step: SolStep, value: Any, env: Env) -> Any:
    """The output a conversing step ends the plan with, or None to go on: what the user said
    is read by the actor's conversation, not decided, as a Python solution's ``if``."""
    if step.stop is None:
        return None
    if step.ask_for is not None:
        missing = [n for n in step.ask_for if value.get(n) is None]
        if not missing:
            return None
        if step.stop == GIVE_UP:  # the facts as people call them ("order number")
            facts = getattr(getattr(actor, "talk", None), "facts", {})
            spoken = [facts[n].spoken if n in facts else n for n in missing]
            return actor.give_up(GIVE_UP.format(missing=" and ".join(spoken)))
        return actor.give_up(str(_fill(step.stop, env)))
    text = str(_fill(step.stop, env))
    if step.confirm is not None and not value:
        return actor.answer(text)
    return None


def _fill(value: Any, env: Env) -> Any:
    return fill_templates(value, env.lookup, env.steps)
