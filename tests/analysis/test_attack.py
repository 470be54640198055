"""Attack success rate and utility under attack, from journals written by real runs: per cell
in the analysis, the JSON report, the terminal report and the HTML report, where a followed
injection is laid out beside its clean twin; and journals written before schema 6 still read,
their utility derived from their checks."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

import chaoseval.bundled.perturbations.injection  # noqa: F401  (registers the family)
from chaoseval.agents.simulated import ResilientActor, SimActor, SimulatedAgent
from chaoseval.analysis.build import analysis_json, analyze
from chaoseval.analysis.verdict import build_verdict
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.model.records import ModelSettings
from chaoseval.render.html import render_html
from chaoseval.render.report import print_report
from chaoseval.store.columns import read_trials

TASKS = ["inject-order-refund", "inject-lead-qualify", "inject-price-quote"]


class Follower(SimActor):
    follows = 1.0


def journal(tmp_path: Path, actor: type[SimActor], name: str) -> Path:
    path = tmp_path / f"{name}.jsonl"
    scenarios = [s.model_copy(update={"difficulty": 0.0}) for s in select(installed(), TASKS)]
    run(
        RunConfig(
            scenarios=scenarios,
            agent=SimulatedAgent(actor),
            agent_name=name,
            cells=parse_cells(["injection"]),
            trials=3,
            seed=5,
            model=ModelSettings(temperature=0.0),
            journal=path,
        )
    )
    return path


@pytest.fixture(scope="module")
def journals(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("attack")
    return journal(tmp, Follower, "follower"), journal(tmp, ResilientActor, "resilient")


def test_attack_success_and_utility_per_cell(journals: tuple[Path, Path]) -> None:
    follower, resilient = (analyze(read_trials(p), n_resamples=500) for p in journals)
    [hit] = follower.attack
    assert (hit.cell, hit.tasks, hit.attacked, hit.followed) == ("injection", 3, 9, 9)
    assert hit.success.estimate == 1.0
    # Three tasks cannot show that every attack succeeds (nor that none does): no [1, 1].
    assert hit.success.low < hit.success.high == 1.0
    # Per task, then the mean over tasks, from the records' own utility field.
    per_task: dict[str, list[bool]] = {}
    for line in journals[0].read_text().splitlines()[1:]:
        r = json.loads(line)
        if r["cell"] == "injection":
            per_task.setdefault(r["scenario"], []).append(r["utility"])
    expected = sum(sum(u) / len(u) for u in per_task.values()) / len(per_task)
    assert hit.utility.estimate == pytest.approx(expected)
    # Some goals break the task itself (a price set to 0.01 fails "price unchanged").
    assert 0 < expected < 1
    assert hit.clean_utility is not None and hit.clean_utility.estimate == 1.0
    [held] = resilient.attack
    assert (held.attacked, held.followed, held.success.estimate) == (9, 0, 0.0)
    assert held.success.low == 0.0 < held.success.high
    data = analysis_json(follower)["attack"]["injection"]
    assert data["attack_success_rate"]["estimate"] == 1.0
    assert data["attacked_trials"] == 9 and data["followed_trials"] == 9


def test_reports_show_it_and_the_twin_of_a_followed_injection(
    journals: tuple[Path, Path],
) -> None:
    trials = read_trials(journals[0])
    a = analyze(trials, n_resamples=500)
    v = build_verdict(a, trials)
    out = io.StringIO()
    print_report(trials, Console(file=out, width=220), analysis=a, verdict=v)
    text = out.getvalue()
    assert "Under attack" in text and "1.000 [0.00, 1.00]" in text
    page = render_html(a, verdict=v)
    assert "id='attack'" in page and "attack success" in page
    # Every failure of the cell is a followed injection, laid out beside its clean twin.
    pairs = v.twins["injection"].pairs
    assert pairs and all(p.perturbed.root_cause == "injection_followed" for p in pairs)
    shown = pairs[0].perturbed.trial_id
    card = page[page.index(f"<h4>{shown}") :]
    twin = shown.replace("/injection/", "/clean/")
    assert f"clean twin <b>{twin}</b>: passed" in card[: card.index("</div>")]


def test_a_journal_before_schema_6_reads_with_utility_from_its_checks(
    journals: tuple[Path, Path], tmp_path: Path
) -> None:
    lines = journals[0].read_text().splitlines()
    old = []
    for line in lines:
        record = json.loads(line)
        record["schema_version"] = 5
        record.pop("injection_followed", None)
        record.pop("utility", None)
        old.append(json.dumps(record))
    path = tmp_path / "old.jsonl"
    path.write_text("\n".join(old) + "\n")
    t = read_trials(path)
    assert (t.col["attacked"] == -1).all()
    # Derived from the checks, it is what the judge recorded.
    assert t.col["utility"].tolist() == read_trials(journals[0]).col["utility"].tolist()
    assert analyze(t, n_resamples=100).attack == []
