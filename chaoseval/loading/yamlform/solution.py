"""The declarative reference solution, compiled to an async plan over an Actor."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chaoseval.loading.yamlform.expressions import Env, Expr, evaluate, parse_expr
from chaoseval.loading.yamlform.nodes import Node, did_you_mean
from chaoseval.loading.yamlform.templates import STEP, interpolate
from chaoseval.model.scenario import ToolSpec


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


@dataclass
class SolAnswer:
    text: str
    data: dict[str, Any]
    when: Expr | None
    give_up: bool = False


def compile_solution(
    node: Node, tools: dict[str, ToolSpec], named: set[str]
) -> tuple[Callable[..., Any], int]:
    node.mapping(allowed={"steps", "answer", "data", "give_up"}, required=("answer",))
    steps: list[SolStep] = []
    ids: set[str] = set()
    for item in node.child("steps").seq() if node.has("steps") else []:
        item.mapping(
            allowed={"id", "call", "args", "when", "optional", "recall", "click", "role", "page"}
        )
        sid = item.child("id").str() if item.has("id") else None
        when = parse_expr(item.child("when"), ids) if item.has("when") else None
        tool_name = None
        args: dict[str, Any] = {}
        if item.has("call"):
            tool_name = item.child("call").str()
            if tool_name not in named:
                raise item.child("call").error(
                    f"no tool named {tool_name!r}{did_you_mean(tool_name, tools)} "
                    f"(tools: {', '.join(sorted(tools))})"
                )
            spec = tools.get(tool_name)
            accepted = spec.params.model_fields if spec is not None else None
            if item.has("args"):
                for aname, anode in item.child("args").items():
                    if accepted is not None and aname not in accepted:
                        raise anode.error(
                            f"tool {tool_name!r} takes no argument {aname!r}"
                            f"{did_you_mean(aname, accepted)} (it takes: {', '.join(accepted)})"
                        )
                    for m in STEP.finditer(str(anode.value)):
                        if m.group(1) not in ids:
                            raise anode.error(
                                f"${m.group(1)} names no earlier step with an id"
                                f"{did_you_mean(m.group(1), ids)}"
                            )
                    args[aname] = anode.plain()
        elif not item.has("click") and not item.has("page"):
            raise item.error("a step needs 'call' (a tool), 'click' (a UI label) or 'page'")
        steps.append(
            SolStep(
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
        )
        if sid:
            ids.add(sid)

    answers: list[SolAnswer] = []
    ans = node.child("answer")
    default_data = node.child("data").mapping().plain() if node.has("data") else {}
    if isinstance(ans.value, str):
        answers.append(SolAnswer(ans.value, default_data, None))
    else:
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

    async def solve(actor: Any) -> Any:
        results: dict[str, Any] = {}
        env = Env(givens=actor.task, steps=results, now=actor.now)
        for step in steps:
            if step.when is not None and not actor.decide(evaluate(step.when, env)[0]):
                continue
            value: Any = None
            if step.tool is not None:
                args = {k: _fill(v, env) for k, v in step.args.items()}
                tool = step.tool

                async def do(
                    tool: str = tool, args: dict[str, Any] = args, optional: bool = step.optional
                ) -> Any:
                    if optional:
                        return await actor.try_call(tool, **args)
                    return await actor.call(tool, **args)

                value = await (actor.recall(step.recall, do) if step.recall else do())
            elif step.click is not None:
                value = await actor.click(step.click, step.role)
            elif step.page:
                value = await actor.page()
            if step.id:
                results[step.id] = value
        for option in answers:
            if option.when is None or actor.decide(evaluate(option.when, env)[0]):
                text = str(interpolate(option.text, env.lookup, results))
                if option.give_up:
                    return actor.give_up(text)
                return actor.answer(text, **{k: _fill(v, env) for k, v in option.data.items()})
        return actor.answer("")

    reference = sum(1 for s in steps if s.tool and s.when is None) or 1
    return solve, reference


def _fill(value: Any, env: Env) -> Any:
    if isinstance(value, dict):
        return {k: _fill(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, env) for v in value]
    return interpolate(value, env.lookup, env.steps)
