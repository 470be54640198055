"""A trial's page shows the instruction the trial got, rebuilt from its scenario and world seed
(as ``chaoseval sample`` rebuilds it): from the installed scenarios, or from a YAML scenario
file inside the view's folder, with a warning when that file changed since the run; a scenario
file the journal names outside the folder, or a Python one anywhere, is neither read nor run."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any

from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, load_paths
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import TrialRecord
from chaoseval.model.scenario import Scenario
from chaoseval.seams.agent import load_agent
from chaoseval.store.columns import read_trials
from tests.view.conftest import Served, copy_runs

HELPDESK = Path(__file__).parents[2] / "scenarios" / "helpdesk.yaml"
ID = "helpdesk-reset-password"
JOURNAL = "release-1/run.jsonl"


def _expected(scenario: Scenario, record: TrialRecord) -> str:
    _, givens = scenario.build(record.world_seed)
    return escape(scenario.render_instruction(givens))


def _first(journal: Path, scenario: str) -> TrialRecord:
    t = read_trials(journal)
    return next(t.record(r) for r in range(len(t)) if t.record(r).scenario == scenario)


def _page(view: Served, key: str, trial: str) -> str:
    return view.get("/trial", params={"j": key, "id": trial}).text


def _set_sources(journal: Path, sources: dict[str, str], paths: list[str]) -> None:
    """The journal's manifest made to say its scenarios came from ``sources``."""
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    manifest: dict[str, Any] = lines[0]
    manifest["scenario_paths"] = paths
    for info in manifest["scenarios"]:
        if info["id"] in sources:
            info["source"] = sources[info["id"]]
    journal.write_text("".join(json.dumps(d) + "\n" for d in lines))


def test_a_bundled_scenario_trial_shows_its_rebuilt_instruction(
    runs: Path, serve: Callable[[Path], Served]
) -> None:
    view = serve(runs)
    record = _first(runs / JOURNAL, ID)
    scenario = next(s for s in installed() if s.id == ID)
    page = _page(view, JOURNAL, record.trial_id)
    assert f"rebuilt from scenario {ID} and world seed {record.world_seed}" in page
    assert f"<pre class='instruction'>{_expected(scenario, record)}</pre>" in page
    assert "warning:" not in page and "not available" not in page


def test_a_changed_scenario_file_inside_the_folder_shows_the_warning(
    tmp_path: Path, serve: Callable[[Path], Served]
) -> None:
    root = tmp_path / "view"
    (root / "scenarios").mkdir(parents=True)
    yaml = root / "scenarios" / "helpdesk.yaml"
    shutil.copy(HELPDESK, yaml)
    journal = root / "run.jsonl"
    run(
        RunConfig(
            scenarios=load_paths([yaml]), agent=load_agent("naive"), agent_name="naive",
            cells=parse_cells(["timeout"]), trials=1, seed=3, ks=[1], journal=journal,
            references=False, scenario_paths=[yaml],
        )
    )  # fmt: skip
    record = _first(journal, ID)
    expected = _expected(load_paths([yaml])[0], record)
    view = serve(root)
    page = _page(view, "run.jsonl", record.trial_id)
    assert f"<pre class='instruction'>{expected}</pre>" in page
    assert "changed since the run" not in page

    yaml.write_text(yaml.read_text() + "# edited after the run\n")
    page = _page(view, "run.jsonl", record.trial_id)
    assert "warning: scenario &#x27;helpdesk-reset-password&#x27; changed since the run" in page
    assert "rebuilt from the file as it is now" in page
    assert f"<pre class='instruction'>{expected}</pre>" in page


def test_scenario_files_outside_the_folder_or_python_are_not_read(
    runs: Path, tmp_path: Path, serve: Callable[[Path], Served]
) -> None:
    root = copy_runs(runs, tmp_path / "view")
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = tmp_path / "imported"
    evil = f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
    (outside / "evil.py").write_text(evil)
    (root / "inside.py").write_text(evil)
    # A scenario with the same id whose instruction would show if the file were loaded.
    (outside / "helpdesk.yaml").write_text(
        HELPDESK.read_text().replace("You are helpdesk agent", "OUTSIDE-THE-FOLDER agent")
    )
    (root / "link.yaml").symlink_to(outside / "helpdesk.yaml")
    vending = "vending-refund-not-dispensed"
    cases = {
        str(outside / "helpdesk.yaml"): "is outside",
        str(root / "link.yaml"): "is outside",
        "../outside/helpdesk.yaml": "is outside",
        str(outside / "evil.py"): "is outside",
        str(root / "inside.py"): "Python scenario file",
    }
    for n, (source, reason) in enumerate(cases.items()):
        key = f"case-{n}/run.jsonl"
        journal = root / key
        journal.parent.mkdir()
        shutil.copy(runs / JOURNAL, journal)
        _set_sources(journal, {ID: source, vending: source}, [str(outside)])
        view = serve(root)
        for scenario in (ID, vending):
            page = _page(view, key, _first(journal, scenario).trial_id)
            assert "Instruction</h3><p class='warn'>not available: " in page, source
            assert reason in page, source
            assert "OUTSIDE-THE-FOLDER" not in page
    assert not marker.exists()  # no Python file a journal named was run
