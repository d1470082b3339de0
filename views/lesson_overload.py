"""Lesson page "Too many requests": controls -> build -> Readout -> the prediction, then the
load sweep, the queue at the chosen load, admission control and the signals (lessons/overload)."""

import streamlit as st

from lessons.overload import figures, lesson, predict
from ui.lesson_page import LessonPage
from ui.predict import predict_box, predicting

page = LessonPage("overload", lesson.Params, lesson.PREFIX)
# Shared, read-only: the Readout holds the runs' arrays (lesson.run_at caches the runs).
readout = st.cache_resource(lesson.build, show_spinner=False, max_entries=32)

page.say(None, "title", "intro", "controls-note")


@st.fragment
def lab() -> None:
    p = page.controls([["gpu", "model", "dtype", "tp"], ["load_pct", "ttft_target_s"]])
    with st.spinner(page.text("running")):
        r = readout(p)
    page.warn(r, "no-fit", icon=":material/memory:")
    page.say(r, "workload")
    if predicting(page, p):  # the charts answer the prediction
        return page.say(r, "predict-wait")
    page.metrics(r)
    page.say(r, "hockey")
    page.chart(figures.hockey(r), r, "hockey")
    page.say(r, "queue", "sjf-pays")
    page.chart(figures.queue(r), r, "queue")
    page.say(r, "admission", "sizing", "peak-overshoots", "limits", "limit-holds")
    page.chart(figures.limits(r), r, "limits")
    page.say(r, "goodput", "limit-gains")
    page.chart(figures.goodput(r), r, "goodput")
    page.say(r, "gateway", "gateway-timeout")
    page.say(r, "signals")
    page.chart(figures.signals(r), r, "signals")
    page.say(r, "takeaway")


predict_box(page, predict.answers())
lab()
page.footer()
