"""A trial's own directory: made private, removed whole whatever the agent left in it.

An agent can leave a tree thousands of levels deep. ``shutil.rmtree`` (and so
``tempfile.TemporaryDirectory``) recurses once a level on Python 3.11, and its full paths
pass PATH_MAX long before that: a RecursionError was booked as the agent's crash and the
directory stayed in /tmp. :func:`remove_tree` walks down and up with one directory open at a
time, by names relative to it, never following a symlink.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

from chaoseval.errors import HarnessWarning

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@contextlib.contextmanager
def trial_directory(prefix: str = "chaoseval-") -> Iterator[Path]:
    """A fresh directory (mode 0700) for the block, removed after it. A removal that fails is
    said (:class:`HarnessWarning`, naming what is left), never charged to the trial."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        try:
            remove_tree(path)
        except OSError as exc:
            warnings.warn(
                f"could not remove the trial directory {path} ({exc}); remove it by hand",
                HarnessWarning,
                stacklevel=3,
            )


def remove_tree(path: Path) -> None:
    """Remove ``path`` and everything under it, iteratively: no recursion, no path longer
    than one name, no symlink followed (a symlink is removed, not what it points to)."""
    names: list[str] = []  # the directories walked down into, below ``path``
    fd = _open_dir(str(path), None)
    try:
        while True:
            below = _empty_but_one(fd)
            if below is not None:
                child = _open_dir(below, fd)
                os.close(fd)
                fd = child
                names.append(below)
                continue
            if not names:
                break
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(path)


def _empty_but_one(fd: int) -> str | None:
    """Removes every entry of directory ``fd`` that is not a directory; the name of one
    subdirectory left, or None when it is empty now."""
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                return entry.name
            os.unlink(entry.name, dir_fd=fd)
    return None


def _open_dir(name: str, parent: int | None) -> int:
    """``name`` under ``parent``, opened and made the owner's to empty: a directory the agent
    left unreadable or unwritable (mode 000, 500) is opened all the same, as
    ``TemporaryDirectory`` does (a symlink is never one: it is unlinked, not opened)."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        os.chmod(name, stat.S_IRWXU, dir_fd=parent)
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
    os.fchmod(fd, stat.S_IRWXU)
    return fd
