"""Lesson page "One token budget": controls -> build -> Readout -> timeline, draft tokens, the
defaults by GPU."""

import streamlit as st

from lessons.kit import story
from lessons.token_budget import figures
from lessons.token_budget.lesson import PREFIX, Params, build, without
from ui.lesson_page import LessonPage

page = LessonPage("token_budget", Params, PREFIX)
# cache_resource, not cache_data: the Readout holds a Run (copying it on every hit costs more
# than the rerun budget), and nothing downstream mutates it.
readout = st.cache_resource(build, show_spinner=False, max_entries=128)

page.say(None, "title", "intro", "rule")


@st.fragment
def lab() -> None:
    page.say(None, "lab")
    p = page.controls(
        [
            ["gpu", "model", "dtype", "tp"],
            ["vllm_defaults"],
            ["max_num_batched_tokens", "max_num_seqs"],
            ["decodes", "prompt", "cached_pct"],
        ],
        fixed={"k": page.value("k")},
    )
    r = readout(p)
    page.defaults_note(r)
    for name in ("bad-limits", "problem-no-weights", "problem-too-long", "problem-no-room"):
        page.warn(r, name, icon=":material/block:")
    page.warn(r, "capped", icon=":material/info:")
    if r.runs:
        page.metrics(r)
        page.chart(figures.timeline(r), r, "timeline")
        page.say(r, "reading", "reading-chunks", "mode", "cached-none", "cached-some", "spec")
        r = readout(page.controls([["k"]], fixed=without(p, "k")))
        page.say(r, "spec-numbers")
        page.chart(figures.spec(r), r, "spec")
        st.caption(story.text(page.text_path, "spec-note", r))
    page.say(r, "defaults")
    page.chart(figures.defaults(r), r, "defaults")


lab()
page.say(None, "why")
page.footer()
