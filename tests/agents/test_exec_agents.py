"""``--agent 'exec:COMMAND'``: real processes, real sockets on 127.0.0.1."""

from __future__ import annotations

import json
import shlex
import sys
import tempfile
import time
from pathlib import Path

import pytest

from chaoseval.agents.process import ProcessAgent
from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import IsolationWarning
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.store.journal import read_journal

SCENARIO = "vending-refund-not-dispensed"
TIMEOUT = 1.5  # what the hang tests wait out: they pass it
GRACE = 0.5
# Every other trial's: its agent must start, answer and exit within it. A harness process
# starved for a second under load must not fail them (SIGSTOP stalls of 1.2 s at random
# moments: 9 of 130 trials of test_a_plain_stdout_is_the_answer ran out of 1.5 s, "timeout"
# and no answer; 0 of 100 with 20 s). A trial still ends as soon as its agent exits: a
# budget, not a time anything has to meet, so 60 s costs an answering (or crashing) trial
# nothing and only bounds a hang.
ANSWER_TIMEOUT = 60.0
# For the one run that mixes a crash with two hangs, which wait it out: long enough for the
# crashing process to start on a loaded machine (the fresh-clone CI once saw a 1.5 s budget
# run out first at load 11: "timeout", not "crash").
CRASH_TIMEOUT = 8.0


def script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(body)
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def run_exec(tmp_path: Path, command: str, **kw) -> list:
    config = RunConfig(
        scenarios=select(installed(), [kw.pop("scenario", SCENARIO)]),
        agent=ProcessAgent(command, grace=GRACE),
        agent_name="exec:" + command,
        trials=kw.pop("trials", 1),
        seed=kw.pop("seed", 1),
        journal=tmp_path / "j.jsonl",
        wall_timeout=kw.pop("timeout", ANSWER_TIMEOUT),
        **kw,
    )
    run(config)
    return read_journal(tmp_path / "j.jsonl").records


HANG = "import time\nprint('working', flush=True)\ntime.sleep(60)\n"
BLOCK = (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ignoring SIGTERM', flush=True)\n"
    "while True:\n    time.sleep(1)\n"
)
EXIT3 = "import sys\nprint('about to fail', file=sys.stderr)\nsys.exit(3)\n"


@pytest.mark.parametrize(
    ("body", "cause"), [(HANG, "timeout"), (BLOCK, "timeout"), (EXIT3, "crash")]
)
def test_a_hung_blocking_or_crashing_process_is_a_recorded_trial(tmp_path, body, cause):
    t0 = time.perf_counter()
    # A crash ends its trial as the agent exits, so its budget can be the answering trials'.
    timeout = ANSWER_TIMEOUT if cause == "crash" else TIMEOUT
    [record] = run_exec(tmp_path, script(tmp_path, "agent", body), timeout=timeout)
    elapsed = time.perf_counter() - t0
    assert record.status == "failed" and record.root_cause == cause
    # The run went on: the agent would hang for 60 s or forever. A bound far past the 1.5 s
    # budget and 0.5 s grace, never a race with them (the root cause already says "timeout").
    assert elapsed < 55
    kept = {a.name: tmp_path / a.path for a in record.artifacts}
    assert set(kept) == {"stdout.txt", "stderr.txt"}
    if cause == "crash":
        assert record.error is not None and "code 3" in record.error
        assert "about to fail" in record.error and "about to fail" in kept["stderr.txt"].read_text()
    else:  # whatever it printed before it was stopped is kept (maybe nothing, under load)
        assert record.error  # says which budget the trial exceeded
        assert kept["stdout.txt"].exists()


def test_hang_block_and_crash_in_one_run_all_recorded(tmp_path):
    body = (
        "import os, signal, sys, time\n"
        "kind = int(os.environ['CHAOSEVAL_TRIAL_ID'].rsplit('/', 1)[1])\n"
        "if kind == 0: time.sleep(60)\n"
        "if kind == 1:\n"
        "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "    while True: time.sleep(1)\n"
        "sys.exit(3)\n"
    )
    t0 = time.perf_counter()
    records = run_exec(tmp_path, script(tmp_path, "agent", body), trials=3, concurrency=3,
                       timeout=CRASH_TIMEOUT)  # fmt: skip
    assert time.perf_counter() - t0 < 55  # a bound on a hang (60 s or forever), not a race
    assert sorted((r.index, r.root_cause) for r in records) == [
        (0, "timeout"),
        (1, "timeout"),
        (2, "crash"),
    ]


