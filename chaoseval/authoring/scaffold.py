"""`chaoseval init`: a YAML scenario and a perturbation plugin package that pass their checks
as generated, for an author to edit from a working state rather than a blank page."""

from __future__ import annotations

import re
from pathlib import Path

from chaoseval.errors import ConfigError

SCENARIO_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
PLUGIN_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")

SCENARIO_TEMPLATE = """\
# {name}: a scenario scaffolded by `chaoseval init scenario`. Edit it, then run
#   chaoseval scenario lint {filename}
# The format is documented in docs/AUTHORING.md.
id: {name}
description: Cancel a customer's pending order and confirm it by id.
domain: {domain}
tags: [write, scaffold]
difficulty: 0.05
instruction: >-
  Customer {{customer}} asks to cancel order {{order_id}}. Cancel it if it is still pending
  and confirm the cancellation, quoting the order id. Orders that have shipped cannot be
  cancelled.

# Rows made by faker from the run's world seed: every trial of a run sees the same world.
generate:
  orders:
    count: 8
    key: order_id
    fields:
      order_id: "ORD-{{random_int:1000-9999}}"
      customer: email
      item: {{choice: [lamp, kettle, chair, rug]}}
      total: {{float: [10, 200], digits: 2}}
      status: {{choice: [pending, pending, shipped]}}
# The task's row: its fields become the givens the instruction and checks refer to.
target: {{table: orders, where: {{status: pending}}}}

tools:
  lookup_order:
    kind: lookup
    description: Look up an order by id (e.g. ORD-1042).
    table: orders
    key: order_id
    not_found: "order {{order_id}} not found"
  cancel_order:
    kind: update
    description: Cancel a pending order.
    table: orders
    key: order_id
    args: {{reason: str}}
    set: {{status: cancelled, cancel_reason: "{{reason}}"}}
    requires:
      - check: "row.status == pending"
        error: "order {{order_id}} is {{status}} and cannot be cancelled"
  delete_order:
    kind: delete
    description: Delete an order record (back office only).
    table: orders
    key: order_id

policy:
  allowed_tools: [lookup_order, cancel_order]

facts:
  - {{name: order id, pattern: '\\bORD-\\d+\\b', values: orders.order_id}}

budgets: {{max_steps: 6}}

checks:
  - name: order cancelled
    expect: "tables.orders[order_id={{order_id}}].status == cancelled"
  - name: no other order touched
    expect: "count(tables.orders[status=cancelled]) == 1"
  - name: nothing deleted
    not_called: delete_order
  - name: confirmation quotes the order
    answer_contains: "{{order_id}}"

solution:
  steps:
    - {{id: order, call: lookup_order, args: {{order_id: "{{order_id}}"}}}}
    - call: cancel_order
      args: {{order_id: $order.order_id, reason: customer request}}
      when: "$order.status == pending"
  answer:
    - when: "$order.status == shipped"
      text: "Order $order.order_id has shipped, so it cannot be cancelled."
    - text: "Order $order.order_id is cancelled."

# Cells lint checks for reachability (a canary run with probability 1).
perturbations:
  - "timeout:modes=[raise],tools=lookup_order"
  - "latency:mean=2"
"""

PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "chaoseval-{name}"
version = "0.1.0"
description = "A chaoseval perturbation plugin: {name}."
requires-python = ">=3.11"
dependencies = ["chaoseval"]

[project.optional-dependencies]
dev = ["pytest>=8"]

# chaoseval finds the plugin through this entry-point group: `chaoseval run -p {name}`.
[project.entry-points."chaoseval.perturbations"]
{name} = "{package}.plugin:{cls}"

[tool.setuptools.packages.find]
include = ["{package}*"]
"""

PLUGIN = '''\
"""{name}: a tool-channel perturbation scaffolded by `chaoseval init plugin`.

It makes selected tool calls fail with an HTTP-style error. Replace ``apply`` with the failure
you want to model; keep every random draw on ``ctx.rng`` so runs stay reproducible, and log
each fault with ``ctx.fault`` so the report can tell delivered faults from silent ones.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from chaoseval import (
    CallNext,
    CommonParams,
    Perturbation,
    PerturbationContext,
    ToolHTTPError,
    perturbation,
)


