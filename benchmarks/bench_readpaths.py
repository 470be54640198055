"""A journal's read paths side by side (issue 47): today's against a Parquet file of the columns.

Printed by ``make bench-report`` before its report figures, on the same journal, each path in
its own process (wall and CPU seconds, its peak RSS and its process tree's, PSS-summed: a
forked reader's pages count), with the load average beside each figure, alternating the paths
``ROUNDS`` times so that ratios come from the same minutes of the machine:

- ``current cold``: ``read_trials`` as a first command runs it: the forked range readers
  (store.ranges) build the columns, the ``.npz`` cache (store.colcache) is written under
  ``<journal>.d/`` and taken back lazily; every column then touched;
- ``current warm``: the next command: the ``.npz`` cache loaded, every column and every side
  document (errors, veto items, reference calls) decoded;
- ``one pass``: the columns built by one process front to back (``CHAOSEVAL_READ_WORKERS=1``,
  no cache): what is left of a cold read without store.ranges;
- ``parquet cold``: the columns built in one pass (a Parquet library cannot make them: they
  are sums and codes of each line's trajectory, store.lite) and written with pyarrow as
  ``<journal>.d/.columns.parquet`` (zstd; the vocabularies, manifest and side documents as the
  file's key-value metadata, the same JSON documents colcache writes), a temporary file
  renamed onto it;
- ``parquet warm``: that file read with pyarrow: every column into numpy, every document
  decoded;
- ``arrow json``: what pyarrow itself can decode of the journal (``pyarrow.json``, its
  multi-threaded reader, the trial lines' top-level scalar fields only): whether the library
  could stand in for the forked readers even for the fields it can read without Python.

``python benchmarks/bench_readpaths.py JOURNAL`` runs it alone; ``CHAOSEVAL_BENCH_ROUNDS``
(default 2) the rounds. Needs pyarrow (``pip install pyarrow``); without it only today's paths.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ROUNDS = int(os.environ.get("CHAOSEVAL_BENCH_ROUNDS", 2))
PARQUET = ".columns.parquet"
# The trial lines' top-level scalars pyarrow.json is asked for (the rest of a line ignored).
_SCALARS = (
    ("type", "string"), ("run_id", "string"), ("trial_id", "string"), ("scenario", "string"),
    ("cell", "string"), ("index", "int64"), ("seed", "uint64"), ("world_seed", "uint64"),
    ("status", "string"), ("root_cause", "string"), ("steps", "int64"),
    ("sim_seconds", "float64"), ("wall_seconds", "float64"),
)  # fmt: skip


def _touch(t: Any) -> int:
    """Every column of ``t`` read (a lazy cache column is loaded by being asked for)."""
    return sum(int(t.col[name].nbytes) for name in list(t.col)) + int(t.offsets.nbytes)


def _documents(t: Any) -> dict[bytes, bytes]:
    """The columns' side documents as colcache writes them, and the rest of what it keeps."""
    import msgspec

    from chaoseval.store import colcache

    docs = {f"d_{k}".encode(): v for k, v in colcache._side_documents(t).items()}
    meta = {
        "manifest": msgspec.Raw(t.manifest.model_dump_json().encode()),
        "vocab": {name: list(values) for name, values in t.vocab.items()},
        "warnings": t.warnings, "cut_off_line": t.cut_off_line, "odd_ids": t.odd_ids,
        "browser": {r: (c, list(f), s) for r, (c, f, s) in t.browser.items()},
        "by_tool": {k: (x.calls, x.not_ok, x.faults_delivered, x.failed_trials, dict(x.causes))
                    for k, x in t.by_tool.items()},
        "sampling": [(*key, n) for key, n in t.sampling.items()],
        "lean_at": t.lean_at, "veto_rules": t.veto_rules,
    }  # fmt: skip
    docs[b"meta"] = msgspec.json.encode(meta)
    return docs


def _parquet_cold(journal: Path) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from chaoseval.store.artifacts import store_root
    from chaoseval.store.columns import read_trials

    t = read_trials(journal)
    built = time.perf_counter()
    table = pa.table({**{n: t.col[n] for n in t.col}, "offsets": t.offsets})
    table = table.replace_schema_metadata(_documents(t))
    target = store_root(journal) / PARQUET
    target.parent.mkdir(exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, target)
    return {"write_seconds": time.perf_counter() - built, "file_bytes": target.stat().st_size}


def _parquet_warm(journal: Path) -> dict[str, Any]:
    import msgspec
    import pyarrow.parquet as pq

    from chaoseval.store.artifacts import store_root

    table = pq.read_table(store_root(journal) / PARQUET)
    columns = {n: table.column(n).to_numpy() for n in table.column_names}
    docs = {k: msgspec.json.decode(v) for k, v in (table.schema.metadata or {}).items()}
    return {"bytes": sum(c.nbytes for c in columns.values()), "documents": len(docs)}


def _arrow_json(journal: Path) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.json as pj

    schema = pa.schema([(n, getattr(pa, ty)()) for n, ty in _SCALARS])
    with journal.open("rb") as fh:  # a block must hold the longest line: the manifest's
        first = len(fh.readline())
    parse = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    read = pj.ReadOptions(block_size=max(1 << 24, first + 1))
    table = pj.read_json(journal, read_options=read, parse_options=parse)
    return {"rows": table.num_rows, "arrow_bytes": table.nbytes}


