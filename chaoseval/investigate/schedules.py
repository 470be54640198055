"""Fault schedules as hypothesis strategies, derived from the plugins' ``Params`` models.

A schedule is a stack of faults: plugin, target tool, trigger, probability and the plugin's own
parameters. Each strategy lists its values in shrink order (defaults and the simplest triggers
first), so hypothesis shrinks a breaking schedule towards the plainest one. Plugins come from
the perturbation registry, so a plugin a colleague adds joins the search with no change here.
"""

from __future__ import annotations

import fnmatch
import types
import typing
from collections.abc import Sequence
from typing import Any, Literal

from hypothesis import reject
from hypothesis import strategies as st
from pydantic import ValidationError
from pydantic.fields import FieldInfo

from chaoseval.errors import ConfigError
from chaoseval.model.records import PerturbationSpec
from chaoseval.model.scenario import Scenario
from chaoseval.seams.perturbation import CommonParams, Perturbation
from chaoseval.seams.perturbation import registry as perturbation_registry

__all__ = [
    "fault_strategy",
    "plugin_parameters",
    "schedule_strategy",
    "searchable_plugins",
    "target_tools",
]

# In shrink order. "every" comes first because it draws no count: hypothesis shrinks towards
# shorter choice sequences, so a trigger with no number is the simplest one it can reach.
TRIGGERS = ("every", "first_n", "after_n", "on_turn")
PROBABILITIES = (1.0, 0.5, 0.25)
COMMON_FIELDS = frozenset(CommonParams.model_fields)


def _candidates(info: FieldInfo, default: Any) -> list[Any] | None:
    """A short, ordered list of values for one plugin parameter (the default first)."""
    ann = info.annotation
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin is Literal:
        rest = [a for a in args if a != default]
        return [default, *rest] if default in args else list(args)
    if origin in (list, tuple) and args and typing.get_origin(args[0]) is Literal:
        options = list(typing.get_args(args[0]))
        singles = [[o] for o in options]
        first = list(default) if isinstance(default, list | tuple) else None
        ordered = ([first] if first else []) + [s for s in singles if s != first]
        return ordered
    if ann is bool:
        return [default, not default] if isinstance(default, bool) else [False, True]
    if ann in (int, float) and isinstance(default, int | float) and not isinstance(default, bool):
        scale = [1, 4, 0.25, 16] if ann is float else [1, 4, 16]
        values = [ann(default * s) if default else ann(s - 1) for s in scale]
        seen: list[Any] = []
        for v in values:
            if v not in seen:
                seen.append(v)
        return seen
    if origin in (types.UnionType, typing.Union) and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            sub = FieldInfo.from_annotation(inner[0])
            base = _candidates(sub, default if default is not None else _zero(inner[0]))
            return [None, *(base or [])]
    return None  # a parameter we cannot vary safely keeps its default


def _zero(ann: Any) -> Any:
    return {int: 1, float: 1.0, bool: False}.get(ann)


def plugin_parameters(
    cls: type[Perturbation[Any]], scenario: Scenario | None = None
) -> dict[str, list[Any]]:
    """The fault's own parameters (not the common trigger ones) and the values to try.

    A plugin whose useful values depend on the scenario (the payloads whose goal a tool of it
    can reach) offers them with a ``search_space(scenario)`` classmethod: parameter -> values
    in shrink order (the unpinned default first), replacing what the ``Params`` types give."""
    out: dict[str, list[Any]] = {}
    for name, info in cls.Params.model_fields.items():
        if name in COMMON_FIELDS:
            continue
        default = info.get_default(call_default_factory=True)
        values = _candidates(info, default)
        if values and len(values) > 1:
            out[name] = values
    space = getattr(cls, "search_space", None)
    if scenario is not None and callable(space):
        for name, values in space(scenario).items():
            if len(values) > 1:
                out[name] = list(values)
            else:
                out.pop(name, None)
    return out


def searchable_plugins(
    scenario: Scenario,
    names: Sequence[str] | None = None,
    channels: Sequence[str] = ("tool", "observation", "model", "memory", "clock"),
) -> dict[str, type[Perturbation[Any]]]:
    """Plugins that can reach the agent in this scenario, from the registry."""
    chosen: dict[str, type[Perturbation[Any]]] = {}
    wanted = list(names) if names else perturbation_registry.names()
    for name in wanted:
        cls = perturbation_registry.get(name)
        if cls.channel not in channels:
            continue
        if cls.channel == "observation" and scenario.ui is None:
            continue  # no page to perturb
        if cls.channel == "memory" and not scenario.memory:
            continue
        if not cls.applies_to(scenario):
            continue  # it carries out what the scenario declares, and this one declares none
        try:
            cls.Params()
        except (ValidationError, ValueError, TypeError):
            continue  # a plugin whose defaults do not validate cannot be a search base
        chosen[name] = cls
    if not chosen:
        raise ConfigError(
            f"no perturbation plugin applies to {scenario.id!r} "
            f"(plugins: {', '.join(perturbation_registry.names())}; channels: {list(channels)})"
        )
    return chosen


def fault_strategy(
    plugins: dict[str, type[Perturbation[Any]]],
    tools: Sequence[str],
    max_call: int,
    scenario: Scenario | None = None,
) -> st.SearchStrategy[PerturbationSpec]:
    """One fault: which plugin, which tool, which call, how often, with which parameters."""
    tool_choices = list(tools)
    parameters = {name: plugin_parameters(cls, scenario) for name, cls in plugins.items()}

    @st.composite
    def one(draw: st.DrawFn) -> PerturbationSpec:
        name = draw(st.sampled_from(sorted(plugins)))
        cls = plugins[name]
        params: dict[str, Any] = {}
        if cls.channel in ("tool", "observation"):
            if cls.channel == "tool":
                params["tools"] = [draw(st.sampled_from(tool_choices))]
            trigger = draw(st.sampled_from(TRIGGERS))
            if trigger == "first_n":
                params["first_n"] = draw(st.integers(1, max_call))
            elif trigger == "after_n":
                params["after_n"] = draw(st.integers(1, max_call))
            elif trigger == "on_turn":
                params["on_turn"] = draw(st.integers(1, 2 * max_call))
            params["probability"] = draw(st.sampled_from(PROBABILITIES))
        else:
            params["probability"] = 1.0
        for key, values in parameters[name].items():
            value = draw(st.sampled_from(values))
            if value != values[0]:
                params[key] = value
        try:
            cls.Params(**params)
        except (ValidationError, ValueError):
            reject()
        return PerturbationSpec(name=name, params=params)

    return one()


def schedule_strategy(
    plugins: dict[str, type[Perturbation[Any]]],
    tools: Sequence[str],
    max_call: int,
    max_faults: int = 3,
    scenario: Scenario | None = None,
) -> st.SearchStrategy[list[PerturbationSpec]]:
    one = fault_strategy(plugins, tools, max_call, scenario)
    return st.lists(one, min_size=1, max_size=max_faults)


def target_tools(scenario: Scenario, globs: Sequence[str] | None) -> list[str]:
    """The tools a fault may target: each allowed one and "*", or those ``--tools`` names."""
    names = [t.name for t in scenario.tools if scenario.allowed(t.name)] or [
        t.name for t in scenario.tools
    ]
    if globs:
        names = [n for n in names if any(fnmatch.fnmatchcase(n, g) for g in globs)]
        if not names:
            raise ConfigError(
                f"--tools {list(globs)} matches no tool of {scenario.id!r} "
                f"({', '.join(t.name for t in scenario.tools)})"
            )
        return names
    return [*names, "*"]
