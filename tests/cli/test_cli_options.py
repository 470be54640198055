"""Every option says what it does, and bad input gets a clear error and exit 2, no traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from chaoseval.cli.app import app


def _commands(cmd: Any, path: list[str]) -> Iterator[tuple[str, Any]]:
    if hasattr(cmd, "commands"):  # a group: walk its subcommands
        for name, sub in cmd.commands.items():
            yield from _commands(sub, [*path, name])
    else:
        yield " ".join(path), cmd


def test_every_option_of_every_command_has_useful_help() -> None:
    commands = dict(_commands(typer.main.get_command(app), []))
    assert {"run", "report", "gate", "scenarios list", "init plugin"} <= set(commands)
    bare = []
    for name, cmd in commands.items():
        assert (cmd.help or "").strip(), f"chaoseval {name} has no description"
        for param in cmd.params:
            text = (getattr(param, "help", None) or "").strip()
            # Three words at least: "-j" alone, or a word like "resamples", tells a user nothing.
            if len(text.split()) < 3 or "see docs" in text:
                bare.append(f"chaoseval {name} {'/'.join(param.opts)}: {text!r}")
    assert not bare, "options without useful --help:\n" + "\n".join(bare)


RUN = ["run", "--agent", "naive", "-s", "vending-refund-log-down", "-n", "1", "--no-report"]
# (arguments, what the message must name); D is a directory, M a missing file, and J an
# existing file: every case with J is refused before the file is read.
BAD_INPUT: list[tuple[list[str], str]] = [
    ([*RUN, "--temperature", "-1"], "--temperature"),
    ([*RUN, "-j", "0"], "--concurrency"),
    ([*RUN, "-j", "-3"], "--concurrency"),
    ([*RUN, "--trial-timeout", "-1"], "--trial-timeout"),
    ([*RUN, "--trial-timeout", "0"], "--trial-timeout"),
    ([*RUN, "-n", "0"], "--trials"),
    ([*RUN, "--k", "0"], "--k"),
    ([*RUN, "--k", "3"], "between 1 and --trials"),
    ([*RUN, "--budget-cost", "-1"], "--budget-cost"),
    ([*RUN, "--budget-tokens", "0"], "--budget-tokens"),
    ([*RUN, "--resume", "--journal", "M"], "nothing to continue"),
    ([*RUN, "--journal", "D"], "is a directory"),
    ([*RUN, "--journal", "J/run.jsonl"], "cannot make the journal's lock (Not a directory)"),
    ([*RUN, "--scenarios", "M"], "--scenarios missing.jsonl: no such file or directory"),
    (["run", "-a", "mod:factory", "--app-dir", "M"], "--app-dir missing.jsonl: no such directory"),
    ([*RUN, "-p", "latencyy"], "did you mean 'latency'"),
    ([*RUN, "--config", "M"], "no such file"),
    (["run", "-s", "vending-*"], "no agent"),
    (["report", "D"], "is a directory"),
    (["report", "M"], "no such journal"),
    (["report"], "chaoseval.jsonl: no such journal"),  # the default journal, absent here
    (["gate", "-r", "pass^1 >= 0.5"], "chaoseval.jsonl: no such journal"),
    (["report", "J", "--k", "0"], "--k"),
    (["report", "J", "-f", "pdf"], "unknown --format"),
    (["compare", "D", "J"], "is a directory"),
    (["compare", "J", "J", "--resamples", "0"], "--resamples"),
    (["gate", "D", "-r", "pass^1>=0.5"], "is a directory"),
    (["gate", "J", "--margin", "1.5"], "--margin 1.5"),
    (["summary", "D"], "is a directory"),
    (["summary", "J", "--k", "0"], "--k"),
    (["diverge", "D"], "is a directory"),
    (["sample", "D"], "is a directory"),
    (["sample", "J", "-n", "0"], "-n"),
    (["replay", "D", "x/clean/0"], "is a directory"),
    (["search", "-a", "naive", "-s", "vending-*", "--confirm-rate", "1.5"], "--confirm-rate"),
    (["search", "-a", "naive", "-s", "vending-*", "--budget", "0"], "--budget"),
    (["scenarios", "list", "-s", "no-such-*"], "no scenario matches"),
    (["scenario", "lint", "--seeds", "0"], "--seeds"),
]


@pytest.mark.parametrize(
    ("args", "says"),
    BAD_INPUT,
    ids=[" ".join(a[:1] + a[8:] if a[0] == "run" else a) for a, _ in BAD_INPUT],
)
def test_bad_input_is_a_clear_error(
    args: list[str], says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no chaoseval.jsonl or settings file here
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "j.jsonl").write_text("{}\n")
    names = {"J": "j.jsonl", "D": "a-dir", "M": "missing.jsonl"}
    args = [names.get(a, a) for a in args]
    res = CliRunner().invoke(app, [a.replace("J/", "j.jsonl/") for a in args])
    # Rich wraps and boxes messages: compare with the frame and line breaks taken out.
    text = " ".join(res.output.replace("│", " ").split())
    assert res.exit_code == 2, text
    assert isinstance(res.exception, SystemExit), res.exception  # not a crash
    assert "Traceback" not in res.output
    assert says in text
    assert not (tmp_path / "chaoseval.jsonl").exists()
