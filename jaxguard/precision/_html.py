"""A check_ops report as one self-contained HTML page: the error of every checked op along
the program (an inline SVG plot, no plotting library), then the ranked table.

People look at how error grows through a program rather than read it off a table: the plot
shows each op's accumulated error (against the float64 program) and its own local error,
in program order, on a log scale, with the ops out of tolerance in red.
"""

from __future__ import annotations

import html
import math

_WIDTH, _HEIGHT, _PAD = 900, 300, 48
_FLOOR = 1e-17  # exact ops (error 0) are drawn on the floor of the log scale
_STYLE = (
    "<style>body{font-family:sans-serif;margin:2em} table{border-collapse:collapse;font-size:13px}"
    " td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}</style></head><body>"
)


def _log(value: float) -> float:
    return math.log10(max(value, _FLOOR)) if math.isfinite(value) else math.log10(1e3)


def _plot(records) -> str:
    if not records:
        return "<p>No op was checked.</p>"
    series = [(r.accumulated_error, r.local_error) for r in records]
    logs = [_log(v) for pair in series for v in pair]
    low, high = math.floor(min(logs)), math.ceil(max(logs))
    if high == low:
        high = low + 1
    n = len(records)

    def x(i: int) -> float:
        return _PAD + (i + 0.5) * (_WIDTH - 2 * _PAD) / n

    def y(value: float) -> float:
        return _HEIGHT - _PAD - (_log(value) - low) * (_HEIGHT - 2 * _PAD) / (high - low)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{_HEIGHT}" role="img">']
    for decade in range(low, high + 1):
        yy = _HEIGHT - _PAD - (decade - low) * (_HEIGHT - 2 * _PAD) / (high - low)
        parts.append(f'<line x1="{_PAD}" x2="{_WIDTH - _PAD}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{_PAD - 6}" y="{yy + 4:.1f}" font-size="11" text-anchor="end">1e{decade}</text>')
    line = " ".join(f"{x(i):.1f},{y(acc):.1f}" for i, (acc, _) in enumerate(series))
    parts.append(f'<polyline points="{line}" fill="none" stroke="#3366cc" stroke-width="1.5"/>')
    for i, (r, (acc, local)) in enumerate(zip(records, series)):
        tip = html.escape(f"#{r.index} {r.primitive} at {r.source}: accumulated {acc:.3g}, local {local:.3g}")
        color = "#cc2222" if r.failed else "#3366cc"
        parts.append(f'<circle cx="{x(i):.1f}" cy="{y(acc):.1f}" r="3.5" fill="{color}"><title>{tip}</title></circle>')
        parts.append(f'<rect x="{x(i) - 2.5:.1f}" y="{y(local) - 2.5:.1f}" width="5" height="5" fill="#999"><title>{tip}</title></rect>')
    parts.append(
        f'<text x="{_WIDTH / 2}" y="{_HEIGHT - 10}" font-size="12" text-anchor="middle">'
        "checked op outputs, in program order (circle: accumulated error, square: local error; red: out of tolerance)</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts)


def _table(report) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("#", "op", "dtype[shape]", "source", "local", "accumulated", "tolerance ratio", "score", ""))
    rows = []
    for r in sorted(report.records, key=lambda r: -r.score):
        cells = (
            r.index, r.primitive, f"{r.dtype}{list(r.shape)}", r.source + (f" ({r.function})" if r.function.startswith("in ") else ""),
            f"{r.local_error:.2e}", f"{r.accumulated_error:.2e}", f"{r.tolerance_ratio:.3g}", f"{r.score:.3g}",
            "FAIL" if r.failed else "",
        )
        style = ' style="color:#cc2222"' if r.failed else ""
        rows.append(f"<tr{style}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return f"<table><tr>{head}</tr>\n" + "\n".join(rows) + "</table>"


def ops_report_html(report) -> str:
    """The page for an OpsReport: its summary, the plot, the ranked table, and what was not checked."""
    summary = html.escape(str(report).splitlines()[0])
    notes = [html.escape(line) for line in str(report).splitlines() if line.startswith(("first failure", "nothing", "branch", "not checked"))]
    return "\n".join([
        "<!DOCTYPE html>",
        f"<html><head><meta charset='utf-8'><title>check_ops({html.escape(report.fn_name)})</title>",
        _STYLE,
        f"<h2>{summary}</h2>",
        *(f"<p>{note}</p>" for note in notes),
        _plot(report.records),
        _table(report),
        "</body></html>",
    ])
