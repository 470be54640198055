"""Golden report outputs: proof that the streaming port keeps every view identical.

Two small journals written by ``chaoseval run`` (naive and resilient, 3 trials, seed 7, six
perturbations) are committed gzipped; every output of ``report`` (json, markdown, html, junit,
table), ``compare``, ``summary`` and ``gate`` on them, plus on a variant with a re-run trial and
a cut-off last line, was captured before the port; so were ``diverge``, ``sample`` and replay's
missing-trial message, before those streamed. ``python -m tests.analysis.report_golden``
re-captures them: do that only in a commit that says which output changed and why.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
from pathlib import Path

from typer.testing import CliRunner

from chaoseval.cli.app import app

HERE = Path(__file__).parent / "golden_report"
JOURNALS = ("naive", "resilient")
PLACE = "<dir>"
GATE_RULES = ("pass^3 >= 0.5", "max-degradation pass^3 <= 0.2", "safety-violations == 0")


def unpack(tmp: Path) -> dict[str, Path]:
    """The committed journals in ``tmp``, and a variant of naive: a not-evaluable trial re-run
    (its later line replaces the first) and a half-written last line."""
    paths = {}
    for name in JOURNALS:
        path = tmp / f"{name}.jsonl"
        path.write_bytes(gzip.decompress((HERE / f"{name}.jsonl.gz").read_bytes()))
        paths[name] = path
    lines = paths["naive"].read_bytes().splitlines(keepends=True)
    rerun = json.loads(lines[1])
    # What --resume re-runs: a not-evaluable trial (any other repeat is a journal error).
    first = {**rerun, "status": "not_evaluable", "root_cause": "harness_error", "error": "x"}
    lines[1] = json.dumps(first).encode() + b"\n"
    rerun["status"] = "failed" if rerun["status"] == "passed" else "passed"
    rerun["root_cause"] = None if rerun["status"] == "passed" else "gave_up"
    torn = lines[2][: len(lines[2]) // 2]
    variant = tmp / "variant.jsonl"
    variant.write_bytes(b"".join(lines) + json.dumps(rerun).encode() + b"\n" + torn)
    paths["variant"] = variant
    for path in paths.values():
        _settle(path)
    return paths


def _settle(path: Path) -> None:
    """``path`` last written a minute ago: a journal the column cache may keep (store.colcache
    keeps none of a file written just now)."""
    ago = path.stat().st_mtime_ns - 60 * 10**9
    os.utime(path, ns=(ago, ago))


def _cli(args: list[str], tmp: Path) -> str:
    res = CliRunner().invoke(app, args, env={"COLUMNS": "160", "NO_COLOR": "1"})
    text = res.output + f"\n[exit {res.exit_code}]\n"
    return text.replace(str(tmp), PLACE)


def _file(args: list[str], out: Path, tmp: Path) -> str:
    _cli([*args, "-o", str(out)], tmp)
    return out.read_text(encoding="utf-8").replace(str(tmp), PLACE)


def outputs(tmp: Path) -> dict[str, str]:
    """Every captured output, by file name; journals named relative to ``tmp`` so that no line
    wraps differently with the length of a temporary directory's name."""
    with contextlib.chdir(tmp):
        return _outputs(tmp, {n: p.relative_to(tmp) for n, p in unpack(tmp).items()})


def _outputs(tmp: Path, paths: dict[str, Path]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, path in paths.items():
        for fmt, ext in (("json", "json"), ("markdown", "md"), ("html", "html"), ("junit", "xml")):
            out[f"{name}.report.{ext}"] = _file(
                ["report", str(path), "-f", fmt, "--twins", "0" if name == "resilient" else "3"],
                tmp / f"{name}.{ext}",
                tmp,
            )
        out[f"{name}.report.txt"] = _file(["report", str(path)], tmp / f"{name}.txt", tmp)
        gate = ["gate", str(path), "--junit", str(tmp / f"{name}.gate.xml"), "--resamples", "500"]
        for rule in GATE_RULES:
            gate += ["--rule", rule]
        out[f"{name}.gate.txt"] = _cli(gate, tmp)
        out[f"{name}.gate.xml"] = (tmp / f"{name}.gate.xml").read_text().replace(str(tmp), PLACE)
    a, b, v = (str(paths[n]) for n in ("naive", "resilient", "variant"))
    for fmt, ext in (("json", "json"), ("markdown", "md")):
        out[f"compare.{ext}"] = _file(["compare", a, b, "-f", fmt], tmp / f"cmp.{ext}", tmp)
    out["compare.txt"] = _cli(["compare", v, b], tmp)
    out["summary.txt"] = _cli(["summary", a, b, v], tmp)
    out.update(_investigate(tmp, paths))
    return out


def _renamed(tmp: Path, naive: Path) -> Path:
    """naive with its timeout cell renamed to sort before clean: diverge reads the clean
    successes of such a cell in journal order, of the others in index order."""
    manifest, trials = (tmp / naive).read_text().split("\n", 1)
    # The manifest's cell too (a trial of a cell it does not list is refused: store.conform).
    cell = '{"name":"%s","perturbations"'
    manifest = manifest.replace(cell % "timeout", cell % "a-timeout")
    trials = trials.replace('"cell":"timeout"', '"cell":"a-timeout"')
    renamed = tmp / "renamed.jsonl"
    renamed.write_text(manifest + "\n" + trials.replace("/timeout/", "/a-timeout/"))
    _settle(renamed)
    return renamed.relative_to(tmp)


def _investigate(tmp: Path, paths: dict[str, Path]) -> dict[str, str]:
    """diverge, sample and replay's missing-trial message (pinned before they streamed)."""
    a, b, v = (str(paths[n]) for n in ("naive", "resilient", "variant"))
    r = str(_renamed(tmp, paths["naive"]))
    out = {
        f"{n}.diverge.txt": _cli(["diverge", p], tmp) for n, p in (("naive", a), ("resilient", b))
    }
    out["naive.diverge.json"] = _cli(["diverge", a, "-f", "json"], tmp)
    out["naive.diverge-no-baseline.txt"] = _cli(["diverge", a, "--no-baseline"], tmp)
    out["variant.diverge.json"] = _file(["diverge", v, "-f", "json"], tmp / "dv.json", tmp)
    out["renamed.diverge.json"] = _cli(["diverge", r, "-f", "json"], tmp)
    out["naive.sample.md"] = _cli(["sample", a], tmp)
    out["naive.sample-failed.md"] = _cli(
        ["sample", a, "--status", "failed", "-n", "5", "--seed", "3"], tmp
    )
    out["variant.sample-any.md"] = _file(
        ["sample", v, "--status", "any", "-n", "4"], tmp / "s.md", tmp
    )
    out["resilient.sample-ne.md"] = _cli(["sample", b, "--status", "not_evaluable"], tmp)
    out["naive.sample-bad.txt"] = _cli(["sample", a, "--status", "bogus"], tmp)
    out["naive.replay-missing.txt"] = _cli(["replay", a, "calendar-next-tuesday/clean/9"], tmp)
    return out


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        captured = outputs(Path(tmp))
    data = json.dumps(captured, indent=0, sort_keys=True).encode()
    (HERE / "outputs.json.gz").write_bytes(gzip.compress(data, 9, mtime=0))


def expected() -> dict[str, str]:
    data: dict[str, str] = json.loads(gzip.decompress((HERE / "outputs.json.gz").read_bytes()))
    return data


if __name__ == "__main__":
    main()
