"""chaoseval's bundled scenario library, installed as the ``bundled`` pack."""

from __future__ import annotations

from pathlib import Path

from chaoseval.model.scenario import Scenario

HERE = Path(__file__).parent

# The library as loaded, by the exact bytes of its files: a process that asks again (each CLI
# command run in-process, each test that lists the installed scenarios) skips compiling the
# YAML (~0.3 s of CPU), and any edited file makes a new key, so an edit is always seen.
_LOADED: dict[tuple[tuple[str, bytes], ...], list[Scenario]] = {}


def bundled() -> list[Scenario]:
    """Every scenario file in this package (Python modules and, when supported, YAML)."""
    from chaoseval.loading.files import load_paths, scenario_files

    key = tuple((str(p), p.read_bytes()) for p in scenario_files(HERE))
    if key not in _LOADED:
        loaded = load_paths([HERE])
        _LOADED.clear()  # only the current contents are worth keeping
        _LOADED[key] = loaded
    return list(_LOADED[key])
