"""A sandbox per ``exec:`` agent: bubblewrap (``bwrap``, Debian's ``bubblewrap``).

Without one, an exec: agent runs as the user who runs chaoseval: it can read its siblings'
environments in ``/proc/<pid>/environ`` (their per-trial credentials with them) and act in
their trials, write anywhere the user can, and leave a process in a session of its own that
outlives the run. In the sandbox each agent has

- a PID namespace of its own, with its own ``/proc``: no other trial's process is there;
- a private ``/tmp`` (and ``$TMPDIR``): the other trials' directories are not there;
- the host read-only, apart from its own trial directory (its working directory and
  ``HOME``);
- no capabilities (when chaoseval runs as root), a user namespace of its own in which no
  further one can be made (``--disable-userns``), and ``/proc/sys`` (with ``/sys``, as the
  whole host) read-only: a root agent cannot set the host's sysctls;
- its own UTS, IPC and network namespaces: a loopback on which :mod:`netrelay` listens on the
  trial's ports, handing each connection to a socket chaoseval connected to that port on the
  host (:func:`serve_ports`); the agent reaches its trial's servers, each behind the trial's
  own credential, and nothing else (docs/SECURITY.md).

When the trial ends its process group is killed as before (:mod:`chaoseval.agents.process`),
bwrap with it; the namespace's PID 1 goes, and the kernel kills whatever is left in the
namespace, sessions of their own included. ``--die-with-parent`` does the same when the
process that started bwrap dies.

Whether bwrap works here is probed once per process and mode (a run resolves it in its driver,
before any worker starts; forked and Ray workers get the answer with the agent), never per
trial. ``--sandbox auto`` (the default) runs unsandboxed where bwrap is missing or fails the
probe, and the run says so (:class:`chaoseval.errors.IsolationWarning`, the manifest, the report);
``--sandbox bwrap`` refuses to run then; ``--sandbox none`` turns the sandbox off.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import SocketStream, UNIXSocketStream

from chaoseval.agents import netrelay
from chaoseval.debian import apt_install
from chaoseval.errors import ConfigError
from chaoseval.model.records import Isolation, check_sandbox_mode

PROBE_TIMEOUT = 10.0  # seconds; bwrap starts in milliseconds
CONNECT_TIMEOUT = 10.0  # seconds for chaoseval to connect a sandboxed agent to its trial's port


# Corners of /proc that set the host's state: the sandbox's fresh /proc (--proc) leaves them
# writable to a root agent, caps dropped or not (a sysctl's check is its file's mode), and
# bwrap does not cover them when run as root. kernel.core_pattern would run a program as root
# on the host at the next crash. Shown read-only from the host's /proc instead.
_PROC_COVERED = ("sys", "sysrq-trigger", "irq", "bus")


@dataclass(frozen=True)
class Level:
    """How much of the sandbox bwrap can make here: each trial's own network namespace
    (``network``) and user namespace with no further one allowed (``userns``)."""

    network: bool = True
    userns: bool = True

    def missing(self) -> str:
        """What a sandbox of this level does not hold, as the run says it ("" when whole)."""
        gaps = []
        if not self.network:
            gaps.append("the agent shares the host's network")
        if not self.userns:
            gaps.append("the agent can create user namespaces")
        return "; ".join(gaps)


FULL = Level()
# Tried in order where the whole sandbox cannot be made (a container that refuses new network
# or user namespaces, a bwrap older than 0.8 without --disable-userns): less isolation, said.
LEVELS = (FULL, Level(network=False), Level(network=False, userns=False))


@dataclass(frozen=True)
class Relay:
    """A trial's own servers as the sandbox reaches them: ``ports`` on 127.0.0.1, asked for
    through the Unix socket ``control`` (:func:`serve_ports`, :mod:`netrelay`)."""

    control: Path
    ports: frozenset[int]


@dataclass(frozen=True)
class Sandbox:
    """Where an exec: agent runs: under ``bwrap`` (its path), or as it is (``note`` says why).
    ``level`` is less than :data:`FULL` where bwrap cannot make the whole sandbox here
    (``note`` says what is missing and why)."""

    bwrap: str | None = None
    note: str = ""
    level: Level = FULL

    @property
    def isolation(self) -> Isolation:
        if self.bwrap is None:
            return Isolation(sandbox="none", note=self.note)
        if self.level.network:
            return Isolation(sandbox="bwrap", network="trial", note=self.note)
        return Isolation(sandbox="bwrap", network="host", note=self.note)

    def command(
        self,
        argv: list[str],
        trial: Path,
        cwd: Path,
        status: ExecStatus | None = None,
        relay: Relay | None = None,
    ) -> list[str]:
        """``argv`` as run for a trial whose own directory is ``trial`` (``status``: where
        the sandbox says whether it started the command; ``relay``: the trial's ports, for a
        sandbox with a network of its own)."""
        if self.bwrap is None:
            return argv
        flags = bwrap_flags(trial, argv, self.level)
        if relay is None or status is None or not self.level.network:
            report = ["--json-status-fd", str(status.writer)] if status is not None else []
            return [self.bwrap, *flags, *report, "--chdir", str(cwd), "--", *argv]
        status.relayed = True  # the relay, not bwrap, says the command started
        ports = ",".join(str(p) for p in sorted(relay.ports))
        inner = [sys.executable, "-I", "-S", netrelay.__file__, str(relay.control)]
        inner += [str(status.writer), ports, "--", *argv]
        return [self.bwrap, *flags, "--chdir", str(cwd), "--", *inner]

    def check(self, argv: list[str]) -> None:
        """ConfigError, before any trial, when the sandbox does not find ``argv[0]`` as it is
        found here, or cannot run its ``#!`` interpreter: else every trial would fail in bwrap
        (``execvp``), or run another program silently."""
        if self.bwrap is not None:
            _check(self.bwrap, argv[0], os.environ.get("PATH", ""), tempfile.gettempdir())

    def env(self, env: dict[str, str], home: Path) -> dict[str, str]:
        """The agent's environment: in the sandbox, ``HOME`` is writable (frameworks write
        their caches there) and Playwright still finds the browsers installed under the
        user's home."""
        if self.bwrap is None:
            return env
        out = {**env, "HOME": str(home)}
        browsers = Path(env.get("HOME", "~")).expanduser() / ".cache" / "ms-playwright"
        if "PLAYWRIGHT_BROWSERS_PATH" not in env and browsers.is_dir():
            out["PLAYWRIGHT_BROWSERS_PATH"] = str(browsers)
        return out


