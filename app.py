"""Stepwise's frame: page setup, navigation by section, and the sidebar with the learner's XP.

Every page script is registered here explicitly (no auto-discovery of pages/). XP is drawn before
`pg.run()`, which is safe because all grading happens in on_click callbacks, before this runs.
The libraries every lesson needs are imported here, so a server process loads them (about 0.3 s)
when its first session opens, not when a learner opens the first lesson.
"""

import streamlit as st

import sim.cost  # noqa: F401  (NumPy and pandas)
import ui.charts  # noqa: F401  (Plotly)
from lessons.course import SITE_TEXT, lessons
from lessons.quiz.progress import Progress
from lessons.text import section
from ui.state import progress

st.set_page_config(page_title="Stepwise", page_icon=":material/footprint:", layout="wide")

pages = {
    "Start": [st.Page("pages/start.py", title="Start", icon=":material/home:", default=True)],
    "Lessons": [
        st.Page(lesson.page, title=lesson.title, icon=lesson.icon, url_path=lesson.url)
        for lesson in lessons()
    ],
    "Practice": [
        st.Page("pages/practice.py", title="Practice", icon=":material/quiz:", url_path="practice")
    ],
    "Playground": [
        st.Page(
            "pages/playground.py",
            title="Step-time calculator",
            icon=":material/calculate:",
            url_path="playground",
        )
    ],
    "Progress": [
        st.Page(
            "pages/progress.py", title="Progress", icon=":material/trophy:", url_path="progress"
        )
    ],
}
pg = st.navigation(pages)

with st.sidebar:
    prog = progress()
    finished = sum(Progress.lesson_key(lesson.id) in prog.awarded for lesson in lessons())
    st.metric("XP", prog.xp, help=section(SITE_TEXT, "sidebar-xp-help"))
    st.progress(finished / len(lessons()), text=f"Lessons finished: {finished} of {len(lessons())}")

pg.run()
