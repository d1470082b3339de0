"""Figures of the lesson "When memory runs out", drawn from its Readout.

- `pool`: the KV cache as a grid of blocks (the kit's block grid), animated over the run's steps,
  with the blocks a victim loses marked in the frame of its preemption, and vLLM's readouts and
  the step's events in the frame's title and caption;
- `paging`: how many sequences fit, paged against a reservation of max_model_len each;
- `classes`: preemptions and tail latency of each class under FCFS and PRIORITY;
- `fixes`: preemptions and TTFT p99 of each what-if.

Frames carry only what changes (the grid's z, the marks, the title and caption). Words a learner
reads come from text.md (`labels` and the frame-* sections), filled here.
"""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np

from lessons.course import lesson
from lessons.kit import anim, story
from lessons.kit.anim import animate, reopen
from lessons.kit.figures import (
    axis,
    bars,
    block_grid,
    category_axis,
    count_axis,
    count_top,
    grid_z,
)
from lessons.kit.words import join
from lessons.memory.lesson import at_step, frame_of
from lessons.memory.readout import Comparison, Readout
from lessons.memory.trace import lost_blocks
from lessons.theme import color

GRID_TOP_PX = 78  # the title and the caption's two lines above the grid, with no gap between
GRID_MIN_PX = 260  # the grid's plot, at least
GRID_MAX_PX = 330  # and at most: presented (+29 px of title), 640 px fit a 1280x720 projector

TEXT = lesson("memory").text_path


@cache
def labels() -> dict[str, str]:
    """The charts' and tables' words, from text.md's `labels` section (`- key :: words`; a
    `{value}` in the words is filled by the caller)."""
    return story.labels(TEXT)


def _say(name: str, **values) -> str:
    return story.text(TEXT, name, None, **values)