# Run inside the sandbox by Sandbox.check: where the command is found on PATH, and whether its
# #! interpreter, if it has one, can be run there.
_FINDS = """
import os, shutil, sys
found = shutil.which(sys.argv[1])
print(found)
try:
    with open(found or "", "rb") as fh:
        head = fh.readline(512)
except OSError:
    head = b""
words = [w.decode(errors="replace") for w in head[2:].split()] if head.startswith(b"#!") else []
if words:
    print(words[0] if os.access(words[0], os.X_OK) else "missing " + words[0])
    if os.path.basename(words[0]) == "env":
        name = next((w for w in words[1:] if not w.startswith("-") and "=" not in w), "")
        print((shutil.which(name) if name and "/" not in name else None) or "")
"""


class ExecStatus:
    """bwrap's ``--json-status-fd`` for one run of a command: bwrap writes an ``exit-code``
    document only once its execvp of the command succeeded (bubblewrap 0.3.2 and later), so
    a command that exits without one never ran: bwrap itself failed (a mount, a namespace,
    the command not found inside), which is no failure of the agent's."""

    def __init__(self) -> None:
        self.reader, self.writer = os.pipe()
        self.relayed = False  # netrelay writes STARTED once it started the command

    def started(self) -> None:
        """The command was started: bwrap holds the write end now, we need it no more."""
        if self.writer >= 0:
            os.close(self.writer)
            self.writer = -1

    def ran(self) -> bool:
        """Whether bwrap, now gone, had started the command (what it wrote is in the pipe)."""
        os.set_blocking(self.reader, False)
        data = b""
        try:
            while chunk := os.read(self.reader, 4096):
                data += chunk
        except BlockingIOError:
            pass
        # find, not `in`: bytes' `in` tries its needle as an int first, a TypeError raised and
        # dropped in C on every call (tests/cerrors.py)
        return data.find(netrelay.STARTED if self.relayed else b'"exit-code"') >= 0

    def close(self) -> None:
        self.started()
        os.close(self.reader)