ENV = (
    "import json, os, sys\n"
    "names = [n for n in os.environ if n.startswith(('CHAOSEVAL_', 'OPENAI_', 'ANTHROPIC_'))]\n"
    "seen = {n: os.environ[n] for n in names + ['TZ']}\n"
    "seen['stdin'] = sys.stdin.readline().strip()\n"
    "seen['cwd'] = os.getcwd()\n"
    "key = os.environ.get('OPENAI_API_KEY', '')\n"
    "seen['trial_key'] = key.startswith('sk-chaoseval-') and key != os.environ['REAL']\n"
    "seen['same_key'] = key == os.environ.get('ANTHROPIC_API_KEY')\n"
    "import urllib.request\n"
    "seen['memory'] = json.load(urllib.request.urlopen(os.environ['CHAOSEVAL_MEMORY_URL']))\n"
    "open('env.json', 'w').write(json.dumps(seen))\n"
    "print(json.dumps(seen))\n"
    "print(json.dumps({'answer': 'done', 'gave_up': True, 'data': {'n': 1}}))\n"
)


def test_the_process_gets_its_trial_in_its_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-upstream-key-0123456789")
    monkeypatch.setenv("REAL", "sk-real-upstream-key-0123456789")
    [record] = run_exec(tmp_path, script(tmp_path, "agent", ENV))
    assert record.answer == "done" and record.root_cause == "gave_up"
    stdout = next(tmp_path / a.path for a in record.artifacts if a.name == "stdout.txt")
    seen = json.loads(stdout.read_text().splitlines()[0])
    assert seen["CHAOSEVAL_TRIAL_ID"] == record.trial_id
    assert seen["CHAOSEVAL_SEED"] == str(record.seed)
    assert seen["CHAOSEVAL_MODEL"] == record.model.model
    assert seen["stdin"] == seen["CHAOSEVAL_INSTRUCTION"] != ""
    assert seen["CHAOSEVAL_MCP_URL"].startswith("http://127.0.0.1:")
    assert seen["CHAOSEVAL_TOOLS_URL"].startswith("http://127.0.0.1:")
    # The trial's own model channel and key, never the real key.
    assert seen["trial_key"] and seen["same_key"]  # (written out, a key is redacted)
    assert seen["OPENAI_BASE_URL"].startswith("http://127.0.0.1:")
    assert seen["OPENAI_BASE_URL"].endswith("/v1")
    assert seen["ANTHROPIC_BASE_URL"] + "/v1" == seen["OPENAI_BASE_URL"]
    assert float(seen["CHAOSEVAL_DEADLINE"]) > time.time() - 60
    assert seen["TZ"] == "UTC0"
    assert isinstance(seen["memory"], list)
    assert not Path(seen["cwd"]).exists()  # a fresh directory per trial, removed after


FETCHES_MEMORY = (
    "import json, os, urllib.request\n"
    "memory = json.load(urllib.request.urlopen(os.environ['CHAOSEVAL_MEMORY_URL']))\n"
    "print(json.dumps({'answer': json.dumps(memory)}))\n"
)


@pytest.mark.parametrize("fetches", [False, True])
def test_a_planted_memory_is_delivered_only_to_an_agent_that_fetched_it(tmp_path, fetches):
    # Its memory is served, not handed over: a process that never asks for it was not reached
    # (did not land: neither followed nor resisted), one that does got the planted note.
    body = FETCHES_MEMORY if fetches else "print('done')\n"
    cells = parse_cells(["injection_memory:placements=[item]"])
    records = run_exec(tmp_path, script(tmp_path, "agent", body), cells=cells)
    planted = next(r for r in records if r.cell != "clean")
    [fault] = planted.trajectory.faults
    assert (fault.perturbation, fault.kind, fault.delivered) == (
        "injection_memory", "injection", fetches
    )
    if not fetches:
        assert planted.injection_followed is None and planted.utility is None
        return
    assert planted.injection_followed is not None  # judged: the agent read the payload
    [note] = [m for m in json.loads(planted.answer or "") if m["key"] == "note"]
    assert note["value"] and fault.detail["key"] == "note"


def test_a_plain_stdout_is_the_answer(tmp_path):
    [record] = run_exec(tmp_path, script(tmp_path, "agent", "print('refund issued')\n"))
    assert record.answer == "refund issued"


def test_a_relative_script_path_names_the_file_where_chaoseval_runs(tmp_path, monkeypatch):
    (tmp_path / "agent.py").write_text("print('from the relative script')\n")
    monkeypatch.chdir(tmp_path)  # the process itself runs in a fresh directory of its own
    command = f"{shlex.quote(sys.executable)} agent.py"
    [record] = run_exec(tmp_path, command)
    assert record.answer == "from the relative script"


def test_exec_agents_use_their_tools_over_http(tmp_path):
    body = (
        "import json, os, urllib.request\n"
        "url = os.environ['CHAOSEVAL_TOOLS_URL'] + '/tools'\n"
        "tools = json.load(urllib.request.urlopen(url))\n"
        "print(json.dumps({'answer': ','.join(sorted(t['name'] for t in tools))}))\n"
    )
    [record] = run_exec(tmp_path, script(tmp_path, "agent", body))
    assert "lookup_order" in (record.answer or "")


