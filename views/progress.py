"""Progress page: XP and, per lesson, questions answered, exercises solved, bonuses earned;
the learner's answers as a file, and such a file loaded back (re-graded, appended to the log)."""

import pandas as pd
import streamlit as st

from lessons.course import SITE_TEXT, lessons
from lessons.quiz.progress import XP_RULES
from lessons.quiz.saved import MAX_BYTES, dump
from lessons.text import section
from ui.progress_file import FILE_KEY, load_upload, show_message
from ui.state import progress

st.markdown(section(SITE_TEXT, "progress-title"))
st.markdown(section(SITE_TEXT, "progress-intro"))
prog = progress()
st.metric("Total XP", prog.xp)
rows = []
for lesson in lessons():
    status = prog.lesson_status(lesson.id)
    rows.append(
        {
            "Lesson": lesson.title,
            "Questions answered": f"{status.answered} of {status.questions}",
            "Right at the first answer": f"{status.first_right} of {status.questions}",
            "Exercises solved": f"{status.solved} of {status.exercises}",
            "Perfect quiz": status.perfect,
            "Finished": status.finished,
            "XP": status.xp,
        }
    )
st.dataframe(pd.DataFrame(rows), hide_index=True)
st.markdown(section(SITE_TEXT, "progress-rules", XP_RULES))

st.markdown(section(SITE_TEXT, "progress-save"))
left, right = st.columns(2, vertical_alignment="bottom")
left.download_button(
    "Save my progress",
    data=dump(prog),
    file_name="stepwise-progress.json",
    mime="application/json",
    icon=":material/download:",
)
right.file_uploader(
    "Load saved progress",
    type=["json"],
    key=FILE_KEY,
    on_change=load_upload,
    max_upload_size=-(-MAX_BYTES // 2**20),  # in MB, as the uploader says it: 1, not 200
)
show_message()
