"""Lesson 5 page: controls -> lessons.throughput_curve.figures.build -> charts and text."""

import streamlit as st

from lessons.course import SITE_TEXT, lesson
from lessons.text import section
from lessons.throughput_curve import figures
from sim.hardware import get_gpu, gpu_keys
from sim.models import get_model, model_keys, weight_bytes
from ui.charts import show
from ui.controls import choice, integer, scheduler_limits, steps
from ui.quiz import render_lesson_practice

LESSON = lesson("throughput_curve")
TEXT = LESSON.text_path
CONTEXTS = [16, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]


# Cached as shared objects (no copy per run): the figure dicts are only read from here on.
build = st.cache_resource(figures.build, show_spinner=False, max_entries=256)
# The reads chart and the animation depend on GPU, model and context only (Params.view).
build_static = st.cache_resource(figures.build_static, show_spinner=False, max_entries=64)


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
        memo = {
            "weight_gb": weight_bytes(get_model(model)) / 1e9,
            "memory_gib": get_gpu(gpu).memory_gib,
        }
        st.warning(section(SITE_TEXT, "weights-do-not-fit", memo), icon=":material/memory:")
    m = st.columns(4)
    m[0].metric("Knee (sequences)", f"{n['knee']:,}" if n["knee"] else "none")
    m[1].metric(f"Largest within {target} ms", f"{n['pick']:,}" if n["pick"] else "none")
    m[2].metric("Total at the knee (tok/s)", f"{n['knee_total']:,.0f}" if n["knee"] else "–")
    m[3].metric("KV cache holds (sequences)", f"{n['kv_cap']:,}")
    st.caption(section(TEXT, "numbers-caption", n))
    show(result["curve"], alt=result["alt"]["curve"], key="curve")
    rise = {None: "rise-no-knee", 1: "rise-early"}.get(n["knee"], "rise")
    st.markdown(section(TEXT, rise, n))
    if n["knee"]:
        st.markdown(section(TEXT, "knee", n))
    if n["pick"] is None:
        st.markdown(section(TEXT, "pick-none", n))
    else:
        st.markdown(section(TEXT, "pick-kv" if n["pick_kv_bound"] else "pick", n))
    st.markdown(section(TEXT, "bend", n))
    static = build_static(p.view)
    show(static["reads"], alt=static["alt"]["reads"], key="reads")
    if n["fits"]:
        st.markdown(section(TEXT, "memory" if n["kv_cap"] < figures.MAX_SEQS else "memory-all", n))
    if n["reach"] == 0:
        st.markdown(section(TEXT, "cap-none", n))
    else:
        st.markdown(section(TEXT, "cap-kv" if n["reach"] < n["cap"] else "cap", n))
    st.markdown(section(TEXT, "anim", n))
    show(static["anim"], alt=static["alt"]["anim"], key="anim")
    st.markdown(section(TEXT, "lever"))
    st.caption(section(TEXT, "method", n))


lab()
st.markdown(section(TEXT, "quiz"))
render_lesson_practice(LESSON)
