"""Figures of the lesson "One token budget", drawn from its Readout through the kit: the
budget-fill timeline of the replay (lessons/kit/timeline.py), the budget split with k draft
tokens, and vLLM's default budget GPU by GPU."""

from __future__ import annotations

from pathlib import Path

from lessons.kit import story
from lessons.kit.figures import axis, bars
from lessons.kit.story import fill
from lessons.kit.timeline import budget_timeline
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


def timeline(r: Readout) -> dict:
    """The budget-fill timeline from the step before the prompt arrives to two decodes on; the
    animation opens at the prompt's first chunk (the step the metrics quote)."""
    return budget_timeline(
        r.run,
        first_step=r.window_first,
        last_step=r.window_last,
        names=_names(r),
        fill=r.fill,
        title=fill(labels()["timeline-title"], vars(r)),
        open_at_step=r.first_chunk_step,
    )


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
