"""Per-model prices (USD per million input / output tokens) for the cost of recorded calls.

A run may pass its own table; unknown models cost nothing rather than a guess.
"""

from __future__ import annotations

Prices = dict[str, tuple[float, float]]

DEFAULT_PRICES: Prices = {
    "chaoseval-sim": (0.15, 0.60),  # priced like a small hosted model so budgets can be tried
    "sim-1": (0.15, 0.60),  # the default --model name, answered by chaoseval-sim
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
}


def cost(prices: Prices, model: str, input_tokens: int, output_tokens: int) -> float:
    price_in, price_out = prices.get(model, (0.0, 0.0))
    return (input_tokens * price_in + output_tokens * price_out) / 1_000_000