def _level(bwrap: str) -> Level:
    return probe(bwrap)[0] or FULL


_CHECKED: set[tuple[str, str, str, str]] = set()  # commands found alike: asked once a process


def _check(bwrap: str, command: str, path: str, temp: str) -> None:
    """:meth:`Sandbox.check` for ``command`` on this ``PATH`` and temp dir. A success is kept
    (the probe starts an interpreter: a run's worth of 0.2 s on a loaded machine); a
    failure is asked again, as the user fixes it."""
    if (bwrap, command, path, temp) in _CHECKED:
        return
    here = shutil.which(command)
    with tempfile.TemporaryDirectory(prefix="chaoseval-check-") as trial:
        probe = [sys.executable, "-I", "-S", "-c", _FINDS, command]
        flags = bwrap_flags(Path(trial), [command], _level(bwrap))
        argv = [bwrap, *flags, "--chdir", trial, "--", *probe]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            done = subprocess.CompletedProcess(argv, -1, "", str(exc))
    seen = done.stdout.splitlines()
    fix = "put it outside " + " and ".join(private_roots()) + ", or run with --sandbox none"
    if done.returncode != 0 or not seen:
        why = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        raise ConfigError(f"exec: the sandbox cannot run {command!r} ({why[:200]}); {fix}")
    there, interpreter = seen[0], seen[1:]
    if there != str(here):
        raise ConfigError(
            f"exec: {command!r} is {here} here but {there} in the sandbox (its /tmp is "
            f"private); {fix}"
        )
    if interpreter and interpreter[0].startswith("missing "):
        raise ConfigError(
            f"exec: {command!r} starts with #!{interpreter[0].removeprefix('missing ')}, "
            f"which the sandbox cannot run (its /tmp is private); {fix}"
        )
    _check_env_program(command, here, interpreter[1:])
    _CHECKED.add((bwrap, command, path, temp))


def _check_env_program(command: str, here: str | None, seen: list[str]) -> None:
    """A ``#!/usr/bin/env NAME`` script must find NAME in the sandbox as it is found here:
    else env exits 127 in every trial, or the script runs under another interpreter."""
    name = env_program(shebang(here or command))
    if name is None or "/" in name or not seen:
        return
    outside, inside = shutil.which(name), seen[0] or None
    if inside != (os.path.abspath(outside) if outside else None):
        raise ConfigError(
            f"exec: {command!r} starts with #!/usr/bin/env {name}: {name} is {outside} here "
            f"but {inside or 'not found'} in the sandbox; put it outside "
            + " and ".join(private_roots())
            + ", name the interpreter in the command (exec:python agent.py), or run with "
            "--sandbox none"
        )


def private_roots() -> list[str]:
    """The directories every sandbox sees empty: /tmp, and the temporary directory where the
    trials' own directories are made (when it is elsewhere)."""
    roots = ["/tmp"]
    temp = os.path.realpath(tempfile.gettempdir())
    if temp not in ("/", "/tmp"):
        roots.append(temp)
    return roots


