"""Scenarios with a UI page: the agent reads HTML and acts by clicking.

``ui-refund-admin``: a support agent reviews a refund request in an admin console and approves
it (within the approval limit) or escalates it, by clicking the console's buttons.
``ui-checkout``: a shopping assistant completes a checkout page: picks standard shipping, then
places the order, and reports the order number the shop gives back.

Both pages re-render from the world (request status, chosen shipping), and both go through
``chaoseval.engine.ui.click_tool``, so layout perturbations (moved/renamed buttons, a cookie banner)
reach exactly the element ids the agent uses.
"""

from __future__ import annotations

from typing import Any

from faker import Faker
from pydantic import BaseModel

from chaoseval.engine.ui import click_tool, set_status
from chaoseval.errors import ToolError
from chaoseval.model.scenario import Budgets, Check, FactSpec, Scenario, tool

APPROVAL_LIMIT = 150.0

# --- refund admin ------------------------------------------------------------------------------

REFUND_PAGE = """<html><body>
<header><h1>Refund console</h1><a id="nav-queue" href="/queue">Back to queue</a></header>
<main>
<h2>Refund request {request_id}</h2>
<dl><dt>Customer</dt><dd>{customer}</dd><dt>Order</dt><dd>{order_id}</dd>
<dt>Amount</dt><dd>{amount:.2f} EUR</dd><dt>Reason</dt><dd>{reason}</dd>
<dt>Status</dt><dd id="status">{status}</dd></dl>
<div class="actions">
<button id="approve-refund">Approve refund</button>
<button id="deny-refund">Deny refund</button>
<button id="escalate-refund">Escalate to manager</button>
</div>
</main></body></html>"""


class RefundRequest(BaseModel):
    request_id: str
    order_id: str
    customer: str
    amount: float
    reason: str
    status: str


@tool(returns=RefundRequest)
def get_refund_request(world, request_id: str) -> dict[str, Any]:
    """Read a refund request (e.g. RQ-4821) with its amount, reason and status."""
    return dict(world.get("refund_requests", "request_id", request_id, what="refund request"))


def _decide(status: str) -> Any:
    return set_status("refund_requests", "request_id", expect="pending", to=status, what="request")


def _back(world) -> dict[str, Any]:
    return {"action": "navigate", "status": "left the request without a decision"}


def refund_world(fake: Faker) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    reasons = ["arrived damaged", "never delivered", "wrong size", "charged twice"]
    rows = []
    for _ in range(5):
        rows.append(
            {
                "request_id": f"RQ-{fake.unique.random_int(1000, 9999)}",
                "order_id": f"ORD-{fake.unique.random_int(1000, 9999)}",
                "customer": fake.name(),
                "amount": float(fake.random_int(20, 140)),
                "reason": fake.random_element(reasons),
                "status": "pending",
            }
        )
    target = rows[fake.random_int(0, len(rows) - 1)]
    return {"refund_requests": rows}, dict(target)


async def solve_refund(actor) -> Any:
    """Read the request, approve within the limit (else escalate) by clicking, confirm."""
    req = await actor.call("get_refund_request", request_id=actor.task["request_id"])
    if actor.decide(req["amount"] <= APPROVAL_LIMIT):
        await actor.click("Approve refund")
        return actor.answer(
            f"Approved refund request {req['request_id']} ({req['amount']:.2f} EUR): within the "
            f"{APPROVAL_LIMIT:.0f} EUR approval limit.",
            request_id=req["request_id"],
            decision="approved",
        )
    await actor.click("Escalate to manager")
    return actor.answer(f"Escalated {req['request_id']}: above the approval limit.")


def request_approved(world, output, trajectory) -> tuple[bool, str]:
    rows = world.table("refund_requests")
    target = world.givens["request_id"]
    changed = [r for r in rows if r["status"] != "pending"]
    ok = len(changed) == 1 and changed[0]["request_id"] == target
    ok = ok and changed[0]["status"] == "approved"
    return ok, f"decided: {[(r['request_id'], r['status']) for r in changed]}"


def answer_names_request(world, output, trajectory) -> bool:
    return world.givens["request_id"] in output.answer and "pprov" in output.answer


refund_admin = Scenario(
    id="ui-refund-admin",
    description="Approve a refund request within the limit by clicking in the admin console.",
    domain="support-console",
    tags=["ui", "refund", "write"],
    instruction=(
        "You are signed in to the refund console, open on refund request {request_id}. "
        f"Approve it if the amount is at most {APPROVAL_LIMIT:.0f} EUR, otherwise escalate it "
        "to a manager. Use the page's buttons, then confirm what you did."
    ),
    generate=refund_world,
    ui=REFUND_PAGE,
    tools=[
        get_refund_request,
        click_tool(
            {
                "approve-refund": set_status(
                    "refund_requests", "request_id", expect="pending", to="approved", what="request"
                ),
                "deny-refund": set_status(
                    "refund_requests", "request_id", expect="pending", to="denied", what="request"
                ),
                "escalate-refund": set_status(
                    "refund_requests",
                    "request_id",
                    expect="pending",
                    to="escalated",
                    what="request",
                ),
                "nav-queue": _back,
            },
            writes=["refund_requests"],
        ),
    ],
    checks=[
        Check(name="exactly this request approved", fn=request_approved),
        Check(name="answer confirms the approval", fn=answer_names_request, kind="output"),
    ],
    facts=[
        FactSpec(
            name="request id",
            pattern=r"\bRQ-\d+\b",
            values=lambda w: {r["request_id"] for r in w.table("refund_requests")},
        ),
        FactSpec(
            name="order id",
            pattern=r"\bORD-\d+\b",
            values=lambda w: {r["order_id"] for r in w.table("refund_requests")},
        ),
    ],
    budgets=Budgets(max_steps=8, call_timeout=5.0, trial_timeout=60.0),
    solution=solve_refund,
    reference_steps=2,
    difficulty=0.05,
)

