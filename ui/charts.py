"""Drawing a figure dict with the house rules: theme colours, alt text, full width."""

from __future__ import annotations

import streamlit as st


def show(figure: dict, *, alt: str, key: str) -> None:
    """Render a Plotly figure dict; `alt` describes it for screen readers."""
    if not alt:
        raise ValueError("every chart needs alt text")
    st.plotly_chart(figure, key=key, alt=alt, theme="streamlit", width="stretch")
