"""Progress page: XP and, per lesson, questions answered, exercises solved, bonuses earned;
save the session's progress to a file and load it back."""

import pandas as pd
import streamlit as st

from lessons.course import SITE_TEXT, lessons
from lessons.quiz.progress import XP_RULES
from lessons.quiz.saved import ProgressFileError, award_values, dump, load, merge
from lessons.text import section
from ui.state import progress

FILE_KEY = "progress-file"
MESSAGE_KEY = "progress-file-message"


def _load(course: list, values: dict[str, int]) -> None:
    """on_change of the uploader: merge the file into this session, once per upload."""
    upload = st.session_state.get(FILE_KEY)
    if upload is None:
        return
    try:
        loaded, dropped = load(upload.getvalue(), values)
    except ProgressFileError as exc:
        st.session_state[MESSAGE_KEY] = (
            "error",
            section(SITE_TEXT, "progress-file-bad", {"reason": exc}),
        )
        return
    prog = progress()
    gained = merge(prog, loaded, values, course)
    name = "progress-loaded-dropped" if dropped else "progress-loaded"
    text = section(SITE_TEXT, name, {"gained": gained, "xp": prog.xp, "dropped": dropped})
    st.session_state[MESSAGE_KEY] = ("ok", text)


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

st.markdown(section(SITE_TEXT, "progress-save"))
course = [(lesson.bank(), lesson.exercises()) for lesson in lessons()]
values = award_values(course)
left, right = st.columns(2, vertical_alignment="bottom")
left.download_button(
    "Save my progress",
    data=dump(prog),
    file_name="stepwise-progress.json",
    mime="application/json",
    icon=":material/download:",
)
right.file_uploader(
    "Load saved progress", type=["json"], key=FILE_KEY, on_change=_load, args=(course, values)
)
message = st.session_state.pop(MESSAGE_KEY, None)
if message:
    kind, text = message
    if kind == "ok":
        st.success(text, icon=":material/check_circle:")
    else:
        st.error(text, icon=":material/error:")
