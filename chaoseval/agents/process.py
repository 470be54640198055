"""Agents as processes, in any language: ``--agent 'exec:COMMAND'``.

COMMAND runs once per trial (split like a shell would, but run without one unless the user
writes ``sh -c '...'``; leading ``NAME=value`` words set variables, as in a shell:
``exec:CHAOSEVAL_USER=lines python agent.py``), in a process group of its own, in the
bubblewrap sandbox where the machine allows it (:mod:`chaoseval.agents.sandbox`: its own PID
namespace and /proc, a private /tmp, the host read-only but its trial's directory, a network
that reaches its trial's servers and nothing else), with a fresh working directory inside
the trial's own directory (0700; in the sandbox ``HOME`` is there too), and talks to chaoseval
only over the wire and its environment:

=======================  ===================================================================
variable                 value
=======================  ===================================================================
OPENAI_BASE_URL          the trial's model channel, OpenAI style (``.../v1``)
OPENAI_API_KEY           the trial's own key on it (names the trial; never the real key)
ANTHROPIC_BASE_URL       the same channel for the ``anthropic`` SDK (it adds ``/v1/messages``)
ANTHROPIC_API_KEY        the same per-trial key
CHAOSEVAL_MCP_URL        the trial's tools over MCP (streamable HTTP)
CHAOSEVAL_TOOLS_URL      the trial's tools over plain HTTP (``POST /tools/NAME``)
CHAOSEVAL_UI_URL         the trial's UI page (scenarios with a page; chaoseval.channels.browser)
CHAOSEVAL_INSTRUCTION    the task (also written on stdin)
CHAOSEVAL_USER           not set by chaoseval: ``lines`` (set by you) opts the agent into the
                         user on stdin and stdout (:mod:`chaoseval.agents.userlines`); else a
                         conversational scenario's user is the ``ask_user`` tool of its
                         MCP and HTTP tools (:mod:`chaoseval.engine.askuser`)
CHAOSEVAL_MEMORY_URL     the agent's memory (``GET``): ``[{"key": ..., "value": ...}]``, on
                         the tools' server; read when the response is written, so a memory
                         fault counts as delivered only if the agent fetched it
CHAOSEVAL_TRIAL_ID       scenario/cell/index
CHAOSEVAL_MODEL          the model name to ask for
CHAOSEVAL_TEMPERATURE    the trial's sampling temperature (the channel applies it to requests
                         that send none; an agent that sends its own overrides it)
CHAOSEVAL_MODEL_SEED     the trial's sampling seed, when one is set (likewise)
CHAOSEVAL_SEED           the trial seed
CHAOSEVAL_DEADLINE       Unix time (seconds) at which the trial is stopped
TZ                       the trial clock's UTC offset, as POSIX TZ
=======================  ===================================================================

The model keys of chaoseval's own environment (:data:`MODEL_VARIABLES`) are never passed on:
the agent's model is reached through the trial's model channel (``chaoseval-sim``, or the
``--model-endpoint`` the channel forwards to with the real key), never with the real key. A
scenario without a reference solution has no ``chaoseval-sim`` to answer: without a
``--model-endpoint`` its agents get no model variables.

The answer is the last stdout line when it is a JSON object with ``answer`` (optional
``gave_up``, ``data``), else the whole of stdout; when that object's ``answer`` is a string
holding such an object (a framework agent printing its model's answer JSON inside its own),
the inner object is the answer, one level only. stdout and stderr are kept as the trial's
artifacts, bounded and redacted. When the trial's deadline passes, the group gets SIGTERM and,
after a short grace, SIGKILL (in the sandbox SIGTERM goes to the agent's processes, not to
bwrap, and the namespace goes with bwrap); the trial is then a timeout. A non-zero exit is a
crash that names its code (bwrap failing to start the command is a harness error). Either
way the run goes on. If the process that started the agent dies first (a worker killed from
outside), the agent's group is killed by :mod:`chaoseval.agents.guard`.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import shlex
import shutil
import signal
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from pathlib import Path
from subprocess import PIPE
from urllib.parse import urlsplit

import anyio
from anyio.abc import ByteReceiveStream, Process

from chaoseval.agents import crash, guard, sandbox, userlines
from chaoseval.agents.output import (
    ANSWER_LIMIT,
    STDERR_LIMIT,
    STDOUT_LIMIT,
    TAIL_LIMIT,
    Capture,
    parse_answer,
)
from chaoseval.agents.trialdir import trial_directory
from chaoseval.agents.userlines import UserLines
from chaoseval.channels.asgi import single
from chaoseval.channels.browser.server import serve_pages
from chaoseval.channels.hub import ToolHub
from chaoseval.channels.model.session import (
    ModelEndpoint,
    UpstreamConfig,
    run_channels,
    trial_endpoint,
)
from chaoseval.engine.executors.reap import descendants
from chaoseval.engine.toolbox import ToolBox
from chaoseval.errors import ChaosevalError, ConfigError, HarnessError, disk_full, stop_for
from chaoseval.model.records import AgentOutput, Isolation
from chaoseval.seams.agent import Episode, TrialLink
from chaoseval.store import artifacts

PREFIX = "exec:"
GRACE = 2.0  # seconds between SIGTERM and SIGKILL
DRAIN = 1.0  # seconds to wait for output pipes once the process is gone
MODEL_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")


class AgentProcessFailed(ChaosevalError):
    """The agent's process exited with a non-zero code: the agent crashed (judged as a crash)."""

    def __init__(self, code: int, summary: str):
        self.code = code
        self.summary = summary  # the error line of its stderr (chaoseval.agents.crash)
        detail = f"; stderr: {summary}" if summary else ""
        super().__init__(f"agent process exited with code {code}{detail}")


