"""Lesson 1 page: controls -> lessons.step_cost.figures.build -> charts and text."""

import streamlit as st

from lessons.course import SITE_TEXT, lesson
from lessons.step_cost import figures
from lessons.text import section
from sim.hardware import gpu_keys
from sim.models import model_keys
from ui.charts import show
from ui.controls import choice, integer, steps, weights
from ui.quiz import render_lesson_practice

LESSON = lesson("step_cost")
TEXT = LESSON.text_path
TOKENS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384]
CONTEXTS = [0, 128, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]

build = st.cache_data(figures.build, show_spinner=False, max_entries=256)

st.markdown(section(TEXT, "title"))
st.markdown(section(TEXT, "intro"))


@st.fragment
def lab() -> None:
    d = figures.Params()
    cols = st.columns(4)
    with cols[0]:
        gpu = choice("GPU", gpu_keys(), key="gpu", default=d.gpu)
    with cols[1]:
        model = choice("Model", model_keys(), key="model", default=d.model)
    with cols[2]:
        dtype = weights(gpu, default=d.dtype)
    with cols[3]:
        tp = choice("GPUs (tensor parallel)", [1, 2, 4, 8], key="tp", default=d.tp)
    cols = st.columns(3)
    with cols[0]:
        tokens = steps("Prompt tokens in the step", TOKENS, key="tokens", default=d.tokens)
    with cols[1]:
        decodes = integer("Running decodes", 0, 1024, key="decodes", default=d.decodes)
    with cols[2]:
        context = steps(
            "KV context per decode (tokens)", CONTEXTS, key="context", default=d.context_tokens
        )
    p = figures.Params(
        gpu=gpu,
        model=model,
        dtype=dtype,
        tp=tp,
        tokens=tokens,
        decodes=decodes,
        context_tokens=context,
    )
    result = build(p)
    n = result["numbers"]
    if not n["fits"]:
        st.warning(section(SITE_TEXT, "weights-do-not-fit", n), icon=":material/memory:")
    m = st.columns(3)
    m[0].metric("Weight read (the floor)", f"{n['weight_read_ms']:.1f} ms")
    m[1].metric("Ridge", f"{n['ridge_tokens']:,} tokens")
    m[2].metric(f"Step of {n['ref_tokens']:,} tokens", f"{n['ref_ms']:.1f} ms")
    st.caption(section(TEXT, "numbers-caption"))
    show(result["curve"], alt=result["alt"]["curve"], key="curve")
    st.markdown(section(TEXT, "floor", n))
    st.markdown(section(TEXT, "slope", n))
    st.markdown(section(TEXT, "kv", n))
    reason = section(TEXT, f"bound-{n['n_bound']}")
    st.markdown(section(TEXT, "parts", {**n, "bound_reason": reason}))
    show(result["parts"], alt=result["alt"]["parts"], key="parts")
    st.markdown(section(TEXT, "anim", n))
    show(result["anim"], alt=result["alt"]["anim"], key="anim")
    st.markdown(section(TEXT, "seed", n))
    st.markdown(section(TEXT, "takeaway", n))


lab()
st.markdown(section(TEXT, "quiz"))
render_lesson_practice(LESSON)
