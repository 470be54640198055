"""Inspect AI eval logs as chaoseval journals: a ``.json`` log, or a ``.eval`` zip (``header.json``
plus ``samples/<id>_epoch_<n>.json``).

Current inspect-ai writes the zip entries compressed with Zstandard (zip method 93), which
Python's ``zipfile`` cannot read; those entries are read here with the ``zstandard`` package,
straight from the archive (no monkey-patching of ``zipfile``, which is process-global).

Each sample epoch is a trial; its score value passes when it is ``"C"`` (CORRECT), ``True`` or a
number >= 1. A sample with an ``error`` is left out of Inspect's own metrics (its accuracy is
over the scored epochs), so by default it is *not evaluable* here too; ``errors_as="failure"``
counts it as a failure. ``scorer`` picks one scorer when a log has several (default: the first).
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

from chaoseval import redact
from chaoseval.errors import ConfigError
from chaoseval.model.records import Usage
from chaoseval.store.importing import (
    EPS,
    check_errors_as,
    crashed,
    manifest,
    read_json,
    record,
    unique_index,
    warn_uneven,
)
from chaoseval.store.journal import Journal

__all__ = ["ZIP_ZSTD", "load_inspect", "read_zip_member"]

ZIP_ZSTD = 93  # the zip method number of Zstandard (APPNOTE 4.4.5)
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., name length, extra length
_MAX_MEMBER = 1 << 30  # a sample bigger than 1 GiB is not a log, it is a bomb


def read_zip_member(path: Path, z: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """One entry's bytes, whether stored, deflated or Zstandard-compressed; CRC-checked."""
    if info.compress_type != ZIP_ZSTD:
        try:
            return z.read(info)
        except NotImplementedError:
            raise ConfigError(
                f"{path}: {info.filename} uses zip compression method {info.compress_type}, "
                "which chaoseval cannot read"
            ) from None
    import zstandard

    if info.file_size > _MAX_MEMBER:
        raise ConfigError(f"{path}: {info.filename} claims {info.file_size} bytes; refused")
    with path.open("rb") as fh:
        fh.seek(info.header_offset)
        sig, name_len, extra_len = _LOCAL_HEADER.unpack(fh.read(_LOCAL_HEADER.size))
        if sig != b"PK\x03\x04":
            raise ConfigError(f"{path}: {info.filename}: bad zip local header")
        fh.seek(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)
        raw = fh.read(info.compress_size)
    try:
        # A stream decompressor: inspect's frames need not record their content size.
        data = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    except zstandard.ZstdError as exc:
        raise ConfigError(f"{path}: {info.filename}: corrupt zstd data ({exc})") from None
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise ConfigError(f"{path}: {info.filename}: size or CRC does not match the zip index")
    return data