def _needed(argv: list[str]) -> list[str]:
    """What an agent's command needs to see: the paths it names, as written and resolved (a
    venv's ``bin/python`` is a symlink out of the venv, but Python finds its venv from the
    path as written), the file a command named without a path is found as on PATH (bwrap
    looks it up on the same PATH inside: hidden there, it found another ``python`` or
    none), chaoseval's own interpreter prefix and source tree (a checkout or venv under
    /tmp, as a CI clone may be, must not vanish in the sandbox), and the installation the
    environment points at (:func:`_installations`)."""
    paths = [os.path.abspath(a) for a in argv if os.path.isabs(a)]
    found = shutil.which(argv[0]) if argv and not os.path.isabs(argv[0]) else None
    if found is not None:
        paths.insert(0, os.path.abspath(found))
    command = found or (argv[0] if argv else "")
    paths += [p for p in interpreter_paths(command) if os.path.isabs(p)]
    paths += [sys.prefix, str(Path(__file__).resolve().parents[2])]
    paths += _installations(os.environ)
    out: list[str] = []
    for path in paths:
        if not os.path.exists(path):
            continue
        for form in (path, os.path.realpath(path)):
            parent = Path(form).parent
            if parent.name == "bin" and (parent.parent / "pyvenv.cfg").is_file():
                form = str(parent.parent)  # the venv's bin/python: the whole venv
            elif Path(form).name == "bin" and (parent / "pyvenv.cfg").is_file():
                form = str(parent)  # a venv's bin on PATH: the whole venv
            if form not in out:
                out.append(form)
    return out


# Where an agent finds its own installation from its environment: a Node agent's packages in
# NODE_PATH, a Python agent's in PYTHONPATH or its VIRTUAL_ENV, its tools on PATH. Such a path
# under /tmp vanished in the sandbox (`Cannot find module 'openai'` in every trial).
INSTALL_VARIABLES = ("PATH", "NODE_PATH", "PYTHONPATH", "VIRTUAL_ENV")


def _installations(env: Mapping[str, str]) -> list[str]:
    """The absolute paths named in ``env``'s :data:`INSTALL_VARIABLES` (shown read-only
    where they lie under a private root, never the root itself: :func:`_exposed`)."""
    named = (p for var in INSTALL_VARIABLES for p in env.get(var, "").split(os.pathsep))
    return [os.path.abspath(p) for p in named if os.path.isabs(p)]


def shebang(path: str) -> list[str]:
    """The words of ``path``'s ``#!`` line (none for a binary, a missing file, no ``#!``)."""
    try:
        with open(path, "rb") as fh:
            head = fh.readline(512)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    return [w.decode(errors="replace") for w in head[2:].split()]


def env_program(words: list[str]) -> str | None:
    """The program a ``#!/usr/bin/env [-S] NAME ...`` line looks up on PATH, else None."""
    if not words or os.path.basename(words[0]) != "env":
        return None
    return next((w for w in words[1:] if not w.startswith("-") and "=" not in w), None)


def interpreter_paths(command: str) -> list[str]:
    """What running ``command`` runs first: its ``#!`` interpreter, and for ``env NAME`` the
    file NAME is found as on PATH here. A script's ``#!/usr/bin/env python3`` with a venv
    under /tmp first on PATH (a CI clone's) must find that venv's python3 in the sandbox
    too: hidden, env found another python3 or none and exited 127, booked as a crash."""
    words = shebang(command) if command else []
    if not words:
        return []
    name = env_program(words)
    found = shutil.which(name) if name and "/" not in name else None
    return [words[0], *([os.path.abspath(found)] if found else [])]


def _exposed(argv: list[str], roots: list[str]) -> list[str]:
    """Paths the command needs inside a private directory (an agent script in /tmp), shown
    read-only: the file's directory, or the file alone when that directory is /tmp itself."""
    out: list[str] = []
    for path in _needed(argv):
        if path in roots or not any(Path(path).is_relative_to(r) for r in roots):
            continue
        shown = path if os.path.isdir(path) else os.path.dirname(path)
        shown = path if shown in roots else shown
        if shown not in out:
            out.append(shown)
    return out


