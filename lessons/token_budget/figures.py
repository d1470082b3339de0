"""Figures of the lesson "One token budget", drawn from its Readout through the kit: the
budget-fill timeline of the replay (lessons/kit/timeline.py), the budget split with k draft
tokens, and vLLM's default budget GPU by GPU."""

from __future__ import annotations

from lessons.kit.figures import axis, bars
from lessons.kit.timeline import budget_timeline
from lessons.theme import color
from lessons.token_budget.readout import Readout


def _names(r: Readout) -> dict[int, str]:
    """Who is who in the timeline's hover text."""
    names = {r.long: "the new prompt"}
    for i in range(r.running):
        names[i] = f"running request {i + 1}"
    if r.cached:
        names[r.long - 1] = "earlier chat with the same system prompt"
    return names


def timeline(r: Readout) -> dict:
    """The budget-fill timeline from the step before the prompt arrives to two decodes on; the
    animation opens at the prompt's first chunk (the step the metrics quote)."""
    return budget_timeline(
        r.run,
        first_step=r.window_first,
        last_step=r.window_last,
        names=_names(r),
        fill=r.fill,
        title=(
            f"One {r.budget:,}-token budget per step: {r.running} running requests "
            f"and a {r.prompt:,}-token prompt"
        ),
        open_at_step=r.first_chunk_step,
    )


def spec(r: Readout) -> dict:
    """Stacked bars: the first step's budget split for k = 0..5 draft tokens; the chosen k
    outlined."""
    labels = [f"k = {int(k)}" for k in r.spec_ks]
    outline = {"width": [3 if int(k) == r.k else 0 for k in r.spec_ks], "color": "black"}
    data = [
        bars(
            labels,
            r.spec_decodes.tolist(),
            "tokens of the running requests (1 + k each)",
            "decode",
            marker={"color": color("decode"), "line": outline},
            hovertemplate="%{x}: %{y:,} tokens<extra>running requests</extra>",
        ),
        bars(
            labels,
            r.spec_chunks.tolist(),
            "left for the prompt chunk",
            "prefill",
            marker={"color": color("prefill"), "line": outline},
            text=[
                f"{int(c):,}<br>{int(n)} steps" if c > 0 else "no room"
                for c, n in zip(r.spec_chunks, r.spec_steps_all, strict=True)
            ],
            textposition="inside",
            textangle=0,
            insidetextanchor="middle",
            hovertemplate="%{x}: %{y:,} prompt tokens per step<extra>prompt chunk</extra>",
        ),
    ]
    layout = {
        # One line: the caption under the chart (text.md spec-note) says it is not a replay.
        "title": {
            "text": f"Budget arithmetic: {r.running} running requests with k draft tokens each"
        },
        "barmode": "stack",
        "height": 420,
        "legend": {"traceorder": "normal"},
        "xaxis": axis("draft tokens per running request (k)"),
        "yaxis": axis("budget of one step (tokens)", range=[0, r.budget * 1.08]),
    }
    return {"data": data, "layout": layout}


def defaults(r: Readout) -> dict:
    """vLLM's default token budget per GPU, ordered by memory; the selected GPU highlighted."""
    keys = list(r.defaults_keys)
    ticks = [f"{k}<br>{m:.0f} GiB" for k, m in zip(keys, r.defaults_memory_gib, strict=True)]
    data = [
        bars(
            keys,
            list(r.defaults_budgets),
            "default max_num_batched_tokens",
            "decode",
            marker={"color": [color("highlight") if k == r.gpu else color("decode") for k in keys]},
            text=[f"{b:,}" for b in r.defaults_budgets],
            textposition="outside",
            customdata=[
                [m, s] for m, s in zip(r.defaults_memory_gib, r.defaults_seqs, strict=True)
            ],
            hovertemplate=(
                "%{x}: %{customdata[0]:.1f} GiB reported<br>budget %{y:,} tokens, "
                "max_num_seqs %{customdata[1]:,}<extra></extra>"
            ),
        )
    ]
    layout = {
        "title": {"text": "vLLM's default token budget for vllm serve, GPU by GPU"},
        "height": 420,
        # Each GPU's memory (as CUDA reports it, the figure vLLM's rule reads) under its name.
        "xaxis": axis(
            "GPU and the memory CUDA reports (GiB), ordered by memory",
            tickmode="array",
            tickvals=keys,
            ticktext=ticks,
        ),
        "yaxis": axis("default budget (tokens per step)", range=[0, max(r.defaults_budgets) * 1.2]),
        "showlegend": False,
    }
    return {"data": data, "layout": layout}
