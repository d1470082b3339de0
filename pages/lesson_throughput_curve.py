"""Lesson 5 page: controls -> lessons.throughput_curve.figures.build -> charts and text."""

import plotly.graph_objects as go
import streamlit as st

from lessons.course import SITE_TEXT, lesson
from lessons.text import section
from lessons.throughput_curve import figures
from sim.hardware import get_gpu, gpu_keys
from sim.models import model_keys
from ui.charts import show
from ui.controls import choice, integer, scheduler_limits, steps
from ui.quiz import render_lesson_practice

LESSON = lesson("throughput_curve")
TEXT = LESSON.text_path
CONTEXTS = [16, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
FIGURES = ("curve", "reads", "anim")


@st.cache_resource(show_spinner=False, max_entries=128)
def build(p: figures.Params) -> dict:
    """The lesson's figures and numbers; figures validated into go.Figure once per setting.

    Streamlit validates a figure dict on every draw (tens of ms for an animation); a cached
    go.Figure skips that, and st.plotly_chart copies it before use, so sharing it is safe.
    """
    result = figures.build(p)
    return {**result, **{name: go.Figure(result[name]) for name in FIGURES}}


st.markdown(section(TEXT, "title"))
st.markdown(section(TEXT, "intro"))


@st.fragment
def lab() -> None:
    d = figures.Params()
    cols = st.columns(2)
    with cols[0]:
        gpu = choice("GPU", gpu_keys(), key="gpu", default=d.gpu)
    with cols[1]:
        model = choice("Model", model_keys(), key="model", default=d.model)
    limits = scheduler_limits(gpu)
    cols = st.columns(2)
    with cols[0]:
        context = steps(
            "Context each sequence holds (tokens)", CONTEXTS, key="context", default=d.context
        )
    with cols[1]:
        target = integer(
            "Inter-token latency target (ms)", 5, 200, key="itl", default=d.itl_target_ms
        )
    p = figures.Params(
        gpu=gpu,
        model=model,
        context=context,
        itl_target_ms=target,
        max_num_seqs=limits["max_num_seqs"],
        budget=limits["max_num_batched_tokens"],
    )
    result = build(p)
    n = result["numbers"]
    if result["config_error"]:
        st.warning(
            section(TEXT, "config-error", {"error": result["config_error"]}),
            icon=":material/block:",
        )
    if not n["fits"]:
        memo = {"weight_gb": n["weight_gb"], "memory_gib": get_gpu(gpu).memory_gib}
        st.warning(section(SITE_TEXT, "weights-do-not-fit", memo), icon=":material/memory:")
    m = st.columns(4)
    m[0].metric("Knee", f"{n['knee']:,} sequences" if n["knee"] else "none")
    m[1].metric(f"Largest within {target} ms", f"{n['pick']:,} sequences" if n["pick"] else "none")
    m[2].metric("Total at the knee", f"{n['knee_total']:,.0f} tok/s" if n["knee"] else "–")
    m[3].metric("KV cache holds", f"{n['kv_cap']:,} sequences")
    st.caption(section(TEXT, "numbers-caption"))
    show(result["curve"], alt=result["alt"]["curve"], key="curve")
    st.markdown(section(TEXT, "rise" if n["knee"] else "rise-no-knee", n))
    if n["knee"]:
        st.markdown(section(TEXT, "knee", n))
    if n["pick"] is None:
        st.markdown(section(TEXT, "pick-none", n))
    else:
        st.markdown(section(TEXT, "pick-kv" if n["pick_kv_bound"] else "pick", n))
    st.markdown(section(TEXT, "bend", n))
    show(result["reads"], alt=result["alt"]["reads"], key="reads")
    st.markdown(section(TEXT, "memory" if n["kv_cap"] < figures.MAX_SEQS else "memory-all", n))
    if n["reach"] == 0:
        st.markdown(section(TEXT, "cap-none", n))
    else:
        st.markdown(section(TEXT, "cap-kv" if n["reach"] < n["cap"] else "cap", n))
    st.markdown(section(TEXT, "anim", n))
    show(result["anim"], alt=result["alt"]["anim"], key="anim")
    st.markdown(section(TEXT, "lever"))
    st.caption(section(TEXT, "method", n))


lab()
st.markdown(section(TEXT, "quiz"))
render_lesson_practice(LESSON)
