"""Finding scenarios: installed packs (entry points), directories and single files.

A Python scenario file defines module-level ``Scenario`` objects (or a ``SCENARIOS`` list).
Errors name the file and the field; one broken file does not hide the others' errors.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from chaoseval.errors import ConfigError, ScenarioError, ScenarioLoadErrors
from chaoseval.loading.userpath import importable
from chaoseval.model.scenario import Scenario
from chaoseval.seams.registry import BrokenEntryPoint, collect_entry_points

GROUP = "chaoseval.scenarios"
# Extra loaders by file suffix (the YAML form registers itself here).
FILE_LOADERS: dict[str, Callable[[Path], list[Scenario]]] = {}


def describe_validation(exc: ValidationError, source: str) -> ScenarioError:
    lines = []
    for e in exc.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(scenario)"
        found = e.get("input")
        found_text = (
            f" (found {found!r:.60})" if found is not None and e["type"] != "missing" else ""
        )
        lines.append(f"field {where}: {e['msg']}{found_text}")
    return ScenarioError("invalid scenario:\n  " + "\n  ".join(lines), source=source)


def _collect(module: Any, source: str) -> list[Scenario]:
    found = getattr(module, "SCENARIOS", None)
    if found is None:
        found = [v for v in vars(module).values() if isinstance(v, Scenario)]
    scenarios = []
    for s in found:
        if not isinstance(s, Scenario):
            raise ScenarioError(f"SCENARIOS holds {type(s).__name__}, not Scenario", source=source)
        scenarios.append(s if s.source else s.model_copy(update={"source": source}))
    return scenarios


# Loaded Python scenario files by (path, mtime, size). Re-executing a file would replace its
# module in sys.modules while older Scenario objects still call the old module's functions;
# freezegun patches only modules in sys.modules, so those tools would see the real clock.
_PY_CACHE: dict[tuple[Path, int, int], list[Scenario]] = {}


def load_python_file(path: Path) -> list[Scenario]:
    stat = path.stat()
    key = (path.resolve(), stat.st_mtime_ns, stat.st_size)
    if key not in _PY_CACHE:
        _PY_CACHE[key] = _exec_python_file(path)
    return list(_PY_CACHE[key])


def _exec_python_file(path: Path) -> list[Scenario]:
    name = f"chaoseval_user_scenarios.{path.stem}_{abs(hash(path.resolve())) % 10**8}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ScenarioError("cannot import this file", source=str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with importable(path.parent):  # the file may import modules beside it
            spec.loader.exec_module(module)
    except ValidationError as exc:
        raise describe_validation(exc, str(path)) from None
    except ScenarioError:
        raise
    except Exception as exc:
        line = ""
        tb = exc.__traceback__
        while tb is not None:
            if Path(tb.tb_frame.f_code.co_filename) == path:
                line = f":{tb.tb_lineno}"
            tb = tb.tb_next
        raise ScenarioError(
            f"importing the file raised {type(exc).__name__}: {exc}", source=f"{path}{line}"
        ) from None
    return _collect(module, str(path))


def load_file(path: Path) -> list[Scenario]:
    if path.suffix == ".py":
        return load_python_file(path)
    loader = FILE_LOADERS.get(path.suffix)
    if loader is None:
        raise ScenarioError(f"no scenario loader for {path.suffix!r} files", source=str(path))
    return loader(path)


def scenario_files(root: Path) -> list[Path]:
    """The scenario files a path names: itself, or those under a directory."""
    if root.is_file():
        return [root]
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file()
        and (p.suffix == ".py" or p.suffix in FILE_LOADERS)
        and not p.name.startswith("_")
        and "__pycache__" not in p.parts
    )


def load_files(files: Iterable[Path]) -> tuple[list[Scenario], list[ScenarioError]]:
    """Every scenario of the files that load, and every error: a broken file's own, then each
    id defined again (in the same file or another), so ``lint`` refuses what ``run`` refuses."""
    scenarios: list[Scenario] = []
    errors: list[ScenarioError] = []
    for f in files:
        try:
            scenarios.extend(load_file(f))
        except ScenarioLoadErrors as exc:
            errors.extend(exc.errors)
        except ScenarioError as exc:
            errors.append(exc)
    seen: dict[str, Scenario] = {}
    for s in scenarios:
        first = seen.setdefault(s.id, s)
        if first is not s:
            errors.append(
                ScenarioError(
                    f"scenario id {s.id!r} is already defined in {_where(first)}; ids must be "
                    "unique",
                    source=_where(s),
                    where="id",
                )
            )
    return list(seen.values()), errors


def _where(s: Scenario) -> str | None:
    """A scenario's file, with the line of its id when the loader knows it (YAML)."""
    line = getattr(s, "id_line", 0)
    return f"{s.source}:{line}" if line else s.source


