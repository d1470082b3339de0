"""Lesson page "Who goes first": controls -> build -> Readout -> the prediction, then five
policies' runs of one workload side by side and the chosen policy's queue (lessons/policies)."""

import streamlit as st

from lessons.policies import figures, lesson, predict
from ui.lesson_page import LessonPage
from ui.predict import predict_box, predicting

page = LessonPage("policies", lesson.Params, lesson.PREFIX)
# Shared, read-only: the Readout holds the runs' arrays (lesson.runs_for caches the runs).
readout = st.cache_resource(lesson.build, show_spinner=False, max_entries=32)

page.say(None, "title", "intro", "controls-note")


@st.fragment
def lab() -> None:
    p = page.controls(
        [
            ["gpu", "model", "dtype", "tp"],
            ["policy", "load_pct", "interactive_pct", "heavy_pct", "prefix_caching"],
        ]
    )
    with st.spinner(page.text("running")):
        r = readout(p)
    page.warn(r, "no-fit", icon=":material/memory:")
    page.warn(r, "no-queue", "no-queue-above", icon=":material/hourglass_empty:")
    page.warn(r, "teaching", icon=":material/school:")
    page.say(r, "workload")
    if predicting(page, p):  # the charts answer the prediction
        page.say(r, "predict-wait")
    else:
        reveal(r)
    page.ahead(readout, p, "load_pct")  # the next load's five runs, made while the learner reads


def reveal(r) -> None:
    """The metrics and the five charts: what the prediction is about."""
    page.metrics(r)
    page.say(r, "classes", "prio-helps", "sjf-classes", "preempted")
    page.chart(figures.classes(r), r, "classes")
    page.say(r, "waits", "sjf-starves")
    page.chart(figures.waits(r), r, "waits")
    page.say(r, "tenants", "fcfs-tenants", "fair-holds")
    page.chart(figures.tenants(r), r, "tenants")
    page.say(r, "hits", "prefix-gain")
    page.chart(figures.hits(r), r, "hits")
    page.say(r, "queue")
    if not r.queue_empty:  # an empty line is not drawn; the text says so
        page.chart(figures.queue(r), r, "queue")
    page.say(r, "overload", "takeaway")


predict_box(page, predict.answers())
lab()
page.footer()
