"""Reference runs: each scenario's reference solution, run once when a matrix run starts.

The report measures tool-call correctness (the agent's calls against the reference's) and path
efficiency (reference steps over the agent's); both need what the reference solution does on
the run's world. Running it belongs to ``run``, never to ``report``: the result goes into the
run manifest, and analysis reads it from there.
"""

from __future__ import annotations

from collections.abc import Sequence

from chaoseval.agents.scripted import ScriptedAgent
from chaoseval.engine.trial import TrialPlan, run_trial
from chaoseval.model.records import CLEAN, Cell, ModelSettings, ReferenceRun, ToolCall
from chaoseval.model.scenario import Scenario

__all__ = ["reference_run", "reference_runs"]

# The reference runs clean on the virtual clock whatever the run's agent uses: it is a
# yardstick for the calls an agent should make, not a timing.
REFERENCE_TIMEOUT = 30.0


async def reference_run(scenario: Scenario, run_seed: int) -> ReferenceRun:
    """The scripted agent on the scenario, clean, on the same world seed the run's trials see."""
    try:
        record = await run_trial(
            TrialPlan(scenario, Cell(name=CLEAN), 0),
            ScriptedAgent(),
            agent_name="scripted",
            model=ModelSettings(),
            clock_mode="virtual",
            run_id="reference",
            run_seed=run_seed,
            wall_timeout=REFERENCE_TIMEOUT,
        )
    except Exception as exc:  # a reference that cannot run is recorded, it never stops the run
        return ReferenceRun(steps=scenario.reference_steps, passed=False, error=str(exc))
    calls = [
        ToolCall(tool=s.tool or "", args=dict(s.args or {})) for s in record.trajectory.tool_steps()
    ]
    return ReferenceRun(
        steps=scenario.reference_steps,
        passed=record.passed,
        calls=calls if record.passed else [],
    )


async def reference_runs(scenarios: Sequence[Scenario], run_seed: int) -> dict[str, ReferenceRun]:
    """One reference run per scenario id (the first scenario of an id wins, as in a run)."""
    out: dict[str, ReferenceRun] = {}
    for s in scenarios:
        if s.id not in out:
            out[s.id] = await reference_run(s, run_seed)
    return out
