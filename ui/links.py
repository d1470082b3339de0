"""The address bar: writing a value into it, and reporting a bad value that came from a link.

A value from a link is data: the message shows it as plain text (cut, with no Markdown or HTML
left in it; lessons/kit/controls.shown), says what was expected and which value is used instead.
"""

from __future__ import annotations

import streamlit as st

from lessons.course import SITE_TEXT
from lessons.kit.controls import shown
from lessons.text import section


def write_url(url_key: str, value: str | None) -> None:
    """Put a value in the address bar (None: leave it out). Only a change is sent: every write
    is a message to the browser, and most reruns change one value at most."""
    if st.query_params.get(url_key) == value:
        return
    if value is None:
        del st.query_params[url_key]
    else:
        st.query_params[url_key] = value


def bad_link(key: str, raw: str, expected: str, default: str) -> None:
    """The warning for a link value a control does not accept. The value and what was expected
    are plain text: a checker's words can quote the link too (the calculator's quoted the raw
    value into Markdown, and a link in it became a live link). The key and default are ours."""
    values = {"key": key, "value": shown(raw), "expected": shown(expected, 300), "default": default}
    st.warning(section(SITE_TEXT, "bad-link", values), icon=":material/link_off:")
