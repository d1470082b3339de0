"""Lesson 4 page: controls -> lessons.choosing_budget.figures.build -> charts and text."""

import streamlit as st

from lessons.choosing_budget import figures
from lessons.course import SITE_TEXT, lesson
from lessons.text import section
from sim.hardware import default_batch_limits, get_gpu, gpu_keys
from sim.models import get_model, kv_pool, model_keys, weight_bytes
from ui.charts import show
from ui.controls import choice, integer, steps
from ui.quiz import render_lesson_practice

LESSON = lesson("choosing_budget")
TEXT = LESSON.text_path
BUDGET_OPTIONS = figures.BUDGETS.tolist()
PROMPTS = [16, 256, 1024, 2048, 4096, 8192, 12000, 16384, 20000, 32768, 65536, 131072]


# Cached as shared objects (no copy per run): the figure dicts are only read from here on.
build = st.cache_resource(figures.build, show_spinner=False, max_entries=256)
# The animation depends on the scene only, so the budget and ITL sliders leave it alone.
build_anim = st.cache_resource(figures.build_anim, show_spinner=False, max_entries=64)


def _server_default(gpu: str) -> int:
    return default_batch_limits(gpu, usage="server")["max_num_batched_tokens"]


def _gpu_changed() -> None:
    """Choosing a GPU sets vLLM's default budget for it (the learner can move it after)."""
    st.session_state["budget"] = _server_default(st.session_state["gpu"])


def _use_default(gpu: str) -> None:
    st.session_state["budget"] = _server_default(gpu)


@st.cache_data(show_spinner=False, max_entries=256)
def _memory(gpu: str, model: str, budget: int, need_tokens: int) -> dict:
    pool = kv_pool(gpu, model, max_num_batched_tokens=budget)
    spec = get_model(model)
    return {
        "fits": pool.fits,
        "kv_have": int(pool.num_gpu_blocks * 16),
        "kv_need": int(need_tokens),
        "weight_gb": weight_bytes(spec) / 1e9,
        "memory_gib": get_gpu(gpu).memory_gib,
        "max_len": spec.max_position_embeddings,
    }


st.markdown(section(TEXT, "title"))
st.markdown(section(TEXT, "intro"))


@st.fragment
def lab() -> None:
    d = figures.Params()
    cols = st.columns(2)
    with cols[0]:
        gpu = choice("GPU", gpu_keys(), key="gpu", default=d.gpu, on_change=_gpu_changed)
    with cols[1]:
        model = choice("Model", model_keys(), key="model", default=d.model)
    cols = st.columns(3)
    with cols[0]:
        budget = steps(
            "Token budget (max_num_batched_tokens)", BUDGET_OPTIONS, key="budget", default=d.budget
        )
    with cols[1]:
        decodes = integer(
            "Users streaming (running decodes)", 1, 1024, key="decodes", default=d.decodes
        )
    with cols[2]:
        prompt = steps("Long prompt (tokens)", PROMPTS, key="prompt", default=d.prompt)
    default = _server_default(gpu)
    note = section(
        TEXT, "default-is-on" if budget == default else "default-is-off", {"opening": d.budget}
    )
    left, right = st.columns([4, 1], vertical_alignment="center")
    left.caption(
        section(TEXT, "defaults", {"gpu": gpu, "default_budget": default, "default_note": note})
    )
    right.button(
        f"Use {default:,}",
        key="use-default",
        on_click=_use_default,
        args=(gpu,),
        disabled=budget == default,
        width="stretch",
    )
    target = integer(
        "Inter-token latency target (ms)", 10, 300, key="itl", default=d.itl_target_ms, step=5
    )
    p = figures.Params(
        gpu=gpu, model=model, budget=budget, decodes=decodes, prompt=prompt, itl_target_ms=target
    )
    result = build(p)
    n = result["numbers"]
    mem = _memory(gpu, model, budget, decodes * (figures.CONTEXT + n["steps"]) + prompt)
    if not mem["fits"]:
        st.warning(section(SITE_TEXT, "weights-do-not-fit", mem), icon=":material/memory:")
    elif mem["kv_need"] > mem["kv_have"]:
        st.warning(section(TEXT, "kv-short", mem), icon=":material/memory:")
    max_seqs = min(default_batch_limits(gpu, usage="server")["max_num_seqs"], budget)
    if decodes + 1 > max_seqs and decodes < budget:
        values = {"gpu": gpu, "max_seqs": max_seqs, "decodes": decodes}
        st.info(section(TEXT, "seqs-cap", values), icon=":material/group:")
    if prompt >= mem["max_len"]:
        st.warning(
            section(
                TEXT, "reject-prompt", {"model": model, "max_len": mem["max_len"], "prompt": prompt}
            ),
            icon=":material/block:",
        )
    if not n["fits_prompt"]:
        st.markdown(section(TEXT, "chunks-none", n))
    else:
        m = st.columns(4)
        m[0].metric("Prompt tokens per step", f"{n['chunk']:,}")
        m[1].metric("Steps to read it in", f"{n['steps']:,}")
        m[2].metric("Longest step (users wait)", f"{n['worst_ms']:,.0f} ms")
        m[3].metric("Its first token after", f"{n['ttft_s']:.2f} s")
        st.caption(section(TEXT, "numbers-caption"))
        if n["steps"] == 1:
            kind = "chunks-one"
        elif n["last_chunk"] == n["chunk"]:
            kind = "chunks-even"
        else:
            kind = "chunks-many"
        st.markdown(section(TEXT, kind, n))
    show(result["trade"], alt=result["alt"]["trade"], key="trade")
    st.markdown(section(TEXT, "trade" if n["fits_prompt"] else "trade-none", n))
    st.markdown(section(TEXT, "pick" if n["pick"] is not None else "pick-none", n))
    st.markdown(section(TEXT, "anim", n))
    anim = build_anim(p.scene)
    show(anim["anim"], alt=anim["alt"], key="anim")


lab()
st.markdown(section(TEXT, "small"))
st.markdown(section(TEXT, "guide"))
st.caption(
    section(
        TEXT,
        "method",
        {
            "context": figures.CONTEXT,
            "budget_min": figures.BUDGET_MIN,
            "budget_max": figures.BUDGET_MAX,
            "budget_step": figures.BUDGET_STEP,
        },
    )
)
st.markdown(section(TEXT, "quiz"))
render_lesson_practice(LESSON)