def test_the_cli_takes_exec_agents(tmp_path):
    from typer.testing import CliRunner

    from chaoseval.cli.app import app

    command = script(tmp_path, "agent", EXIT3)
    result = CliRunner().invoke(
        app,
        ["run", "--agent", f"exec:{command}", "-s", SCENARIO, "-n", "1", "--trial-timeout",
         "60", "--journal", str(tmp_path / "j.jsonl"), "--no-report"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [record] = read_journal(tmp_path / "j.jsonl").records
    assert record.root_cause == "crash" and record.agent.startswith("exec:")


def test_cells_run_too(tmp_path):
    records = run_exec(
        tmp_path,
        script(tmp_path, "agent", "print('x')\n"),
        cells=parse_cells(["latency"]),
    )
    assert sorted(r.cell for r in records) == ["clean", "latency"]


def test_redact_patterns_reach_journal_artifacts_and_output(tmp_path):
    from typer.testing import CliRunner

    from chaoseval import redact
    from chaoseval.cli.app import app

    command = script(tmp_path, "agent", "print('the code is ABC-1234-XYZ')\n")
    runner = CliRunner()
    journal = tmp_path / "j.jsonl"
    try:
        result = runner.invoke(
            app,
            ["run", "--agent", f"exec:{command}", "-s", SCENARIO, "-n", "1", "--trial-timeout",
             "60", "--journal", str(journal), "--redact", r"ABC-\d+-XYZ"],
        )  # fmt: skip
        sample = runner.invoke(app, ["sample", str(journal), "--status", "failed"])
    finally:
        redact.configure([])
    assert result.exit_code == 0 and sample.exit_code == 0, result.output + sample.output
    assert "the code is [REDACTED]" in sample.output
    written = "".join(
        p.read_text() for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".py"
    )
    assert "ABC-1234" not in written + result.output + sample.output
    assert "the code is [REDACTED]" in written


def test_guarded_output_streams_redact_what_is_printed(capsys, monkeypatch):
    import sys

    from chaoseval import redact

    monkeypatch.setenv("SOME_API_TOKEN", "tok-0123456789")
    stream = redact.RedactingStream(sys.stdout)
    stream.write("using tok-0123456789 and Authorization: Bearer abcdefghij\n")
    out = capsys.readouterr().out
    assert "tok-0123456789" not in out and "abcdefghij" not in out
    assert out.count(redact.MARKER) == 2


def test_a_command_that_does_not_exist_is_refused_before_the_run():
    from chaoseval.errors import ConfigError

    with pytest.raises(ConfigError, match="not an executable"):
        ProcessAgent("no-such-agent-binary --flag")
    with pytest.raises(ConfigError, match="needs a command"):
        ProcessAgent.from_spec("exec:")


def test_trial_timeout_lengthens_the_scenarios_as_well_as_shortening_it(tmp_path):
    """An agent that needs 4 s, on a scenario that allows 1 s: a timeout, unless
    --trial-timeout gives the trial longer. (3 s between them: the 1 s timer fires first
    even when the harness's loop is starved a while; 60 s is a bound on a hang.)"""
    [scenario] = select(installed(), [SCENARIO])
    short = scenario.model_copy(
        update={"budgets": scenario.budgets.model_copy(update={"trial_timeout": 1.0})}
    )
    command = script(tmp_path, "agent", "import time\ntime.sleep(4)\nprint('took my time')\n")

    def outcome(wall_timeout: float | None) -> tuple[str | None, str | None]:
        journal = tmp_path / f"j{wall_timeout}.jsonl"
        config = RunConfig(
            scenarios=[short],
            agent=ProcessAgent(command, grace=GRACE),
            agent_name="exec:slow",
            trials=1,
            seed=1,
            journal=journal,
            wall_timeout=wall_timeout,
        )
        run(config)
        [record] = read_journal(journal).records
        return record.root_cause, record.answer

    assert outcome(None)[0] == "timeout"  # the scenario's 1 s
    cause, answer = outcome(60.0)
    assert cause != "timeout" and answer == "took my time"


def test_a_trial_that_cannot_be_set_up_is_a_harness_error(tmp_path, monkeypatch):
    """No temp dir for the trial's own directory (a TMPDIR that is gone): chaoseval's trouble,
    not evaluable, never the agent's crash (as it was: a FileNotFoundError judged a crash)."""
    body = "print('{\"answer\": \"ran\"}')\n"
    command = script(tmp_path, "agent", body)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))
    with pytest.warns(IsolationWarning):
        [record] = run_exec(tmp_path, command, sandbox="none")
    assert (record.status, record.root_cause) == ("not_evaluable", "harness_error")
    assert "could not be set up" in (record.error or "") and "gone" in (record.error or "")
