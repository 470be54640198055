"""The Python form: decorated factories that YAML files name as ``module:function``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaoseval.errors import ChaosevalError
from chaoseval.loading.yamlform.nodes import Node
from chaoseval.seams.registry import Registry

tool_registry: Registry[Callable[..., Any]] = Registry("custom tool", "chaoseval.tools")
verifier_registry: Registry[Callable[..., Any]] = Registry("verifier", "chaoseval.verifiers")


def custom_tool(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a factory ``(**with) -> ToolSpec | fn(world, **args)`` for ``kind: python``."""

    def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
        factory.__chaoseval_factory__ = True  # type: ignore[attr-defined]
        return tool_registry.register(name)(factory)

    return decorate


def verifier(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a factory ``(**with) -> fn(world, output, trajectory)`` for ``function:``."""

    def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
        factory.__chaoseval_factory__ = True  # type: ignore[attr-defined]
        return verifier_registry.register(name)(factory)

    return decorate


def resolve_callable(node: Node, reg: Registry[Any], params: dict[str, Any]) -> Any:
    name = node.str()
    try:
        obj = reg.get(name)
    except ChaosevalError as exc:
        raise node.error(str(exc)) from None
    if getattr(obj, "__chaoseval_factory__", False):
        try:
            return obj(**params)
        except TypeError as exc:
            raise node.error(f"factory {name!r} rejected its `with:` parameters: {exc}") from None
    if params:
        raise node.error(f"{name!r} is a plain callable; `with:` needs a decorated factory")
    return obj