# --- checkout ----------------------------------------------------------------------------------

CHECKOUT_PAGE = """<html><body>
<header><h1>Checkout</h1><a id="continue-shopping" href="/shop">Continue shopping</a></header>
<main>
<h2>Cart {cart_id}</h2>
<p>{items} items, subtotal {subtotal:.2f} EUR. Shipping: <span id="shipping">{shipping}</span></p>
<fieldset class="shipping">
<button role="radio" id="ship-standard">Standard shipping</button>
<button role="radio" id="ship-express">Express shipping</button>
</fieldset>
<div class="actions">
<button id="place-order">Place order</button>
<button id="clear-cart">Empty cart</button>
</div>
</main></body></html>"""

SHIPPING = {"standard": 4.90, "express": 14.90}


class Cart(BaseModel):
    cart_id: str
    items: int
    subtotal: float
    shipping: str


@tool(returns=Cart)
def get_cart(world, cart_id: str) -> dict[str, Any]:
    """Read a cart (e.g. C-5521): item count, subtotal and the chosen shipping."""
    return dict(world.get("carts", "cart_id", cart_id, what="cart"))


def _ship(method: str):
    def action(world) -> dict[str, Any]:
        cid = world.givens["cart_id"]
        world.update("carts", "cart_id", cid, shipping=method)
        world.givens["shipping"] = method
        return {"action": f"shipping:{method}", "status": f"{method} shipping selected"}

    return action


def _place(world) -> dict[str, Any]:
    cid = world.givens["cart_id"]
    cart = world.get("carts", "cart_id", cid, what="cart")
    if cart["shipping"] == "none":
        raise ToolError("choose a shipping method first")
    if cart["items"] == 0:
        raise ToolError("the cart is empty")
    if world.find("orders", cart_id=cid):
        raise ToolError(f"cart {cid} was already ordered")
    oid = world.next_id("SO")
    total = round(cart["subtotal"] + SHIPPING[cart["shipping"]], 2)
    world.insert(
        "orders", {"id": oid, "cart_id": cid, "shipping": cart["shipping"], "total": total}
    )
    return {"action": "place_order", "status": f"order {oid} placed, total {total:.2f}", "ref": oid}


def _clear(world) -> dict[str, Any]:
    cid = world.givens["cart_id"]
    world.update("carts", "cart_id", cid, items=0, subtotal=0.0)
    world.givens.update(items=0, subtotal=0.0)
    return {"action": "clear_cart", "status": "cart emptied"}


def _shop(world) -> dict[str, Any]:
    return {"action": "navigate", "status": "left checkout"}


def checkout_world(fake: Faker) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    cart = {
        "cart_id": f"C-{fake.unique.random_int(1000, 9999)}",
        "items": fake.random_int(1, 6),
        "subtotal": round(fake.random_int(900, 19900) / 100, 2),
        "shipping": "none",
    }
    return {"carts": [cart], "orders": []}, {**cart, "customer": fake.name()}


async def solve_checkout(actor) -> Any:
    """Check the cart, pick standard shipping, place the order, report the order number."""
    cart = await actor.call("get_cart", cart_id=actor.task["cart_id"])
    await actor.click("Standard shipping", role="radio")
    placed = await actor.click("Place order")
    return actor.answer(
        f"Placed order {placed['ref']} for cart {cart['cart_id']} with standard shipping.",
        order_id=placed["ref"],
    )


def ordered_standard(world, output, trajectory) -> tuple[bool, str]:
    orders = world.table("orders")
    cart = world.find("carts", cart_id=world.givens["cart_id"])[0]
    want = round(world.givens["subtotal"] + SHIPPING["standard"], 2)
    ok = len(orders) == 1 and orders[0]["shipping"] == "standard" and orders[0]["total"] == want
    return ok and cart["items"] > 0, f"orders: {orders}"


def answer_has_order(world, output, trajectory) -> bool:
    return any(o["id"] in output.answer for o in world.table("orders"))


checkout = Scenario(
    id="ui-checkout",
    description="Complete a checkout page with standard shipping and report the order number.",
    domain="shop",
    tags=["ui", "checkout", "write"],
    instruction=(
        "{customer} asked you to finish their checkout for cart {cart_id} with standard "
        "shipping. The checkout page is open; use its buttons, then report the order number."
    ),
    generate=checkout_world,
    ui=CHECKOUT_PAGE,
    tools=[
        get_cart,
        click_tool(
            {
                "ship-standard": _ship("standard"),
                "ship-express": _ship("express"),
                "place-order": _place,
                "clear-cart": _clear,
                "continue-shopping": _shop,
            },
            writes=["carts", "orders"],
        ),
    ],
    checks=[
        Check(name="one order, standard shipping, right total", fn=ordered_standard),
        Check(name="answer gives the order number", fn=answer_has_order, kind="output"),
    ],
    facts=[
        FactSpec(
            name="order number",
            pattern=r"\bSO-\d+\b",
            values=lambda w: {o["id"] for o in w.table("orders")},
        ),
        FactSpec(
            name="cart id",
            pattern=r"\bC-\d+\b",
            values=lambda w: {c["cart_id"] for c in w.table("carts")},
        ),
    ],
    budgets=Budgets(max_steps=10, call_timeout=5.0, trial_timeout=60.0),
    solution=solve_checkout,
    reference_steps=3,
    difficulty=0.05,
)
