"""Stepwise's frame: page setup, navigation by section, the sidebar with the learner's XP, the
presenter-mode toggle (ui/present.py) and the scripts every page runs in the browser.

Every page script is registered here explicitly (no auto-discovery of views/). XP is drawn before
`present.frame(with_toggle=pg.url_path in TOGGLED)
scripts.send()
pg.run()`, which is safe because all grading happens in on_click callbacks, before this runs.
The libraries every lesson needs are imported here, so a server process loads them (about 0.3 s)
when its first session opens, not when a learner opens the first lesson.
"""

from pathlib import Path

import streamlit as st

import sim.cost  # noqa: F401  (NumPy and pandas)
import ui.charts  # noqa: F401  (Plotly)
from lessons.course import lessons
from ui import present, scripts, sidebar, warm

# The icon is a file of ours, served by the app: a Material icon here would be fetched from a
# font server on the internet, which a classroom without a network cannot reach.
ICON = Path(__file__).resolve().parent / "assets" / "stepwise-icon.png"
st.set_page_config(page_title="Stepwise", page_icon=str(ICON), layout="wide")

pages = {
    "Start": [st.Page("views/start.py", title="Start", icon=":material/home:", default=True)],
    "Lessons": [
        st.Page(lesson.page, title=lesson.short, icon=lesson.icon, url_path=lesson.url)
        for lesson in lessons()
    ],
    "Practice": [
        st.Page("views/practice.py", title="Practice", icon=":material/quiz:", url_path="practice"),
        st.Page(
            "views/classroom.py", title="Class quiz", icon=":material/groups:", url_path="class"
        ),
    ],
    "Playground": [
        st.Page(
            "views/playground.py",
            title="Step-time calculator",
            icon=":material/calculate:",
            url_path="playground",
        ),
        st.Page(
            "views/trace.py",
            title="Your own trace",
            icon=":material/upload_file:",
            url_path="trace",
        ),
    ],
    "Progress": [
        st.Page(
            "views/progress.py", title="Progress", icon=":material/trophy:", url_path="progress"
        )
    ],
}
pg = st.navigation(pages, expanded=True)  # every lesson listed: no "View more" to find
# The presenter toggle sits on every lesson, on Practice and on the class quiz.
TOGGLED = {lesson.url for lesson in lessons()} | {"practice", "class"}


@st.cache_resource(show_spinner=False)
def _warm_once() -> bool:
    """Once per server process: load the compiled engine from its disk cache (about 0.3 s, also
    with STEPWISE_WARM=0, so that no session pays it), then build the lessons' opening runs in
    the background (ui/warm.py)."""
    from sim.engine.warm import warm as load_engine

    load_engine()
    return warm.start()


_warm_once()

sidebar.learner()  # XP and lessons finished, above the navigation

present.frame(with_toggle=pg.url_path in TOGGLED)
scripts.send()
pg.run()
