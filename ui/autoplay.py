"""`?play=1` in a link: the lesson's first animation plays once, from its first frame, as soon
as the browser has drawn it. The class quiz's link to a revealed prediction uses it: the class
predicts, then the animation runs.

The key leaves the address bar at once (a reload or a shared link does not replay). A token kept
in the lesson's session marks the page's animations (`layout.meta.play`, ui/lesson_page.py), and
the browser script (ui/anim_link.js) plays the first animation carrying a token it has not
played yet. The token stays in the figures, so a rerun that redraws nothing else leaves each
chart as it is, and Reset this lesson forgets it (a lesson-own key). While a lesson still asks
its predictions, nothing is marked (ui/predict.py): the animation would give the answer away.
"""

from __future__ import annotations

import uuid

import streamlit as st

from lessons.course import SITE_TEXT
from lessons.text import section
from ui.links import bad_link

KEY = "play"


def _state_key(prefix: str) -> str:
    return f"{prefix}-play"


def token(prefix: str) -> str | None:
    """This lesson's play token: a new one when the link says `play=1`, else the kept one."""
    raw = st.query_params.get(KEY)
    if raw is not None:
        del st.query_params[KEY]
        if raw == "1":
            st.session_state[_state_key(prefix)] = uuid.uuid4().hex[:12]
        else:
            expected, default = (section(SITE_TEXT, f"play-{n}") for n in ("expected", "default"))
            bad_link(KEY, raw, expected, default)
    return st.session_state.get(_state_key(prefix))
