"""The throughput curve's closed-loop chart: decode only against a closed loop of clients, drawn
from the Readout through the kit (its own module, so that figures.py stays small)."""

from __future__ import annotations

import numpy as np

from lessons.kit.figures import axis, line
from lessons.kit.story import fill
from lessons.throughput_curve.figures import POW2_TICKS, _both, _log_range, _log_y, _star, labels
from lessons.throughput_curve.readout import Readout


def loop(r: Readout) -> dict:
    """Decode only against the closed loop (prompts arriving): output tokens per second (top)
    and, in ms (bottom), the decode-only step, the closed loop's mean ITL and TTFT, the target."""
    cl = r.loop
    c = cl.decode
    n = np.arange(1, r.cl_max + 1)
    top = _log_range(np.concatenate([c.total[n - 1], cl.output_tps]))
    low = _log_range(np.concatenate([c.step_ms[n - 1], cl.itl_ms, cl.ttft_ms, [r.target_ms]]))
    words, values = labels(), vars(r)
    dots = {"mode": "lines+markers", "marker": {"size": 9}}
    squares = {"mode": "lines+markers", "marker": {"size": 9, "symbol": "square"}}  # not output
    ms = {"yaxis": "y2", "hovertemplate": words["clients-ms-hover"]}
    tps = {"hovertemplate": words["clients-tps-hover"]}
    held, target = fill(words["held"], values), fill(words["target"], values)
    line_ms = {"dash": "dash", **ms}
    compared = fill(words["compared"], values)
    # Solid up to what the engine holds at once; beyond it, as on the first chart, dotted and
    # faded: the decode-only steps cannot run there, and the extra clients wait in the queue.
    # Both pieces of a series carry its name in `meta`.
    limit = max(r.cl_held, 1)
    k_in = cl.clients <= limit
    last_in = cl.clients[k_in].max() if k_in.any() else 0
    pieces = {  # meta: (x, y) inside, (x, y) beyond
        "decode-total": (_at_n(c.total, n[n <= limit]), _at_n(c.total, n[n >= limit])),
        "closed": (_at(cl, k_in, "output_tps"), _at(cl, cl.clients >= last_in, "output_tps")),
        "decode-step": (_at_n(c.step_ms, n[n <= limit]), _at_n(c.step_ms, n[n >= limit])),
        "closed-itl": (_at(cl, k_in, "itl_ms"), _at(cl, cl.clients >= last_in, "itl_ms")),
        "closed-ttft": (_at(cl, k_in, "ttft_ms"), _at(cl, cl.clients >= last_in, "ttft_ms")),
    }
    looks = {  # meta: name, role, style
        "decode-total": (held, "primary", tps),
        "closed": (words["closed"], "prefill", {**dots, **tps}),
        "decode-step": (words["decode-step"], "primary", line_ms),
        "closed-itl": (words["closed-itl"], "prefill", {**squares, **ms}),
        "closed-ttft": (words["closed-ttft"], "kv", {**dots, **line_ms}),
    }
    data = [
        line(*pieces[key][0], name, role, meta=key, **style)
        for key, (name, role, style) in looks.items()
    ]
    data += [
        line([1, r.cl_max], [r.target_ms] * 2, target, "neutral", dash="dot", **ms),
        _star([r.cmp_n], [r.cmp_itl_ms], compared, "lm_head", **ms),
    ]
    if (cl.clients > r.cl_held).any():
        queued = fill(words["queued"], values)
        hover = words["queued-hover"]
        for i, (key, (_, role, style)) in enumerate(looks.items()):
            far = {**style, "dash": "dot", "opacity": 0.5, "hovertemplate": hover}
            group = {"legendgroup": "queued", "showlegend": i == 0, "meta": key}
            data.append(line(*pieces[key][1], queued, role, **far, **group))
        data += _both(r.cl_held, top, low, fill(words["held-line"], values), "neutral", "dash")
    ticks = [t for t in POW2_TICKS if t <= r.cl_max]
    span = [-0.05, float(np.log10(max(r.cl_max, 2))) + 0.05]
    layout = {
        "title": {"text": fill(words["loop-title"], values)},
        "xaxis": axis(words["loop-axis"], type="log", anchor="y2", tickvals=ticks, range=span),
        "yaxis": _log_y(words["output-axis"], *top, domain=[0.55, 1.0], anchor="x"),
        "yaxis2": _log_y(words["time-axis"], *low, domain=[0.0, 0.45], anchor="x"),
        "height": 550,  # presented with its larger legend: 640, a 1280x720 screen (kit/present.py)
    }
    return {"data": data, "layout": layout}


def _at(cl, rows: np.ndarray, field: str) -> tuple[list, list]:
    """The closed loop's runs in `rows`: their client counts and one of their series."""
    return cl.clients[rows].tolist(), getattr(cl, field)[rows].tolist()


def _at_n(series: np.ndarray, n: np.ndarray) -> tuple[list, list]:
    """A decode-only series at the concurrencies `n` (1-based)."""
    return n.tolist(), series[n - 1].tolist()
