"""The trace playground's charts: each latency's distribution under A and under B, overlaid.

A distribution is drawn as its cumulative share (the ECDF: for each value, the share of requests
at or below it), which overlays two runs without binning choices; at most POINTS points per
curve, so a 200,000-request trace draws as fast as a small one.
"""

from __future__ import annotations

import numpy as np

from lessons.kit import story
from lessons.kit.figures import axis, line, log_axis
from lessons.trace_lab.tool import TEXT, Readout

POINTS = 400
# (key, per-request column, axis title, hover unit, log axis)
METRICS = (
    ("ttft", "ttft_ms", "time to first token (ms)", "ms", True),
    ("tpot", "tpot_ms", "mean time between tokens, per request (ms)", "ms", False),
    ("e2e", "e2e_s", "end-to-end latency (s)", "s", True),
)


def _ecdf(values: np.ndarray) -> tuple[list[float], list[float]]:
    v = np.sort(values[np.isfinite(values)])
    if v.size == 0:
        return [], []
    share = np.arange(1, v.size + 1) / v.size * 100
    keep = np.unique(np.linspace(0, v.size - 1, min(POINTS, v.size)).round().astype(np.int64))
    # From 0% at the smallest value: a trace of a few requests still draws a rising line.
    return [float(v[0]), *v[keep].tolist()], [0.0, *share[keep].tolist()]


def distribution(r: Readout, key: str) -> dict:
    """The ECDF of one latency for both configurations."""
    _, column, title, unit, log = next(m for m in METRICS if m[0] == key)
    data, xs = [], []
    for side, role, dash in ((r.a, "config_a", None), (r.b, "config_b", "dash")):
        values = side.requests[column].to_numpy(dtype=np.float64)
        if log:
            values = values[values > 0]
        x, y = _ecdf(values)
        xs += x
        hover = "%{x:.3g} " + unit + ": %{y:.1f}% of requests<extra>" + side.name + "</extra>"
        data.append(line(x, y, f"{side.name}", role, dash=dash, hovertemplate=hover))
    # A tick per decade only where the values span a decade; a small upload may not, and a log
    # axis with no decade inside it would have no tick at all.
    decades = bool(xs) and max(xs) >= 10 * min(xs)
    x_axis = (log_axis(title) if decades else axis(title, type="log")) if log else axis(title)
    return {
        "data": data,
        "layout": {
            "title": {"text": story.labels(TEXT)[f"title-{key}"]},
            "height": 380,
            "xaxis": x_axis,
            "yaxis": axis("requests at or below (%)", range=[0, 100]),
        },
    }