def load_paths(paths: Iterable[Path]) -> list[Scenario]:
    """Load every scenario file under the given files and directories, reporting all errors."""
    files: list[Path] = []
    errors: list[ScenarioError] = []
    for root in paths:
        if not root.exists():
            errors.append(ScenarioError("no such file or directory", source=str(root)))
        else:
            files.extend(scenario_files(root))
    scenarios, load_errors = load_files(files)
    if errors or load_errors:
        raise ScenarioLoadErrors(errors + load_errors)
    return scenarios


@dataclass
class InstalledPacks:
    """The scenarios of every pack that loaded, and the packs that did not (kept apart, so
    one broken package hides nothing else)."""

    scenarios: list[Scenario]
    broken: list[BrokenEntryPoint]

    def errors(self) -> list[ScenarioError]:
        """The broken packs' errors, one per broken scenario file where the pack says which."""
        out: list[ScenarioError] = []
        for b in self.broken:
            exc = b.exception
            if isinstance(exc, ScenarioLoadErrors):
                out.extend(exc.errors)
            elif isinstance(exc, ScenarioError):
                out.append(exc)
            else:
                out.append(ScenarioError(f"scenario pack is broken: {b.error}", source=b.where()))
        return out


def _load_pack(ep: EntryPoint) -> list[Scenario]:
    obj = ep.load()
    items = obj() if callable(obj) else obj
    return [items] if isinstance(items, Scenario) else list(items)


def installed_packs() -> InstalledPacks:
    """Every installed pack (entry-point group ``chaoseval.scenarios``), loaded or broken. A
    pack whose scenario ids another pack already defined is broken too."""
    loaded, broken = collect_entry_points(GROUP, _load_pack)
    seen: dict[str, Scenario] = {}
    for ep, scenarios in loaded:
        taken = [s for s in scenarios if s.id in seen]
        if taken:
            first = seen[taken[0].id]
            error = ScenarioError(
                f"scenario id {taken[0].id!r} is already defined ({first.source})",
                source=taken[0].source,
            )
            broken.append(BrokenEntryPoint.of(ep, error))
            continue
        try:
            seen.update((s.id, s) for s in _unique(scenarios))
        except ScenarioError as exc:
            broken.append(BrokenEntryPoint.of(ep, exc))
    return InstalledPacks(list(seen.values()), broken)


def installed() -> list[Scenario]:
    """Scenarios from every installed pack that loads; ``installed_packs`` names the others."""
    return installed_packs().scenarios


def _unique(scenarios: list[Scenario]) -> list[Scenario]:
    seen: dict[str, Scenario] = {}
    for s in scenarios:
        if s.id in seen:
            raise ScenarioError(
                f"scenario id {s.id!r} is defined twice ({seen[s.id].source} and {s.source})"
            )
        seen[s.id] = s
    return list(seen.values())


def select(scenarios: list[Scenario], patterns: list[str]) -> list[Scenario]:
    """Keep scenarios whose id matches a glob, or whose tag matches ``tag:NAME``."""
    if not patterns:
        return scenarios
    chosen = []
    for s in scenarios:
        for pat in patterns:
            if pat.startswith("tag:"):
                if pat[4:] in s.tags:
                    chosen.append(s)
                    break
            elif fnmatch.fnmatchcase(s.id, pat) or pat == s.domain:
                chosen.append(s)
                break
    if not chosen:
        raise ConfigError(
            f"no scenario matches {patterns}; known ids: {', '.join(s.id for s in scenarios)}"
        )
    return chosen


def _register_yaml() -> None:
    from chaoseval.loading.yamlform import load_yaml_file

    FILE_LOADERS.setdefault(".yaml", load_yaml_file)
    FILE_LOADERS.setdefault(".yml", load_yaml_file)


_register_yaml()
