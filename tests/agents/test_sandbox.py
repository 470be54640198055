"""The exec: agents' sandbox (chaoseval.agents.sandbox): trials that cannot touch each other,
the host, or what outlives them; real bubblewrap, real processes, real sockets on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.agents.process import ProcessAgent
from chaoseval.cli.app import app
from chaoseval.engine.runner import RunConfig, run
from chaoseval.errors import IsolationWarning
from chaoseval.loading.files import installed, select
from chaoseval.model.records import TrialRecord
from chaoseval.store.journal import read_journal
from tests.cerrors import raised_in
from tests.engine.test_executor_orphans import carrying, gone

SCENARIO = "vending-refund-not-dispensed"
NOT_ISOLATED = "trials were not isolated from each other"

# Scans /proc for its siblings' environments and uses every credential it finds there: a
# sibling's tool URL (its secret path) with a tool call naming the intruder, and a sibling's
# model key on that sibling's model channel. A sibling is a process running this same script
# (its path is unique to the test): without that filter the unsandboxed control would also
# act in every other chaoseval run on the machine (a concurrent `make test` or demo), and
# what it found there would not be this run's isolation failure. It scans for 3 s; with the
# argument "seek", also on until it found a credential (20 s at most), so the control below
# does not rest on the trials' starts falling within 3 s of each other (a loaded machine may
# spread them out); in the sandbox it finds none, and 3 s is its whole look.
INTRUDER = r"""
import json, os, sys, time, urllib.request

me = os.environ["CHAOSEVAL_TRIAL_ID"]
script = os.path.abspath(sys.argv[0]).encode()
own = {os.environ.get("CHAOSEVAL_TOOLS_URL"), os.environ.get("OPENAI_API_KEY")}
tried = set()

def post(url, body, headers={}):
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json", **headers})
    try:
        urllib.request.urlopen(request, timeout=30).read()
    except Exception:
        pass  # a refused or failed call is still a call

start = time.time()
seek = sys.argv[1:] == ["seek"]
while time.time() < start + 3 or (seek and not tried and time.time() < start + 20):
    for pid in os.listdir("/proc"):
        try:
            if script not in open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0"):
                continue
            raw = open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace")
        except OSError:
            continue
        env = dict(kv.split("=", 1) for kv in raw.split("\0") if "=" in kv)
        tools, key = env.get("CHAOSEVAL_TOOLS_URL"), env.get("OPENAI_API_KEY")
        if tools and tools not in own | tried:
            tried.add(tools)
            post(tools + "/tools/lookup_order", {"order_id": "intruder-" + me})
        base = env.get("OPENAI_BASE_URL")
        if key and base and key not in own | tried:
            tried.add(key)
            post(base + "/chat/completions",
                 {"model": "sim-1", "messages": [{"role": "user", "content": "intruder " + me}]},
                 {"authorization": "Bearer " + key})
    time.sleep(0.1)
print(json.dumps({"answer": f"found {len(tried)} credentials of other trials"}))
"""


def command(tmp_path: Path, body: str, *args: str) -> str:
    path = tmp_path / f"agent_{uuid.uuid4().hex[:8]}.py"
    path.write_text(body)
    return " ".join(shlex.quote(a) for a in (sys.executable, str(path), *args))


def run_exec(tmp_path: Path, cmd: str, *, sandbox: str = "auto", **kw) -> list[TrialRecord]:
    journal = tmp_path / f"{uuid.uuid4().hex[:8]}.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), [SCENARIO]),
            agent=ProcessAgent(cmd, grace=kw.pop("grace", 0.5)),
            agent_name="exec:" + cmd,
            trials=kw.pop("trials", 1),
            seed=1,
            journal=journal,
            # A bound on a hang: a trial ends when its agent exits (30 s before).
            wall_timeout=kw.pop("timeout", 60.0),
            references=False,
            sandbox=sandbox,
            **kw,
        )
    )
    return read_journal(journal).records


def foreign_steps(records: list[TrialRecord]) -> int:
    """Steps in a trial's trajectory that another trial's agent made: a tool call naming
    another trial, or any model call (the intruder makes none of its own)."""
    count = 0
    for r in records:
        for step in r.trajectory.steps:
            if step.kind == "model_call":
                count += 1
            args = step.args or {}
            named = str(args.get("order_id", ""))
            if named.startswith("intruder-") and named != f"intruder-{r.trial_id}":
                count += 1
    return count


def test_at_j8_an_agent_reading_its_siblings_environments_makes_no_step_in_their_trials(
    tmp_path, bwrap
):
    records = run_exec(tmp_path, command(tmp_path, INTRUDER), trials=8, concurrency=8)
    assert len(records) == 8
    assert foreign_steps(records) == 0
    assert {r.answer for r in records} == {"found 0 credentials of other trials"}


def test_without_the_sandbox_the_same_intruder_does_act_in_other_trials(tmp_path):
    """The control for the test above: the intrusion is real, so its 0 is the sandbox's."""
    with pytest.warns(IsolationWarning, match=NOT_ISOLATED):
        records = run_exec(
            tmp_path, command(tmp_path, INTRUDER, "seek"), trials=8, concurrency=8,
            sandbox="none",
        )
    assert foreign_steps(records) > 0


