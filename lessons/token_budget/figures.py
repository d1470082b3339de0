"""Figures of the lesson "One token budget", drawn from its Readout through the kit: the replay
as vLLM's Fig. 8.2 draws it (one row per step from the prompt's arrival, decode tokens widened to
be seen, prompt chunks to scale), the budget split with k draft tokens, and vLLM's default budget
GPU by GPU. Play walks Fig. 8.2's rows one step at a time."""

from __future__ import annotations

from pathlib import Path

from lessons.kit import story
from lessons.kit.anim import animate
from lessons.kit.figures import axis, bars, kit_labels
from lessons.kit.story import fill
from lessons.kit.timeline import DECODE
from lessons.theme import color
from lessons.token_budget.readout import Readout

TEXT = Path(__file__).with_name("text.md")


def labels() -> dict[str, str]:
    """The charts' words, from text.md's `labels` section (`- key :: words`)."""
    return story.labels(TEXT)


def _names(r: Readout) -> dict[int, str]:
    """Who is who in the timeline's hover text."""
    words = labels()
    names = {r.long: words["new-prompt"]}
    for i in range(r.running):
        names[i] = fill(words["running-request"], {"n": i + 1})
    if r.cached:
        names[r.long - 1] = words["earlier-chat"]
    return names


WIDE = 0.05  # a row's decode block is drawn at least this share of the budget wide
MAX_ROWS = 6  # rows drawn before the middle chunks are skipped
ROW_PX = 62  # height of one row (one step)


def rows(r: Readout) -> list[int | None]:
    """The steps (0-based) the chart draws, from the prompt's arrival to its first decode step;
    None where the middle chunks of a long prompt are skipped."""
    first = r.arrival - 1
    last = min(r.first_decode_step, r.run.num_steps) - 1
    ks: list[int | None] = list(range(first, last + 1))
    if len(ks) > MAX_ROWS:
        ks = [*ks[:2], None, *ks[-3:]]
    return ks


def _widths(r: Readout, k: int) -> tuple[int, float]:
    """(true decode tokens, the width they are drawn at) in step index k."""
    decode = int(r.fill.decode[k])
    return decode, max(float(decode), WIDE * r.budget) if decode else 0.0


def timeline(r: Readout) -> dict:
    """Fig. 8.2 as the seed draws it: one row per step counted from the prompt's arrival, the
    decode tokens first (widened to be seen), the prompt's chunk to scale after them, the unused
    budget dashed, and a label on each chunk; the row of the prompt's first decode closes it."""
    words = {**kit_labels(), **labels()}
    ks = rows(r)
    ys = list(range(len(ks)))
    ticks = [
        fill(words["row-step"], {"n": k - r.arrival + 2}) if k is not None else words["row-skip"]
        for k in ks
    ]
    who = _names(r)
    steps = [k for k in ks if k is not None]
    at = [y for y, k in zip(ys, ks, strict=True) if k is not None]
    drawn = {k: _widths(r, k) for k in steps}
    prompt = [int(r.fill.prompt[k] + r.fill.recompute[k]) for k in steps]
    last_chunk = r.first_token_step - 1
    texts, places = [], []
    for k, p in zip(steps, prompt, strict=True):
        values = {"n": p, "step": r.decode_ordinal}
        if k == last_chunk:
            texts.append(fill(words["chunk-last" if r.num_chunks > 1 else "chunk-one"], values))
        elif p:
            texts.append(fill(words["chunk-text"], values))
        else:
            texts.append(fill(words["decode-row"], {"n": int(r.fill.decode[k])}))
        places.append("inside" if p > 0.45 * r.budget else "outside")
    hover = [
        ", ".join(f"{who.get(q, q)}: {t:,}" for q, t, kind in r.fill.items[k] if kind != DECODE)
        or words["nobody"]
        for k in steps
    ]
    data = [
        bars(
            [drawn[k][1] for k in steps],
            at,
            words["layer-decode"],
            "decode",
            horizontal=True,
            base=[0] * len(steps),
            width=0.62,
            text=[f"{drawn[k][0]:,}" if drawn[k][0] else "" for k in steps],
            textposition="inside",
            insidetextanchor="middle",
            customdata=[fill(words["decoders"], {"n": drawn[k][0]}) for k in steps],
            hovertemplate=words["row-hover-decode"],
        ),
        bars(
            prompt,
            at,
            words["layer-prompt"],
            "prefill",
            horizontal=True,
            base=[drawn[k][1] for k in steps],
            width=0.62,
            text=texts,
            textposition=places,
            insidetextanchor="middle",
            constraintext="none",
            cliponaxis=False,
            customdata=hover,
            hovertemplate=words["row-hover-prompt"],
        ),
    ]
    ux: list[float | None] = []
    uy: list[float | None] = []
    bx: list[float | None] = []
    by: list[float | None] = []
    for y, k, p in zip(at, steps, prompt, strict=True):
        decode, width = drawn[k]
        end = r.budget - decode + width  # the budget's end in this row's drawing
        used = width + p
        if used < end:
            ux += [used, end, end, used, used, None]
            uy += [y - 0.31, y - 0.31, y + 0.31, y + 0.31, y - 0.31, None]
        bx += [end, end, None]
        by += [y - 0.42, y + 0.42, None]
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": words["unused"],
            "x": ux or [None],
            "y": uy or [None],
            "line": {"color": color("unused"), "width": 1.5, "dash": "dash"},
            "hoverinfo": "skip",
        }
    )
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": fill(words["budget-line"], {"budget": r.budget}),
            "x": bx,
            "y": by,
            "customdata": [r.budget],
            "line": {"color": color("budget"), "width": 3},
            "hoverinfo": "skip",
        }
    )
    decode0, width0 = drawn[steps[0]]
    shift = width0 - decode0  # where a token count lands on the first row
    marks = [round(r.budget * i / 4) for i in range(1, 5)]
    title = fill(words["timeline-title"], vars(r))
    layout = {
        "title": {"text": title},
        "barmode": "overlay",
        "height": 250 + ROW_PX * len(ks),
        "xaxis": axis(
            words["row-x-axis" if any(w > d for d, w in drawn.values()) else "row-x-axis-scale"],
            range=[0, (r.budget + shift) * 1.04],
            tickmode="array",
            tickvals=[m + shift for m in marks],
            ticktext=[f"{m:,}" for m in marks],
        ),
        "yaxis": {
            "title": {"text": words["row-y-axis"]},
            "type": "linear",
            "tickmode": "array",
            "tickvals": ys,
            "ticktext": ticks,
            "range": [len(ks) - 0.5, -0.5],
            "showgrid": False,
            "zeroline": False,
        },
    }
    figure = {"data": data, "layout": layout}
    return _walk(figure, r, at, steps, (r.budget + shift) * 1.04)


