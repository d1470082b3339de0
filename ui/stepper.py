"""The stepper under an animation: Previous / Next (the ← and → keys) and a step slider.

The step is kept in the link the way the kit keeps a control: written from the value on screen
(left out at step 1), read from the link once per session and checked by the kit's
`step_from_link`, which reports a bad value as plain text. A shorter run clamps it.
"""

from __future__ import annotations

import streamlit as st

from lessons.course import SITE_TEXT
from lessons.kit.controls import step_from_link
from lessons.text import section
from ui.links import bad_link


def _move(key: str, delta: int, last: int) -> None:
    st.session_state[key] = min(max(st.session_state[key] + delta, 1), last)


def stepper(key: str, last: int) -> int:
    """Draw the stepper for steps 1..last under session key (and URL key) `key`; the step."""
    if key not in st.session_state:  # the link's step, read once
        st.session_state[key], bad = step_from_link(st.query_params.get(key), last, key)
        if bad:
            bad_link(**bad)
    st.session_state[key] = min(st.session_state[key], last)
    left, mid, right = st.columns([3, 10, 3], vertical_alignment="bottom")
    buttons = {"on_click": _move, "width": "stretch"}
    left.button("◀ Previous", key=f"{key}-prev", args=(key, -1, last), shortcut="Left", **buttons)
    right.button("Next ▶", key=f"{key}-next", args=(key, 1, last), shortcut="Right", **buttons)
    step = mid.slider("Step", 1, max(last, 1), key=key, help=section(SITE_TEXT, "stepper-help"))
    if step == 1:
        st.query_params.pop(key, None)
    else:
        st.query_params[key] = str(step)
    return step
