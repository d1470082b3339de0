"""The sidebar's learner block: XP, lessons finished (and what finishing takes), and the note
when progress cannot be saved.

It is drawn above the navigation: Streamlit puts a page's sidebar content under its navigation,
and with every lesson listed the XP sat below the fold of a 720-line screen. The CSS below lays
the sidebar out as a column and moves the learner block to its top (the navigation follows and
scrolls with the sidebar).
"""

from __future__ import annotations

import streamlit as st

from lessons.course import SITE_TEXT, lessons
from lessons.text import section
from ui.state import keep_learner_cookie, refresh_progress, store_down, store_note

_CSS = """<style>
[data-testid="stSidebarContent"] { display: flex; flex-direction: column; }
[data-testid="stSidebarContent"] > * { flex-shrink: 0; }
[data-testid="stSidebarHeader"] { order: 0; }
[data-testid="stSidebarUserContent"] { order: 1; padding-top: 0; padding-bottom: 0.5rem; }
[data-testid="stSidebarNav"] { order: 2; }
[data-testid="stSidebarUserContent"] [data-testid="stMetric"] { padding: 0; }
</style>"""


def learner() -> None:
    """XP and lessons finished, read once per run (the learner's other tabs included)."""
    with st.sidebar:
        st.html(_CSS)
        prog = refresh_progress()
        st.metric("XP", prog.xp, help=section(SITE_TEXT, "sidebar-xp-help"))
        total = len(lessons())
        done = {"finished": prog.finished, "total": total}
        st.progress(prog.finished / total, text=section(SITE_TEXT, "sidebar-finished", done))
        st.caption(section(SITE_TEXT, "sidebar-finished-help"))
        if store_down():
            st.warning(store_note(), icon=":material/cloud_off:")  # why, and what is kept
        keep_learner_cookie()
