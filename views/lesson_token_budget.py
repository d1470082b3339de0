"""Lesson page "One token budget": the replay of vLLM's Fig. 8.2 first (its two main sliders
above it; the deployment and budget controls below it, at the values they open at), then the
cached prefix, draft tokens and the defaults by GPU, each with its questions and its folded
"Go deeper"."""

import streamlit as st

from lessons.token_budget import figures
from lessons.token_budget.lesson import PREFIX, Params, build
from ui.lesson_page import LessonPage

page = LessonPage("token_budget", Params, PREFIX)
# cache_resource, not cache_data: the Readout holds a Run (copying it on every hit costs more
# than the rerun budget), and nothing downstream mutates it.
readout = st.cache_resource(build, show_spinner=False, max_entries=128)

MAIN = ["decodes", "prompt"]
BELOW = [
    ["gpu", "model", "dtype", "tp"],
    ["vllm_defaults"],
    ["max_num_batched_tokens", "max_num_seqs"],
    ["cached_pct"],
]

page.say(None, "title", "key")


@st.fragment
def lab() -> None:
    first = page.controls_here([MAIN])
    r = readout(first)  # the controls below open at these values (`page.upcoming`)
    for name in ("bad-limits", "problem-no-weights", "problem-too-long", "problem-no-room"):
        page.warn(r, name, icon=":material/block:")
    page.warn(r, "capped", icon=":material/info:")
    if r.runs:
        page.chart(figures.timeline(r), r, "timeline")
        st.caption(page.text("cast", r))
        page.say(r, "reading", "reading-chunks")
        page.metrics(r)
    page.ask("first_token")
    page.say(None, "rule")
    page.ask("running_chunk_first", "one_question", folded=True)
    with page.deeper("counting"):
        page.say(None, "counting")
    page.say(None, "lab")
    p = page.controls_here(BELOW, first)
    r = readout(p)
    page.defaults_note(r)
    if r.runs:
        with page.deeper("async"):
            page.say(r, "mode")
        page.say(r, "cached-none", "cached-some")
        page.ask("prefix", folded=True)
        with page.deeper("cache-rules"):
            page.say(r, "cache-rules")
        page.say(r, "spec")
        r = readout(page.controls_here([["k"]], p))
        page.say(r, "spec-numbers")
        page.chart(figures.spec(r), r, "spec")
        st.caption(page.text("spec-note", r))
        page.ask("spec", folded=True)
        with page.deeper("spec-methods"):
            page.say(r, "spec-methods")
    page.say(r, "defaults")
    page.chart(figures.defaults(r), r, "defaults")
    page.ask("default_l4", "seq_cap", folded=True)
    with page.deeper("defaults-rule"):
        page.say(r, "defaults-rule")


lab()
page.say(None, "why")
page.footer()
