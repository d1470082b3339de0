"""Lesson page "Who goes first": the stream of requests first (the setup, drawn at opening), its
controls, the prediction, then five policies' runs side by side, each chart with its questions,
and the chosen policy's queue (lessons/policies). No fragment: the stream sits above the controls
that set it, so every control reruns the whole page (the runs are cached)."""

import streamlit as st

from lessons.policies import figures, lesson, predict
from ui.lesson_page import LessonPage
from ui.predict import predict_box

page = LessonPage("policies", lesson.Params, lesson.PREFIX)
readout = st.cache_resource(lesson.build, show_spinner=False, max_entries=32)

STREAM_ROW = ["load_pct", "interactive_pct"]  # the two controls that shape the stream
SETTINGS_ROWS = [["policy", "heavy_pct", "prefix_caching"], ["gpu", "model", "dtype", "tp"]]


def answers(r) -> None:
    """The four charts that compare the five policies (what the prediction is about)."""
    page.say(r, "classes", "prio-helps", "sjf-classes")
    page.chart(figures.classes(r), r, "classes")
    page.ask("priority_value")
    page.say(r, "preempted")
    page.ask("priority_victim", "fcfs_victim", folded=True)
    page.say(r, "waits", "sjf-starves")
    page.chart(figures.waits(r), r, "waits")
    page.ask("sjf_risk")
    with page.deeper("sjf"):
        page.say(r, "deep-sjf")
    page.say(r, "tenants", "fcfs-tenants", "fair-holds")
    page.chart(figures.tenants(r), r, "tenants")
    page.ask("fair_share", folded=True)
    page.say(r, "hits", "prefix-gain", "cache-aware")
    page.chart(figures.hits(r), r, "hits")
    page.ask("prefix_aware", folded=True)
    with page.deeper("prefix"):
        page.say(r, "deep-prefix")


def queue(r) -> None:
    """The chosen policy's numbers and its waiting queue, then what no policy can do."""
    page.metrics(r)
    page.say(r, "queue")
    if not r.queue_empty:  # an empty line is not drawn; the text says so
        page.chart(figures.queue(r), r, "queue")
    page.say(r, "overload")
    page.ask("no_policy_fixes_overload")
    with page.deeper("admission"):
        page.say(r, "deep-admission")
    page.say(r, "takeaway")


page.say(None, "title", "key")
stream = st.container()  # the first chart, drawn once the controls below have set the run
p = page.controls_here([STREAM_ROW])  # the settings below open at their values (upcoming)
with st.spinner(page.text("running")):
    r = readout(p)
with stream:
    page.chart(figures.stream(r), r, "stream")
page.warn(r, "no-fit", icon=":material/memory:")
page.warn(r, "no-queue", "no-queue-above", icon=":material/hourglass_empty:")
page.caption(r, "cast")
page.say(r, "workload", "policies")
with page.deeper("policies"):
    page.say(r, "deep-policies")
held = predict_box(page, predict.answers())  # the comparisons answer it: held back till then
if held:
    page.say(r, "predict-wait")
else:
    answers(r)
page.say(r, "settings-wait" if held else "settings")
page.controls_here(SETTINGS_ROWS, p)
with page.deeper("capacity"):
    page.say(r, "deep-capacity")
page.warn(r, "teaching", icon=":material/school:")
if not held:
    queue(r)
page.ahead(readout, p, "load_pct")  # the next load's five runs, made while the learner reads
page.footer()
