"""Lesson page "Choosing the budget": the budget slider and the trade chart first, then the other
controls, the steps animation, the folded asides ("Go deeper") and the practice.

The budget is drawn above the chart and the other controls under it: two `controls()` calls,
the first taking the others' values as they will open (`page.upcoming`), so one Readout serves
the whole page."""

import streamlit as st

from lessons.choosing_budget import figures
from lessons.choosing_budget.lesson import PREFIX, Params, build, default_budget
from lessons.kit import story
from ui.lesson_page import LessonPage

page = LessonPage("choosing_budget", Params, PREFIX)
readout = st.cache_resource(build, show_spinner=False, max_entries=256)
MAIN = ("budget",)
SCENE = (["gpu", "model"], ["decodes", "prompt", "itl_target_ms"])


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
    rest = [n for row in SCENE for n in row]
    main = page.controls([list(MAIN)], fixed={n: page.upcoming(n) for n in rest})
    r = readout(main)
    page.warn(r, "no-fit", icon=":material/memory:")
    page.warn(r, "kv-short", icon=":material/memory:")
    page.warn(r, "seqs-cap", icon=":material/group:")
    page.warn(r, "reject-prompt", icon=":material/block:")
    page.chart(figures.trade(r), r, "trade")
    page.metrics(r)
    page.say(r, "trade", "trade-slide", "pick", "pick-why")
    page.ask("tiny_budget", "why_slower")
    page.ask("rule", "no_budget_fits", "batch_job", folded=True)
    page.controls(SCENE, on_change={"gpu": gpu_changed}, fixed={n: getattr(main, n) for n in MAIN})
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
    caption(r, "numbers-caption")
    with page.deeper("tiny"):
        page.say(r, "small")
    page.say(r, "chunks", "anim")
    caption(r, "anim-nearest")
    page.chart(figures.budgets(r), r, "anim")
    page.ask("cap_not_size", "ttft_not_linear", folded=True)
    with page.deeper("guide"):
        page.say(r, "guide")
    with page.deeper("method"):
        caption(r, "method")


lab()
page.footer()
