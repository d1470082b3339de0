"""Start page: what the course is, and the lessons in order."""

import streamlit as st

from lessons.course import SITE_TEXT, lessons
from lessons.text import section

st.markdown(section(SITE_TEXT, "start-title"))
st.markdown(section(SITE_TEXT, "start-intro"))
st.markdown(section(SITE_TEXT, "start-how"))
st.markdown(section(SITE_TEXT, "start-lessons"))
for number, lesson in enumerate(lessons(), start=1):
    with st.container(border=True):
        st.page_link(lesson.page, label=f"{number}. {lesson.title}", icon=lesson.icon)
        st.caption(lesson.summary)
