"""The HTML report in a real browser: Debian's headless Chromium renders the plots and tables.

Chromium is installed by the shared ``chromium`` fixture (tests/conftest.py) when missing and
we are root (apt-get); the test is skipped, with the reason, only when that is impossible.
"""

from __future__ import annotations

import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from chaoseval.analysis.build import analyze
from chaoseval.analysis.verdict import build_verdict
from chaoseval.engine.runner import RunConfig, run
from chaoseval.loading.files import installed, select
from chaoseval.model.cells import parse_cells
from chaoseval.render import render_html
from chaoseval.seams.agent import load_agent
from chaoseval.store.journal import read_journal

pytestmark = pytest.mark.slow


def _flags(profile: Path) -> list[str]:
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1280,2000",
    ]


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA PNG into raw scanlines (undoing the per-row filters)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    height = bpp = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = prev[i]
            ul = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + left) & 0xFF
            elif f == 2:
                line[i] = (line[i] + up) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif f == 4:
                p = left + up - ul
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else ul
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def test_report_renders_in_headless_chromium(chromium: Path, tmp_path: Path) -> None:
    path = tmp_path / "naive.jsonl"
    run(
        RunConfig(
            scenarios=select(installed(), ["vending-*"]),
            agent=load_agent("naive"),
            agent_name="naive",
            cells=parse_cells(["timeout"]),
            trials=3,
            seed=7,
            ks=[1, 3],
            journal=path,
        )
    )
    report = tmp_path / "report.html"
    journal = read_journal(path)
    a = analyze(journal, n_resamples=500)
    report.write_text(render_html(a, verdict=build_verdict(a, journal.records)))
    url = report.as_uri()

    dom = subprocess.run(
        [str(chromium), *_flags(tmp_path / "profile-dom"), "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dom.returncode == 0, dom.stderr[-1000:]
    html = dom.stdout
    # The browser parsed the inline SVG into elements: three plots with their shapes.
    for plot in ("plot-passk", "plot-heatmap", "plot-rootcauses"):
        assert f'id="{plot}"' in html, plot
    heat = html.count('class="heat"') + html.count('class="heat sig"')  # sig: a decided cell
    assert html.count("<polyline") >= 2 and heat == 3
    for table in ("table-summary", "table-degradation", "table-vetoes", "table-process"):
        assert f'id="{table}"' in html, table
    assert "<tr>" in html
    # The page opens with the verdict; each failed perturbed trial links to its twin card.
    assert html.index('id="verdict"') < html.index('id="toc"') < html.index('id="table-summary"')
    failed = [r for r in journal.records if r.cell != "clean" and r.status == "failed"]
    assert failed and 'class="twin-card"' in html
    for r in failed:
        assert r.trial_id in html and f"{r.scenario}/clean/{r.index}" in html

    png = tmp_path / "shot.png"
    shot = subprocess.run(
        [str(chromium), *_flags(tmp_path / "profile-shot"), f"--screenshot={png}", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.returncode == 0 and png.exists(), shot.stderr[-1000:]
    width, height, rows = _png_pixels(png.read_bytes())
    assert (width, height) == (1280, 2000)
    # Not blank: many distinct colours (text, bars, heatmap), and ink in most bands of the top.
    colours = {row[i : i + 3] for row in rows[::8] for i in range(0, len(row), 3 * 8)}
    assert len(colours) > 50
    inked = [any(b < 200 for b in row) for row in rows[:1200:40]]
    assert sum(inked) > len(inked) // 2
