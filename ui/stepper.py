"""Stepping through a run by hand: Previous / Next buttons (← and → keys) and a step slider.

The step lives in session state under `key` and is mirrored in the URL by the slider, so a link
can open a diagram at step 7. Buttons change it in on_click callbacks (before the rerun), which is
the only safe way to change a widget's value from a button.
"""

from __future__ import annotations

import streamlit as st

from lessons.course import SITE_TEXT
from lessons.text import section
from ui.controls import check_whole_number


def _move(key: str, delta: int, last: int) -> None:
    st.session_state[key] = min(max(int(st.session_state.get(key, 1)) + delta, 1), last)


def stepper(num_steps: int, *, key: str = "step", label: str = "Step") -> int:
    """Controls for steps 1..num_steps; returns the chosen step."""
    last = max(int(num_steps), 1)
    if last == 1:
        st.caption(section(SITE_TEXT, "stepper-single", {"label": label}))
        return 1
    if key not in st.session_state:  # the link's value; later, a shorter run just clamps it
        check_whole_number(key, 1, last, 1)
    if key in st.session_state and not 1 <= int(st.session_state[key]) <= last:
        st.session_state[key] = min(max(int(st.session_state[key]), 1), last)
    left, mid, right = st.columns([1, 6, 1], vertical_alignment="bottom")
    left.button(
        "◀ Previous",
        key=f"{key}-prev",
        on_click=_move,
        args=(key, -1, last),
        shortcut="Left",
        width="stretch",
    )
    right.button(
        "Next ▶",
        key=f"{key}-next",
        on_click=_move,
        args=(key, 1, last),
        shortcut="Right",
        width="stretch",
    )
    if key not in st.session_state:
        st.session_state[key] = 1
    with mid:
        step = st.slider(
            label, 1, last, key=key, help=section(SITE_TEXT, "stepper-help"), bind="query-params"
        )
    return int(step)
