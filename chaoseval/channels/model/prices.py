"""Per-model prices (USD per million input / output tokens) for the cost of recorded calls.

The built-in table below is the default; ``chaoseval run --prices FILE`` (TOML or JSON, a
table per model name with ``input`` and ``output``) replaces the entries it names for the run.
Unknown models cost nothing rather than a guess.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from chaoseval.errors import ConfigError

Prices = dict[str, tuple[float, float]]

DEFAULT_PRICES: Prices = {
    "chaoseval-sim": (0.15, 0.60),  # priced like a small hosted model so budgets can be tried
    "sim-1": (0.15, 0.60),  # the default --model name, answered by chaoseval-sim
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
}

_run: Prices | None = None  # the run's table (--prices), over the defaults
FREE = (0.0, 0.0)  # the price of a model the table does not name


def cost(price: tuple[float, float], input_tokens: int, output_tokens: int) -> float:
    """USD for a call's tokens at ``price`` (USD per million input and output tokens): the
    model channel's and the simulated agents' one formula."""
    price_in, price_out = price
    return (input_tokens * price_in + output_tokens * price_out) / 1_000_000


def configure(table: Prices | None) -> None:
    """The run's prices (None: the built-in table); entries replace the defaults they name."""
    global _run
    _run = None if table is None else {**DEFAULT_PRICES, **table}


def current() -> Prices:
    return DEFAULT_PRICES if _run is None else _run


def load_prices(path: Path) -> Prices:
    """A price table from a TOML or JSON file::

    ["gpt-4o"]              # or {"gpt-4o": {"input": 2.5, "output": 10.0}}
    input = 2.5             # USD per million input tokens
    output = 10.0           # USD per million output tokens
    """
    where = f"--prices {path}"
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(
            f"{where}: cannot read it ({exc.strerror}); name an existing file"
        ) from None
    try:
        raw: Any = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except ValueError as exc:  # JSONDecodeError and TOMLDecodeError both are
        kind = "JSON" if path.suffix == ".json" else "TOML"
        raise ConfigError(f"{where}: not valid {kind}: {exc}") from None
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{where}: expected a table of models, e.g. gpt-4o = {{input, output}}")
    table: Prices = {}
    for model, entry in raw.items():
        try:
            price_in, price_out = float(entry["input"]), float(entry["output"])
        except (TypeError, KeyError, ValueError):
            raise ConfigError(
                f"{where}: model {model!r} needs numbers 'input' and 'output' (USD per million "
                f"tokens), got {entry!r}"
            ) from None
        if price_in < 0 or price_out < 0:
            raise ConfigError(f"{where}: model {model!r} has a negative price")
        table[str(model)] = (price_in, price_out)
    return table
