"""Progress page: XP and, per lesson, questions answered, exercises solved, bonuses earned."""

import pandas as pd
import streamlit as st

from lessons.course import SITE_TEXT, lessons
from lessons.quiz.progress import XP_RULES
from lessons.text import section
from ui.state import progress

st.markdown(section(SITE_TEXT, "progress-title"))
st.markdown(section(SITE_TEXT, "progress-intro"))
prog = progress()
st.metric("Total XP", prog.xp)
rows = []
for lesson in lessons():
    status = prog.lesson_status(lesson.bank(), lesson.exercises())
    rows.append(
        {
            "Lesson": lesson.title,
            "Questions right": f"{status['correct']} of {status['questions']}",
            "Exercises solved": f"{status['solved']} of {status['exercises']}",
            "Perfect quiz": status["perfect"],
            "Finished": status["finished"],
        }
    )
st.dataframe(pd.DataFrame(rows), hide_index=True)
st.markdown(section(SITE_TEXT, "progress-rules", XP_RULES))
