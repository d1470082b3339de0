"""Lesson page "When memory runs out": key sentence and pool size, grid, predictions, scripts."""

import streamlit as st

from lessons.memory import figures, lesson, predict, tables
from ui.lesson_page import LessonPage
from ui.predict import predict_box, predicting
from ui.stepper import stepper

page = LessonPage("memory", lesson.Params, lesson.PREFIX)
readout = st.cache_resource(lesson.build, show_spinner=False, max_entries=32)
comparisons = st.cache_resource(lesson.comparison, show_spinner=False, max_entries=32)
MAIN = lesson.MAIN[0]
page.say(None, "title")


def tell(script: tuple, **of) -> None:
    """Draw a script of lesson.py: sections, metrics, charts, tables, questions, asides."""
    for what, whose, *names in script:
        x = of.get(whose)
        if what.startswith("deeper:"):
            with page.deeper(what.removeprefix("deeper:")):
                tell(names[0], **of)
        elif what in ("ask", "fold"):
            page.ask(*names, folded=what == "fold")
        elif what == "chart":
            page.chart(getattr(figures, names[0])(x), x, names[0])
        elif what == "metrics":
            page.metrics(x, names[0])
        elif rows := what == "table" and getattr(tables, names[0])(x):
            page.table(rows)
        elif what == "say":
            page.say(x, *names)


@st.fragment
def lab() -> None:
    key, size = st.columns([3, 2], vertical_alignment="bottom")
    key.markdown(page.text("intro"))
    key.caption(page.text("cast"))
    with size:  # "sized from" is drawn below: the rules read its kept value
        fixed = {n: page.upcoming(n) for n in page.declared if n not in MAIN}
        rules = lesson.main_rules(page.upcoming("pool_from"))
        top = page.controls(lesson.MAIN, fixed=fixed, show_if=rules)
    grid, below = st.container(), st.container()
    with below:
        held = predict_box(page, predict.answers(), lesson.STEP_KEY, predict.answers()["step"])
        summary, panel = st.container(), st.container()
        page.say(None, "settings")
        p = page.controls(lesson.LAYOUT, fixed={n: getattr(top, n) for n in MAIN})
    if refusal := lesson.all_refused(p):  # every prompt too long: nothing reaches the scheduler
        return grid.warning(page.text("all-refused", refusal), icon=":material/block:")
    r = readout(p)
    held = predicting(page, p) and held  # the counts, the victims and the async steps give it away
    with grid:
        for name, icon in (*lesson.WARNINGS, ("refused-note", "block")):
            page.warn(r, name, icon=f":material/{icon}:")
        animation, step = st.container(), stepper(lesson.STEP_KEY, r.num_steps)
        with animation:
            page.chart(figures.pool(r, step), r, "pool", stepper=step)
        page.say(r, "grid", "grid-cut", "sampled", "scenario")
    with summary:
        tell(lesson.TOTALS_WAIT if held else lesson.TOTALS, r=r)
    with panel:
        tell(lesson.STEP_PANEL, r=r, s=lesson.at_step(r, step))
    with below:
        page.defaults_note(r)
        tell(lesson.RATE if r.rate_changes_nothing else (), r=r)
        rest = lesson.REST_WAIT if held else lesson.REST
        tell(lesson.PAGING + rest, r=r, c=None if held else comparisons(p))
    for build in (readout, comparisons):  # the next lengths' runs, made while the learner reads
        page.ahead(build, p, "prompt_tokens", "output_tokens")


lab()
page.footer()