def _child(part: str, journal: Path) -> None:
    sys.path[:0] = [str(ROOT), str(HERE)]
    started = time.perf_counter()
    result: dict[str, Any] = {}
    if part in ("current", "onepass"):
        from chaoseval.store.columns import read_trials

        result["bytes"] = _touch(read_trials(journal))
    elif part == "current-warm":
        from chaoseval.store.columns import read_trials

        t = read_trials(journal)
        result["bytes"] = _touch(t)
        result["documents"] = len(t.errors) + len(t.vetoes) + len(t.refs)
    elif part == "parquet":
        result.update(_parquet_cold(journal))
    elif part == "parquet-warm":
        result.update(_parquet_warm(journal))
    elif part == "arrow-json":
        result.update(_arrow_json(journal))
    result["seconds"] = time.perf_counter() - started
    own = resource.getrusage(resource.RUSAGE_SELF)
    forked = resource.getrusage(resource.RUSAGE_CHILDREN)  # the forked range readers
    result["cpu"] = own.ru_utime + own.ru_stime + forked.ru_utime + forked.ru_stime
    from bench_run import peak_rss

    result["peak_rss"] = peak_rss()
    print(json.dumps(result))


# (label, part, environment): the order each round runs them in. A cold path first removes
# what the warm path after it reads.
_ONE = {"CHAOSEVAL_READ_WORKERS": "1", "CHAOSEVAL_COLUMN_CACHE": "0"}  # one pass, no .npz
PATHS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("current cold (forked + .npz)", "current", {}),
    ("current warm (.npz)", "current-warm", {}),
    ("one pass, no cache", "onepass", _ONE),
    ("parquet cold (one pass + write)", "parquet", _ONE),
    ("parquet warm (pyarrow read)", "parquet-warm", {}),
    ("arrow json (top-level scalars)", "arrow-json", {}),
)  # fmt: skip


def _have_arrow() -> bool:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def side_by_side(journal: Path, rounds: int = ROUNDS) -> dict[str, list[dict[str, Any]]]:
    """Each read path on ``journal`` in its own process, ``rounds`` times in turn; printed."""
    from bench_run import measure

    from chaoseval.store.artifacts import store_root
    from chaoseval.store.colcache import MIN_BYTES, cache_file

    paths = [p for p in PATHS if _have_arrow() or p[1] in ("current", "current-warm", "onepass")]
    size = journal.stat().st_size
    print(f"  read paths on {journal.name} ({size / 2**20:.0f} MB), {os.cpu_count()} CPUs, "
          f"{rounds} round(s){'' if _have_arrow() else '; no pyarrow: today only'}:")  # fmt: skip
    if size < MIN_BYTES:  # what today's paths do on a journal this small
        print(f"    (under {MIN_BYTES >> 20} MB: no .npz is kept and the current paths read lines)")
    got: dict[str, list[dict[str, Any]]] = {label: [] for label, _, _ in paths}
    for _ in range(rounds):
        for label, part, env in paths:
            if part == "current":
                cache_file(journal).unlink(missing_ok=True)
            if part == "parquet":
                (store_root(journal) / PARQUET).unlink(missing_ok=True)
            load = os.getloadavg()[0]
            r = measure(part, str(journal), env=env, script=__file__, cap=600)
            if r is None:
                print(f"    {label:<34} no figure")
                continue
            r["load"] = load
            got[label].append(r)
            peak = max(r["peak_rss"], r["tree_peak"])
            extra = {k: v for k, v in r.items() if k in ("write_seconds", "file_bytes", "rows")}
            print(f"    {label:<34}{r['seconds']:6.1f} s (cpu {r['cpu']:5.1f} s) "
                  f"{peak / 2**20:5.0f} MB peak (own {r['peak_rss'] / 2**20:.0f}); "
                  f"load {load:.1f} {json.dumps(extra) if extra else ''}")  # fmt: skip
    _ratios(got)
    (store_root(journal) / PARQUET).unlink(missing_ok=True)
    return got


def _ratios(got: dict[str, list[dict[str, Any]]]) -> None:
    """CPU seconds (what the load does not inflate) as ratios of today's path, best of rounds."""

    def best(label: str) -> float | None:
        runs = got.get(label) or []
        return min((r["cpu"] for r in runs), default=None)

    pairs = (
        ("parquet cold (one pass + write)", "current cold (forked + .npz)"),
        ("parquet warm (pyarrow read)", "current warm (.npz)"),
        ("one pass, no cache", "current cold (forked + .npz)"),
    )
    for a, b in pairs:
        x, y = best(a), best(b)
        if x is not None and y:
            print(f"    cpu {a} / {b}: {x / y:.2f}")


if __name__ == "__main__":
    if len(sys.argv) == 3:
        _child(sys.argv[1], Path(sys.argv[2]))
    else:
        sys.path[:0] = [str(ROOT), str(HERE)]
        side_by_side(Path(sys.argv[1]))