# Starts a grandchild in a session of its own (it would escape a kill of the agent's process
# group), checks that it runs, and ends at once.
DAEMON = r"""
import json, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", sys.argv[1]],
                         start_new_session=True)
time.sleep(0.3)
print(json.dumps({"answer": "started" if child.poll() is None else "did not start"}))
"""


def test_a_grandchild_in_its_own_session_is_gone_when_the_run_ends(tmp_path, bwrap):
    token = f"daemon-{uuid.uuid4().hex}"
    try:
        [record] = run_exec(tmp_path, command(tmp_path, DAEMON, token))
        assert record.answer == "started"
        assert gone(token) == []
    finally:
        for pid in carrying(token):  # a failing run leaves nothing behind either
            os.kill(pid, 9)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory the user may write to outside /tmp (the sandbox makes /tmp private)."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="chaoseval-outside-", dir=base))
    yield path
    shutil.rmtree(path, ignore_errors=True)


# Tries to write outside its trial, then in its working directory, HOME and /tmp; says what
# each attempt gave, and its trial directory's mode.
WRITER = r"""
import json, os, sys
results = {}
for name, path in (("outside", sys.argv[1]), ("beside_script", sys.argv[2]),
                   ("cwd", "written.txt"), ("home", os.path.expanduser("~/.cache/x")),
                   ("tmp", "/tmp/x")):
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as fh:
            fh.write("x")
        results[name] = "written"
    except OSError as exc:
        results[name] = type(exc).__name__
results["trial_mode"] = oct(os.stat(os.path.dirname(os.getcwd())).st_mode & 0o777)
print(json.dumps({"answer": json.dumps(results)}))
"""


def test_a_file_written_outside_the_trial_fails_inside_the_sandbox(tmp_path, outside, bwrap):
    target, beside = outside / "escaped.txt", tmp_path / "escaped.txt"
    [record] = run_exec(tmp_path, command(tmp_path, WRITER, str(target), str(beside)))
    seen = json.loads(record.answer or "{}")
    assert not target.exists() and not beside.exists()
    assert seen["outside"] != "written" and seen["beside_script"] != "written"
    assert seen["cwd"] == seen["home"] == seen["tmp"] == "written"


def test_the_trial_directory_is_private(tmp_path):
    """The working directory is in the trial's own 0700 directory, sandbox or not."""
    for sandbox in ("auto", "none"):
        cmd = command(tmp_path, WRITER, str(tmp_path / "x" / "a"), str(tmp_path / "x" / "b"))
        with pytest.warns(IsolationWarning) if sandbox == "none" else nullcontext():
            [record] = run_exec(tmp_path, cmd, sandbox=sandbox)
        seen = json.loads(record.answer or "{}")
        assert seen["trial_mode"] == "0o700", sandbox


def cli_run(tmp_path: Path, cmd: str, *flags: str):
    journal = tmp_path / "j.jsonl"
    result = CliRunner().invoke(
        app,
        ["run", "--agent", f"exec:{cmd}", "-s", SCENARIO, "-n", "3", "-j", "3",
         "--journal", str(journal), "--no-report", "--no-progress", *flags],
    )  # fmt: skip
    return result, journal


def test_sandbox_none_warns_once_and_the_manifest_and_report_say_so(tmp_path):
    result, journal = cli_run(tmp_path, command(tmp_path, "print('hi')\n"), "--sandbox", "none")
    assert result.exit_code == 0, result.output
    assert result.output.count(NOT_ISOLATED) == 1
    manifest = read_journal(journal).manifest
    assert manifest.isolation is not None and manifest.isolation.sandbox == "none"
    report = CliRunner().invoke(app, ["report", str(journal), "--format", "json"])
    assert NOT_ISOLATED in " ".join(json.loads(report.output)["warnings"])


