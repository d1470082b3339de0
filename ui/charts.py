"""Drawing a figure dict with the house style: the kit's template, alt text, full width.

Every chart gets the kit's house layout (lessons/kit/figures.py: readable text, theme colours,
legend above the plot) as its template, and Streamlit's own chart theme is switched off so the
house style is what a learner sees. `st.plotly_chart` turns a dict into a `go.Figure` to
validate it, which costs about 1 ms per frame on every rerun; our figures are plain dicts that
tests/test_figure_rules.py validates once with Plotly, so here they are handed over as an
already-built figure and serialized directly. In presenter mode (ui/present.py) a figure is
drawn at projector size first (lessons/kit/present.py).
"""

from __future__ import annotations

import copy
from functools import cache

import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st

from lessons.kit.figures import HOUSE, merge
from lessons.kit.legend import top_room
from lessons.kit.present import presented
from ui import present

# No Plotly mode bar: on hover it was laid over the right end of a long title, and what it
# offers is elsewhere (the PNG and SVG buttons under each chart, ui/export.js; a drag still
# zooms and a double click resets).
CONFIG = {"displayModeBar": False}


@cache
def template() -> dict:
    """Plotly's white template with the house layout on top."""
    base = copy.deepcopy(pio.templates["plotly_white"].to_plotly_json())
    base["layout"] = merge(base.get("layout", {}), HOUSE)
    return base


class _Spec(go.Figure):
    """A figure that is already a valid Plotly spec: `to_dict` returns it as it is."""

    def __init__(self, spec: dict) -> None:
        super().__init__()
        self._spec = spec

    def to_dict(self) -> dict:  # what st.plotly_chart serializes
        layout = self._spec.get("layout", {})
        if "template" in layout:
            return self._spec
        return {**self._spec, "layout": {**layout, "template": template()}}


def show(figure: dict, *, alt: str, key: str) -> None:
    """Render a Plotly figure dict; `alt` describes it for screen readers."""
    if not alt:
        raise ValueError("every chart needs alt text")
    room = top_room(figure)  # the title above a legend that wraps into rows
    if room != {**HOUSE["margin"], **figure.get("layout", {}).get("margin", {})}["t"]:
        layout = figure.get("layout", {})
        figure = {**figure, "layout": {**layout, "margin": {**layout.get("margin", {}), "t": room}}}
    if present.on():
        figure = presented(figure)
    st.plotly_chart(_Spec(figure), key=key, alt=alt, theme=None, width="stretch", config=CONFIG)
