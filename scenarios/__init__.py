"""chaoseval's bundled scenario library, installed as the ``bundled`` pack."""

from __future__ import annotations

from pathlib import Path

from chaoseval.model.scenario import Scenario

HERE = Path(__file__).parent


def bundled() -> list[Scenario]:
    """Every scenario file in this package (Python modules and, when supported, YAML)."""
    from chaoseval.loading.files import load_paths

    return load_paths([HERE])
