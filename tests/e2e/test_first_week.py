"""Issue 21, points 1-3: gate selectors, settings read by every command, why a trial crashed.

Each runs the commands as a newcomer typed them, in a directory of their own (not the checkout).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.newcomer import chaoseval, flat, quoted, study_project

pytestmark = pytest.mark.slow

SETTINGS = """\
agent = "naive"
scenario_paths = ["scenarios/"]
perturbations = ["timeout:modes=[raise],tools=lookup_loan"]
trials = 3
seed = 7
journal = "out/run.jsonl"
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = study_project(tmp_path_factory.mktemp("study"), SETTINGS)
    chaoseval("chaoseval run", where)
    return where


def test_1_a_plugin_selector_picks_a_cell_with_parameters(project: Path) -> None:
    proc = chaoseval("chaoseval gate --rule 'pass^3[timeout] >= 0'", project)
    assert "ok     pass^3[timeout] >= 0: pass^3[timeout(modes=['raise'],tools=lookup_loan)] = " in (
        proc.stdout
    )
    assert "not measurable" not in proc.stdout
    # A selector naming no cell is a usage error (issue 41): exit 2, the message on stderr.
    broken = chaoseval("chaoseval gate --rule 'pass^3[latency] >= 0'", project, code=2)
    assert "no cell is or stacks 'latency'" in " ".join(broken.stderr.split())


def test_2_replay_and_sample_read_the_settings_scenario_paths(project: Path) -> None:
    trials = [json.loads(line) for line in (project / "out/run.jsonl").read_text().splitlines()]
    trial = next(t["trial_id"] for t in trials if t.get("type") == "trial")
    proc = chaoseval(f"chaoseval replay out/run.jsonl {quoted(trial)}", project)
    assert "reproduced exactly" in proc.stdout
    chaoseval("chaoseval sample out/run.jsonl -n 3 --status any -o review.md", project)
    review = (project / "review.md").read_text()
    assert "not available" not in review and "Member member@example.org" in review
    listed = chaoseval("chaoseval scenarios list", project).stdout
    assert "study-renew" in listed and "vending-" not in listed


CRASHY = '''\
from chaoseval import AgentOutput, Episode, ToolTimeout
from chaoseval.agents.scripted import scripted


class Crashy:
    """The reference solution, with the bug a newcomer writes in its timeout handler."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        try:
            return await scripted().run(episode)
        except ToolTimeout:
            return "timed out".get("answer")


def factory() -> Crashy:
    return Crashy()
'''
WHY = "crashed: AttributeError: 'str' object has no attribute 'get'"


def test_3_why_a_trial_crashed_is_in_every_view(tmp_path: Path) -> None:
    (tmp_path / "crashy.py").write_text(CRASHY)
    run = chaoseval(
        "chaoseval run --agent crashy:factory -s 'vending-refund-not*' -n 8 "
        "-p 'timeout:probability=0.5,modes=[raise]' --journal j.jsonl",
        tmp_path,
    )
    assert WHY in flat(run.stdout)  # the terminal twins (a table: cells wrap)
    # Point 7: an agent that records no model call is not headed "model sim-1 T=0.7".
    assert "no model calls" in run.stdout and "T=0.7" not in run.stdout
    chaoseval("chaoseval report j.jsonl -f html -o r.html", tmp_path)
    html = (tmp_path / "r.html").read_text().replace("&#x27;", "'")
    assert WHY in html
    diverge = flat(chaoseval("chaoseval diverge j.jsonl", tmp_path).stdout)
    assert WHY in diverge and "stopped instead of retrying" not in diverge
    crashed = [
        r["trial_id"]
        for r in map(json.loads, (tmp_path / "j.jsonl").read_text().splitlines())
        if r.get("root_cause") == "crash"
    ]
    assert crashed
    replay = chaoseval(f"chaoseval replay j.jsonl {quoted(crashed[0])}", tmp_path).stdout
    assert WHY in flat(replay)
