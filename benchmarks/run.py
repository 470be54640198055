"""Benchmark figures (`make bench`), and the A/B harness (`make bench AGAINST=REF`).

``python benchmarks/run.py`` prints every bench in turn: the paired bootstrap, the model
channel's cost per trial, the wire's added latency, browser trials, every simulation (each
``*_sim.py`` here with a ``main()``, found by its name), the run's cost per trial, reports on
big journals and the sandbox's start. Figures only; nothing here asserts a timing.

``python benchmarks/run.py --against REF [--rounds N] [--only TEXT]``: the tree's code (its
uncommitted changes included) and REF's, alternating in one run. REF's files are exported
(``git archive``) and laid out as an install lays them (the ``package-dir`` of REF's
pyproject); two measuring processes start, one importing each code, and take turns round
after round, the order swapped each round, so both meet the same spells of the machine's
load. The measuring code is the tree's on both sides. A change of a microsecond shows only
this way: separate runs of the same code scattered by ~1.5 us a request in process, and
callgrind's count by ~8k instructions (~2%) a request between runs. Figures: the request path
in process (``wire_peers.serve``, an in-memory upstream), and the whole-trial figures (10k
virtual-clock trials; an exec: agent's trial, without a sandbox and under bubblewrap), each
as REF's median, the tree's, and the median of the rounds' ratios with their range; a
whole-trial figure more than 20% worse is said (issue 47). ``--against HEAD`` on a clean tree
measures the harness's own resolution.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The code measured: the tree's, or (in an A/B's measuring process) REF's exported files.
CODE = Path(os.environ.get("CHAOSEVAL_BENCH_CODE") or ROOT)
sys.path[:0] = [str(CODE), str(HERE)]

WORSE = 1.2  # a whole-trial figure more than 20% worse than REF's is said (issue 47)
N, WARM, KEPT = 800, 200, 100  # the request path: requests a kind, served before, steps kept


def simulations() -> list[str]:
    """Every simulation here, by name: a new one (``*_sim.py`` with ``main()``) runs too."""
    return sorted(p.stem for p in HERE.glob("*_sim.py"))


def everything() -> None:
    from bench_browser import main as browser_trials
    from bench_report import bootstrap
    from bench_report import main as reports
    from bench_run import main as run_cost
    from bench_run import model_channel
    from bench_sandbox import main as sandbox_start
    from bench_wire import main as wire_overhead

    bootstrap()
    model_channel()
    wire_overhead()
    browser_trials()
    for name in simulations():
        importlib.import_module(name).main()
    run_cost()
    reports()
    sandbox_start()


# --- the A/B's measuring process (``run.py --ab-child``) -------------------------------------


def request_path() -> dict[str, float]:
    """Microseconds a request served in process by the model server, each kind WARM requests
    then N timed, in one trial (bench_wire's probe): forwarding to an in-memory upstream (one
    message; an agent's turns 1-10) and the sim's kind."""
    from bench_run import scenario
    from bench_wire import J, _chat, _trial, _turn
    from wire_peers import Session, serve

    from chaoseval.channels.model.session import UpstreamConfig, run_channels, trial_endpoint

    turns = [json.dumps(_turn(i)).encode() for i in range(WARM + N)]
    chats = [json.dumps(_chat(i)).encode() for i in range(WARM + N)]
    seen: dict[str, list[float]] = {}

    async def body(episode: Any, _: Any) -> None:
        async with AsyncExitStack() as stack:
            enter = stack.enter_async_context
            forwarding = await enter(run_channels(UpstreamConfig(endpoint="http://upstream/v1")))
            forwards = [await enter(trial_endpoint(episode)) for _ in range(J)]
            forwarding.upstream._session = Session()
            simulating = await enter(run_channels(UpstreamConfig()))
            sims = [await enter(trial_endpoint(episode)) for _ in range(J)]

            def keys(endpoints: list[Any]) -> list[list[tuple[bytes, bytes]]]:
                return [[(b"authorization", f"Bearer {e.api_key}".encode())] for e in endpoints]

            kinds = {
                "request path, forwarding one message (us)": (forwarding, chats, keys(forwards)),
                "request path, forwarding turns 1-10 (us)": (forwarding, turns, keys(forwards)),
                "request path, the sim's kind (us)": (simulating, chats, keys(sims)),
            }
            steps = episode.link.state.trajectory.steps
            for name, (channels, bodies, auths) in kinds.items():
                path = "/v1/chat/completions"
                await serve(channels.server, path, bodies[:WARM], auths)
                started = time.perf_counter()
                await serve(channels.server, path, bodies[WARM:], auths)
                seen[name] = [(time.perf_counter() - started) / N * 1e6]
                del steps[KEPT:]  # the trial's end walks every step: the same few both sides

    _trial(scenario(), body, seen)
    return {name: values[0] for name, values in seen.items()}


def virtual_trials() -> dict[str, float]:
    from bench_run import _run

    with tempfile.TemporaryDirectory(prefix="chaoseval-ab-") as where:
        cpu = time.process_time()
        wall = _run(10_000, where=Path(where))
        # CPU time beside wall: on a machine shared with other work, a spell of load moves
        # the wall time of one side far more than its CPU time.
        return {"10k virtual-clock trials (s)": wall,
                "10k virtual-clock trials, CPU (s)": time.process_time() - cpu}  # fmt: skip


def exec_trials() -> dict[str, float]:
    from bench_sandbox import _per_trial

    from chaoseval.agents import sandbox

    out = {"an exec: agent's trial, --sandbox none (ms)": _per_trial("none") * 1e3}
    if sandbox.resolve("auto").bwrap is not None:
        out["an exec: agent's trial, under bubblewrap (ms)"] = _per_trial("auto") * 1e3
    return out


PROBES: dict[str, Callable[[], dict[str, float]]] = {
    "request path": request_path,
    "virtual-clock trials": virtual_trials,
    "exec: trials": exec_trials,
}
WHOLE_TRIAL = ("virtual-clock trials", "exec: trials")


def ab_child() -> None:
    """Answers each probe's name on stdin with its figures, one JSON line; anything the code
    prints goes to stderr, so stdout carries only the answers."""
    out: IO[str] = sys.stdout
    sys.stdout = sys.stderr
    import chaoseval
    import chaoseval.bundled.scenarios as bundled

    for probe in PROBES.values():  # imports and first-trial costs, paid before any round
        probe()
    where = f"{Path(chaoseval.__file__).parent}, scenarios {next(iter(bundled.__path__))}"
    print(json.dumps(where), file=out, flush=True)
    for line in sys.stdin:
        print(json.dumps(PROBES[line.strip()]()), file=out, flush=True)


# --- the A/B harness ---------------------------------------------------------------------------


def _git(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True)


def export(ref: str, into: Path) -> str:
    """REF's files under ``into``, laid out as REF's pyproject installs them; REF's hash."""
    found = _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found.returncode:
        raise SystemExit(f"run.py --against {ref}: not a commit of the repository at {ROOT} "
                         "(AGAINST= takes a commit, branch or tag: HEAD~1, main)")  # fmt: skip
    sha = found.stdout.decode().strip()
    archive = _git("archive", "--format=tar", sha)
    if archive.returncode:
        raise SystemExit(f"run.py --against {ref}: git archive failed: {archive.stderr.decode()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    pyproject = into / "pyproject.toml"
    setuptools = tomllib.loads(pyproject.read_text())["tool"]["setuptools"] if (
        pyproject.exists()) else {}  # fmt: skip
    for package, folder in setuptools.get("package-dir", {}).items():
        target = into.joinpath(*package.split("."))
        if package and (into / folder).is_dir() and not target.exists():
            shutil.move(into / folder, target)
    return sha


@contextlib.contextmanager
def _measurer(code: Path, label: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    path = os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = {**os.environ, "CHAOSEVAL_BENCH_CODE": str(code), "PYTHONPATH": path}
    with subprocess.Popen([sys.executable, __file__, "--ab-child"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True, env=env) as child:  # fmt: skip
        try:
            yield child, _answer(child, label)
        finally:
            assert child.stdin is not None
            child.stdin.close()


def _answer(child: subprocess.Popen[str], label: str) -> Any:
    assert child.stdout is not None
    line = child.stdout.readline()
    if not line:
        raise SystemExit(f"run.py: the measuring process of {label} stopped (exit "
                         f"{child.wait()}; its error is above)")  # fmt: skip
    return json.loads(line)


def _ask(child: subprocess.Popen[str], label: str, probe: str) -> dict[str, float]:
    assert child.stdin is not None
    child.stdin.write(probe + "\n")
    child.stdin.flush()
    figures: dict[str, float] = _answer(child, label)
    return figures


def ab(ref: str, rounds: int, only: str) -> None:
    probes = [p for p in PROBES if only in p]
    if not probes:
        raise SystemExit(f"run.py --only {only!r}: no probe has that in its name ({list(PROBES)})")
    with tempfile.TemporaryDirectory(prefix="chaoseval-ab-") as tmp:
        sha = export(ref, Path(tmp))
        label = f"{ref} ({sha[:10]})"
        load = os.getloadavg()[0]
        seen: dict[tuple[str, str], list[float]] = {}
        whole: set[str] = set()
        with (
            _measurer(ROOT, "the tree") as (tree, here),
            _measurer(Path(tmp), label) as (old, there),
        ):
            sides = [("tree", tree), ("ref", old)]
            for r in range(rounds):
                for probe in probes:
                    for side, child in sides if r % 2 == 0 else sides[::-1]:
                        for name, value in _ask(child, side, probe).items():
                            seen.setdefault((name, side), []).append(value)
                            whole.update([name] if probe in WHOLE_TRIAL else [])
    print(f"A/B: the tree's code against {label}, alternating, {rounds} rounds, {os.cpu_count()}"
          f" CPUs, load average {load:.1f} before, {os.getloadavg()[0]:.1f} after")  # fmt: skip
    print(f"  the tree's code: {here}\n  {label}: {there}")
    _table(seen, whole)


def _table(seen: dict[tuple[str, str], list[float]], whole: set[str]) -> None:
    print(f"    {'':<48}{'REF':>9}{'tree':>9}  tree/REF (median of the rounds', range)")
    for name in dict.fromkeys(n for n, _ in seen):
        old, new = seen[name, "ref"], seen[name, "tree"]
        ratios = sorted(b / a for a, b in zip(old, new, strict=True))
        ratio = statistics.median(ratios)
        said = ""
        if name in whole:
            said = "  MORE THAN 20% WORSE" if ratio > WORSE else "  (within 20%)"
        print(f"    {name:<48}{statistics.median(old):9.2f}{statistics.median(new):9.2f}  "
              f"{ratio:.3f} ({ratios[0]:.3f}-{ratios[-1]:.3f}){said}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", metavar="REF", help="A/B: the tree's code against REF's")
    parser.add_argument("--rounds", type=int, default=10, help="A/B rounds (default 10)")
    parser.add_argument("--only", default="", help="A/B: only the probes naming this")
    parser.add_argument("--ab-child", action="store_true", help=argparse.SUPPRESS)
    given = parser.parse_args()
    if given.ab_child:
        ab_child()
    elif given.against:
        ab(given.against, given.rounds, given.only)
    else:
        everything()


if __name__ == "__main__":
    main()
