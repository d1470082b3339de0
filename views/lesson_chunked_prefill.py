"""Lesson page "Chunked prefill versus the whole prompt at once": the two lanes first (their two
main sliders above them; the deployment and budget controls below them, at the values they open
at), then the price, the GPU's use and folded "Go deeper" asides, each chart with its questions."""

import streamlit as st

from lessons.chunked_prefill import figures
from lessons.chunked_prefill.lesson import PREFIX, Params, build
from ui.lesson_page import LessonPage

page = LessonPage("chunked_prefill", Params, PREFIX)
readout = st.cache_resource(build, show_spinner=False, max_entries=128)

MAIN = ["prompt_tokens", "users"]
BELOW = [
    ["gpu", "model", "dtype", "tp"],
    ["vllm_defaults"],
    ["max_num_batched_tokens", "max_num_seqs"],
]

page.say(None, "title", "key")


@st.fragment
def lab() -> None:
    first = page.controls_here([MAIN])
    r = readout(first)  # the controls below open at these values (`page.upcoming`)
    page.warn(r, "users-clamped", icon=":material/group:")
    page.warn(r, "seqs-clamped", icon=":material/group:")
    page.warn(r, "prompt-clamped", icon=":material/content_cut:")
    page.warn(r, "memory-short", icon=":material/memory:")
    page.chart(figures.lanes(r), r, "lanes")
    st.caption(page.text("cast", r))
    page.say(r, "lanes", "lanes-thinned", "lanes-merged")
    page.metrics(r)
    page.say(r, "reading-whole", "reading-chunked", "reading-gap", "why")
    page.ask("protects_itl")
    page.ask("gap_is_step", "smaller_budget", folded=True)
    page.say(r, "price")
    page.ask("ttft_cost", folded=True)
    with page.deeper("ttft"):
        page.say(r, "ttft")
    page.say(None, "lab")
    p = page.controls_here(BELOW, first)
    r = readout(p)
    page.defaults_note(r)
    with page.deeper("scenario"):
        page.say(r, "metrics-caption")
    with page.deeper("mode"):
        page.say(r, "mode")
    page.say(r, "use")
    page.chart(figures.use(r), r, "use")
    page.ask("mixing_uses_gpu", folded=True)
    with page.deeper("table"):
        page.say(r, "use-more", "table-body", "table-caption")
    with page.deeper("budget-rule"):
        page.say(r, "budget-rule")
    page.ask("budget_at_least_model_len", "head_of_line", "hol_memory", folded=True)
    with page.deeper("sarathi"):
        page.say(r, "sarathi")
    with page.deeper("disagg"):
        page.say(r, "disagg")


lab()
page.say(None, "takeaway")
page.footer()