def test_a_machine_without_bwrap_runs_unsandboxed_and_says_so_once(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it (the agent's path is absolute)
    result, journal = cli_run(tmp_path, command(tmp_path, "print('hi')\n"))
    assert result.exit_code == 0, result.output
    assert result.output.count(NOT_ISOLATED) == 1 and "bwrap is not installed" in result.output
    assert len(read_journal(journal).records) == 3


def test_sandbox_bwrap_refuses_to_run_without_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    result, journal = cli_run(tmp_path, command(tmp_path, "print('hi')\n"), "--sandbox", "bwrap")
    assert result.exit_code == 2 and "bubblewrap" in result.output
    assert not journal.exists()


def test_a_sandboxed_run_records_it_and_warns_nothing(tmp_path, bwrap):
    result, journal = cli_run(tmp_path, command(tmp_path, "print('hi')\n"))
    assert result.exit_code == 0 and NOT_ISOLATED not in result.output
    isolation = read_journal(journal).manifest.isolation
    assert isolation is not None and isolation.sandbox == "bwrap"


# Stopped at its timeout, it takes a moment to finish up (as an agent flushing its state
# would), then says so to the test's listener (its stdout is no longer read then): a Unix
# socket outside /tmp, the one way out of the sandbox's network that the test can listen on.
GRACEFUL = r"""
import signal, socket, sys, time
def stop(*_):
    time.sleep(0.2)
    with socket.socket(socket.AF_UNIX) as out:
        out.connect(sys.argv[1])
        out.sendall(b"stopped")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("working", flush=True)
time.sleep(60)
"""


def test_a_sandboxed_agent_gets_its_grace_at_the_timeout(tmp_path, outside, bwrap):
    """SIGTERM reaches the agent while bwrap, and so its namespace, lives on for the grace:
    sent to bwrap too, it would end the namespace and the agent with it at once."""
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(outside / "told.sock"))
        server.listen()
        server.settimeout(60)  # a bound on a hang: the agent says so within its grace
        cmd = command(tmp_path, GRACEFUL, str(outside / "told.sock"))
        # The budget must outlast the agent's start in bwrap up to its SIGTERM handler (a
        # SIGTERM before it kills the agent unheard): 10 s (3 s before), where a Python start
        # in the sandbox has taken over 1.5 s at load 11.
        # Its grace is 30 s, not 0.5: it exits as soon as it told the test, and a loaded
        # machine may take longer than 0.5 s over its 0.2 s of finishing up.
        [record] = run_exec(tmp_path, cmd, timeout=10.0, grace=30.0)
        assert record.root_cause == "timeout"
        connection, _ = server.accept()
        with connection:
            assert connection.recv(100) == b"stopped"


def test_the_settings_file_sets_the_sandbox_and_names_a_wrong_value(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chaoseval.toml").write_text('sandbox = "none"\n')
    result, _ = cli_run(tmp_path, command(tmp_path, "print('hi')\n"))
    assert result.exit_code == 0 and result.output.count(NOT_ISOLATED) == 1, result.output
    (tmp_path / "chaoseval.toml").write_text('sandbox = "off"\n')
    result, _ = cli_run(tmp_path, command(tmp_path, "print('hi')\n"), "--overwrite")
    assert result.exit_code == 2
    assert "chaoseval.toml" in result.output and "sandbox" in result.output


def test_a_script_beside_tmpdir_shows_no_other_trial(tmp_path, monkeypatch, bwrap):
    """The agent's script is shown read-only with its directory; when that directory holds
    $TMPDIR (where the trials' directories are made), the other trials stay hidden."""
    from chaoseval.agents.sandbox import Sandbox

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    sibling = Path(tempfile.mkdtemp(prefix="chaoseval-"))
    own = Path(tempfile.mkdtemp(prefix="chaoseval-"))
    script = tmp_path / "agent.py"
    script.write_text("import os, sys; print(sorted(os.listdir(sys.argv[1])))")
    argv = Sandbox(bwrap=bwrap).command([sys.executable, str(script), str(temp)], own, own)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == repr([own.name]) and sibling.exists()


def test_a_venv_under_tmp_runs_its_agent_in_the_sandbox(tmp_path, bwrap):
    """A checkout and its venv under /tmp (a CI clone may be there) stay visible: the venv's
    bin/python is a symlink out of /tmp, but Python finds its venv from the path as written.
    Before, bwrap said `execvp .../bin/python: No such file or directory`."""
    from chaoseval.agents.sandbox import resolve

    venv = fake_venv(tmp_path / "venv")
    trial = tmp_path / "trial"
    trial.mkdir()
    python = str(venv / "bin" / "python")
    argv = resolve("bwrap").command([python, "-c", "import sys; print(sys.prefix)"], trial, trial)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(venv)


def fake_venv(venv: Path) -> Path:
    """A venv whose bin/python is a symlink to this interpreter's real file."""
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).resolve().parent}\n")
    (venv / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    return venv


def test_a_command_found_on_path_under_tmp_runs_the_same_file_in_the_sandbox(
    tmp_path, monkeypatch, bwrap
):
    """`exec:python agent.py` with a venv's bin first on PATH, and `exec:myagent` with a
    script on PATH, both under /tmp (private in the sandbox). Before, bwrap's lookup on PATH
    inside fell through to another python (another sys.prefix, silently) and failed the
    script with `execvp myagent: No such file or directory`."""
    from chaoseval.agents.sandbox import private_roots, resolve

    assert any(tmp_path.is_relative_to(root) for root in private_roots())  # hidden inside
    venv = fake_venv(tmp_path / "venv")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "myagent").write_text("#!/bin/sh\necho myagent ran\n")
    (scripts / "myagent").chmod(0o755)
    monkeypatch.setenv("PATH", f"{venv / 'bin'}:{scripts}:{os.environ.get('PATH', '')}")
    trial = tmp_path / "trial"
    trial.mkdir()
    box = resolve("bwrap")
    for argv, said in (
        (["python", "-c", "import sys; print(sys.prefix)"], str(venv)),
        (["myagent"], "myagent ran"),
    ):
        command = box.command(argv, trial, trial)
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stdout.strip()) == (0, said), done.stderr


