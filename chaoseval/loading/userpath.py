"""Importing the user's own modules: ``--agent module:factory`` and files beside a scenario.

``python -m`` and uvicorn put the working directory *first* on ``sys.path``; chaoseval
*appends* it instead. A user's ``yaml.py`` or ``faker.py`` then cannot replace a dependency
chaoseval imports later (several are imported lazily, inside a trial). The price is the other
way round: a user's module named like an installed one is not the one imported, and
:func:`check_not_shadowed` says so instead of failing with a puzzling attribute error.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from chaoseval.errors import ConfigError


def _entry(directory: Path) -> str:
    if not directory.is_dir():
        raise ConfigError(f"{directory}: not a directory to import modules from")
    return str(directory.resolve())


def append_path(directory: Path) -> None:
    """Make the modules in ``directory`` importable for the rest of the process."""
    entry = _entry(directory)
    if entry not in sys.path:
        sys.path.append(entry)
        importlib.invalidate_caches()


@contextmanager
def importable(directory: Path) -> Iterator[None]:
    """Modules in ``directory`` are importable inside the block (a scenario file's siblings).

    Only for the import: every scenario directory, the bundled one too, would otherwise stay
    on the path and offer its files as top-level modules to everything that runs later.
    """
    entry = _entry(directory)
    added = entry not in sys.path
    if added:
        sys.path.append(entry)
        importlib.invalidate_caches()
    try:
        yield
    finally:
        if added and entry in sys.path:
            sys.path.remove(entry)


def check_not_shadowed(module: str, directory: Path) -> None:
    """Raise if ``directory`` holds ``module``'s top-level name but Python imports another."""
    top = module.split(".")[0]
    local = next(
        (p for p in (directory / f"{top}.py", directory / top) if p.exists()),
        None,
    )
    if local is None:
        return
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return  # the import itself will report it
    if spec is None:
        return
    # Built-in and frozen modules have origins such as "built-in": not paths, never local.
    places = [Path(p) for p in [spec.origin, *(spec.submodule_search_locations or [])] if p]
    places = [p for p in places if p.is_absolute()]
    root = directory.resolve()
    if any(p.resolve().is_relative_to(root) for p in places):
        return
    raise ConfigError(
        f"{local} is not the module {top!r} Python imports: {places[0] if places else top} "
        "comes first on the import path (chaoseval appends your directory so that your files "
        f"cannot replace its own dependencies); rename {local.name}"
    )
