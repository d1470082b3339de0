"""Lesson page "The step loop": controls -> sim replay -> animation, stepper and the story."""

import streamlit as st

from lessons.course import SITE_TEXT, lesson
from lessons.step_loop import figures
from lessons.text import section
from sim.hardware import gpu_keys
from sim.models import model_keys
from ui.charts import show
from ui.controls import choice, integer, scheduler_limits
from ui.quiz import render_lesson_practice
from ui.stepper import stepper

LESSON = lesson("step_loop")
TEXT = LESSON.text_path


# cache_resource, not cache_data: the replay holds a Run (copying it on every hit costs more
# than the rerun budget), and nothing downstream mutates it.
@st.cache_resource(max_entries=64, show_spinner=False)
def build(p: figures.Params) -> dict:
    return figures.build(p)


st.markdown(section(TEXT, "title"))
st.markdown(section(TEXT, "intro"))
st.markdown(section(TEXT, "loop"))
st.markdown(section(TEXT, "limits"))


# Not a fragment of its own: as a fragment nested in lab()'s, a step clamped to a shorter run
# dropped out of the URL (seen with Streamlit 1.67), so a shared link reopened at step 1.
def by_hand(p: figures.Params) -> None:
    result = build(p)
    replay = result["replay"]
    st.markdown(section(TEXT, "stepper"))
    step = stepper(replay.run.num_steps, key="sl-step", label="Step")
    show(figures.step_figure(replay, step), alt=result["alt"]["step"], key="loop-step")
    st.markdown(figures.story(replay, step))


@st.fragment
def lab() -> None:
    d = figures.Params()
    cols = st.columns(3)
    with cols[0]:
        gpu = choice("GPU", gpu_keys(), key="sl-gpu", default=d.gpu)
    with cols[1]:
        model = choice("Model", model_keys(), key="sl-model", default=d.model)
    with cols[2]:
        blocks = integer(
            "KV cache pool (blocks of 16 tokens)",
            figures.POOL_MIN,
            figures.POOL_MAX,
            key="sl-blocks",
            default=d.blocks,
            step=figures.POOL_STEP,
        )
    limits = scheduler_limits(gpu, key_prefix="sl-")
    p = figures.Params(
        gpu=gpu,
        model=model,
        budget=limits["max_num_batched_tokens"],
        max_num_seqs=limits["max_num_seqs"],
        blocks=blocks,
    )
    if p.budget < p.max_num_seqs:
        st.error(section(TEXT, "bad-limits", {"budget": p.budget, "seqs": p.max_num_seqs}))
        return
    result = build(p)
    n = result["numbers"]
    if not n["fits"]:
        st.warning(section(SITE_TEXT, "weights-do-not-fit", n), icon=":material/memory:")
    st.markdown(section(TEXT, "scenario", n))
    if n["fits"]:
        st.markdown(section(TEXT, "pool-note", n))
    m = st.columns(4)
    m[0].metric("Steps", f"{n['num_steps']}")
    m[1].metric("Time for the whole run", f"{n['total_ms']:,.0f} ms")
    m[2].metric("Longest step", f"{n['max_ms']:.1f} ms")
    m[3].metric("Preemptions", f"{n['preemptions']}")
    if not n["preemptions"]:
        preempt = section(TEXT, "preempt-no")
    else:
        preempt = section(TEXT, "preempt-yes" if n["preemptions"] == 1 else "preempt-yes-many", n)
    st.markdown(section(TEXT, "summary", {**n, "preempt_sentence": preempt}))
    st.markdown(section(TEXT, "anim"))
    show(result["anim"], alt=result["alt"]["anim"], key="loop-anim")
    by_hand(p)


lab()
st.markdown(section(TEXT, "preemption"))
st.markdown(section(TEXT, "takeaway"))
st.markdown(section(TEXT, "quiz"))
render_lesson_practice(LESSON)
