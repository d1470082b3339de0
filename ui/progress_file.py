"""Loading a saved-progress file on the Progress page: re-grade its answers, append the new ones
to the learner's log, and leave a one-line message (counts only, nothing quoted from the file)."""

from __future__ import annotations

import streamlit as st

from lessons.course import SITE_TEXT
from lessons.quiz.progress import derive
from lessons.quiz.saved import MAX_BYTES, ProgressFileError, load, new_answers
from lessons.text import section
from ui.state import course, progress, record

FILE_KEY = "progress-file"
MESSAGE_KEY = "progress-file-message"


def load_upload() -> None:
    """on_change of the uploader: re-grade the file's answers and append them, once per upload.

    The message quotes nothing from the file (only counts), so nothing in it is rendered."""
    upload = st.session_state.get(FILE_KEY)
    if upload is None:
        return
    try:
        if upload.size > MAX_BYTES:  # refuse before reading a huge upload into memory
            raise ProgressFileError(
                f"the file is {upload.size:,} bytes; a progress file is at most {MAX_BYTES:,}"
            )
        loaded = load(upload.getvalue(), course())
    except ProgressFileError as exc:
        st.session_state[MESSAGE_KEY] = (
            "error",
            section(SITE_TEXT, "progress-file-bad", {"reason": exc}),
        )
        return
    fresh = new_answers(loaded.answers, progress().log)
    written, after = record(fresh, source="file")
    if fresh and not written:
        st.session_state[MESSAGE_KEY] = ("error", section(SITE_TEXT, "progress-store-down"))
        return
    seqs = {a.seq for a in written}
    gained = after.xp - derive([a for a in after.log if a.seq not in seqs], course()).xp
    values = {
        "gained": gained,
        "xp": after.xp,
        "added": len(fresh),
        "known": len(loaded.answers) - len(fresh),
        "dropped": loaded.dropped,
    }
    name = "progress-loaded-dropped" if loaded.dropped else "progress-loaded"
    st.session_state[MESSAGE_KEY] = ("ok", section(SITE_TEXT, name, values))


def show_message() -> None:
    """The message of the last upload, once."""
    message = st.session_state.pop(MESSAGE_KEY, None)
    if message:
        kind, text = message
        if kind == "ok":
            st.success(text, icon=":material/check_circle:")
        else:
            st.error(text, icon=":material/error:")