class {cls}Params(CommonParams):
    probability: float = Field(default=0.3, ge=0, le=1, description="per-call chance to fire")
    status: int = Field(default=503, ge=400, le=599, description="HTTP status to answer with")
    retry_after: float | None = Field(default=None, ge=0, description="Retry-After seconds")


@perturbation("{name}")
class {cls}(Perturbation[{cls}Params]):
    """Answer selected tool calls with an HTTP error instead of calling the tool."""

    channel = "tool"
    Params = {cls}Params
    models = "an upstream that answers with an HTTP error"

    async def apply(self, call: Any, call_next: CallNext, ctx: PerturbationContext) -> Any:
        p = self.params
        ctx.fault("tool", "http_error", status=p.status, retry_after=p.retry_after)
        message = f"{{call.tool}}: upstream returned {{p.status}}"
        raise ToolHTTPError(p.status, message, retry_after=p.retry_after)
'''

TEST = '''\
"""The plugin against a tiny scenario: silent when off, delivered to the agent when on."""

from __future__ import annotations

from typing import Any

import pytest

from chaoseval import (
    Cell,
    Check,
    ConfigError,
    PerturbationSpec,
    RunConfig,
    Scenario,
    load_agent,
    run,
    tool,
)
from {package}.plugin import {cls}


@tool()
def read_value(world, key: str) -> dict[str, Any]:
    """Read a value by key."""
    return dict(world.get("values", "key", key))


async def solve(actor):
    row = await actor.call("read_value", key="k1")
    return actor.answer(f"the value is {{row['value']}}")


SCENARIO = Scenario(
    id="{name}-selftest",
    description="Read one value and report it.",
    domain="selftest",
    instruction="Report the value of k1.",
    tables={{"values": [{{"key": "k1", "value": 42}}]}},
    tools=[read_value],
    checks=[Check(name="answer", fn=lambda w, o, t: "42" in o.answer, kind="output")],
    solution=solve,
    reference_steps=1,
)


def _records(probability: float):
    spec = PerturbationSpec(name="{name}", params={{"probability": probability}})
    cell = Cell(name="cell", perturbations=[spec])
    config = RunConfig(
        scenarios=[SCENARIO],
        agent=load_agent("scripted"),  # plays the reference solution
        agent_name="scripted",
        cells=[cell],
        trials=3,
        seed=1,
        journal=None,
    )
    return [r for r in run(config).records if r.cell == "cell"]


def test_registered_under_its_name():
    assert {cls}.name == "{name}"


def test_off_leaves_the_agent_alone():
    records = _records(0.0)
    assert all(r.status == "passed" and not r.trajectory.faults for r in records)


def test_on_reaches_the_agent():
    records = _records(1.0)
    faults = [f for r in records for f in r.trajectory.faults]
    assert faults and all(f.delivered and f.kind == "http_error" for f in faults)
    assert all(r.status == "failed" for r in records)


def test_rejects_bad_parameters():
    with pytest.raises(ConfigError):
        {cls}.from_spec({{"status": 200}})
'''


def _check_target(path: Path, force: bool) -> None:
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists; pass --force to overwrite it")


def write_scenario(name: str, directory: Path, *, force: bool = False) -> Path:
    if not SCENARIO_ID.match(name):
        raise ConfigError(
            f"scenario id {name!r} must be lower case letters, digits, '-', '_' or '.' "
            "and start with a letter or digit"
        )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.yaml"
    _check_target(path, force)
    domain = re.split(r"[-_.]", name)[0]
    path.write_text(SCENARIO_TEMPLATE.format(name=name, domain=domain, filename=path))
    return path


def write_plugin(name: str, directory: Path, *, force: bool = False) -> Path:
    if not PLUGIN_NAME.match(name):
        raise ConfigError(
            f"plugin name {name!r} must start with a letter and hold only a-z, 0-9, '-', '_'"
        )
    package = name.replace("-", "_")
    cls = "".join(part.capitalize() for part in re.split(r"[-_]", name) if part)
    root = directory / name
    files = {
        root / "pyproject.toml": PYPROJECT.format(name=name, package=package, cls=cls),
        root / package / "__init__.py": f'"""chaoseval perturbation plugin {name}."""\n',
        root / package / "plugin.py": PLUGIN.format(name=name, cls=cls),
        root / "tests" / f"test_{package}.py": TEST.format(name=name, package=package, cls=cls),
    }
    for path in files:
        _check_target(path, force)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
