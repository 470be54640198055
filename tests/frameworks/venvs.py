"""The framework venvs of examples/ (and Node's node_modules): where they live, and building them.

    python3 tests/frameworks/venvs.py [--root DIR]     build what is missing (make frameworks)
    python3 tests/frameworks/venvs.py --where          print where they are

They live outside the clone, in ``$XDG_CACHE_HOME/chaoseval/frameworks`` (``~/.cache/...``), one
directory per framework and lock: ``NAME-KEY``, KEY a hash of the pinned lock file(s) and, for
the Python ones, of the Python version. A changed pin is a new directory, so it is built afresh,
and a second clone or a CI re-run on the same machine reuses what is there. The missing ones
are built at once (pip and npm with their own download caches), each under a file lock and
marked complete only when its install and ``pip check`` passed: two builds at once, or one
killed half way, never leave a venv that looks usable and is not.

Each build also links ``.cache/frameworks/NAME`` in the clone to the venv its lock names (and
for Node makes ``.cache/frameworks/node``: ``agent.mjs`` linked to examples/node/agent.mjs beside
a link to the shared ``node_modules``), which the commands of examples/README.md use.

Standard library only: ``make frameworks`` runs it with the system ``python3``.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
LOCAL = ROOT / ".cache" / "frameworks"  # the clone's links to the venvs its locks name
PYTHON_FRAMEWORKS = ("openai-agents", "pydantic-ai", "langgraph", "smolagents", "anthropic")
NODE_FILES = ("package.json", "package-lock.json")
DONE = ".installed"  # written last: the venv is complete


def default_root() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "chaoseval" / "frameworks"


def cache_root() -> Path:
    """Where the venvs are: ``$CHAOSEVAL_FRAMEWORKS`` (make test-frameworks sets it), else the
    user's cache."""
    return Path(os.environ.get("CHAOSEVAL_FRAMEWORKS") or default_root())


@dataclass(frozen=True)
class Env:
    """One framework's environment: a venv (Python) or a node_modules (Node)."""

    name: str
    locks: tuple[Path, ...]  # what pins it: any byte changed is another directory

    @property
    def node(self) -> bool:
        return self.name == "node"

    @property
    def key(self) -> str:
        digest = hashlib.sha256()
        if not self.node:  # a venv belongs to one Python
            digest.update(f"python{sys.version_info[0]}.{sys.version_info[1]}\n".encode())
        for lock in self.locks:
            digest.update(lock.name.encode() + b"\0" + lock.read_bytes() + b"\0")
        return digest.hexdigest()[:12]

    def path(self, root: Path) -> Path:
        return root / f"{self.name}-{self.key}"

    def ready(self, root: Path) -> bool:
        return (self.path(root) / DONE).exists()


ENVS = {
    **{n: Env(n, (EXAMPLES / "requirements" / f"{n}.txt",)) for n in PYTHON_FRAMEWORKS},
    "node": Env("node", tuple(EXAMPLES / "node" / f for f in NODE_FILES)),
}


def python_of(name: str, root: Path | None = None) -> Path:
    return ENVS[name].path(root or cache_root()) / "bin" / "python"


def node_main() -> Path:
    """examples/node/agent.mjs as linked beside the clone's link to the shared node_modules:
    run with ``node --preserve-symlinks-main`` it resolves its packages there."""
    return LOCAL / "node" / "agent.mjs"


def _install(env: Env, target: Path) -> None:
    if env.node:
        target.mkdir(parents=True)
        for lock in env.locks:
            shutil.copy(lock, target / lock.name)
        npm = ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"]
        subprocess.run(npm, cwd=target, check=True)
        return
    [lock] = env.locks
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    python = str(target / "bin" / "python")
    # Each lock is a complete pip freeze: installed as it is, then checked.
    pip = [python, "-m", "pip", "install", "-q", "--no-deps", "-r", str(lock)]
    subprocess.run(pip, check=True)
    subprocess.run([python, "-m", "pip", "check"], check=True, stdout=subprocess.DEVNULL)
    shutil.copy(lock, target / "requirements.txt")


def build(env: Env, root: Path) -> float:
    """Build ``env`` under ``root`` unless it is there; the seconds it took (0: it was there)."""
    target = env.path(root)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another build of the same lock waits, then reuses
        if (target / DONE).exists():
            return 0.0
        started = time.monotonic()
        shutil.rmtree(target, ignore_errors=True)  # what a killed build left
        _install(env, target)
        (target / DONE).write_text(f"{time.time():.0f}\n")
        return time.monotonic() - started


def _relink(link: Path, to: Path) -> None:
    """``link`` -> ``to``, replaced in one step (a concurrent reader sees the old or the new)."""
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() and os.readlink(link) == str(to):
        return
    if link.exists() and not link.is_symlink():
        shutil.rmtree(link)  # an old in-clone venv (before the cache moved out of the clone)
    fresh = link.with_name(f".{link.name}.{os.getpid()}")
    fresh.unlink(missing_ok=True)
    fresh.symlink_to(to)
    os.replace(fresh, link)


def link_clone(root: Path) -> None:
    """The clone's ``.cache/frameworks`` links to the venvs its own locks name."""
    for env in ENVS.values():
        if env.node:
            here = LOCAL / "node"
            if here.is_symlink():
                here.unlink()
            _relink(here / "node_modules", env.path(root) / "node_modules")
            _relink(here / "agent.mjs", EXAMPLES / "node" / "agent.mjs")
        else:
            _relink(LOCAL / env.name, env.path(root))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=None, help="default: " + str(cache_root()))
    parser.add_argument("--where", action="store_true", help="print the root; build nothing")
    args = parser.parse_args()
    root = (args.root or cache_root()).resolve()
    if args.where:
        print(root)
        return
    missing = [env for env in ENVS.values() if not env.ready(root)]
    started = time.monotonic()
    with ThreadPoolExecutor(max(1, len(missing))) as pool:
        seconds = pool.map(lambda e: build(e, root), missing)
        took = dict(zip([e.name for e in missing], seconds, strict=True))
    link_clone(root)
    for env in ENVS.values():
        note = f"built in {took[env.name]:.0f} s" if took.get(env.name) else "reused"
        print(f"frameworks: {env.name:<14} {env.path(root)}  ({note})")
    if missing:
        print(f"frameworks: {len(missing)} built in {time.monotonic() - started:.0f} s, at once")


if __name__ == "__main__":
    main()
