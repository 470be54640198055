"""A trial's instruction on its page, rebuilt as ``chaoseval sample`` rebuilds it: the scenario
the trial ran on, built from the trial's world seed, its instruction rendered from the givens.

The journal does not hold the instruction, only where the scenario came from, and a journal is
data: its paths are a journal's word. So the view loads a scenario only

- from the installed packs, by id, when the run loaded them (its manifest records no
  ``scenario_paths``) or when the installed scenario's file is the one the manifest names, or
- from a YAML scenario file the manifest names that resolves (symlinks followed) inside the
  view's folder.

A Python scenario file is never executed here, inside the folder or not: opening a page must
not run code a journal points at. Every other case is "not available" with the reason. When the
file's sha256 differs from the manifest's, the page says so (replay.changed_since, as sample).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from chaoseval.errors import ChaosevalError
from chaoseval.investigate.replay import changed_since
from chaoseval.model.records import RunManifest, ScenarioInfo, TrialRecord
from chaoseval.model.scenario import Scenario
from chaoseval.store.artifacts import OutsideStore, inside
from chaoseval.view.html import text

__all__ = ["Instruction", "instruction_html", "rebuild"]

YAML = (".yaml", ".yml")


@dataclass(frozen=True)
class Instruction:
    """The rebuilt instruction (None when it cannot be), why not, and what changed since."""

    text: str | None
    reason: str = ""
    warnings: tuple[str, ...] = ()


_LOADING = threading.Lock()


def _installed() -> tuple[Scenario, ...]:
    """The installed packs' scenarios, loaded once a process (the first load takes seconds);
    pages are made on several threads, and a pack's files must not be executed twice at once."""
    with _LOADING:
        return _installed_once()


@cache
def _installed_once() -> tuple[Scenario, ...]:
    from chaoseval.loading.files import installed

    return tuple(installed())


def _same_file(installed: str | None, recorded: str | None) -> bool:
    """Whether the journal names the installed scenario's file (compared as text: a path a
    journal names is not looked at outside the folder)."""
    if not installed or not recorded:
        return False
    return os.path.normpath(recorded) in (installed, str(Path(installed).resolve()))


def _from_folder(root: Path, source: str, scenario_id: str) -> Scenario:
    """The scenario ``scenario_id`` of the YAML file ``source``, only when it resolves inside
    ``root``; ChaosevalError saying why not otherwise (nothing outside is opened)."""
    from chaoseval.loading.files import load_file

    try:
        path = inside(root, Path(source), what="scenario file")
    except OutsideStore:
        raise ChaosevalError(
            f"the scenario file {source} is outside {root}; the view loads only scenario files "
            "inside its folder and installed scenarios"
        ) from None
    if path.suffix not in YAML:
        raise ChaosevalError(
            f"{source} is a Python scenario file; the view does not run code a journal names "
            "(chaoseval replay JOURNAL TRIAL rebuilds it)"
        )
    if not path.is_file():
        raise ChaosevalError(f"the scenario file {source} is not there any more")
    with _LOADING:
        loaded = load_file(path)
    found = next((s for s in loaded if s.id == scenario_id), None)
    if found is None:
        raise ChaosevalError(f"{source} no longer defines scenario {scenario_id!r}")
    return found


def _scenario(root: Path, manifest: RunManifest, info: ScenarioInfo | None, sid: str) -> Scenario:
    bundled = next((s for s in _installed() if s.id == sid), None)
    source = info.source if info is not None else None
    if bundled is not None and (not manifest.scenario_paths or _same_file(bundled.source, source)):
        return bundled
    if not manifest.scenario_paths:
        raise ChaosevalError(f"scenario {sid!r} is not installed here")
    if not source:
        raise ChaosevalError(f"the journal records no file for scenario {sid!r}")
    return _from_folder(root, source, sid)


def rebuild(root: Path, manifest: RunManifest, record: TrialRecord) -> Instruction:
    """The instruction ``record``'s trial got, rebuilt from its scenario and world seed."""
    info = next((s for s in manifest.scenarios if s.id == record.scenario), None)
    try:
        scenario = _scenario(root, manifest, info, record.scenario)
    except ChaosevalError as exc:
        return Instruction(None, str(exc))
    except Exception as exc:  # a scenario file's own error, whatever it is
        return Instruction(None, f"scenario {record.scenario!r} could not be loaded: {exc}")
    try:
        _, givens = scenario.build(record.world_seed)
        said = scenario.render_instruction(givens)
    except Exception as exc:  # a broken scenario must not break the trial's page
        return Instruction(None, f"scenario {record.scenario!r} failed to build: {exc}")
    return Instruction(said, warnings=tuple(changed_since(manifest, [scenario], [scenario.id])))


def instruction_html(root: Path, manifest: RunManifest, record: TrialRecord) -> str:
    """The instruction's section of a trial's page (escaped; the app redacts the page)."""
    got = rebuild(root, manifest, record)
    if got.text is None:
        return (
            "<section id='instruction'><h3>Instruction</h3><p class='warn'>not available: "
            f"{text(got.reason)}</p></section>"
        )
    warned = "".join(
        f"<p class='warn'>warning: {text(w)}; rebuilt from the file as it is now</p>"
        for w in got.warnings
    )
    return (
        "<section id='instruction'><h3>Instruction</h3><p class='meta'>rebuilt from scenario "
        f"{text(record.scenario)} and world seed {record.world_seed} (the journal does not "
        f"record it)</p>{warned}<pre class='instruction'>{text(got.text)}</pre></section>"
    )