class Vanishing(ProcessAgent):
    """Its command is removed once the run has checked it (a rebuild mid-run, say): bwrap
    then fails to start it in every trial."""

    def isolate(self, mode: str):
        isolation = super().isolate(mode)
        Path(self.argv[0]).unlink()
        return isolation


def test_bwrap_failing_to_start_the_command_is_a_harness_error_not_the_agent_s_crash(
    tmp_path, bwrap
):
    """The sandbox fails to start the command (bwrap's execvp, or netrelay's, when the trial
    has a network of its own) and exits non-zero, as an agent may: the status pipe tells them
    apart (written only once the command started). Before, `bwrap: execvp ...` was booked as
    the agent's crash; an agent's own exit 1 in the sandbox stays one
    (tests/agents/test_exec_agents.py)."""
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/sh\necho '{\"answer\": \"ran\"}'\n")
    agent.chmod(0o755)
    journal = tmp_path / "j.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), [SCENARIO]),
            agent=Vanishing(str(agent), grace=0.5),
            agent_name="exec:vanishing",
            trials=1,
            seed=1,
            journal=journal,
            wall_timeout=30.0,
            references=False,
            sandbox="bwrap",
        )
    )
    [record] = read_journal(journal).records
    assert (record.status, record.root_cause) == ("not_evaluable", "harness_error"), record.error
    error = record.error or ""
    assert "could not start" in error and "No such file" in error and "--sandbox none" in error


@pytest.mark.parametrize("form", ["path", "env"])
def test_a_script_whose_interpreter_is_under_tmp_runs_in_the_sandbox(
    tmp_path, monkeypatch, bwrap, form
):
    """A script whose #! interpreter lives under /tmp, out of the script's directory, named
    by path (#!/tmp/.../python3) or looked up on PATH (#!/usr/bin/env NAME, as a CI clone's
    venv under /tmp is). The sandbox hid it: before, the first was refused before any trial
    and the second ran every trial into env's exit 127, booked as the agent's crash."""
    interpreter = tmp_path / "interp" / "chaoseval-test-python"
    interpreter.parent.mkdir()
    interpreter.symlink_to(Path(sys.executable).resolve())
    monkeypatch.setenv("PATH", f"{interpreter.parent}:{os.environ.get('PATH', '')}")
    agent = tmp_path / "agent" / "agent"
    agent.parent.mkdir()
    line = f"#!{interpreter}" if form == "path" else f"#!/usr/bin/env {interpreter.name}"
    agent.write_text(f"{line}\nprint('hi from ' + __import__('sys').executable)\n")
    agent.chmod(0o755)
    result, journal = cli_run(tmp_path, str(agent), "--sandbox", "bwrap")
    assert result.exit_code in (0, 1), result.output  # 1: the gate; the answer is wrong
    records = read_journal(journal).records
    assert [r.root_cause for r in records if r.root_cause in ("crash", "harness_error")] == []
    assert all(f"hi from {interpreter}" in (r.answer or "") for r in records), records


def test_reading_bwrap_s_status_raises_nothing(tmp_path, bwrap):
    """ExecStatus.ran() after a command bwrap started: it says so, and no exception is made
    and dropped on the way (before, ``b'"exit-code"' in data`` made a TypeError in C each
    time: bytes' ``in`` tries its needle as an int first)."""
    setup = f"""
    import subprocess
    from pathlib import Path
    from chaoseval.agents.sandbox import ExecStatus, resolve
    status = ExecStatus()
    trial = Path({str(tmp_path)!r})
    argv = resolve("bwrap").command(["/bin/true"], trial, trial, status)
    subprocess.run(argv, pass_fds=(status.writer,), check=True)
    status.started()
    """
    assert raised_in(setup, "assert status.ran()", tmp_path) == []
