"""The manifest line (issue 39, item 3): a secret in the agent's command line or the model name
is never written (and the run starts, and resumes), and a cell name too long to keep is refused
before anything is written, leaving nothing that blocks the next run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.e2e.journal_cli import chaoseval, lines, run_args

pytestmark = pytest.mark.slow

SECRET = "sk-live-0123456789abcdef"
AGENT = 'import json\nprint(json.dumps({"answer": "done"}))\n'


def _everything_written(tmp_path: Path) -> str:
    return "".join(
        p.read_text(errors="replace") for p in sorted(tmp_path.rglob("*")) if p.is_file()
    )


@pytest.mark.parametrize("where", ["agent", "model"])
def test_a_secret_in_the_manifest_is_redacted_and_the_run_resumes(
    tmp_path: Path, where: str
) -> None:
    journal = tmp_path / "j.jsonl"
    (tmp_path / "agent.py").write_text(AGENT)
    if where == "agent":
        agent = f"exec:{sys.executable} {tmp_path / 'agent.py'} --key {SECRET}"
        extra = ["--sandbox", "none"]
    else:
        agent, extra = "naive", ["--model", SECRET]
    env = {"MY_SERVICE_API_KEY": SECRET}  # a secret-looking variable holds the value
    first = chaoseval(run_args(journal, *extra, agent=agent, trials=1), tmp_path, **env)
    assert first.returncode == 0, first.stderr
    manifest = lines(journal)[0]
    assert manifest["type"] == "manifest"
    assert "[REDACTED]" in json.dumps(manifest)
    resumed = chaoseval(
        run_args(journal, *extra, "--resume", agent=agent, trials=2), tmp_path, **env
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "(resumed; 1 kept)" in resumed.stdout
    written = _everything_written(tmp_path).replace((tmp_path / "agent.py").read_text(), "")
    assert SECRET not in written
    # the manifest, the first trial, the manifest again with its count grown (-n 2), the second
    assert [line["type"] for line in lines(journal)] == ["manifest", "trial", "manifest", "trial"]


def test_a_cell_name_too_long_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    spec = tmp_path / "spec.json"
    name = "c" * 300_000
    spec.write_text(json.dumps([{"name": name, "perturbations": [{"name": "latency"}]}]))
    refused = chaoseval(run_args(journal, "-p", str(spec)), tmp_path)
    assert refused.returncode == 2, refused.stderr
    said = " ".join(refused.stderr.split())
    assert "a cell name of 300000 characters" in said and "at most 4096" in said, said
    assert '"name" in its spec file' in said and "Traceback" not in said
    assert not journal.exists() and not (tmp_path / "j.jsonl.d").exists()
    # Nothing was left to refuse the next run: no --overwrite needed.
    spec.write_text(json.dumps([{"name": "slow", "perturbations": [{"name": "latency"}]}]))
    ok = chaoseval(run_args(journal, "-p", str(spec)), tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert {r["cell"] for r in lines(journal)[1:]} == {"clean", "slow"}
