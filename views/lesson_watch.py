"""Lesson page "What to watch": controls -> build -> Readout -> the prediction, then one
dashboard (a run read as vLLM's metrics read it), its diagnosis once the fix is on, and the
common mistakes (lessons/watch)."""

import streamlit as st

from lessons.kit import anim
from lessons.watch import figures, lesson, predict
from ui.lesson_page import LessonPage
from ui.predict import predict_box, predicting

page = LessonPage("watch", lesson.Params, lesson.PREFIX)
# Shared, read-only: the Readout holds the run's arrays (lesson.run_for caches the runs).
readout = st.cache_resource(lesson.build, show_spinner=False, max_entries=32)

page.say(None, "title", "intro")


@st.fragment
def lab() -> None:
    p = page.controls([["gpu", "model", "dtype", "tp"], ["preset", "fixed", "itl_target_ms"]])
    with st.spinner(page.text("running")):
        r = readout(p)
    page.say(r, "controls-note")
    page.warn(r, "no-fit", icon=":material/memory:")
    page.warn(r, "unreachable", icon=":material/timer:")
    # the cause (or "nothing to fix") answers the dashboard's diagnosis question: only once the
    # learner has switched the fix on
    told = [f"fix-{r.preset_key}", "fix-note", "budget-ttft", "benchmark-overloaded"]
    told = told if r.fixed else []
    page.say(r, f"preset-{r.preset_key}", "ask", *told)
    held = predicting(page, p)  # the readings and the last frame answer the prediction
    if held:
        page.say(r, "metrics-wait")
    else:
        page.metrics(r)
    if r.fixed:
        page.say(r, "healthy-now")
    dashboard = figures.dashboard(r, held)
    page.chart(anim.reopen(dashboard, 0) if held else dashboard, r, "dashboard")
    page.say(r, "bands", "mistakes", "takeaway")
    page.ahead(readout, p, "itl_target_ms")  # the next target's runs, made while the learner reads


predict_box(page, predict.answers())
lab()
page.footer()