class ProcessAgent:
    """Runs a command per trial with the trial's channels in its environment."""

    clock = "real"  # a process lives on wall-clock time; its waits cannot be simulated

    def __init__(
        self,
        command: str | list[str],
        *,
        grace: float = GRACE,
        upstream: UpstreamConfig | None = None,
    ):
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        words = _assignments(argv)  # leading NAME=value words: the agent's variables
        self.assigned = dict(w.partition("=")[::2] for w in words)
        argv = argv[len(words) :]
        if not argv:
            raise ConfigError("exec: needs a command, e.g. --agent 'exec:python my_agent.py'")
        # The process runs in a fresh directory: a path the user wrote relative to where
        # chaoseval was started ('exec:python examples/agent.py') must still name that file.
        # absolute(), not resolve(): a venv's python is a symlink that must stay one.
        argv = [str(Path(a).absolute()) if _relative_file(a) else a for a in argv]
        _check_script(argv)
        if shutil.which(argv[0]) is None:  # said before any trial runs, not as 100 crashes
            raise ConfigError(f"exec: {argv[0]!r} is not an executable file or on PATH")
        self.argv = argv
        self.grace = grace
        self.upstream = upstream or UpstreamConfig()  # --model-endpoint sets it
        # The run sets it once (isolate); an agent run by hand probes on its first trial.
        self.sandbox: sandbox.Sandbox | None = None
        self._hub: ToolHub | None = None

    @property
    def stop_grace(self) -> float:
        """Seconds it may take to stop once its trial is cancelled (SIGTERM, then SIGKILL):
        the executors wait that long, and their own grace, before killing its worker."""
        return self.grace

    @classmethod
    def from_spec(cls, spec: str) -> ProcessAgent:
        return cls(spec.removeprefix(PREFIX))

    def isolate(self, mode: str) -> Isolation:
        """Run every trial under ``--sandbox MODE`` (chaoseval.agents.sandbox); what it gives."""
        self.sandbox = sandbox.resolve(mode)
        self.sandbox.check(self.argv)  # a command the sandbox cannot run: said once, here
        return self.sandbox.isolation

    @asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """One tool hub and one model-channel server for every trial of the run."""
        async with ToolHub.serving() as hub, run_channels(self.upstream):
            self._hub = hub
            try:
                yield
            finally:
                self._hub = None

    async def run(self, episode: Episode) -> AgentOutput:
        try:
            return await self._run(episode)
        except BaseExceptionGroup as group:
            # The channels' task groups wrap what ended the trial; the judge must see the
            # process's own outcome (a crash with its code), not a group.
            raise single(group) from None

    async def _run(self, episode: Episode) -> AgentOutput:
        async with AsyncExitStack() as stack:
            try:
                argv, env, workdir, status, lines = await self._set_up(episode, stack)
            except OSError as exc:  # no temp dir, no port: chaoseval's trouble, not the agent's
                if disk_full(exc):  # nor can the run go on
                    raise stop_for(exc, exc.filename or tempfile.gettempdir()) from exc
                raise HarnessError(f"exec: the trial could not be set up: {exc}") from exc
            return await self._run_process(
                argv, env, workdir, episode.instruction, status, episode.link, lines
            )
        raise AssertionError("unreachable")  # pragma: no cover - the block returns or raises

    async def _set_up(
        self, episode: Episode, stack: AsyncExitStack
    ) -> tuple[list[str], dict[str, str], Path, sandbox.ExecStatus | None, UserLines | None]:
        """The trial's servers, directory and environment: the command to run, with what, and
        the user's line protocol when the agent's environment asks for it."""
        toolbox, link = episode.tools, episode.link
        if not isinstance(toolbox, ToolBox) or link is None:  # the wire serves the trial's
            raise HarnessError("exec: agents need an episode built by a trial")
        inherited = {k: v for k, v in os.environ.items() if k not in self._withheld}
        # One way to the user: on stdin and stdout when the agent opted in, else ask_user.
        lines = userlines.wanted({**inherited, **self.assigned})
        user = None if lines else episode.user
        hub = self._hub  # outside a run's session (run by hand): a hub of its own
        if hub is None:
            hub = await stack.enter_async_context(ToolHub.serving())
        # The memory is served, not handed over in a file: a fetch is a read chaoseval sees, so
        # a memory fault is delivered only to an agent that read its memory.
        urls = await stack.enter_async_context(hub.trial(toolbox, episode.serve_memory, user))
        model: ModelEndpoint | None = None
        if self.upstream.endpoint or episode.reference is not None:
            model = await stack.enter_async_context(trial_endpoint(episode, self.upstream))
        # The trial's own directory (0700): the agent's working directory and its HOME in the
        # sandbox, removed with it.
        trial = stack.enter_context(trial_directory())
        workdir, home = trial / "work", trial / "home"
        workdir.mkdir()
        home.mkdir()
        ui = await stack.enter_async_context(serve_pages(episode)) if episode.has_ui else ""
        env = {
            **inherited,
            **self.assigned,
            **_model_env(model),
            "CHAOSEVAL_MCP_URL": urls.mcp,
            "CHAOSEVAL_TOOLS_URL": urls.tools,
            **({"CHAOSEVAL_UI_URL": ui} if ui else {}),
            "CHAOSEVAL_INSTRUCTION": episode.instruction,
            "CHAOSEVAL_MEMORY_URL": urls.memory,
            "CHAOSEVAL_TRIAL_ID": link.trial_id,
            "CHAOSEVAL_MODEL": episode.model.model,
            **_sampling_env(episode),
            "CHAOSEVAL_SEED": str(episode.trial_seed),
            "CHAOSEVAL_DEADLINE": _deadline(),
            "TZ": _posix_tz(episode),
        }
        box = self._sandbox()
        status, relay = None, None
        if box.bwrap is not None:  # whether the sandbox started the command, when it fails
            status = stack.enter_context(contextlib.closing(sandbox.ExecStatus()))
        if box.bwrap is not None and box.level.network:  # its network: the trial's ports only
            served = [urls.mcp, urls.tools, urls.memory, ui, model.base_url if model else ""]
            ports = {p for p in (urlsplit(u).port for u in served if u) if p}
            control = trial / "net.sock"
            relay = await stack.enter_async_context(sandbox.serve_ports(control, ports))
        argv = box.command(self.argv, trial, workdir, status, relay)
        talk = UserLines(episode.user, link) if lines else None
        return argv, box.env(env, home), workdir, status, talk

    @property
    def _withheld(self) -> set[str]:
        """chaoseval's model keys, and --model-key-env's variable whatever its name."""
        return {*MODEL_VARIABLES, self.upstream.key_env}

    def _sandbox(self) -> sandbox.Sandbox:
        if self.sandbox is None:
            self.sandbox = sandbox.resolve("auto")
        return self.sandbox

    async def _run_process(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        instruction: str,
        status: sandbox.ExecStatus | None = None,
        link: TrialLink | None = None,
        lines: UserLines | None = None,
    ) -> AgentOutput:
        stdout = Capture(STDOUT_LIMIT, TAIL_LIMIT, ANSWER_LIMIT)
        stderr = Capture(STDERR_LIMIT, TAIL_LIMIT)  # the tail: where a crash's error is
        mark = guard.expect()  # covers the agent until its group is written down
        try:
            process = await anyio.open_process(
                argv, stdin=PIPE, stdout=PIPE, stderr=PIPE, cwd=cwd, env={**env, guard.MARK: mark},
                start_new_session=True,  # its own process group: the whole tree is stopped
                pass_fds=() if status is None else (status.writer,),
            )  # fmt: skip
        except OSError as exc:  # it was found before the run: something broke underneath
            raise HarnessError(f"exec: cannot start {self.argv[0]!r}: {exc}") from exc
        if status is not None:
            status.started()
        guard.watch(process.pid, mark)  # killed with its group if this process dies first
        try:
            async with anyio.create_task_group() as tg:
                if lines is None:
                    tg.start_soon(_feed, process, instruction)
                else:  # stdin stays open: the user's replies come on it
                    assert process.stdin is not None
                    tg.start_soon(lines.serve, process.stdin, instruction)
                tg.start_soon(_drain, process.stdout, stdout, lines)
                tg.start_soon(_drain, process.stderr, stderr)
                await process.wait()
                # Children left in the group would hold the pipes open: the agent is done.
                _signal_group(process, signal.SIGKILL)
                tg.cancel_scope.deadline = anyio.current_time() + DRAIN
        finally:
            with anyio.CancelScope(shield=True):
                await self._stop(process)
                await process.aclose()
                guard.forget(process.pid)
                _keep(stdout, stderr)
                if lines is not None:
                    lines.close()
        code = process.returncode
        if code and status is not None and not status.ran():
            raise HarnessError(  # bwrap failed before the agent's command started
                f"exec: the sandbox (bwrap) could not start {self.argv[0]!r} (exit code "
                f"{code}: {crash.summary(stderr.text())}); what it needs under "
                f"{' or '.join(sandbox.private_roots())} is hidden in the sandbox: put it "
                "elsewhere, or run with --sandbox none"
            )
        if code:
            raise AgentProcessFailed(code, crash.summary(stderr.text()))  # redacted, then cut
        return parse_answer(stdout, link)

    async def _stop(self, process: Process) -> None:
        """SIGTERM to the group, SIGKILL after the grace; nothing left running."""
        if process.returncode is not None:
            return
        if self._sandbox().bwrap is None:
            _signal_group(process, signal.SIGTERM)
        else:
            # bwrap itself would die of SIGTERM and take the namespace with it at once: the
            # agent's processes get it (the namespace's init ignores it), bwrap is spared.
            for pid, _ in descendants(process.pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
        with anyio.move_on_after(self.grace):
            await process.wait()
        _signal_group(process, signal.SIGKILL)
        await process.wait()


# What an interpreter runs: the first word of an exec: command that is not an option, when it
# has one of these suffixes, must be a file. A typo there ran every trial into the
# interpreter's "can't open file '/tmp/chaoseval-.../work/agnt.py'", a path in the trial's
# directory the user never wrote.
SCRIPT_SUFFIXES = {".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".rb", ".sh", ".pl", ".php"}


def _check_script(argv: list[str]) -> None:
    """ConfigError when the script the command runs is not a file, with a near name."""
    script = next((a for a in argv[1:] if not a.startswith("-")), None)
    if script is None or Path(script).suffix not in SCRIPT_SUFFIXES:
        return
    path = Path(script)
    if path.is_file():
        return
    where = path.parent if path.parent.is_dir() else Path.cwd()
    names = [p.name for p in where.iterdir() if p.suffix == path.suffix] if where.is_dir() else []
    close = difflib.get_close_matches(path.name, names, n=1)
    hint = f"; did you mean {str(where / close[0])!r}?" if close else ""
    raise ConfigError(
        f"exec: {script!r} is not a file (looked for it from {Path.cwd()}){hint}; give its "
        "path relative to where chaoseval runs, or an absolute one"
    )


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.S)


def _assignments(argv: list[str]) -> list[str]:
    """The leading ``NAME=value`` words of a command, as a shell reads them before the
    command's own name."""
    out: list[str] = []
    for word in argv:
        if not _ASSIGNMENT.fullmatch(word):
            break
        out.append(word)
    return out


def _relative_file(arg: str) -> bool:
    return not arg.startswith("-") and not Path(arg).is_absolute() and Path(arg).is_file()


async def _feed(process: Process, instruction: str) -> None:
    assert process.stdin is not None
    try:
        await process.stdin.send(instruction.encode() + b"\n")
        await process.stdin.aclose()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass  # the agent does not read stdin: it has the instruction in its environment


async def _drain(
    stream: ByteReceiveStream | None, capture: Capture, lines: UserLines | None = None
) -> None:
    if stream is None:
        return
    try:
        async for chunk in stream:
            capture.add(chunk)
            if lines is not None:
                lines.feed(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


def _signal_group(process: Process, sig: signal.Signals) -> None:
    try:
        os.killpg(process.pid, sig)  # start_new_session: the group id is the child's pid
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


def _keep(stdout: Capture, stderr: Capture) -> None:
    """stdout and stderr as the trial's artifacts (when the run keeps a store)."""
    store = artifacts.current()
    if store is None:
        return
    for name, capture in (("stdout.txt", stdout), ("stderr.txt", stderr)):
        store.write(name, capture.text(), size=capture.size)


def _model_env(model: ModelEndpoint | None) -> dict[str, str]:
    """The trial's model channel for the OpenAI and Anthropic SDKs (their own variables)."""
    if model is None:
        return {}
    return {
        "OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": model.api_key,
        "ANTHROPIC_BASE_URL": model.anthropic_base_url,
        "ANTHROPIC_API_KEY": model.api_key,
    }


def _sampling_env(episode: Episode) -> dict[str, str]:
    settings = episode.model
    env = {"CHAOSEVAL_TEMPERATURE": f"{settings.temperature:g}"}
    if settings.seed is not None:
        env["CHAOSEVAL_MODEL_SEED"] = str(settings.seed)
    return env


def _deadline() -> str:
    """When the trial's cancel scopes stop it, as Unix time ("inf" when nothing does)."""
    left = anyio.current_effective_deadline() - anyio.current_time()
    return "inf" if left == float("inf") else f"{time.time() + left:.3f}"


def _posix_tz(episode: Episode) -> str:
    """The trial clock's UTC offset as a POSIX TZ string (whose sign is inverted)."""
    offset = episode.clock.nominal_now().utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    if minutes == 0:
        return "UTC0"
    sign = "-" if minutes > 0 else "+"
    hours, mins = divmod(abs(minutes), 60)
    return f"<{'+' if minutes > 0 else '-'}{hours:02d}{mins:02d}>{sign}{hours}:{mins:02d}"


def exec_agent(spec: str) -> ProcessAgent:
    """``--agent 'exec:COMMAND'``: the seam's loader calls this for names with the prefix."""
    return ProcessAgent.from_spec(spec)
