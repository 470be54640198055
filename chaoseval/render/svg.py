"""Inline SVG plots, generated here: no JavaScript, no CDN, so the report works offline."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from html import escape

from chaoseval.analysis.aggregate import CLEAN
from chaoseval.analysis.build import Analysis
from chaoseval.analysis.curves import Curve

__all__ = ["PAGE_W", "heatmap", "pass_hat_curves", "root_cause_bars", "significant_cells"]

PAGE_W = 1160  # the widest drawing: the page's width less its margins
BARS_W = 760  # the root-cause bars' drawing width
HEATMAP_ROWS = 200  # scenarios the heatmap draws at most

PALETTE = (
    "#4e79a7", "#f28e2b", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
    "#1f77b4", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#e377c2", "#7f7f7f", "#aec7e8",
)  # fmt: skip
PASSED = "#59a14f"
VETO_COLORS = {"safety_violation": "#b00020", "hallucination": "#e15759"}
NOT_EVALUABLE = "#c7c7c7"
FONT = "font-family='system-ui, sans-serif'"


def _t(x: float, y: float, text: str, size: int = 11, anchor: str = "middle", **kw: str) -> str:
    extra = " ".join(f"{k.replace('_', '-')}='{v}'" for k, v in kw.items())
    return (
        f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' text-anchor='{anchor}' {FONT} "
        f"{extra}>{escape(text)}</text>"
    )


def _open(plot: str, width: float, height: float, label: str, natural: bool = False) -> str:
    """An svg drawn at its own size (``natural``: never scaled down; its labels stay readable
    on a narrow page, where the report wraps or scrolls it), or else at its own size at most,
    shrunk only to fit a page narrower than the drawing."""
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' class='plot{' natural' if natural else ''}' "
        f"id='plot-{plot}' width='{width:.0f}' height='{height:.0f}' "
        f"viewBox='0 0 {width:.0f} {height:.0f}' role='img' aria-label='{escape(label)}'>"
    )


def significant_cells(a: Analysis) -> set[str]:
    """The perturbed cells whose change against clean is decided in either scope: broken,
    degraded or improved (chaoseval.analysis.status)."""
    return {c for c, s in a.statuses.items() if s.status in ("broken", "degraded", "improved")}


# An undecided column is never shown as a pass: inconclusive is amber, held a pale grey.
_UNDECIDED = {"inconclusive": ("#fdebd0", "#b9770e"), "held": ("#f2f2f2", "#888")}


def _label(labels: dict[str, str] | None, cell: str) -> str:
    return (labels or {}).get(cell, cell)


def _xy(box: tuple[float, float, float, float, int], k: int, v: float) -> tuple[float, float]:
    left, top, w, h, kmax = box
    x = left + (w * (k - 1) / (kmax - 1) if kmax > 1 else w / 2)
    return x, top + h * (1 - v)


PANEL_W, PANEL_H = 290, 210  # one pass^k panel, drawn at this size


def pass_hat_curves(a: Analysis, labels: dict[str, str] | None = None) -> str:
    """pass^k against k: one panel per perturbed cell, clean drawn beside it in grey. Each
    panel is an svg of its own at its drawing size, in a box that wraps them: four to a row
    on a wide page, fewer on a narrow one, never scaled down (one drawing of four panels
    scaled to an 800 px page set its labels at 7 px)."""
    cells = a.perturbed or [CLEAN]
    clean = a.curves.get(CLEAN, {})
    label = "pass^k against k per perturbation, beside clean"
    parts = [f"<div class='panels' id='plot-passk' role='group' aria-label='{label}'>"]
    for i, cell in enumerate(cells):
        name = _label(labels, cell)
        parts.append(_open(f"passk-{i}", PANEL_W, PANEL_H, f"pass^k against k: {name}", True))
        parts += _pass_hat_panel(
            name, a.curves.get(cell, {}), a.baseline_curves.get(cell, clean),
            None if cell == CLEAN else (cell, PALETTE[i % len(PALETTE)]),
        )  # fmt: skip
        parts.append("</svg>")
    parts.append("</div>")
    return "".join(parts)


def _pass_hat_panel(
    title: str, curve: Curve, base: Curve, own: tuple[str, str] | None,
) -> list[str]:  # fmt: skip
    """One panel's drawing: the cell's curve (``own``: its name and colour) beside clean's."""
    left, top, w, h = 40, 26, PANEL_W - 60, PANEL_H - 62
    kmax = max([*curve.keys(), *base.keys(), 1])
    parts = [_t(PANEL_W / 2, 16, title, 12, font_weight="bold")]
    parts.append(
        f"<rect x='{left}' y='{top}' width='{w}' height='{h}' fill='#fafafa' stroke='#ccc'/>"
    )
    for v in (0, 0.5, 1):
        y = top + h * (1 - v)
        parts.append(
            f"<line x1='{left}' x2='{left + w}' y1='{y:.1f}' y2='{y:.1f}' stroke='#e3e3e3'/>"
        )
        parts.append(_t(left - 5, y + 4, f"{v:g}", 10, "end"))
    box = (left, top, w, h, kmax)
    for k in range(1, kmax + 1):
        x, _ = _xy(box, k, 0)
        parts.append(_t(x, top + h + 14, str(k), 10))
    parts.append(_t(left + w / 2, top + h + 28, "k", 10))
    series = [(base, "#888", "4 3", CLEAN)]
    if own is not None:
        series.append((curve, own[1], "", own[0]))
    for data, color, dash, name in series:
        pts = [_xy(box, k, v) for k, v in sorted(data.items()) if v is not None]
        if not pts:
            continue
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        parts.append(
            f"<polyline class='series' data-cell='{escape(name)}' points='{path}' "
            f"fill='none' stroke='{color}' stroke-width='2' stroke-dasharray='{dash}'/>"
        )
        parts += [f"<circle cx='{x:.1f}' cy='{y:.1f}' r='3' fill='{color}'/>" for x, y in pts]
    parts.append(
        f"<line x1='{left + w - 70}' x2='{left + w - 55}' y1='{top + 10}' y2='{top + 10}' "
        "stroke='#888' stroke-dasharray='4 3' stroke-width='2'/>"
    )
    parts.append(_t(left + w - 50, top + 14, "clean", 10, "start"))
    return parts


