"""Presenter mode: one setting that follows the instructor from page to page (`?present=1`).

It is turned on by the toggle at the top of every lesson, of Practice and of the class quiz,
or by a link, and is kept in the session like the GPU, so every page presents until it is
turned off; the address bar carries it, so a link reproduces it. When it is on, the frame
(app.py) folds the sidebar away and makes text and metrics larger (the CSS below), and the
lesson kit shows each section's brief, only the main controls and the charts at projector size
(lessons/kit/present.py).
"""

from __future__ import annotations

import streamlit as st

from lessons.course import SITE_TEXT
from lessons.kit.controls import BadValue
from lessons.kit.shared import PRESENT
from lessons.text import section
from ui.links import bad_link, write_url

KEEP = "keep:" + PRESENT.key
WIDGET = "w:" + PRESENT.key

_CSS = """<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
[data-testid="stExpandSidebarButton"] { display: none !important; }
[data-testid="stMainBlockContainer"] { padding-top: 2.5rem; }
[data-testid="stMain"] .stMarkdown p, [data-testid="stMain"] .stMarkdown li { font-size: 1.4rem; }
[data-testid="stMetricValue"] { font-size: 3rem; }
[data-testid="stMetricLabel"] p { font-size: 1.3rem; }
[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] * { white-space: normal !important;
  overflow: visible !important; text-overflow: clip !important; height: auto !important; }
[data-testid="stMain"] [data-testid="stWidgetLabel"] p { font-size: 1.15rem; }
[data-testid="stMain"] [role="radiogroup"] label p { font-size: 1.2rem; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] p { font-size: 1rem; }
[data-testid="stMain"] [data-baseweb="select"] div { font-size: 1.1rem; }
[data-testid="stMain"] [data-testid="stSelectbox"] input { font-size: 1.1rem; }
[data-testid="stMain"] button[data-testid^="stBaseButton"] p { font-size: 1.1rem; }
[data-testid="stMain"] [data-testid="stSliderThumbValue"] { font-size: 1.05rem; }
[data-testid="stMain"] [data-testid="stTable"] :is(th, td) { font-size: 1.15rem; }
[data-testid="stMain"] [data-testid="stSliderTickBar"] p { font-size: 1.05rem; }
[data-testid="stMain"] [data-testid^="stPageLink"] p { font-size: 1.2rem; }
[data-testid="stMain"] [data-testid="stExpander"] summary p { font-size: 1.2rem; }
[data-testid="stMain"] [data-testid="stTab"] p { font-size: 1.2rem; }
[data-testid="stMain"] [role="tablist"] { flex-wrap: wrap; row-gap: 0.25rem; }
[data-testid="stMain"] button kbd { font-size: 1em; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] code { font-size: 1em; }
[data-testid="stMain"] .stepwise-export button { font-size: 1rem !important; }
</style>"""


# Off presenting too: Streamlit's 6rem above a page put every lesson's first chart 50 px lower
# than the header needs (a lesson opens on its chart within the first screen, issue 36).
_PAGE_CSS = """<style>
[data-testid="stMainBlockContainer"] { padding-top: 3.5rem; }
</style>"""


def on() -> bool:
    """Whether this session presents (read by the lesson kit while it draws)."""
    return bool(st.session_state.get(KEEP, False))


def turn_on() -> None:
    """Present from the next run on (the class quiz's way into a lesson after a reveal)."""
    st.session_state[KEEP] = True


def _from_link() -> None:
    """The first run of a session takes the link's value, checked like any control's."""
    if KEEP in st.session_state:
        return
    st.session_state[KEEP] = False
    raw = st.query_params.get(PRESENT.key)
    if raw is None:
        return
    try:
        st.session_state[KEEP] = PRESENT.parse(raw)
    except BadValue as exc:
        bad_link(PRESENT.key, raw, str(exc), PRESENT.to_url(False))


def _changed() -> None:
    st.session_state[KEEP] = st.session_state[WIDGET]


def frame(with_toggle: bool) -> bool:
    """Called by the frame on every run: the toggle (lessons, Practice, the class quiz), the styles
    when presenting, and the address bar. Returns whether this run presents."""
    _from_link()
    if with_toggle:
        st.session_state[WIDGET] = on()
        left, right = st.columns([4, 1], vertical_alignment="center")
        right.toggle(
            PRESENT.label,
            key=WIDGET,
            on_change=_changed,
            help=section(SITE_TEXT, "present-help"),
        )
        if on():
            left.caption(section(SITE_TEXT, "present-keys"))
    presenting = on()
    st.html(_CSS if presenting else _PAGE_CSS)
    write_url(PRESENT.key, "1" if presenting else None)
    return presenting
