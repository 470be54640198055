"""An example third-party perturbation: a field silently disappears from tool results.

Written only against chaoseval's public plugin API, and registered through the
``chaoseval.perturbations`` entry-point group in this package's pyproject.toml. It owns a root
cause of its own, which the judge records when the plugin says its fault shaped the failure.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from chaoseval import (
    CallNext,
    CommonParams,
    FailureContext,
    Fault,
    Perturbation,
    PerturbationContext,
    RootCause,
)

MISSING_FIELD_USED = RootCause(
    name="missing_field_used",
    label="went on without a field the API stopped sending",
    owner="drop_field",
)


class DropFieldParams(CommonParams):
    field: str | None = Field(default=None, description="field to drop; default: a random one")


class DropField(Perturbation[DropFieldParams]):
    """Drop one field from a dict result, as an API that changed its schema would."""

    name = "drop_field"
    channel = "tool"
    Params = DropFieldParams
    models = "an upstream API that silently stopped sending a field"
    root_causes = (MISSING_FIELD_USED,)

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        result = await call_next(call)
        if not isinstance(result, dict) or not result:
            return result
        key = self.params.field or ctx.rng.choice(sorted(result))
        if key not in result:
            return result
        ctx.fault("tool", "malformed", mode="drop_field", field=key)
        return {k: v for k, v in result.items() if k != key}

    def blame(self, fault: Fault, failure: FailureContext) -> RootCause | None:
        """The agent went on without the field: it never asked that tool again."""
        if fault.step is None:
            return None
        tool = failure.trajectory.steps[fault.step].tool
        again = any(s.tool == tool for s in failure.tool_steps_after(fault))
        return None if again else MISSING_FIELD_USED