def _zip_log(path: Path) -> dict[str, Any]:
    try:
        with zipfile.ZipFile(path) as z:
            infos = {i.filename: i for i in z.infolist()}

            def load(name: str) -> Any:
                return json.loads(read_zip_member(path, z, infos[name]))

            header = load("header.json") if "header.json" in infos else {}
            if not header and "_journal/start.json" in infos:
                header = load("_journal/start.json")  # a log whose eval did not finish
            samples = [
                load(n) for n in sorted(infos) if n.startswith("samples/") and n.endswith(".json")
            ]
    except (zipfile.BadZipFile, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable Inspect AI .eval log ({exc})") from None
    return {**header, "samples": samples}


def _inspect_log(path: Path) -> dict[str, Any]:
    if zipfile.is_zipfile(path):
        return _zip_log(path)
    data = read_json(path)
    if not isinstance(data, dict) or "eval" not in data:
        raise ConfigError(f"{path}: not an Inspect AI eval log (no 'eval' section)")
    return data


def _passed(value: Any) -> bool | None:
    """Inspect score values: "C"/"I"/"P"/"N", booleans, numbers. None when unusable."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return float(value) >= 1.0 - EPS
    if isinstance(value, str):
        v = value.strip().upper()
        if v in ("C", "I", "P", "N"):
            return v == "C"
        try:
            return float(v) >= 1.0 - EPS
        except ValueError:
            return None
    return None


def _verdict(
    sample: dict[str, Any], score: Any, errors_as: str
) -> tuple[str, str | None, str | None]:
    """(status, root cause, detail) of one sample epoch."""
    if sample.get("error"):
        err = sample["error"]
        msg = redact.head(str(err.get("message") if isinstance(err, dict) else err), 500)
        if crashed(errors_as, source_says_failure=False):
            return "failed", "crash", msg
        return "not_evaluable", "harness_error", msg
    value = score.get("value") if isinstance(score, dict) else None
    verdict = _passed(value) if isinstance(score, dict) else None
    if verdict is None:
        return "not_evaluable", "harness_error", "no usable score"
    if verdict:
        return "passed", None, None
    return "failed", "wrong_answer", f"score {value!r}"


def _usage(sample: dict[str, Any]) -> Usage:
    usage = Usage()
    for u in (sample.get("model_usage") or {}).values():
        usage.input_tokens += int(u.get("input_tokens") or 0)
        usage.output_tokens += int(u.get("output_tokens") or 0)
    return usage


def _unscored(path: Path, log: dict[str, Any], samples: list[dict[str, Any]]) -> str:
    """Why a log whose samples carry no score cannot be imported: it measured nothing (an
    eval that could not reach its model), so its trials are not 'not evaluable' but absent."""
    err = log.get("error") or next((s.get("error") for s in samples if s.get("error")), None)
    why = str(err.get("message") if isinstance(err, dict) else err or "").strip()
    first = why.splitlines()[0][:300] if why else ""
    status = log.get("status") or "unknown"
    return (
        f"{path}: the log holds no scored samples ({len(samples)} sample(s), none scored; eval "
        f"status {status!r}{': ' + first if first else ''}); nothing was measured. Run "
        "'inspect eval' again once it reaches its model, then import that log"
    )


def load_inspect(path: str | Path, scorer: str | None = None, errors_as: str = "source") -> Journal:
    path = Path(path)
    check_errors_as(errors_as)
    if not path.exists():
        raise ConfigError(f"{path}: no such file")
    log = _inspect_log(path)
    ev = log.get("eval") or {}
    task_name = str(ev.get("task") or "inspect")
    model = str(ev.get("model") or "")
    run_id = str(ev.get("run_id") or ev.get("eval_id") or f"inspect-{path.stem}")
    samples = log.get("samples") or []
    if not samples:
        raise ConfigError(
            f"{path}: the log has no samples (written with --no-log-samples?); chaoseval needs "
            "per-sample scores to compute per-task pass^k"
        )
    if not any(s.get("scores") for s in samples):
        raise ConfigError(_unscored(path, log, samples))
    seen: dict[str, set[int]] = {}
    records = []
    for s in samples:
        task = str(s.get("id"))
        epoch = s.get("epoch")
        index = unique_index(seen, task, int(epoch) - 1 if isinstance(epoch, int) else None)
        scores = s.get("scores") or {}
        if scorer is not None and scorer not in scores and scores:
            raise ConfigError(
                f"{path}: no scorer {scorer!r} in sample {task}; scorers: {', '.join(scores)}"
            )
        name = scorer or next(iter(scores), None)
        status, cause, detail = _verdict(s, scores.get(name) if name else None, errors_as)
        records.append(
            record(
                run_id,
                f"inspect {task_name}",
                model,
                task,
                index,
                status,
                tags=[task_name],
                root_cause=cause,
                error=detail,
                usage=_usage(s),
                seconds=float(s.get("total_time") or 0.0),
            )
        )
    warnings: list[str] = []
    names = sorted({n for s in samples for n in (s.get("scores") or {})})
    if len(names) > 1 and scorer is None:
        warnings.append(f"several scorers ({', '.join(names)}); used the first of each sample")
    trials = max(len(v) for v in seen.values())
    m = manifest(run_id, f"inspect {task_name}", model, trials, seen, "inspect")
    return Journal(path, m, records, warnings + warn_uneven(seen))
