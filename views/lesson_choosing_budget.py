"""Lesson page "Choosing the budget": controls -> build -> Readout -> charts and text."""

import streamlit as st

from lessons.choosing_budget import figures
from lessons.choosing_budget.lesson import PREFIX, Params, build, default_budget
from lessons.kit import story
from ui.lesson_page import LessonPage

page = LessonPage("choosing_budget", Params, PREFIX)
readout = st.cache_resource(build, show_spinner=False, max_entries=256)


def gpu_changed() -> None:
    """Choosing a GPU sets vLLM's default budget for it (the learner can move it after)."""
    page.set("budget", default_budget(page.value("gpu")))


def caption(r, name: str) -> None:
    body = story.text(page.text_path, name, r)
    if body:
        st.caption(body)


page.say(None, "title", "intro")


@st.fragment
def lab() -> None:
    rows = [["gpu", "model"], ["budget", "decodes", "prompt", "itl_target_ms"]]
    p = page.controls(rows, on_change={"gpu": gpu_changed})
    r = readout(p)
    left, right = st.columns([4, 1], vertical_alignment="center")
    with left:
        caption(r, "defaults")
    right.button(
        story.text(page.text_path, "use-default", r),
        key=f"{PREFIX}-use-default",
        on_click=page.set,
        args=("budget", r.default_budget),
        disabled=r.is_default,
        width="stretch",
    )
    page.warn(r, "no-fit", icon=":material/memory:")
    page.warn(r, "kv-short", icon=":material/memory:")
    page.warn(r, "seqs-cap", icon=":material/group:")
    page.warn(r, "reject-prompt", icon=":material/block:")
    page.metrics(r)
    caption(r, "numbers-caption")
    page.say(r, "chunks")
    page.chart(figures.trade(r), r, "trade")
    page.say(r, "trade", "trade-slide", "pick", "pick-why", "anim")
    caption(r, "anim-nearest")
    page.chart(figures.budgets(r), r, "anim")
    page.say(r, "small", "guide")
    caption(r, "method")


lab()
page.footer()
