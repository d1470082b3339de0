"""Drawing a figure dict with the house rules: theme colours, alt text, full width.

`st.plotly_chart` turns a dict into a `go.Figure` to validate it, which costs about 1 ms per
frame and slider step (150 ms for a 40-frame animation) on every rerun. Our figures are plain
dicts that tests/test_figure_rules.py validates once with Plotly, so here they are handed over
as an already-built figure and serialized directly.
"""

from __future__ import annotations

from functools import cache

import plotly.graph_objects as go
import streamlit as st


@cache
def _template() -> dict:
    """The layout template Plotly would add (Streamlit's, once streamlit is imported)."""
    return go.Figure().to_dict()["layout"]["template"]


class _Spec(go.Figure):
    """A figure that is already a valid Plotly spec: `to_dict` returns it as it is."""

    def __init__(self, spec: dict) -> None:
        super().__init__()
        self._spec = spec

    def to_dict(self) -> dict:  # what st.plotly_chart serializes
        layout = self._spec.get("layout", {})
        if "template" in layout:
            return self._spec
        return {**self._spec, "layout": {**layout, "template": _template()}}


def show(figure: dict, *, alt: str, key: str) -> None:
    """Render a Plotly figure dict; `alt` describes it for screen readers."""
    if not alt:
        raise ValueError("every chart needs alt text")
    st.plotly_chart(_Spec(figure), key=key, alt=alt, theme="streamlit", width="stretch")
