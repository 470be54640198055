"""Secrets never written, answers and artifacts bounded, artifacts beside the journal."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

import pytest

from chaoseval import redact
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.records import AgentOutput
from chaoseval.seams.agent import Episode
from chaoseval.store import artifacts
from chaoseval.store.journal import read_journal

PLANTED = "planted-Secret-value-0042"


class Leaky:
    """An agent that leaks: the planted secret in tool arguments, its answer, an artifact."""

    clock = "virtual"

    def __init__(self, answer_size: int = 0):
        self.answer_size = answer_size

    async def run(self, episode: Episode) -> AgentOutput:
        try:
            await episode.tools.call("lookup_order", order_id=PLANTED)
        except Exception:
            pass
        kept = artifacts.current()
        if kept is not None:
            kept.write("log.txt", f"calling with Authorization: Bearer {PLANTED}\n" * 3)
            kept.write("big.txt", "x" * (kept.store.limit + 10))
        answer = f"the key is {PLANTED}" + "y" * self.answer_size
        return AgentOutput(answer=answer, data={"env": {"MY_SERVICE_TOKEN": PLANTED}})


def _run(journal: Path, agent: Leaky | None = None, **kw) -> None:
    run(
        RunConfig(
            scenarios=select(installed(), ["vending-refund-not-dispensed"]),
            agent=agent or Leaky(),
            agent_name="leaky",
            trials=2,
            seed=1,
            journal=journal,
            **kw,
        )
    )


def _written(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


def test_secrets_in_the_environment_never_reach_the_journal_or_artifacts(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", PLANTED)
    _run(tmp_path / "j.jsonl")
    text = _written(tmp_path)
    assert PLANTED not in text
    assert redact.MARKER in (tmp_path / "j.jsonl").read_text()
    journal = read_journal(tmp_path / "j.jsonl")
    record = journal.records[0]
    assert record.answer == f"the key is {redact.MARKER}"
    assert {a.name for a in record.artifacts} == {"log.txt", "big.txt"}
    log = tmp_path / next(a.path for a in record.artifacts if a.name == "log.txt")
    assert "Bearer [REDACTED]" in log.read_text()


def test_without_the_variable_only_the_header_form_is_redacted(tmp_path):
    _run(tmp_path / "j.jsonl")
    assert PLANTED in (tmp_path / "j.jsonl").read_text()  # nothing says it is secret
    assert PLANTED not in _written(tmp_path / "j.jsonl.d")  # "Bearer <it>" does


def test_redact_patterns_from_the_run(tmp_path):
    redact.configure([r"planted-\w+-value"])
    try:
        _run(tmp_path / "j.jsonl")
    finally:
        redact.configure([])
    assert "planted-" not in _written(tmp_path)


def test_a_huge_answer_and_artifact_are_cut_with_their_full_size(tmp_path):
    _run(tmp_path / "j.jsonl", Leaky(answer_size=3_000_000))
    assert (tmp_path / "j.jsonl").stat().st_size < 2 * 2 * redact.TEXT_LIMIT
    record = read_journal(tmp_path / "j.jsonl").records[0]
    full = len(f"the key is {PLANTED}") + 3_000_000
    assert record.answer is not None and record.answer.endswith(f"{full} characters in full]")
    big = next(a for a in record.artifacts if a.name == "big.txt")
    assert big.cut and big.size == artifacts.ARTIFACT_LIMIT + 10
    assert (tmp_path / big.path).stat().st_size < artifacts.ARTIFACT_LIMIT + 100


def test_overwrite_removes_the_store_and_resume_keeps_it(tmp_path):
    journal = tmp_path / "j.jsonl"
    _run(journal)
    store = artifacts.store_root(journal)
    stray = store / "stray.txt"
    stray.write_text("left from before")
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(lines[:-1]) + "\n")  # the last trial was lost
    _run(journal, resume=True)
    assert stray.exists()
    records = read_journal(journal).records
    assert all((tmp_path / a.path).exists() for r in records for a in r.artifacts)
    _run(journal, overwrite=True)
    assert not stray.exists()
    assert len(list(store.rglob("log.txt"))) == 2


def test_resume_removes_what_a_lost_attempt_left(tmp_path):
    journal = tmp_path / "j.jsonl"
    _run(journal)
    lines = journal.read_text().splitlines()
    lost = json.loads(lines[-1])["trial_id"]
    journal.write_text("\n".join(lines[:-1]) + "\n")  # the last trial was lost

    class Quiet(Leaky):  # the re-run writes nothing this time
        async def run(self, episode: Episode) -> AgentOutput:
            return AgentOutput(answer="nothing")

    _run(journal, Quiet(), resume=True)
    store = artifacts.store_root(journal)
    assert not (store / artifacts.trial_dir_name(lost)).exists()
    records = read_journal(journal).records
    assert [r.artifacts for r in records if r.trial_id == lost] == [[]]
    kept = [a for r in records for a in r.artifacts]
    assert kept and all((tmp_path / a.path).exists() for a in kept)


def test_records_without_artifacts_are_written_as_before(tmp_path):
    class Quiet(Leaky):
        async def run(self, episode: Episode) -> AgentOutput:
            return AgentOutput(answer="nothing")

    _run(tmp_path / "j.jsonl", Quiet())
    line = json.loads((tmp_path / "j.jsonl").read_text().splitlines()[1])
    assert "artifacts" not in line
    assert not artifacts.store_root(tmp_path / "j.jsonl").exists()


@pytest.mark.parametrize("trial_id", ["a/clean/0", "a/timeout:p=0.5+latency/1", "a/x y%/2"])
def test_trial_directories_are_one_safe_component_per_part(trial_id):
    name = artifacts.trial_dir_name(trial_id)
    assert name.count("/") == 2 and " " not in name and ":" not in name
    assert unquote(name) == trial_id  # the escapes are urllib's for an ordinary id


AGENT_MODULE = """
from chaoseval.model.records import AgentOutput


class Talker:
    clock = "virtual"

    async def run(self, episode):
        return AgentOutput(answer="the code is ABC-1234-XYZ")


def make():
    return Talker()
"""


def test_the_cli_applies_redact_patterns_to_everything_it_writes_and_prints(tmp_path):
    from typer.testing import CliRunner

    from chaoseval.cli.app import app

    (tmp_path / "talker_agent.py").write_text(AGENT_MODULE)
    journal = tmp_path / "j.jsonl"
    runner = CliRunner()
    try:
        result = runner.invoke(
            app,
            ["run", "--agent", "talker_agent:make", "--app-dir", str(tmp_path), "-s",
             "vending-refund-not-dispensed", "-n", "1", "--journal", str(journal),
             "--redact", r"ABC-\d+-XYZ"],
        )  # fmt: skip
        sample = runner.invoke(app, ["sample", str(journal), "--status", "failed"])
    finally:
        redact.configure([])
    assert result.exit_code == 0 and sample.exit_code == 0, result.output + sample.output
    assert "the code is [REDACTED]" in sample.output
    assert "ABC-1234" not in journal.read_text() + result.output + sample.output


def test_guarded_output_streams_redact_what_is_printed(capsys, monkeypatch):
    import sys

    monkeypatch.setenv("SOME_API_TOKEN", "tok-0123456789")
    stream = redact.RedactingStream(sys.stdout)
    stream.write("using tok-0123456789 and Authorization: Bearer abcdefghij\n")
    out = capsys.readouterr().out
    assert "tok-0123456789" not in out and "abcdefghij" not in out
    assert out.count(redact.MARKER) == 2
