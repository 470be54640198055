"""Shared fixtures: a tiny self-contained scenario and misbehaving agents and plugins."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from pydantic import BaseModel

from chaoseval.model.scenario import Budgets, Check, FactSpec, Scenario, tool
from tests.installs import require

# `run --scenarios` keeps lint's verdicts in the user's cache directory: the tests' runs (and
# the CLIs they start, which inherit this) keep theirs in a directory of their own.
os.environ.setdefault("CHAOSEVAL_CACHE_DIR", tempfile.mkdtemp(prefix="chaoseval-test-cache-"))

# Hypothesis's per-example deadline is a timed assertion: on this 2-core machine under load a
# 0.1 ms example once took 326 ms and failed test_boundaries as "flaky". Speed lives in
# benchmarks/, so no test here has a deadline.
settings.register_profile("chaoseval", deadline=None)
settings.load_profile("chaoseval")


class Item(BaseModel):
    sku: str
    price: float


@tool(returns=Item)
def get_item(world, sku: str) -> dict[str, Any]:
    """Look up an item."""
    return dict(world.get("items", "sku", sku, what="item"))


@tool(returns=Item, writes=["cart"])
def add_to_cart(world, sku: str) -> dict[str, Any]:
    """Put an item in the cart."""
    item = world.get("items", "sku", sku, what="item")
    world.insert("cart", {"id": world.next_id("C"), "sku": sku}, key="id")
    return dict(item)


async def solve(actor) -> Any:
    item = await actor.call("get_item", sku=actor.task["sku"])
    await actor.call("add_to_cart", sku=item["sku"])
    return actor.answer(f"Added {item['sku']} at {item['price']}.")


def make_scenario(**overrides: Any) -> Scenario:
    fields: dict[str, Any] = dict(
        id="tiny-cart",
        description="Add one item to the cart.",
        domain="test",
        tags=["test"],
        instruction="Add {sku} to the cart.",
        tables={"items": [{"sku": "SKU-100", "price": 3.5}, {"sku": "SKU-200", "price": 1.0}]},
        givens={"sku": "SKU-100"},
        tools=[get_item, add_to_cart],
        checks=[
            Check(
                name="item in cart",
                fn=lambda w, o, t: [r["sku"] for r in w.table("cart")] == ["SKU-100"],
            )
        ],
        facts=[
            FactSpec(
                name="sku",
                pattern=r"\bSKU-\d+\b",
                values=lambda w: {i["sku"] for i in w.table("items")},
            )
        ],
        budgets=Budgets(max_steps=6, call_timeout=5, trial_timeout=30),
        solution=solve,
        reference_steps=2,
        difficulty=0.3,
        tables_extra=None,
    )
    fields.pop("tables_extra")
    fields["tables"] = {**fields["tables"], "cart": []}
    fields.update(overrides)
    return Scenario(**fields)


@pytest.fixture
def tiny() -> Scenario:
    return make_scenario()


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's Chromium for the tests that drive a real browser: installed through apt when
    missing and we are root (chaoseval.channels.browser.chromium.ensure_chromium), skipped with
    the reason only when that is impossible, failed instead in CI (tests/installs.py)."""
    from chaoseval.channels.browser.chromium import CHROMIUM, ensure_chromium

    require("chromium", ensure_chromium)
    return CHROMIUM


@pytest.fixture(scope="session")
def bwrap() -> str:
    """bubblewrap for the tests of the exec: agents' sandbox: installed through apt when
    missing and we are root (chaoseval.agents.sandbox.ensure_bubblewrap), skipped with the
    reason only when that is impossible (failed instead in CI: tests/installs.py) or when this
    machine cannot make namespaces (no install gives it them)."""
    from chaoseval.agents.sandbox import ensure_bubblewrap, resolve

    require("bubblewrap", ensure_bubblewrap)
    box = resolve("auto")
    if box.bwrap is None:
        pytest.skip(box.note)
    return box.bwrap