def _cells(blocks: np.ndarray, columns: int) -> tuple[list, list]:
    b = np.asarray(blocks, dtype=np.int64)
    return (b % columns).tolist() or [None], (b // columns).tolist() or [None]


def _frame_words(r: Readout, k: int) -> tuple[str, str]:
    """The title (the lists and the cache) and the caption (vLLM's counters, then what happened)
    of step k + 1."""
    s = at_step(r, k + 1, tables=False)
    rate = f"{s.hit_rate_pct:.0f}%" if r.prefix_caching and s.looked_up else "–"
    lists = {"step": s.step, "running": s.running, "waiting": s.waiting}
    title = _say("frame-title", usage=s.usage_pct, **lists)
    counters = _say("frame-counters", preemptions=s.preemptions, rate=rate)
    events = []
    if s.preempted_now:
        events.append(
            _say(
                "frame-preempted", names=s.preempted_names, blocks=s.freed_blocks, head=s.queue_head
            )
        )
    if s.resumed_now:
        events.append(
            _say("frame-resumed", names=s.resumed_names, tokens=s.recompute_now, hits=s.hits_now)
        )
    if s.finished_now:
        events.append(_say("frame-finished", names=s.finished_names))
    queue = r.frames.waiting_order[k]
    shown = join([r.frames.names[q] for q in queue[:8]]) + (" …" if len(queue) > 8 else "")
    events.append(_say("frame-queue", queue=shown or "–"))
    return title, counters + "<br>" + "  ·  ".join(events)


def pool(r: Readout, step: int) -> dict:
    """The animated block grid (built once per Readout), opening at `step`: at its frame, or,
    when the animation samples the run and `step` falls between two frames, drawn for `step`
    itself over the frame before it, so the grid and its title match the stepper."""
    step = min(max(int(step), 1), r.num_steps)
    at = frame_of(r, step)
    if int(r.frames.steps[at]) == step - 1:
        return reopen(_pool(r), at)
    fr, k = r.frames, step - 1
    freed = lost_blocks(fr.trace, k, fr.preempted[k])
    return reopen(_pool(r), at, show=_frame(r, k, fr.trace.owners(k), freed))


def _frame(r: Readout, k: int, owners: np.ndarray, freed: np.ndarray) -> dict:
    """The grid of step k + 1: its cells, the crosses on blocks a victim lost, its words."""
    cut = r.grid_blocks
    title, caption = _frame_words(r, k)
    xs, ys = _cells(freed[freed < cut], r.grid_columns)
    return {
        "data": [
            {"type": "heatmap", "z": grid_z(owners[:cut], r.grid_columns)},
            {"type": "scatter", "x": xs, "y": ys},
        ],
        "traces": [0, 1],
        "layout": {"title": {"text": title}, "annotations": [_caption(caption)]},
    }


@lru_cache(maxsize=8)
def _pool(r: Readout) -> dict:
    fr = r.frames
    cut = r.grid_blocks
    columns = r.grid_columns
    base = block_grid(fr.owners[0][:cut], columns, owners=len(fr.names))
    rows = -(-cut // columns)
    words = labels()
    marks = {
        "type": "scatter",
        "mode": "markers",
        "name": words["freed"],
        "x": [None],
        "y": [None],
        "marker": {
            "symbol": "x-thin",
            "size": 9,
            "line": {"width": 2, "color": color("highlight")},
        },
        "hoverinfo": "skip",
    }
    frames, names = [], []
    for i, k in enumerate(fr.steps.tolist()):
        frames.append(_frame(r, k, fr.owners[i], fr.freed_by_preemption[i]))
        names.append(str(k + 1))
    figure = {
        "data": [base, marks],
        "layout": {
            # the plot at least GRID_MIN_PX tall, so that the Play buttons and the step slider
            # (placed by kit/anim.py as fractions of it) sit below the x-axis title
            "height": GRID_TOP_PX
            + min(GRID_MAX_PX, max(GRID_MIN_PX, 14 * rows))
            + anim.BOTTOM_MARGIN_PX,
            "xaxis": axis(
                words["x"].format(columns=columns),
                range=[-0.5, columns - 0.5],
                showgrid=False,
            ),
            "yaxis": axis(
                words["y"].format(columns=columns),
                range=[rows - 0.5, -0.5],  # row 0 on top
                showgrid=False,
                **({"dtick": 1} if rows < 8 else {}),  # whole rows only
            ),
            "showlegend": False,  # the crosses are explained in the text above the grid
            "margin": {"t": GRID_TOP_PX},
        },
    }
    return animate(figure, frames, names)


def _caption(text: str) -> dict:
    return {
        "text": text,
        "xref": "paper",
        "yref": "paper",
        "x": 0,
        "y": 1.0,
        "xanchor": "left",
        "yanchor": "bottom",
        "showarrow": False,
        "align": "left",
    }


def paging(r: Readout) -> dict:
    """Sequences of the run's average length that fit the pool: paged, or reserved in full."""
    words = labels()
    names = [words["paged"], words["static"]]
    return {
        "data": [
            bars(names, [r.paged_seqs, r.static_seqs], words["seqs"], "kv", horizontal=False),
        ],
        "layout": {
            "title": {"text": words["title-paging"]},
            "height": 340,
            "xaxis": category_axis(words["method"]),
            "yaxis": count_axis(words["seqs-axis"], count_top([r.paged_seqs, r.static_seqs])),
            "showlegend": False,
        },
    }


def classes(r: Comparison) -> dict:
    """Per class, under each policy: preemptions (left) and TTFT p99 (right). Where neither
    policy preempts (`victims_none`), the TTFT p99 alone: an empty panel says nothing."""
    words = labels()
    rows = r.class_rows
    ttft_only = r.victims_none
    traces = []
    for policy, role in (("FCFS", "decode"), ("PRIORITY", "prefill")):
        mine = [row for row in rows if row.policy == policy]
        cls = [words[row.cls] for row in mine]
        if not ttft_only:
            traces.append(bars(cls, [row.preemptions for row in mine], policy, role))
        ttft = [row.ttft_p99_ms / 1e3 for row in mine]
        on = {} if ttft_only else {"xaxis": "x2", "yaxis": "y2", "showlegend": False}
        traces.append(bars(cls, ttft, policy, role, **on))
    layout = {"height": 400, "barmode": "group"}
    if ttft_only:
        return {
            "data": traces,
            "layout": {
                **layout,
                "title": {"text": words["title-classes-none"]},
                "xaxis": category_axis(words["class"]),
                "yaxis": axis(words["ttft-axis"], rangemode="tozero"),
            },
        }
    return {
        "data": traces,
        "layout": {
            **layout,
            "title": {"text": words["title-classes"]},
            "xaxis": category_axis(words["class"], domain=[0, 0.44]),
            "yaxis": count_axis(
                words["preemptions-axis"], count_top([row.preemptions for row in rows])
            ),
            "xaxis2": category_axis(words["class"], domain=[0.56, 1], anchor="y2"),
            "yaxis2": axis(words["ttft-axis"], anchor="x2", rangemode="tozero"),
        },
    }


def fixes(r: Comparison) -> dict:
    """Each what-if: preemptions (left) and TTFT p99 (right), as horizontal bars; the TTFT p99
    alone where no what-if preempts (`fixes_none`)."""
    words = labels()
    names = [fix_label(f) for f in r.fixes][::-1]
    pre = [f.preemptions for f in r.fixes][::-1]
    ttft = [f.ttft_p99_ms / 1e3 for f in r.fixes][::-1]
    layout = {"height": 150 + 44 * len(names), "yaxis": axis(words["fix-axis"], automargin=True)}
    if r.fixes_none:
        return {
            "data": [bars(ttft, names, words["ttft"], "decode", horizontal=True)],
            "layout": {
                **layout,
                "title": {"text": words["title-fixes-none"]},
                "xaxis": axis(words["ttft-axis"], rangemode="tozero"),
            },
        }
    return {
        "data": [
            bars(pre, names, words["preemptions"], "recompute", horizontal=True),
            bars(ttft, names, words["ttft"], "decode", horizontal=True, xaxis="x2"),
        ],
        "layout": {
            **layout,
            "title": {"text": words["title-fixes"]},
            "xaxis": count_axis(words["preemptions-axis"], count_top(pre), domain=[0, 0.46]),
            "xaxis2": axis(words["ttft-axis"], domain=[0.54, 1], anchor="y", rangemode="tozero"),
        },
    }


def fix_label(fix) -> str:
    """A what-if's name, with its value (text.md labels `fix-<key>`)."""
    return labels()[f"fix-{fix.key}"].format(value=fix.detail)
