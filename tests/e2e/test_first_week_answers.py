"""Issue 21, points 5 and 6: the settings file as the README shows it, help text that keeps its
brackets, and a clear refusal (with "did you mean") instead of a silent or misleading answer.

Each runs the command as a newcomer typed it, in a directory of their own (not the checkout).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.newcomer import chaoseval, flat

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("answers")
    for name, scenarios in (("vending", "vending-*"), ("orders", "orders-lookup-status")):
        chaoseval(
            f"chaoseval run --agent resilient -s '{scenarios}' -n 3 -p timeout "
            f"--journal {name}.jsonl",
            where,
        )
    return where


def error(command: str, cwd: Path, code: int = 2) -> str:
    """The one message a refused command prints: never a traceback, never a table."""
    proc = chaoseval(command, cwd, code=code)
    assert "Traceback" not in proc.stderr and "┏" not in proc.stdout, proc.stdout + proc.stderr
    return flat(proc.stderr)


def test_5_the_pyproject_block_pasted_into_chaoseval_toml_works(tmp_path: Path) -> None:
    (tmp_path / "chaoseval.toml").write_text(
        '[tool.chaoseval]\nagent = "naive"\nscenarios = ["vending-*"]\ntrials = 1\n'
    )
    assert "wrote 3 trial(s)" in chaoseval("chaoseval run", tmp_path).stdout
    (tmp_path / "chaoseval.toml").write_text('trials = 1\n[tool.chaoseval]\nagent = "naive"\n')
    assert "delete the [tool.chaoseval] line" in error("chaoseval run", tmp_path)


def test_5_help_keeps_bracketed_words(tmp_path: Path) -> None:
    text = flat(chaoseval("chaoseval run --help", tmp_path).stdout)
    assert "from chaoseval.toml or [tool.chaoseval] in pyproject.toml" in text
    assert "'chaoseval[ray]'" in text


def test_6_report_refuses_a_k_beyond_the_trials(work: Path) -> None:
    assert "k <= 3" in error("chaoseval report vending.jsonl --k 20", work)


def test_6_compare_refuses_journals_with_no_shared_task(work: Path) -> None:
    assert "share no task" in error("chaoseval compare vending.jsonl orders.jsonl", work)


def test_6_compare_warns_about_the_same_journal_twice(work: Path) -> None:
    proc = chaoseval("chaoseval compare vending.jsonl vending.jsonl", work)
    assert "are the same file" in flat(proc.stderr)


def test_6_a_tool_glob_no_scenario_has_stops_the_run(work: Path) -> None:
    message = error(
        "chaoseval run --agent naive -s 'vending-*' -n 1 -p 'timeout:tools=lookup_orders' "
        "--journal typo.jsonl",
        work,
    )
    assert "selects no tool" in message and "did you mean 'lookup_order'?" in message
    assert not (work / "typo.jsonl").exists()


def test_6_misspelt_parameter_and_factory_get_did_you_mean(work: Path) -> None:
    message = error("chaoseval run --agent naive -n 1 -p 'timeout:probabilty=0.3'", work)
    assert "did you mean 'probability'?" in message
    (work / "myagent.py").write_text("def factory():\n    return None\n")
    message = error("chaoseval run --agent myagent:factroy -n 1", work)
    assert "did you mean myagent:factory?" in message


def test_6_report_of_the_settings_file_says_it_is_no_journal(work: Path) -> None:
    (work / "chaoseval.toml").write_text('agent = "naive"\n')
    try:
        message = error("chaoseval report chaoseval.toml", work)
    finally:
        (work / "chaoseval.toml").unlink()
    assert "is not a chaoseval journal" in message and "corrupt" not in message
