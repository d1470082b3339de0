"""Figures of the lesson "Who goes first", drawn from its Readout.

- `stream`: the requests as they arrive (time, job size, class): the setup, drawn before the
  prediction is answered, since it shows no policy's result;
- `classes`: TTFT p99 of each class under each policy;
- `waits`: the longest wait (arrival to first step) under each policy, naming the request;
- `tenants`: median TTFT of the heavy tenant and of the others under each policy;
- `hits`: the prefix cache's hit rate under each policy, and under FCFS with vLLM 0.34's
  cache-aware admission (a sixth bar: vLLM's option, not one of the lesson's policies);
- `queue`: the chosen policy's waiting queue, animated over the run: one marker per request at
  the head of the queue, coloured by class, sized by job; it opens at the longest queue.

Words a learner reads come from text.md's `labels` section (and frame-title), filled here.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from lessons.course import lesson
from lessons.kit import story
from lessons.kit.anim import animate
from lessons.kit.figures import axis, bars, category_axis, markers
from lessons.policies.lesson import QUEUE_SHOWN
from lessons.policies.readout import Readout
from lessons.theme import color

TEXT = lesson("policies").text_path
TENANT_NAMES = "ABC"


@cache
def labels() -> dict[str, str]:
    """The charts' words, from text.md's `labels` section (`- key :: words`)."""
    return story.labels(TEXT)


def stream(r: Readout) -> dict:
    """Every request at its arrival time and job size (prompt + max_tokens), by class; the
    same stream under every policy, so it gives no policy's result away."""
    words = labels()
    q = r.queue
    traces = []
    for name, role, mask in (
        ("interactive", "decode", ~q.batch),
        ("batch", "prefill", q.batch),
    ):
        idx = np.flatnonzero(mask).tolist()
        traces.append(
            markers(
                q.arrival_s[idx].round(2),
                q.job_tokens[idx],
                words[name],
                role,
                size=8,
                customdata=[[q.names[i], TENANT_NAMES[q.tenant[i]]] for i in idx],
                hovertemplate=words["stream-hover"] + "<extra></extra>",
            )
        )
        traces[-1]["marker"]["symbol"] = "circle" if role == "decode" else "square"
    return {
        "data": traces,
        "layout": {
            "title": {"text": words["title-stream"]},
            "height": 330,
            "xaxis": axis(words["arrival-axis"], rangemode="tozero"),
            "yaxis": axis(words["job-axis"], rangemode="tozero"),
        },
    }


def _policy_bars(r: Readout, title: str, y_title: str, series: list[tuple]) -> dict:
    """Grouped bars over the five policies; series: (values, name, role, extra trace keys)."""
    words = labels()
    traces = [
        bars(list(r.names), list(values), name, role, **extra)
        for values, name, role, extra in series
    ]
    return {
        "data": traces,
        "layout": {
            "title": {"text": words[title]},
            "height": 380,
            "barmode": "group",
            "xaxis": category_axis(words["policy-axis"]),
            "yaxis": axis(words[y_title], rangemode="tozero"),
        },
    }


def classes(r: Readout) -> dict:
    """TTFT p99 of the interactive and the batch class under each policy."""
    words = labels()
    return _policy_bars(
        r,
        "title-classes",
        "ttft-p99-axis",
        [
            (r.int_ttft_p99_s, words["interactive"], "decode", {}),
            (r.batch_ttft_p99_s, words["batch"], "prefill", {}),
        ],
    )


def waits(r: Readout) -> dict:
    """The longest wait under each policy, with the request and its job size on hover."""
    words = labels()
    kinds = [words["batch"] if b else words["interactive"] for b in r.max_wait_batch]
    hover = {
        "customdata": [
            [name, int(job), kind]
            for name, job, kind in zip(r.max_wait_request, r.max_wait_job, kinds, strict=True)
        ],
        "hovertemplate": words["wait-hover"] + "<extra></extra>",
        "text": [words["wait-text"].format(job=int(j)) for j in r.max_wait_job],
        "textposition": "outside",
    }
    return _policy_bars(
        r, "title-waits", "wait-axis", [(r.max_wait_s, words["longest-wait"], "highlight", hover)]
    )