def _walk(figure: dict, r: Readout, at: list[int], steps: list[int], x_end: float) -> dict:
    """Play walks the rows one step at a time, a frame outlining its step's row; every row stays
    in full view (the chart opens on step 1)."""
    words = {**kit_labels(), **labels()}
    cursor = len(figure["data"])

    def frame(y: int) -> dict:
        box = {
            "type": "scatter",
            "mode": "lines",
            "name": words["current"],
            "showlegend": False,
            "x": [0, x_end, x_end, 0, 0],
            "y": [y - 0.45, y - 0.45, y + 0.45, y + 0.45, y - 0.45],
            "line": {"color": color("neutral"), "width": 2},
            "hoverinfo": "skip",
        }
        return {"data": [box], "traces": [cursor]}

    frames = [frame(y) for y in at]
    figure["data"] = figure["data"] + frames[0]["data"]
    names = [fill(words["row-step"], {"n": k - r.arrival + 2}) for k in steps]
    return animate(figure, frames, names, prefix="", start=0)


def spec(r: Readout) -> dict:
    """Stacked bars: the first step's budget split for k = 0..5 draft tokens; the chosen k
    outlined."""
    words = labels()
    ks = [fill(words["k"], {"k": int(k)}) for k in r.spec_ks]
    outline = {"width": [3 if int(k) == r.k else 0 for k in r.spec_ks], "color": "black"}
    data = [
        bars(
            ks,
            r.spec_decodes.tolist(),
            words["spec-running"],
            "decode",
            marker={"color": color("decode"), "line": outline},
            hovertemplate=words["spec-running-hover"],
        ),
        bars(
            ks,
            r.spec_chunks.tolist(),
            words["spec-chunk"],
            "prefill",
            marker={"color": color("prefill"), "line": outline},
            text=[
                fill(words["spec-chunk-text"], {"chunk": int(c), "steps": int(n)})
                if c > 0
                else words["no-room"]
                for c, n in zip(r.spec_chunks, r.spec_steps_all, strict=True)
            ],
            textposition="inside",
            textangle=0,
            insidetextanchor="middle",
            hovertemplate=words["spec-chunk-hover"],
        ),
    ]
    layout = {
        # One line: the caption under the chart (text.md spec-note) says it is not a replay.
        "title": {"text": fill(words["spec-title"], vars(r))},
        "barmode": "stack",
        "height": 420,
        "legend": {"traceorder": "normal"},
        "xaxis": axis(words["spec-x-axis"]),
        "yaxis": axis(words["spec-y-axis"], range=[0, r.budget * 1.08]),
    }
    return {"data": data, "layout": layout}


def defaults(r: Readout) -> dict:
    """vLLM's default token budget per GPU, ordered by memory; the selected GPU highlighted."""
    words = labels()
    keys = list(r.defaults_keys)
    ticks = [
        fill(words["gpu-tick"], {"gpu": k, "gib": m})
        for k, m in zip(keys, r.defaults_memory_gib, strict=True)
    ]
    data = [
        bars(
            keys,
            list(r.defaults_budgets),
            words["default-budget"],
            "decode",
            marker={"color": [color("highlight") if k == r.gpu else color("decode") for k in keys]},
            text=[f"{b:,}" for b in r.defaults_budgets],
            textposition="outside",
            customdata=[
                [m, s] for m, s in zip(r.defaults_memory_gib, r.defaults_seqs, strict=True)
            ],
            hovertemplate=words["default-hover"],
        )
    ]
    layout = {
        "title": {"text": words["defaults-title"]},
        "height": 420,
        # Each GPU's memory (as CUDA reports it, the figure vLLM's rule reads) under its name.
        "xaxis": axis(
            words["defaults-x-axis"],
            tickmode="array",
            tickvals=keys,
            ticktext=ticks,
        ),
        "yaxis": axis(words["defaults-y-axis"], range=[0, max(r.defaults_budgets) * 1.2]),
        "showlegend": False,
    }
    return {"data": data, "layout": layout}
