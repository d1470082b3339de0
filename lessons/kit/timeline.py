"""The budget-fill timeline: how each scheduler step spends its token budget.

Any lesson can draw it from a `sim.run.Run` recorded with `record_detail=True`. Each step is one
stacked bar: decode tokens of requests that are already generating at the bottom, then prompt
chunks (new prompts), then recomputed tokens (requests resuming after a preemption), and the
budget left unused drawn as a dashed outline up to `max_num_batched_tokens`.

Why a shared module: several lessons show the same picture (one budget, decode first, chunks
after), so the classification of scheduled tokens lives in one place and is tested once.
`classify(run)` does the bookkeeping; `budget_timeline(...)` turns it into a Plotly figure dict,
optionally with animation frames that walk a cursor along the steps (a few numbers per frame,
so even 200 frames stay far below the 1 MB limit).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.kit.anim import animate, sample_steps
from lessons.kit.figures import kit_labels as labels
from lessons.kit.story import fill as filled
from lessons.theme import color
from sim.run import Run

DECODE, PROMPT, RECOMPUTE = 0, 1, 2
KIND_NAMES = tuple(labels()[f"kind-{k}"] for k in ("decode", "prompt", "recompute"))
MAX_LABELLED_STEPS = 12
VEIL = "rgba(128, 128, 128, 0.30)"


@dataclass(frozen=True, eq=False)
class BudgetFill:
    """Per step (index k-1 for step k): tokens by kind, and the (request, tokens, kind) items."""

    steps: np.ndarray
    budget: int
    decode: np.ndarray
    prompt: np.ndarray
    recompute: np.ndarray
    items: tuple[tuple[tuple[int, int, int], ...], ...]

    @property
    def used(self) -> np.ndarray:
        return self.decode + self.prompt + self.recompute

    @property
    def unused(self) -> np.ndarray:
        return self.budget - self.used

    def request_tokens(self, req: int, kind: int | None = None) -> np.ndarray:
        """Tokens scheduled for request `req` in each step (of one kind, or all kinds)."""
        out = np.zeros(self.steps.shape[0], dtype=np.int64)
        for k, items in enumerate(self.items):
            out[k] = sum(t for r, t, kd in items if r == req and (kind is None or kd == kind))
        return out


def classify(run: Run) -> BudgetFill:
    """Sort every scheduled token of a detailed run into decode, prompt chunk or recompute.

    A request is decoding once it has sampled a token and is not recomputing; a preemption puts
    it into recompute until it samples again; before its first token it is prefilling its prompt.
    """
    if run.detail is None:
        raise ValueError("budget timelines need a run recorded with record_detail=True")
    n = run.workload.num_requests
    sampled_any = np.zeros(n, dtype=bool)
    recomputing = np.zeros(n, dtype=bool)
    num_steps = len(run.detail)
    tokens = np.zeros((3, num_steps), dtype=np.int64)
    items: list[tuple[tuple[int, int, int], ...]] = []
    for k, d in enumerate(run.detail):
        recomputing[d.preempted] = True
        step_items = []
        for req, tok in zip(d.scheduled_req.tolist(), d.scheduled_tokens.tolist(), strict=True):
            if recomputing[req]:
                kind = RECOMPUTE
            elif sampled_any[req]:
                kind = DECODE
            else:
                kind = PROMPT
            tokens[kind, k] += tok
            step_items.append((req, tok, kind))
        items.append(tuple(step_items))
        sampled_any[d.sampled] = True
        recomputing[d.sampled] = False
    return BudgetFill(
        steps=np.arange(1, num_steps + 1),
        budget=int(run.config.max_num_batched_tokens),
        decode=tokens[DECODE],
        prompt=tokens[PROMPT],
        recompute=tokens[RECOMPUTE],
        items=tuple(items),
    )


def _names(run: Run, names: dict[int, str] | None) -> list[str]:
    ids, word = run.workload.request_ids, labels()["request"]
    return [(names or {}).get(i, filled(word, {"id": ids[i]})) for i in range(len(ids))]


def _hover(fill: BudgetFill, idx: np.ndarray, kind: int, names: list[str]) -> list[str]:
    words, out = labels(), []
    for k in idx:
        parts = [(names[r], t) for r, t, kd in fill.items[k] if kd == kind]
        if kind == DECODE:
            out.append(filled(words["decoders"], {"n": len(parts)}) if parts else words["nobody"])
        else:
            out.append(", ".join(f"{nm}: {t:,}" for nm, t in parts) or words["nobody"])
    return out


def _step_caption(fill: BudgetFill, k: int) -> str:
    words = labels()
    bits = [filled(words["caption-decode"], {"n": int(fill.decode[k])})]
    if fill.prompt[k]:
        bits.append(filled(words["caption-prompt"], {"n": int(fill.prompt[k])}))
    if fill.recompute[k]:
        bits.append(filled(words["caption-recompute"], {"n": int(fill.recompute[k])}))
    values = {"step": int(fill.steps[k]), "parts": " + ".join(bits), "used": int(fill.used[k])}
    return filled(words["caption"], {**values, "budget": fill.budget})


def budget_timeline(
    run: Run,
    *,
    first_step: int = 1,
    last_step: int | None = None,
    names: dict[int, str] | None = None,
    title: str | None = None,
    frames: bool = True,
    fill: BudgetFill | None = None,
    open_at_step: int | None = None,
) -> dict:
    """Stacked bars per step (decode, prompt chunks, recompute) and the unused budget, dashed.

    `first_step`/`last_step` (1-based, inclusive) choose the window; `names` renames requests in
    the hover text (default "request <id>"). With `frames`, a Play/Pause/speed/step-slider
    animation moves a cursor over the steps (sampled evenly if the window has more than 200,
    which the chart's subtitle then says). Pass a precomputed `fill` to avoid classifying twice.
    The animation opens at the frame nearest `open_at_step` (default: the window's first step).
    """
    fill = fill or classify(run)
    last = fill.steps.shape[0] if last_step is None else min(int(last_step), fill.steps.shape[0])
    first = max(int(first_step), 1)
    if last < first:
        raise ValueError(f"empty window: steps {first}..{last}")
    idx = np.arange(first - 1, last)
    xs = fill.steps[idx]
    budget = fill.budget
    who = _names(run, names)
    words = labels()
    data: list[dict] = []
    layers = (
        (DECODE, fill.decode, words["layer-decode"], "decode"),
        (PROMPT, fill.prompt, words["layer-prompt"], "prefill"),
        (RECOMPUTE, fill.recompute, words["layer-recompute"], "recompute"),
    )
    for kind, values, label, role in layers:
        if kind == RECOMPUTE and not values[idx].any():
            continue
        data.append(
            {
                "type": "bar",
                "name": label,
                "x": xs.tolist(),
                "y": values[idx].tolist(),
                "customdata": _hover(fill, idx, kind, who),
                "marker": {"color": color(role)},
                "hovertemplate": f"{words['step-hover']}<extra>{KIND_NAMES[kind]}</extra>",
            }
        )
    # Unused budget: dashed outlines from the top of each bar up to the budget.
    ux: list[float | None] = []
    uy: list[float | None] = []
    used = fill.used[idx]
    for x, u in zip(xs.tolist(), used.tolist(), strict=True):
        if u >= budget:
            continue
        ux += [x - 0.4, x + 0.4, x + 0.4, x - 0.4, x - 0.4, None]
        uy += [u, u, budget, budget, u, None]
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
            "name": filled(words["budget-line"], {"budget": budget}),
            "x": [float(xs[0]) - 0.5, float(xs[-1]) + 0.5],
            "y": [budget, budget],
            "line": {"color": color("budget"), "width": 2, "dash": "dot"},
            "hoverinfo": "skip",
        }
    )
    if idx.shape[0] <= MAX_LABELLED_STEPS:
        data.append(
            {
                "type": "scatter",
                "mode": "text",
                "showlegend": False,
                "x": xs.tolist(),
                "y": [budget * 1.04] * idx.shape[0],
                "text": [
                    f"{int(fill.decode[k]):,}+{int(fill.prompt[k] + fill.recompute[k]):,}"
                    for k in idx
                ],
                "textposition": "top center",
                "hoverinfo": "skip",
            }
        )
    y_top = budget * 1.32
    layout: dict = {
        "title": {"text": title or filled(words["title"], {"budget": budget})},
        "barmode": "stack",
        "bargap": 0.2,
        "height": 470,
        "xaxis": {
            "title": {"text": words["x-axis"]},
            "range": [float(xs[0]) - 0.6, float(xs[-1]) + 0.6],
            **({"dtick": 1} if idx.shape[0] <= 30 else {}),
        },
        "yaxis": {"title": {"text": words["y-axis"]}, "range": [0, y_top]},
        "margin": {"t": 110},
    }
    figure = {"data": data, "layout": layout}
    if not frames:
        return figure
    shown = idx[sample_steps(idx.shape[0])]
    if shown.shape[0] < idx.shape[0]:
        note = filled(words["sampled"], {"shown": shown.shape[0], "total": idx.shape[0]})
        layout["title"]["text"] += f"<br><sup>{note}</sup>"
    cursor = len(data)
    x_end = float(xs[-1]) + 0.6

    def frame(k: int) -> dict:
        x = float(fill.steps[k])
        return {
            "data": [
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": words["current"],
                    "showlegend": False,
                    "x": [x - 0.45, x + 0.45, x + 0.45, x - 0.45, x - 0.45],
                    "y": [0, 0, budget, budget, 0],
                    "line": {"color": color("neutral"), "width": 2},
                    "hoverinfo": "skip",
                },
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": words["not-yet"],
                    "showlegend": False,
                    "x": [x + 0.5, x_end, x_end, x + 0.5, x + 0.5],
                    "y": [0, 0, y_top, y_top, 0],
                    "fill": "toself",
                    "fillcolor": VEIL,
                    "line": {"width": 0},
                    "hoverinfo": "skip",
                },
                {
                    "type": "scatter",
                    "mode": "text",
                    "showlegend": False,
                    "x": [float(xs[0]) - 0.5],
                    "y": [budget * 1.24],
                    "text": [_step_caption(fill, k)],
                    "textposition": "middle right",
                    "hoverinfo": "skip",
                },
            ],
            "traces": [cursor, cursor + 1, cursor + 2],
        }

    frame_list = [frame(int(k)) for k in shown]
    figure["data"] = data + frame_list[0]["data"]
    steps = [str(int(fill.steps[k])) for k in shown]
    target = first if open_at_step is None else int(open_at_step)
    start = min(range(len(shown)), key=lambda i: abs(int(fill.steps[shown[i]]) - target))
    return animate(figure, frame_list, steps, prefix=words["slider"] + " ", start=start)
