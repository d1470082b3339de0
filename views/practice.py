"""Practice page: every lesson's quiz and exercises, one tab per lesson."""

import streamlit as st

from lessons.course import SITE_TEXT, lessons
from lessons.text import section
from ui.quiz import render_lesson_practice

st.markdown(section(SITE_TEXT, "practice-title"))
st.markdown(section(SITE_TEXT, "practice-intro"))
all_lessons = lessons()
for tab, lesson in zip(
    st.tabs([f"{i}. {lesson.short}" for i, lesson in enumerate(all_lessons, start=1)]),
    all_lessons,
    strict=True,
):
    with tab:
        render_lesson_practice(lesson)
