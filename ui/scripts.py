"""The scripts every page runs in the browser, sent once per run by the frame (app.py).

- ui/anim_link.js keeps each animation's frame in the address bar and lets the keyboard drive
  the animation on screen and move between sections;
- ui/export.js puts PNG and SVG download buttons under every chart.

Their words come from lessons/site.md, handed over as JSON. Streamlit's HTML sanitizer cuts a
script at anything that looks like a tag, so no "<" may appear in them (checked at import).
"""

from __future__ import annotations

import json
from pathlib import Path

import streamlit as st

from lessons.course import SITE_TEXT
from lessons.text import section

_HERE = Path(__file__).parent
_FILES = ("anim_link.js", "export.js")


def _script() -> str:
    words = {
        "png": section(SITE_TEXT, "export-png"),
        "svg": section(SITE_TEXT, "export-svg"),
        "help": section(SITE_TEXT, "export-help"),
    }
    parts = ["window.__stepwiseWords = " + json.dumps(words) + ";"]
    parts += [(_HERE / name).read_text(encoding="utf-8") for name in _FILES]
    body = "\n".join(parts)
    if "<" in body:
        raise ValueError("the page scripts and their words must not contain '<'")
    return "<script>" + body + "</script>"


SCRIPT = _script()


def send() -> None:
    """Put the scripts on the page (each runs once per browser tab)."""
    st.html(SCRIPT, unsafe_allow_javascript=True)
