"""Lesson page "What to watch": the dashboard first (a run read as vLLM's metrics read it), with
the Dashboard choice, Apply the fix and the ITL target above it; under it what the run is, its
readings, the prediction and the question that asks what this dashboard says (the other
dashboards' questions folded beside it); then the deployment's controls, how to read the
panels, and folded "Go deeper" asides (lessons/watch)."""

import streamlit as st

from lessons.kit import anim
from lessons.watch import figures, lesson, predict
from ui.lesson_page import LessonPage
from ui.predict import predict_box, predicting

page = LessonPage("watch", lesson.Params, lesson.PREFIX)
# Shared, read-only: the Readout holds the run's arrays (lesson.run_for caches the runs).
readout = st.cache_resource(lesson.build, show_spinner=False, max_entries=32)
MAIN = ["preset", "fixed", "itl_target_ms"]  # above the dashboard
DEPLOYMENT = ["gpu", "model", "dtype", "tp"]  # below it

page.say(None, "title", "key")


def diagnosis(r) -> None:
    """The question of the dashboard shown, right under it (until its fix is on, which tells
    the answer), and the other dashboards' questions folded beside it."""
    current = None if r.fixed else lesson.DIAGNOSIS.get(r.preset_key)
    if current is not None:
        page.ask(current)
    page.ask(*(q for q in lesson.DIAGNOSIS.values() if q != current), folded=True)


@st.fragment
def lab() -> None:
    # the deployment's controls are drawn under the dashboard; it runs on their values now
    p = page.controls([MAIN], fixed={name: page.upcoming(name) for name in DEPLOYMENT})
    with st.spinner(page.text("running")):
        r = readout(p)
    # The prediction is asked under the dashboard, and the box decides (a link's skip, a class
    # room's reveal) whether the dashboard holds its answer back: the dashboard and its
    # readings are drawn into their places above once it has.
    chart = st.container()
    page.warn(r, "no-fit", icon=":material/memory:")
    page.warn(r, "unreachable", icon=":material/timer:")
    page.say(r, f"preset-{r.preset_key}")
    readings = st.container()
    first = predicting(page)  # still predicting: the prediction comes before the diagnosis
    if first:
        held = predict_box(page, predict.answers())
    # the cause (or "nothing to fix") answers the dashboard's question: only once the learner
    # has switched the fix on
    told = [f"fix-{r.preset_key}", "fix-note", "budget-ttft", "benchmark-overloaded"]
    page.say(r, "ask", *(["healthy-now", *told] if r.fixed else []))
    diagnosis(r)
    if not first:
        held = predict_box(page, predict.answers())
    with chart:  # the readings and the last frame answer the prediction
        dashboard = figures.dashboard(r, held)
        page.chart(anim.reopen(dashboard, 0) if held else dashboard, r, "dashboard")
    with readings:
        if held:
            page.say(r, "metrics-wait")
        else:
            page.metrics(r)
    page.controls([DEPLOYMENT], fixed={name: getattr(p, name) for name in MAIN})
    page.say(r, "controls-note", "seqs-note", "bands")
    page.ask("healthy_kv")
    page.say(r, "takeaway")
    for topic in ("runs", "prometheus", "mistakes"):
        with page.deeper(topic):
            page.say(r, topic)
    page.ahead(readout, p, "itl_target_ms")  # the next target's runs, made while the learner reads


lab()
page.footer()
