"""The README's first runs, literally: its blocks copied out of README.md into an empty
directory and run as a user would (no PYTHONPATH), in the README's own settings (its
``chaoseval.toml``, seed 7), and what they print compared with what the README shows, so a
drift of the README or of chaoseval fails here (issue 42, item 8)."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from tests.e2e.newcomer import flat
from tests.e2e.shell import sh, user_env

pytestmark = pytest.mark.slow
README = Path(__file__).resolve().parents[2] / "README.md"
# A fenced block, and the line before it (a marker such as <!-- test: exit 3 -->).
FENCE = re.compile(
    r"^(?P<before>[^\n]*)\n```(?P<lang>\w*)\n(?P<body>.*?)^```", re.MULTILINE | re.DOTALL
)
EXIT = re.compile(r"<!-- test: exit (\d+) -->")


def blocks(language: str, marker: str) -> list[tuple[str, str]]:
    """(the line before, the body) of the README's fenced blocks of ``language`` holding
    ``marker`` in their body or in the line before them."""
    text = README.read_text(encoding="utf-8")
    return [
        (m["before"].strip(), m["body"])
        for m in FENCE.finditer(text)
        if m["lang"] == language and (marker in m["body"] or marker in m["before"])
    ]


def block(language: str, marker: str) -> str:
    found = blocks(language, marker)
    assert len(found) == 1, f"README: expected one {language} block with {marker!r}"
    return found[0][1]


def shown(marker: str) -> tuple[str, str]:
    """The output the README shows after ``<!-- output of MARKER... -->``: (the marker, text)."""
    marked = blocks("text", "<!-- output of ")
    found = [(before, body) for before, body in marked if marker in before]
    assert len(found) == 1, f"README: expected one output block marked {marker!r}"
    return found[0]


def exit_code(marker: str) -> int:
    """The exit status the README gives the bash block holding ``marker`` (0 unless marked)."""
    ((before, _),) = blocks("bash", marker)
    code = EXIT.fullmatch(before)
    return int(code[1]) if code else 0


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty directory holding the files the README tells the user to save."""
    for name in ("chaoseval.toml", "myagent.py"):
        body = block({"chaoseval.toml": "toml", "myagent.py": "python"}[name], f"# {name}")
        assert body.startswith(f"# {name}"), f"README: the {name} block must say its file name"
        (tmp_path / name).write_text(body, encoding="utf-8")
    return tmp_path


def run(command: str, cwd: Path, **extra: str) -> tuple[int, str, str]:
    env = user_env(PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **extra)
    proc = sh(["bash", "-euo", "pipefail", "-c", command], cwd, env)
    return proc.returncode, proc.stdout, proc.stderr


def test_the_first_run_prints_the_verdict_the_readme_shows(tmp_path: Path) -> None:
    command = block("bash", "--agent resilient")
    code, out, err = run(command, tmp_path)
    assert code == exit_code("--agent resilient"), err
    _, verdict = shown("the first run")
    assert flat(verdict) in flat(out), out[:3000]


def test_the_readme_agent_in_the_readme_settings(project: Path) -> None:
    command = block("bash", "--agent myagent:factory")
    assert " -s " in command, "the quickstart runs a small subset (-s) so it stays fast"
    code, out, err = run(command, project)
    assert code == exit_code("--agent myagent:factory"), out + err
    _, text = shown("the agent's run")
    assert out.splitlines() == text.strip().splitlines(), out

    words = shlex.split(command.replace("\\\n", " "))
    journal = project / words[words.index("--journal") + 1]
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    manifest, trials = lines[0], [r for r in lines if r["type"] == "trial"]
    assert manifest["agent"] == "myagent:factory" and manifest["seed"] == 7
    assert trials and all(r["status"] != "not_evaluable" for r in trials)
    assert all(r["usage"]["model_calls"] == 1 for r in trials)  # record_model_call counted
    # A complete agent, not a stub: it passes clean and under latency, backing off on the
    # trial's clock, and a trial it loses under hangs and 429s it gives up on, said as such.
    failed = [r for r in trials if r["status"] != "passed"]
    assert all(r["cell"].startswith("timeout") for r in failed), failed
    assert all(r["root_cause"] == "gave_up" for r in failed), failed
    kinds = {f["kind"] for r in trials for f in r["trajectory"]["faults"] if f["delivered"]}
    assert {"latency", "timeout", "http_error"} <= kinds, kinds


def test_the_readme_pytest_block_in_the_readme_settings(project: Path) -> None:
    """The plugin example passes as the README says, and with the rule the README shows
    failing it fails printing the line the README shows."""
    test = block("python", "chaoseval_matrix")
    assert test.startswith("# test_myagent.py"), "the README must say where the test goes"
    (project / "test_myagent.py").write_text(test, encoding="utf-8")
    command = block("bash", "-m pytest")
    # The nested pytest keeps its temporary files here, not beside other runs' (shared /tmp).
    opts = f"-p no:cacheprovider --basetemp={project / 'pt'}"
    code, out, err = run(command, project, PYTEST_ADDOPTS=opts)
    assert code == exit_code("-m pytest") == 0, out + err

    marker, text = shown("the pytest block")
    rule = re.search(r"with (gate=\[.*?\]) -->", marker)
    assert rule, f"README: the output marker names the gate it was made with: {marker}"
    failing = re.sub(r"gate=\[.*?\],", f"{rule[1]},", test, count=1, flags=re.S)
    assert failing != test
    (project / "test_myagent.py").write_text(failing, encoding="utf-8")
    code, out, err = run(command, project, PYTEST_ADDOPTS=opts)
    assert code == 1, out + err
    for line in text.strip().splitlines():
        assert line in out.splitlines(), out