def bwrap_flags(trial: Path, argv: list[str], level: Level = FULL) -> list[str]:
    """bwrap's options for an agent whose trial directory is ``trial``."""
    roots = private_roots()
    flags = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for name in _PROC_COVERED:
        flags += ["--ro-bind-try", f"/proc/{name}", f"/proc/{name}"]
    for root in roots:
        flags += ["--tmpfs", root]
    exposed = _exposed(argv, roots)
    for path in exposed:
        flags += ["--ro-bind", path, path]
    for root in roots:  # a shown directory holding $TMPDIR must not show the trials in it
        if any(Path(root).is_relative_to(path) for path in exposed):
            flags += ["--tmpfs", root]
    own = os.path.realpath(trial)
    flags += ["--bind", own, own, "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if level.userns:  # as root the agent stays uid 0, mapped to root: the files it writes too
        flags += ["--unshare-user", "--disable-userns"]
    if level.network:
        flags += ["--unshare-net"]  # its loopback alone; netrelay brings the trial's ports
    flags += ["--die-with-parent"]
    if os.geteuid() == 0:  # root keeps every capability in the sandbox unless told
        flags += ["--cap-drop", "ALL"]
    return flags


@functools.cache
def probe(bwrap: str) -> tuple[Level | None, str]:
    """The most bwrap can isolate here, with why not more; (None, why) when it cannot run."""
    first = ""
    for level in LEVELS:
        why = _try(bwrap, level)
        if why is None:
            return level, (f"{level.missing()} ({first})" if first else "")
        first = first or why
    return None, first


def _try(bwrap: str, level: Level) -> str | None:
    """None when bwrap runs a command with the trials' options at ``level``, else why not."""
    with tempfile.TemporaryDirectory(prefix="chaoseval-probe-") as trial:
        true = shutil.which("true") or "/bin/true"
        argv = [bwrap, *bwrap_flags(Path(trial), [], level), "--chdir", trial, "--", true]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap did not run here ({exc})"
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        return f"bwrap cannot make a sandbox here ({why[0][:200]})"
    return None


def resolve(mode: str) -> Sandbox:
    """The sandbox ``--sandbox MODE`` gives on this machine (probed once per process)."""
    check_sandbox_mode(mode)
    if mode == "none":
        return Sandbox(note="--sandbox none")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        level, why = None, "bwrap is not installed (apt-get install bubblewrap)"
    else:
        level, why = probe(bwrap)
    if level is not None:
        return Sandbox(bwrap=bwrap, note=why, level=level)
    if mode == "bwrap":
        raise ConfigError(f"--sandbox bwrap: {why}; or run with --sandbox none")
    return Sandbox(note=why)


@contextlib.asynccontextmanager
async def serve_ports(control: Path, ports: Collection[int]) -> AsyncIterator[Relay]:
    """chaoseval's side of a sandboxed trial's network (:mod:`netrelay`): on the Unix socket
    ``control``, each request for one of ``ports`` is answered with a socket connected to it
    on 127.0.0.1; a request for any other port gets nothing. For the block."""
    allowed = frozenset(ports)
    listener = await anyio.create_unix_listener(control)

    async def answer(stream: SocketStream) -> None:
        async with stream:
            assert isinstance(stream, UNIXSocketStream)  # what a Unix listener accepts
            with contextlib.suppress(OSError, anyio.EndOfStream, anyio.BrokenResourceError):
                asked = b""
                while len(asked) < 2:
                    asked += await stream.receive(2 - len(asked))
                port = int.from_bytes(asked, "big")
                if port not in allowed:
                    return  # closed with no descriptor: the relay drops the connection
                with await _connect(port) as sock:
                    await stream.send_fds(b"\0", [sock.fileno()])

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, answer)
        try:
            yield Relay(control, allowed)
        finally:
            # Nothing awaited here: in the cancelled scope it would raise Cancelled, which
            # the scope then absorbs with whatever ended the trial (its error lost).
            tg.cancel_scope.cancel()


async def _connect(port: int) -> socket.socket:
    """A socket connected to ``port`` on 127.0.0.1, without blocking the trial's loop."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setblocking(False)
        code = sock.connect_ex(("127.0.0.1", port))
        if code == errno.EINPROGRESS:
            with anyio.fail_after(CONNECT_TIMEOUT):
                await anyio.wait_writable(sock)
            code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            raise OSError(code, os.strerror(code))
    except BaseException:
        sock.close()
        raise
    return sock


def ensure_bubblewrap() -> str | None:
    """None when bwrap is there (installed now if need be), else why it cannot be."""
    if shutil.which("bwrap"):
        return None
    reason = apt_install("bubblewrap")
    if reason is not None:
        return reason
    return None if shutil.which("bwrap") else "apt-get installed bubblewrap but bwrap is missing"
