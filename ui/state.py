"""Per-session state: the learner's progress object, created on first use."""

from __future__ import annotations

import streamlit as st

from lessons.quiz.progress import Progress


def progress() -> Progress:
    """This browser session's progress (XP, awards, feedback)."""
    if "progress" not in st.session_state:
        st.session_state["progress"] = Progress()
    return st.session_state["progress"]
