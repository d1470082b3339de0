"""Lesson page "When memory runs out": controls -> build -> Readout -> the predictions, the block
grid, the stepper with readouts and block tables, paging, victim, price, fixes (lessons/memory)."""

import streamlit as st

from lessons.kit import story
from lessons.memory import figures, lesson, predict, tables
from ui.lesson_page import LessonPage
from ui.predict import predict_box, predicting
from ui.stepper import stepper

STEP = lesson.STEP_KEY
page = LessonPage("memory", lesson.Params, lesson.PREFIX)
# Shared, read-only; the comparisons (more runs) are cached apart: the grid is drawn first.
readout = st.cache_resource(lesson.build, show_spinner=False, max_entries=32)
comparisons = st.cache_resource(lesson.comparison, show_spinner=False, max_entries=32)

page.say(None, "title", "intro", "controls-note", block_size=lesson.BLOCK_SIZE)


def step_panel(r, step: int) -> None:
    s = lesson.at_step(r, step)
    items = story.metrics(page.text_path, "step-metrics", s)
    for col, (label, value) in zip(st.columns(len(items)), items, strict=True):
        col.metric(label, value)
    page.say(s, "step-hits", "step-victim-hits", "step-preempted", "step-resumed")
    page.say(s, "step-finished", "tables")
    page.table(tables.block_tables(s))


@st.fragment
def lab() -> None:
    p = page.controls(lesson.LAYOUT, show_if=lesson.SHOW_IF)
    if refusal := lesson.all_refused(p):  # every prompt too long: nothing reaches the scheduler
        return page.warn(refusal, "all-refused", icon=":material/block:")
    r = readout(p)
    page.defaults_note(r)
    for name, icon in lesson.WARNINGS:
        page.warn(r, name, icon=f":material/{icon}:")
    page.warn(r, "refused-note", icon=":material/block:")
    held = predicting(page, p)  # the counts, the victims and the async steps give it away
    page.say(r, "scenario", "rate-same", *(["metrics-wait"] if held else []))
    if not held:  # (a bare `x if held else y` line would be written on the page by st magic)
        page.metrics(r)
    page.say(r, "grid", "grid-cut", "sampled")
    animation = st.container()
    page.say(r, "summary-wait" if held else "summary", "stepper")
    step = stepper(STEP, r.num_steps)
    with animation:
        page.chart(figures.pool(r, step), r, "pool", stepper=step)
    step_panel(r, step)
    page.say(r, "paging")
    page.chart(figures.paging(r), r, "paging")
    if held:
        page.say(r, "rest-wait")
    else:
        rest(r, comparisons(p))
    for build in (readout, comparisons):  # the next lengths' runs, made while the learner reads
        page.ahead(build, p, "prompt_tokens", "output_tokens")


def rest(r, c) -> None:
    """The victim, the price, the fixes and async scheduling: what the predictions are about."""
    page.say(c, "victim", "victim-result")
    page.chart(figures.classes(c), c, "classes")
    page.say(r, "price")
    if r.preempted:
        page.table(tables.victims(r))
    page.say(c, "caching")
    page.say(r, "swap", "readouts", "fixes")
    page.say(c, "fixes-left-out")
    page.chart(figures.fixes(c), c, "fixes")
    page.table(tables.fixes(c))
    page.say(c, "fixes-after", "fixes-pool-more", "async")
    page.say(r, "takeaway")


predict_box(page, predict.answers(), STEP, predict.answers()["step"])
lab()
page.footer()
