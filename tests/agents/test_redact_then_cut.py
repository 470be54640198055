"""Redact, then cut (issue 19, item 5): a secret across a size cut is never kept in part, and
an exec agent's final answer line is read whatever its size and however long stdout was."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from chaoseval import redact
from chaoseval.agents.output import STDOUT_LIMIT, TAIL_LIMIT
from chaoseval.agents.process import ProcessAgent
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.records import AgentOutput
from chaoseval.seams.agent import Episode
from chaoseval.store.journal import read_journal

SECRET = "planted-Secret-value-0042-abcdefghij"  # its halves are unlike anything else written
FIRST, SECOND = SECRET[:12], SECRET[-12:]


def _written(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


def _run(tmp_path: Path, agent: object, name: str) -> Path:
    journal = tmp_path / "j.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), ["vending-refund-not-dispensed"]),
            agent=agent,
            agent_name=name,
            trials=1,
            seed=1,
            journal=journal,
            wall_timeout=30,
        )
    )
    return journal


class Straddling:
    """An answer whose journal cut (TEXT_LIMIT characters) falls inside the secret."""

    clock = "virtual"

    async def run(self, episode: Episode) -> AgentOutput:
        answer = "x" * (redact.TEXT_LIMIT - len(FIRST)) + SECRET + "y" * 1000
        return AgentOutput(answer=answer)


def test_a_secret_across_the_journals_cut_is_not_kept_in_part(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)
    journal = _run(tmp_path, Straddling(), "straddling")
    text = journal.read_text()
    assert "cut by chaoseval" in text  # the answer was cut...
    assert FIRST not in text and SECRET[:8] not in text  # ...after its secret was replaced


def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "agent.py"
    path.write_text(body)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


STRADDLING_STDOUT = f"""
import sys
secret = {SECRET!r}
out = sys.stdout
out.write("a" * ({STDOUT_LIMIT} - 12) + secret)  # across the kept head's end
out.write("b" * 200_000)
out.write(secret + "c" * ({TAIL_LIMIT} - 12 - len(secret)) + "\\n")  # across the tail's start
"""


def test_a_secret_across_the_stdout_artifacts_cuts_is_not_kept_in_part(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)
    agent = ProcessAgent(_script(tmp_path, STRADDLING_STDOUT), grace=0.5)
    journal = _run(tmp_path, agent, "exec:straddling")
    [record] = read_journal(journal).records
    stdout = next(a for a in record.artifacts if a.name == "stdout.txt")
    assert stdout.cut and stdout.size > STDOUT_LIMIT + 200_000
    kept = (tmp_path / stdout.path).read_text()
    assert kept.startswith("a" * 1000)
    written = _written(tmp_path / "j.jsonl.d") + journal.read_text()
    for part in (FIRST, SECOND, SECRET[:8], SECRET[-8:]):
        assert part not in written, part


LONG_ANSWER = """
import json, sys
sys.stdout.write("progress " * 300_000 + "\\n")  # 2.7 MB before the answer
answer = "y" * 100_000 + "END"
sys.stdout.write(json.dumps({"answer": answer, "data": {"n": 1}}) + "\\n\\n")
"""


@pytest.mark.parametrize("size", [100_000, 70_000])
def test_the_final_answer_line_is_read_whatever_its_size(tmp_path, size):
    body = LONG_ANSWER.replace("100_000", str(size))
    agent = ProcessAgent(_script(tmp_path, body), grace=0.5)
    [record] = read_journal(_run(tmp_path, agent, "exec:long")).records
    assert record.error is None, record.error
    assert record.answer == "y" * size + "END"  # not stdout's text: the line was read
    assert record.answer.endswith("END") and "progress" not in record.answer


def test_stdout_captures_last_line_across_chunks_and_limits() -> None:
    from chaoseval.agents.output import Capture

    c = Capture(10, 10, line_limit=50)
    for chunk in [b"abc\n", b'{"answer"', b': "x"}', b"\n", b"  \n"]:
        c.add(chunk)
    assert c.last_line() == '{"answer": "x"}'
    c.add(b"z" * 60)  # a line past the limit being written: it is no answer
    assert c.last_line() == ""
    c.add(b"\nlast")
    assert c.last_line() == "last"