def tenants(r: Readout) -> dict:
    """Median TTFT of tenant A (the heavy one) and of tenants B and C under each policy."""
    words = labels()
    return _policy_bars(
        r,
        "title-tenants",
        "ttft-p50-axis",
        [
            (r.heavy_ttft_p50_s, words["heavy"], "tenant_heavy", {}),
            (r.light_ttft_p50_s, words["light"], "tenant_light", {}),
        ],
    )


def hits(r: Readout) -> dict:
    """Prefix-cache hit rate (hit tokens over prompt tokens) under each policy, then under FCFS
    with vLLM 0.34's cache-aware admission window."""
    words = labels()
    values = [*r.hit_pct, r.ca_hit_pct]
    text = {"text": [f"{v:.0f}%" for v in values], "textposition": "outside"}
    figure = _policy_bars(r, "title-hits", "hit-axis", [(values, words["hit"], "cached", text)])
    figure["data"][0]["x"] = [*r.names, words["cache-aware"]]
    return figure


def _head(r: Readout, k: int) -> dict:
    """The markers of frame k: the head of the waiting queue, in queue order."""
    q = r.queue
    head = q.heads[k]
    n = head.shape[0]
    x = list(range(1, n + 1)) or [None]
    job = q.job_tokens[head]
    colors = [color("prefill") if b else color("decode") for b in q.batch[head]]
    waited = q.time_s[k] - q.arrival_s[head]
    return {
        "x": x,
        "y": [0] * len(x),
        "text": [f"{q.names[i]}<br>{TENANT_NAMES[q.tenant[i]]}" for i in head.tolist()] or [""],
        "marker": {
            "size": (12 + 30 * np.sqrt(job / max(int(q.job_tokens.max()), 1))).round(1).tolist()
            or [0],
            "color": colors or [color("neutral")],
            "symbol": "square",
        },
        "customdata": [
            [q.names[i], TENANT_NAMES[q.tenant[i]], int(j), float(w)]
            for i, j, w in zip(head.tolist(), job.tolist(), waited.tolist(), strict=True)
        ]
        or [["", "", 0, 0.0]],
    }


def queue(r: Readout) -> dict:
    """The chosen policy's waiting queue at sampled steps (Play, Pause, step slider)."""
    words = labels()
    q = r.queue
    frames, names = [], []
    for k, step in enumerate(q.steps.tolist()):
        title = story.text(
            TEXT,
            "frame-title",
            None,
            policy=r.policy,
            time=float(q.time_s[k]),
            running=int(q.running[k]),
            waiting=int(q.waiting[k]),
        )
        frames.append({"data": [_head(r, k)], "traces": [0], "layout": {"title": {"text": title}}})
        names.append(str(step))
    trace = {
        "type": "scatter",
        "mode": "markers+text",
        "textposition": "top center",
        "hovertemplate": words["queue-hover"] + "<extra></extra>",
        "showlegend": False,
        **_head(r, 0),
    }
    legend = [
        {
            "type": "scatter",
            "mode": "markers",
            "x": [None],
            "y": [None],
            "name": words[name],
            "marker": {"size": 14, "color": color(role), "symbol": "square"},
            "hoverinfo": "skip",
        }
        for name, role in (("interactive", "decode"), ("batch", "prefill"))
    ]
    figure = {
        "data": [trace, *legend],
        "layout": {
            "title": {"text": ""},
            "height": 420,
            "xaxis": axis(words["position-axis"], range=[0.3, QUEUE_SHOWN + 0.7], dtick=1),
            "yaxis": {"visible": False, "range": [-0.6, 1.6]},
        },
    }
    return animate(figure, frames, names, start=int(np.argmax(q.waiting)))  # the longest queue
