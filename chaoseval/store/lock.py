"""One writer per journal: ``chaoseval run`` holds ``<journal>.d/.lock`` while it writes.

The lock is a POSIX record lock (``fcntl.lockf``) on that file, not on the journal: the
journal is replaced by ``--overwrite`` (a new inode at the same path), its lock file never is,
so the lock guards the path. The kernel drops the lock with its process, however it ends
(SIGKILL included), and a forked worker does not inherit it, so a run's workers outliving it
for a moment never keep the journal locked. A second writer is refused at once, before it
truncates, appends or removes anything, with the holder's pid and command line; readers
(report, gate, summary, replay) never take the lock and never wait for it; a reader about to
keep something beside the journal (store.colcache) asks whether a writer holds it
(:func:`writing`) and keeps nothing while one does.

The lock file is removed when its holder lets go (and ``<journal>.d`` with it when nothing
else is kept there), so a run that keeps no artifacts leaves nothing beside its journal. A
writer that opened the file just before it was removed locks a file no longer at the path;
it sees that (its descriptor's inode is not the path's) and opens the path again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shlex
import struct
import sys
from pathlib import Path

from chaoseval import redact
from chaoseval.errors import JournalError, disk_full, stop_for
from chaoseval.store.artifacts import LOCK, store_root

__all__ = ["JournalBusy", "JournalLock", "writing"]

# struct flock on Linux (x86-64, arm64): l_type, l_whence, l_start, l_len, l_pid.
_FLOCK = "hhqqi"
# Lock files this process holds: a POSIX lock is per process, so a second writer in the same
# process would be granted it (and closing its descriptor would drop the first one's).
_held: set[str] = set()


class JournalBusy(JournalError):
    """Another process is writing this journal."""


class JournalLock:
    """The write lock of one journal (:meth:`acquire`, then :meth:`release`)."""

    def __init__(self, journal: Path):
        self.journal = journal
        self.path = store_root(journal) / LOCK
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or JournalBusy naming the process that holds it."""
        key = os.path.realpath(self.path)
        if key in _held:
            raise self._busy(os.getpid())
        while self._fd is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except FileNotFoundError:  # its directory was removed by a holder letting go
                continue
            except OSError as exc:  # a read-only directory, a full disk
                if disk_full(exc):
                    raise stop_for(exc, self.path) from exc
                raise JournalError(
                    f"{self.path}: cannot make the journal's lock ({exc.strerror or exc}); "
                    "give a --journal in a directory this user can write"
                ) from exc
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EACCES, errno.EAGAIN):
                    os.close(fd)
                    raise
                holder = _holder_pid(fd)
                os.close(fd)
                raise self._busy(holder) from None
            if _same_file(fd, self.path):
                self._fd = fd
            else:  # removed or replaced after we opened it: lock the file at the path
                os.close(fd)
        _held.add(key)
        self._note_holder()

    def _note_holder(self) -> None:
        """This process's pid and command line in the file, for a refused writer to name
        where /proc does not show it (another user's process, another system)."""
        assert self._fd is not None
        command = redact.redact(_command_line(os.getpid()) or "")  # a key in it is not written
        note = f"{os.getpid()}\n{command}\n".encode()
        with contextlib.suppress(OSError):  # a note only: the lock itself is held
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, note, 0)

    def release(self) -> None:
        if self._fd is None:
            return
        _held.discard(os.path.realpath(self.path))
        # Removed while still locked: a writer that opened this inode finds it gone and opens
        # the path again, never two holders. Only our own file: one put there after ours was
        # removed by hand is another run's lock.
        if _same_file(self._fd, self.path):
            with contextlib.suppress(OSError):
                self.path.unlink()
        with contextlib.suppress(OSError):
            self.path.parent.rmdir()  # only when nothing else is kept there
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> JournalLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _busy(self, pid: int | None) -> JournalBusy:
        if pid is None:
            pid = self._noted_pid()
        who = "another process"
        if pid is not None:
            command = _command_line(pid) or self._noted_command(pid)
            who = f"process {pid}" + (f" ({redact.redact(command)})" if command else "")
        return JournalBusy(
            f"{self.journal} is being written by {who}: a journal has one writer at a time "
            f"(lock {self.path}). Wait for that run to end or stop it, or give this run "
            "another --journal; report, gate and summary can read the journal meanwhile."
        )

    def _noted(self) -> list[str]:
        try:
            return self.path.read_text(errors="replace").split("\n")
        except OSError:
            return []

    def _noted_pid(self) -> int | None:
        first = self._noted()[:1]
        return int(first[0]) if first and first[0].isdigit() else None

    def _noted_command(self, pid: int) -> str | None:
        noted = self._noted()
        if len(noted) > 1 and noted[0] == str(pid) and noted[1]:
            return noted[1]
        return None


def writing(journal: Path) -> bool:
    """Whether a writer holds ``journal``'s lock now. Asked of the kernel (F_GETLK) without
    taking the lock: a reader that asks neither waits nor keeps a writer out for a moment (a
    reader holding it would refuse a ``run`` started meanwhile). False where it cannot tell
    (not Linux, no lock file: no writer)."""
    path = store_root(journal) / LOCK
    if os.path.realpath(path) in _held:
        return True  # this process writes it (its own lock does not conflict with itself)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if sys.platform != "linux":
            return False
        query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        kind = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, query))[0]
        return bool(kind != fcntl.F_UNLCK)  # (its pid may be 0: in another pid namespace)
    except OSError:
        return False
    finally:
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        on_path = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (on_path.st_dev, on_path.st_ino)


def _holder_pid(fd: int) -> int | None:
    """The pid holding the lock on ``fd``'s file (F_GETLK), where the kernel says it."""
    if sys.platform != "linux":
        return None
    query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, query)
    except OSError:
        return None
    kind, _, _, _, pid = struct.unpack(_FLOCK, answer)
    return pid if kind != fcntl.F_UNLCK and pid > 0 else None


def _command_line(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    words = [w.decode(errors="replace") for w in raw.split(b"\0") if w]
    return shlex.join(words)[:2000] or None
