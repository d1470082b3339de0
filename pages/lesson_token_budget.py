"""Lesson page "One token budget": controls -> scheduler replay -> budget-fill timeline."""

import streamlit as st

from lessons.course import lesson
from lessons.text import section
from lessons.token_budget import figures
from sim.hardware import gpu_keys
from sim.models import model_keys
from ui.charts import show
from ui.controls import choice, integer, scheduler_limits, steps
from ui.quiz import render_lesson_practice

LESSON = lesson("token_budget")
TEXT = LESSON.text_path


# cache_resource, not cache_data: the result holds a Run (copying it on every hit costs more
# than the rerun budget), and nothing downstream mutates it.
@st.cache_resource(max_entries=128, show_spinner=False)
def build(p: figures.Params) -> dict:
    return figures.build(p)


defaults = st.cache_resource(figures.defaults_part, max_entries=16, show_spinner=False)


st.markdown(section(TEXT, "title"))
st.markdown(section(TEXT, "intro"))
st.markdown(section(TEXT, "rule"))


@st.fragment
def speculative(p: figures.Params, needed: int) -> None:
    st.markdown(section(TEXT, "spec"))
    k = integer(
        "Draft tokens per running request (k)",
        0,
        figures.SPEC_KS[-1],
        key="tb-k",
        default=2,
    )
    part = figures.spec_part(p, k, needed)
    st.markdown(section(TEXT, part["text_section"], part["numbers"]))
    show(part["figure"], alt=part["alt"], key="tb-spec")
    st.caption(section(TEXT, "spec-note"))


@st.fragment
def gpu_defaults(gpu: str) -> None:
    part = defaults(gpu)
    tiers = "\n".join(section(TEXT, "defaults-tier", t) for t in part["tiers"])
    st.markdown(section(TEXT, "defaults", {"tiers": tiers}))
    show(part["figure"], alt=part["alt"], key="tb-gpu-defaults-chart")


@st.fragment
def lab() -> None:
    d = figures.Params()
    st.markdown(section(TEXT, "lab"))
    cols = st.columns(2)
    with cols[0]:
        gpu = choice("GPU", gpu_keys(), key="tb-gpu", default=d.gpu)
    with cols[1]:
        model = choice("Model", model_keys(), key="tb-model", default=d.model)
    limits = scheduler_limits(gpu, key_prefix="tb-")
    cols = st.columns(3)
    with cols[0]:
        decodes = integer(
            "Running requests (decoding)", 0, figures.MAX_DECODES, key="tb-decodes", default=8
        )
    with cols[1]:
        prompt = steps("New prompt (tokens)", figures.PROMPTS, key="tb-prompt", default=d.prompt)
    with cols[2]:
        cached = steps(
            "Cached prefix (% of the prompt)", figures.CACHED_SHARES, key="tb-cached", default=0
        )
    p = figures.Params(
        gpu=gpu,
        model=model,
        budget=limits["max_num_batched_tokens"],
        max_num_seqs=limits["max_num_seqs"],
        decodes=decodes,
        prompt=prompt,
        cached_pct=cached,
    )
    if p.budget < p.max_num_seqs:
        st.error(section(TEXT, "bad-limits", {"budget": p.budget, "seqs": p.max_num_seqs}))
        return
    result = build(p)
    n = result["numbers"]
    if result["problem"] is not None:
        st.warning(section(TEXT, f"problem-{result['problem']}", n), icon=":material/block:")
    else:
        if p.running < p.decodes:
            st.info(section(TEXT, "capped", {"running": p.running}))
        m = st.columns(4)
        m[0].metric("First chunk", f"{n['first_chunk']:,} tokens")
        m[1].metric("Steps with a chunk", f"{n['num_chunks']}")
        m[2].metric("First decode, counted from arrival", f"{n['decode_ordinal_text']} step")
        m[3].metric("Time to first token", f"{n['ttft_ms']:,.0f} ms")
        show(result["timeline"], alt=result["alt"], key="tb-timeline")
        st.markdown(section(TEXT, "reading", n))
        st.markdown(section(TEXT, "cached-some" if p.cached else "cached-none", n))
    speculative(p, n.get("needed", p.prompt))
    gpu_defaults(gpu)


lab()
st.markdown(section(TEXT, "why"))
st.markdown(section(TEXT, "quiz"))
render_lesson_practice(LESSON)
