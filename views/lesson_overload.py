"""Lesson page "Too many requests" (lessons/overload), diagram first: the hockey stick and its
load slider open the page, with the prediction under them (the loads past the capacity blank
until it is answered); then the queue at the chosen load, admission control and its sizing,
goodput and the signals, each chart with its paragraph and its question. The deployment and the
TTFT target sit below the chart that needs them; expert detail is folded into "Go deeper"."""

import streamlit as st

from lessons.overload import figures, lesson, predict
from ui.lesson_page import LessonPage
from ui.predict import predict_box, predicting

page = LessonPage("overload", lesson.Params, lesson.PREFIX)
# Shared, read-only: the Readout holds the runs' arrays (lesson.run_at caches the runs).
readout = st.cache_resource(lesson.build, show_spinner=False, max_entries=32)

DEPLOYMENT = ("gpu", "model", "dtype", "tp")

page.say(None, "title", "intro")


def _admission(r) -> None:
    """vLLM's limit: what it answers, how it is sized (its TTFT target slider), the chart of
    both limits, and what it counts (folded)."""
    page.say(r, "admission")
    page.controls_here([["ttft_target_s"]])  # the value r was built with
    page.say(r, "sizing", "peak-overshoots")
    page.chart(figures.limits(r), r, "limits")
    page.say(r, "limits", "limit-holds")
    page.ask("sizing_rule")
    with page.deeper("counting"):
        page.say(r, "counting")
        page.ask("queued_tokens_rule", "partial_prefill_counts")


@st.fragment
def lab() -> None:
    hockey = st.container()  # the first chart, drawn above its control once the runs are made
    page.controls_here([["load_pct"]])
    predict_box(page, predict.answers())
    page.say(None, "cast")
    # while predicting, the TTFT target (whose chart is held back) sits with the deployment
    target = ("ttft_target_s",) if predicting(page) else ()
    p = page.controls_here([[*DEPLOYMENT, *target]])
    with st.spinner(page.text("running")):
        r = readout(p)
    page.warn(r, "no-fit", icon=":material/memory:")
    held = predicting(page, p)  # the runs past the capacity answer the prediction
    with hockey:
        page.chart(figures.hockey(r, held=held), r, "hockey-setup" if held else "hockey")
    if held:
        return page.say(r, "predict-wait")
    page.say(r, "hockey")
    page.metrics(r)
    with page.deeper("runs"):
        page.say(r, "workload", "serve-default", "controls-note")
    page.say(r, "queue")
    page.chart(figures.queue(r), r, "queue")
    page.ask("capacity_meaning")
    with page.deeper("sjf"):
        page.say(r, "sjf-pays")
    _admission(r)
    page.say(r, "goodput", "limit-gains")
    page.chart(figures.goodput(r), r, "goodput")
    page.ask("goodput_with_limit")
    with page.deeper("gateway"):
        page.say(r, "gateway", "gateway-timeout")
        page.ask("gateway_timeout_cost")
    page.say(r, "signals")
    page.chart(figures.signals(r), r, "signals")
    page.ask("autoscale_signal")
    with page.deeper("signals"):
        page.say(r, "signals-levels")
    page.say(r, "takeaway")


lab()
page.footer()
