"""Property tests for the tool-channel fault plugins: seeded, well-gated, truly malformed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from chaoseval.bundled.perturbations.latency import Latency, LatencyParams
from chaoseval.bundled.perturbations.malformed import (
    MALFORMED_MODES,
    Malformed,
    MalformedParams,
    closed,
    is_valid,
    make_payload,
    record_strategy,
)
from chaoseval.bundled.perturbations.timeout import Timeout, TimeoutParams
from chaoseval.bundled.scenarios.vending import COMMON
from chaoseval.engine.tooljson import validate_result
from chaoseval.errors import AgentVisibleError
from chaoseval.model.clock import VirtualClock
from chaoseval.model.scenario import ToolSpec, tool
from chaoseval.seams.perturbation import (
    Perturbation,
    PerturbationContext,
    ToolCall,
    build_chain,
    ctx_stream,
)

# The malformed plugin draws its payloads with hypothesis.find (a @given inside): nesting is
# the point here, not an accident.
SETTINGS = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.nested_given],
)
TOOLS = ["lookup_order", "read_dispense_log", "issue_refund", "open_ticket"]
SPECS: dict[str, ToolSpec] = {t.name: t for t in COMMON["tools"]}


class Strict(BaseModel):
    """A result model that refuses undeclared keys, as a closed JSON schema does."""

    model_config = ConfigDict(extra="forbid")
    id: str
    count: int
    ok: bool


@tool(returns=Strict)
def strict_tool(world: Any) -> dict[str, Any]:
    """A tool with a closed result schema."""
    return {"id": "X-1", "count": 3, "ok": True}


def true_result(name: str, rng_seed: int) -> dict[str, Any]:
    import random

    rng = random.Random(rng_seed)
    base = {
        "lookup_order": {
            "order_id": f"ORD-{rng.randint(1000, 9999)}",
            "machine_id": f"VM-{rng.randint(100, 999)}",
            "product": rng.choice(["Cold brew", "Iced tea"]),
            "amount": rng.choice([1.5, 2.0, 2.75]),
            "paid_at": "2026-03-01T10:00:00",
            "customer": "a@example.com",
        },
        "read_dispense_log": {
            "machine_id": "VM-101",
            "order_id": "ORD-1001",
            "dispensed": rng.random() < 0.5,
            "sensor": "drop",
            "at": "2026-03-01T10:00:09",
        },
    }
    return base.get(
        name, {"id": f"RF-{rng.randint(1, 99):04d}", "order_id": "ORD-1", "status": "ok"}
    )


def run_calls(
    plugins: list[Perturbation[Any]], tools: list[str], seed: int
) -> tuple[list[dict[str, Any]], list[Any]]:
    """Push a sequence of calls through a plugin chain; the ledger and what came back."""
    faults: list[Any] = []
    outcomes: list[Any] = []
    clock = VirtualClock(datetime(2026, 3, 16, 10, 0))

    def record(fault: Any) -> int:
        faults.append(fault)
        return len(faults) - 1

    async def main() -> None:
        for i, name in enumerate(tools):
            call = ToolCall(tool=name, args={}, index=i, turn=i, step=i)

            async def base(c: ToolCall) -> Any:
                return true_result(c.tool, c.index)

            def make_ctx(plugin: Perturbation[Any], c: Any, i: int = i) -> PerturbationContext:
                return PerturbationContext(
                    run_seed=seed,
                    scenario="props",
                    trial=0,
                    perturbation=plugin.label,
                    clock=clock,
                    world=None,
                    record=record,
                    call_index=i,
                    step=i,
                    rng=ctx_stream(seed, "props", plugin.label, 0, i),
                    spec=SPECS.get(c.tool),
                )

            try:
                with clock.deadline(5.0):
                    outcomes.append(await build_chain("tool", plugins, base, make_ctx)(call))
            except (AgentVisibleError, TimeoutError) as exc:
                outcomes.append(f"{type(exc).__name__}: {exc}")

    anyio.run(main)
    return [f.model_dump() for f in faults], outcomes


def plugins_for(name: str, **params: Any) -> Perturbation[Any]:
    cls = {"latency": Latency, "timeout": Timeout, "malformed": Malformed}[name]
    return cls.from_spec(params)


CALLS = st.lists(st.sampled_from(TOOLS), min_size=1, max_size=8)
PLUGINS = st.sampled_from(["latency", "timeout", "malformed"])


@SETTINGS
@given(seed=st.integers(0, 2**40), calls=CALLS, name=PLUGINS, p=st.floats(0.1, 1.0))
def test_same_seed_same_fault_schedule(seed: int, calls: list[str], name: str, p: float) -> None:
    params: dict[str, Any] = {"probability": p}
    if name == "timeout":
        params["modes"] = ["hang", "raise", "429", "5xx", "reset"]
    first = run_calls([plugins_for(name, **params)], calls, seed)
    again = run_calls([plugins_for(name, **params)], calls, seed)
    assert first == again


def test_different_seeds_give_different_schedules() -> None:
    calls = TOOLS * 3
    schedules = {
        json.dumps(run_calls([plugins_for("malformed")], calls, s), default=str) for s in range(6)
    }
    assert len(schedules) == 6  # the seed really drives the draws (this test can fail)


@SETTINGS
@given(seed=st.integers(0, 2**40), calls=CALLS, name=PLUGINS)
def test_probability_zero_injects_nothing(seed: int, calls: list[str], name: str) -> None:
    faults, outcomes = run_calls([plugins_for(name, probability=0.0)], calls, seed)
    assert faults == []
    assert outcomes == [true_result(t, i) for i, t in enumerate(calls)]


@SETTINGS
@given(
    seed=st.integers(0, 2**40),
    calls=CALLS,
    name=PLUGINS,
    glob=st.sampled_from(["*", "lookup_*", "read_dispense_log", "*_refund;open_*"]),
)
def test_probability_one_injects_on_every_selected_call(
    seed: int, calls: list[str], name: str, glob: str
) -> None:
    plugin = plugins_for(name, probability=1.0, tools=glob)
    faults, _ = run_calls([plugin], calls, seed)
    probe = plugins_for(name, probability=1.0, tools=glob)
    selected = [i for i, t in enumerate(calls) if probe.selects(ToolCall(t, {}, i, i, i), i)]
    assert selected or not faults
    assert [f["call_index"] for f in faults] == selected


@SETTINGS
@given(seed=st.integers(0, 2**40), calls=CALLS, second_first=st.booleans())
def test_stacking_does_not_shift_another_plugins_draws(
    seed: int, calls: list[str], second_first: bool
) -> None:
    latency = plugins_for("latency", probability=0.6)
    alone, _ = run_calls([latency], calls, seed)
    other = plugins_for("malformed", probability=0.7, oversize_bytes=1024)
    stack = [other, latency] if second_first else [latency, other]
    stacked, _ = run_calls(stack, calls, seed)
    assert [f for f in stacked if f["perturbation"] == "latency"] == alone


@SETTINGS
@given(
    name=st.sampled_from(["lookup_order", "read_dispense_log", "issue_refund"]),
    mode=st.sampled_from(MALFORMED_MODES),
    data=st.data(),
)
def test_every_malformed_mode_is_malformed_for_its_schema(name: str, mode: str, data: Any) -> None:
    import random

    spec = SPECS[name]
    model = spec.returns
    assert model is not None
    true = data.draw(record_strategy(model).filter(lambda r: is_valid(model, r)), label="true")
    validate_result(spec, true)  # the truth passes, so a failure below is the mode's doing
    rng = random.Random(data.draw(st.integers(0, 2**40), label="seed"))
    payload, _ = make_payload(mode, model, true, rng, oversize_bytes=2048)  # type: ignore[arg-type]
    if mode == "extra_field":
        # Pydantic models ignore undeclared keys by default: an extra field is malformed only
        # against the closed schema, and there validate_result does refuse it.
        validate_result(spec, payload)
        with pytest.raises(ValueError):
            validate_result(spec.model_copy(update={"returns": closed(model)}), payload)
    else:
        with pytest.raises(ValueError):
            validate_result(spec, payload)
    if mode == "oversized":
        assert len(json.dumps(payload)) >= 2048


@SETTINGS
@given(seed=st.integers(0, 2**40))
def test_extra_field_breaks_a_closed_schema(seed: int) -> None:
    import random

    true = {"id": "X-1", "count": 3, "ok": True}
    validate_result(strict_tool, true)
    payload, detail = make_payload("extra_field", Strict, true, random.Random(seed))
    assert detail["field"] not in true
    with pytest.raises(ValueError):
        validate_result(strict_tool, payload)


@SETTINGS
@given(name=st.sampled_from(["lookup_order", "read_dispense_log"]), data=st.data())
def test_wrong_values_are_schema_valid_but_not_the_truth(name: str, data: Any) -> None:
    import random

    spec = SPECS[name]
    model = spec.returns
    assert model is not None
    true = data.draw(record_strategy(model).filter(lambda r: is_valid(model, r)), label="true")
    rng = random.Random(data.draw(st.integers(0, 2**40), label="seed"))
    payload, detail = make_payload("wrong_values", model, true, rng)
    validate_result(spec, payload)
    assert payload != true
    assert payload[detail["field"]] != true[detail["field"]]


def test_payloads_reproduce_in_another_process() -> None:
    """Hash randomisation and interpreter state do not leak into the drawn payloads."""
    code = (
        "import json,sys; sys.path.insert(0, 'tests/bundled');"
        # other local modules loaded first: hypothesis must not mix their constants in
        "import chaoseval.cli.app, chaoseval.render.report, chaoseval.analysis.stats;"
        "import chaoseval.engine.http;"
        "from test_fault_properties import run_calls, plugins_for, TOOLS;"
        "print(json.dumps(run_calls([plugins_for('malformed', probability=0.8)], TOOLS * 2, 99),"
        " default=str))"
    )
    here = json.loads(
        json.dumps(
            run_calls([plugins_for("malformed", probability=0.8)], TOOLS * 2, 99), default=str
        )
    )
    for hashseed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        )
        assert json.loads(out.stdout) == here


def test_payloads_ignore_constants_of_other_loaded_modules(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hypothesis mixes literals of loaded local modules into draws; the plugin opts out, so
    importing (or editing) an unrelated module does not change any payload."""

    def schedules() -> str:
        plugin = plugins_for("malformed", probability=1.0, oversize_bytes=512)
        return json.dumps([run_calls([plugin], TOOLS * 3, s) for s in range(12)], default=str)

    before = schedules()
    literals = ", ".join(repr(f"lit-{i}-zz") for i in range(40))
    (tmp_path / "unrelated_consts.py").write_text(
        f"NAMES = ({literals}, 'VM-999', 'ORD-0000', 123456789, -987654, 2.718281828)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__("unrelated_consts")
    try:
        assert schedules() == before
    finally:
        sys.modules.pop("unrelated_consts", None)


def test_params_are_validated() -> None:
    from chaoseval.errors import ConfigError

    with pytest.raises(ConfigError):
        Malformed.from_spec({"modes": ["nonsense"]})
    with pytest.raises(ConfigError):
        Malformed.from_spec({"modes": []})
    assert MalformedParams(modes="html_error").modes == ["html_error"]  # type: ignore[arg-type]
    assert TimeoutParams(modes=[429, "5xx"]).modes == ["429", "5xx"]  # type: ignore[list-item]
    assert LatencyParams().distribution == "exponential"
