"""``chaoseval sample`` writes the same Markdown and label sheet for the same journal, seed and
arguments: its output on a small committed journal is pinned byte for byte (issue 47: sample's
memory at 100k tasks was cut without changing a byte of what it writes).

The journal (``data/sample_vending.jsonl.gz``) is a real run, committed so that only sample's
own behaviour moves these files: ``chaoseval run --scenarios scenarios/vending.py --agent naive
--trials 12 --seed 21 -p latency:mean=3 -p timeout:tools=read_dispense_log,probability=0.5,
modes=[raise,hang]``, 108 trials over 3 tasks x 3 cells, passed and failed in most strata, 12
trials a task so trial ids sort as strings (``.../10`` before ``.../2``). The instructions are
rebuilt from ``scenarios/vending.py``: a change of its text changes the pinned Markdown too.
After an intended change of sample's output, regenerate with
``python tests/investigate/test_sample_pinned.py`` in a commit that says what changed.
"""

from __future__ import annotations

import csv
import difflib
import gzip
import io
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaoseval.cli.app import app

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
JOURNAL = DATA / "sample_vending.jsonl.gz"
VENDING = HERE.parents[1] / "scenarios" / "vending.py"
PLACE = "<journal>"  # the journal's path in the Markdown, which differs from run to run
# (name, arguments): the default draw, every status, n above the strata, n above the pool.
CASES = {
    "passed-n10-seed0": [],
    "any-n7-seed3": ["-n", "7", "--seed", "3", "--status", "any"],
    "failed-n25-seed11": ["-n", "25", "--seed", "11", "--status", "failed"],
    "any-n200-seed5": ["-n", "200", "--seed", "5", "--status", "any"],
}


def _sample(tmp: Path, args: list[str]) -> tuple[str, str]:
    """The Markdown and the sheet ``chaoseval sample`` writes for ``args``."""
    journal = tmp / "run.jsonl"
    journal.write_bytes(gzip.decompress(JOURNAL.read_bytes()))
    out = tmp / "sample.md"
    result = CliRunner().invoke(
        app, ["sample", str(journal), *args, "-o", str(out), "--scenarios", str(VENDING)]
    )
    assert result.exit_code == 0, result.output
    markdown = out.read_text(encoding="utf-8").replace(str(journal), PLACE)
    return markdown, out.with_suffix(".csv").read_text(encoding="utf-8")


def _pinned(name: str) -> tuple[str, str]:
    """The pinned Markdown and sheet of a case (gzipped: the whole pool's Markdown is 120 KB)."""
    with gzip.open(DATA / f"sample_{name}.md.gz", "rt", encoding="utf-8") as fh:
        markdown = fh.read()
    with gzip.open(DATA / f"sample_{name}.csv.gz", "rt", encoding="utf-8") as fh:
        return markdown, fh.read()


def _first_difference(want: str, got: str) -> str:
    diff = difflib.unified_diff(want.splitlines(), got.splitlines(), "pinned", "now", n=1)
    return "\n".join(list(diff)[:20])


@pytest.mark.parametrize("name", list(CASES))
def test_sample_output_is_pinned(name: str, tmp_path: Path) -> None:
    markdown, sheet = _sample(tmp_path, CASES[name])
    want_markdown, want_sheet = _pinned(name)
    assert markdown == want_markdown, _first_difference(want_markdown, markdown)
    assert sheet == want_sheet, _first_difference(want_sheet, sheet)


def test_the_pinned_draws_cover_every_stratum_kind() -> None:
    """The pins are worth something: one draw takes the whole pool, passed and failed, and the
    default draw takes passed trials of every cell."""
    sheets = {n: _pinned(n)[1] for n in CASES}
    rows = list(csv.DictReader(io.StringIO(sheets["any-n200-seed5"])))
    assert len(rows) == 108  # the whole pool
    assert {r["judge_verdict"] for r in rows} == {"passed", "failed"}
    passed = list(csv.DictReader(io.StringIO(sheets["passed-n10-seed0"])))
    assert len(passed) == 10
    assert len({r["cell"] for r in passed}) == 3


if __name__ == "__main__":  # regenerate the pinned files (an intended change of sample's output)
    import tempfile

    for case, case_args in CASES.items():
        with tempfile.TemporaryDirectory() as d:
            md, csv_text = _sample(Path(d), case_args)
        for ext, text in (("md", md), ("csv", csv_text)):
            # mtime 0: the same text gives the same bytes, so git sees no change.
            with gzip.GzipFile(DATA / f"sample_{case}.{ext}.gz", "wb", mtime=0) as fh:
                fh.write(text.encode("utf-8"))
        print(f"wrote sample_{case}.md.gz and .csv.gz", file=sys.stderr)