def _diverging(v: float | None) -> str:
    if v is None:
        return "#eeeeee"
    v = max(-1.0, min(1.0, v))
    # White at 0, red for drops, blue for gains: intensity grows with the size of the change.
    t = abs(v)
    if v < 0:
        r, g, b = 255, int(255 - 200 * t), int(255 - 200 * t)
    else:
        r, g, b = int(255 - 200 * t), int(255 - 130 * t), 255
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap(a: Analysis, labels: dict[str, str] | None = None, cell_h: int = 28) -> str:
    """Scenario x perturbation heatmap of the change in pass^k (k = the largest k); only the
    columns whose change is decided (broken, degraded, improved) are coloured, inconclusive ones
    amber, held ones grey."""
    cells = a.perturbed
    scenarios = heatmap_rows(a)
    significant = significant_cells(a)
    label_w = max(160, 7 * max((len(s) for s in scenarios), default=10))
    # Drawn at its own size (never scaled down): columns no wider than their labels need, so
    # a few perturbations fit a narrow page whole.
    cell_w = max(60, min(110, (PAGE_W - label_w - 20) // max(len(cells), 1)))
    width = label_w + cell_w * max(len(cells), 1) + 20
    left_out = len(a.scenarios) - len(scenarios)
    height = 40 + cell_h * max(len(scenarios), 1) + 20 + (24 if left_out else 0)
    parts = [
        _open(
            "heatmap",
            width,
            height,
            f"change in {a.primary} per scenario and perturbation",
            natural=True,
        )
    ]
    if not cells:
        parts.append(_t(width / 2, height / 2, "no perturbed cell", 12))
    for j, cell in enumerate(cells):
        x = label_w + cell_w * (j + 0.5)
        parts.append(_t(x, 16, _label(labels, cell), 11, font_weight="bold"))
        if cell not in significant:
            word = a.statuses[cell].status if cell in a.statuses else "inconclusive"
            parts.append(_t(x, 30, word, 11, fill=_UNDECIDED.get(word, ("", "#888"))[1]))
    for i, sc in enumerate(scenarios):
        y = 40 + cell_h * i
        parts.append(_t(label_w - 8, y + cell_h / 2 + 4, sc, 11, "end"))
        for j, cell in enumerate(cells):
            v = a.heatmap.get((sc, cell))
            x = label_w + cell_w * j
            sig = cell in significant
            word = a.statuses[cell].status if cell in a.statuses else "inconclusive"
            fill = _diverging(v) if sig else _UNDECIDED.get(word, ("#f2f2f2", ""))[0]
            parts.append(
                f"<rect class='heat{' sig' if sig else ''}' x='{x}' y='{y}' "
                f"width='{cell_w - 2}' height='{cell_h - 2}' fill='{fill}'><title>{escape(sc)} / "
                f"{escape(cell)}: {'n/a' if v is None else f'{v + 0.0:+.3f}'}"
                f"{'' if sig else f' (cell {word})'}</title></rect>"
            )
            text = "—" if v is None else f"{v + 0.0:+.2f}"
            parts.append(
                _t(x + cell_w / 2, y + cell_h / 2 + 3, text, 11, fill="#222" if sig else "#888")
            )
    if left_out:
        parts.append(_t(8, height - 12, f"{len(scenarios)} of {len(a.scenarios)} scenarios: "
                        f"the {HEATMAP_ROWS} with the largest change; the JSON report has every "
                        "one", 11, "start", fill="#555"))  # fmt: skip
    parts.append("</svg>")
    return "".join(parts)


def heatmap_rows(a: Analysis) -> list[str]:
    """The heatmap's scenarios: all of them, or past HEATMAP_ROWS the ones whose change is
    largest in any perturbation (by name among equals), in name order: 100k rows would be a
    2.8 million pixel tall drawing of 100 MB that no one reads."""
    if len(a.scenarios) <= HEATMAP_ROWS:
        return a.scenarios
    cells = a.perturbed

    def change(sc: str) -> float:
        values = [a.heatmap.get((sc, cell)) for cell in cells]
        return max((abs(v) for v in values if v is not None), default=-1.0)

    chosen = heapq.nsmallest(HEATMAP_ROWS, a.scenarios, key=lambda sc: (-change(sc), sc))
    return sorted(chosen)


def root_cause_bars(a: Analysis, labels: dict[str, str] | None = None, bar_h: int = 26) -> str:
    """One stacked bar per cell: passed, each root cause of failure, not evaluable (trials)."""
    causes: list[str] = sorted({k for c in a.root_causes.values() for k in c})
    colors = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(causes)}
    colors.update({k: v for k, v in VETO_COLORS.items() if k in colors})
    keys: Sequence[tuple[str, str]] = [
        ("passed", PASSED),
        *[(c, colors[c]) for c in causes],
        ("not evaluable", NOT_EVALUABLE),
    ]
    # Drawn at a width an 800 px page shows unscaled (PAGE_W scaled there set text at 7 px).
    width = BARS_W
    label_w, plot_w = 130, width - 150
    # As many legend columns as the longest key leaves room for (11 px text: ~6.5 px a letter).
    key_w = 17 + 6.5 * max(len(k) for k, _ in keys) + 12
    per_row = max(1, min(4, int(plot_w // key_w)))
    legend_rows = (len(keys) + per_row - 1) // per_row
    height = 20 + (bar_h + 8) * len(a.cells) + 24 * legend_rows + 20
    parts = [_open("rootcauses", width, height, "root causes of failed trials per cell")]
    for i, c in enumerate(a.cells):
        y = 14 + (bar_h + 8) * i
        counts = {"passed": sum(cc for _, cc in c.counts.values())}
        counts.update(c.root_causes)
        counts["not evaluable"] = c.not_evaluable
        total = max(1, c.trials)
        parts.append(_t(label_w - 8, y + bar_h / 2 + 4, _label(labels, c.cell), 11, "end"))
        x = float(label_w)
        for key, color in keys:
            n = counts.get(key, 0)
            if not n:
                continue
            w = plot_w * n / total
            parts.append(
                f"<rect class='bar' x='{x:.1f}' y='{y}' width='{w:.1f}' height='{bar_h}' "
                f"fill='{color}'><title>{escape(c.cell)}: {escape(key)} {n} of {total}"
                "</title></rect>"
            )
            if w > 22:
                parts.append(_t(x + w / 2, y + bar_h / 2 + 4, str(n), 10, fill="#fff"))
            x += w
    ly = 20 + (bar_h + 8) * len(a.cells)
    for i, (key, color) in enumerate(keys):
        lx = label_w + (i % per_row) * (plot_w / per_row)
        yy = ly + 24 * (i // per_row)
        parts.append(f"<rect x='{lx:.1f}' y='{yy}' width='12' height='12' fill='{color}'/>")
        parts.append(_t(lx + 17, yy + 10, key, 11, "start"))
    parts.append("</svg>")
    return "".join(parts)
