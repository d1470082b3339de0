"""Lesson 3 page: controls -> lessons.chunked_prefill.figures.build -> two lanes, table, text."""

import streamlit as st

from lessons.chunked_prefill import figures
from lessons.course import lesson
from lessons.text import section
from sim.hardware import gpu_keys
from sim.models import model_keys
from ui.charts import show
from ui.controls import choice, integer, scheduler_limits, steps
from ui.quiz import render_lesson_practice

LESSON = lesson("chunked_prefill")
TEXT = LESSON.text_path
PROMPTS = [16, 50, 100, 250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 100000, 131072]

build = st.cache_data(figures.build, show_spinner=False, max_entries=128)

st.markdown(section(TEXT, "title"))
st.markdown(section(TEXT, "intro"))


def _notes(n: dict) -> None:
    """Say what the runs changed from the controls, and when the KV cache is too small."""
    if n["users_clamped"]:
        st.info(section(TEXT, "users-clamped", n), icon=":material/group:")
    if n["prompt_clamped"]:
        st.info(section(TEXT, "prompt-clamped", n), icon=":material/content_cut:")
    short = []
    for lane, phrase in (("whole", "without chunking"), ("chunked", "with chunking")):
        if n[f"{lane}_pool_fits"]:
            continue
        values = {
            "lane_phrase": phrase,
            "lane_budget": n["whole_budget"] if lane == "whole" else n["budget"],
            "lane_pool_tokens": n[f"{lane}_pool_tokens"],
        }
        name = "memory-lane" if n[f"{lane}_pool_tokens"] > 0 else "memory-no-weights"
        short.append(section(TEXT, name, values))
    if short:
        st.warning(
            section(TEXT, "memory-short", {**n, "memory_lanes": " ".join(short)}),
            icon=":material/memory:",
        )


@st.fragment
def lab() -> None:
    d = figures.Params()
    st.markdown(section(TEXT, "lab"))
    cols = st.columns(3)
    with cols[0]:
        gpu = choice("GPU", gpu_keys(), key="gpu", default=d.gpu)
    with cols[1]:
        model = choice("Model", model_keys(), key="model", default=d.model)
    with cols[2]:
        tp = choice("GPUs (tensor parallel)", [1, 2, 4, 8], key="tp", default=d.tp)
    cols = st.columns(2)
    with cols[0]:
        prompt = steps(
            "Length of the new prompt (tokens)", PROMPTS, key="prompt", default=d.prompt_tokens
        )
    with cols[1]:
        users = integer("Users already streaming", 1, 256, key="users", default=d.users)
    limits = scheduler_limits(gpu)
    p = figures.Params(
        gpu=gpu,
        model=model,
        tp=tp,
        prompt_tokens=int(prompt),
        users=int(users),
        budget=limits["max_num_batched_tokens"],
        max_num_seqs=limits["max_num_seqs"],
    )
    result = build(p)
    n = result["numbers"]
    _notes(n)
    m = st.columns(4)
    m[0].metric("Longest wait, whole prompt", f"{n['whole_worst_gap_ms']:,.0f} ms")
    m[1].metric("Longest wait, chunked", f"{n['chunked_worst_gap_ms']:,.0f} ms")
    m[2].metric("First token, whole prompt", f"{n['whole_ttft_ms']:,.0f} ms")
    m[3].metric("First token, chunked", f"{n['chunked_ttft_ms']:,.0f} ms")
    st.caption(section(TEXT, "metrics-caption", n))
    st.markdown(section(TEXT, "lanes", n))
    show(result["lanes"], alt=result["alt"]["lanes"], key="lanes")
    if n["thinned"]:
        st.caption(section(TEXT, "lanes-thinned"))
    if n["merged"]:
        st.caption(section(TEXT, "lanes-merged"))
    st.markdown(section(TEXT, "reading-whole", n))
    if n["chunk_steps"] == 1:
        st.markdown(section(TEXT, "reading-one-chunk", n))
    else:
        st.markdown(section(TEXT, "reading-chunked", n))
        later = n["chunked_ttft_ms"] >= n["whole_ttft_ms"]
        st.markdown(section(TEXT, "ttft-longer" if later else "ttft-shorter", n))
    st.markdown(section(TEXT, "why", n))
    st.markdown(section(TEXT, "table", n))
    st.table(result["table"])
    st.caption(section(TEXT, "table-caption", n))
    short = n["whole_compute_prompt_pct"] < n["whole_bw_prompt_pct"]
    st.markdown(section(TEXT, "use-short" if short else "use", n))
    show(result["use"], alt=result["alt"]["use"], key="use")
    st.markdown(section(TEXT, "budget-rule", n))


lab()
st.markdown(section(TEXT, "takeaway"))
st.markdown(section(TEXT, "quiz"))
render_lesson_practice(LESSON)
