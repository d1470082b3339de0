"""House rules every chart on every lesson page must follow, checked on the real pages.

Axis titles on every axis, alt text, at most 200 frames and 1 MB of JSON per figure, and on every
animation: Play, Pause, a speed choice and a step slider with one step per frame.
"""

from __future__ import annotations

import json

import pytest

from lessons.course import lessons
from tests.apptest_util import run_page

MAX_FRAMES = 200
MAX_BYTES = 1_000_000


def _axes(layout: dict) -> list[str]:
    return [k for k in layout if k.startswith(("xaxis", "yaxis"))]


@pytest.fixture(scope="module", params=[lesson.page for lesson in lessons()])
def page_charts(request):
    at = run_page(request.param)
    nodes = at.get("plotly_chart")
    assert nodes, f"{request.param} draws no chart"
    return request.param, nodes


def test_every_axis_has_a_title(page_charts):
    page, nodes = page_charts
    for node in nodes:
        spec = json.loads(node.proto.spec)
        layout = spec["layout"]
        axes = _axes(layout) or ["xaxis", "yaxis"]
        for axis in axes:
            if layout.get(axis, {}).get("visible") is False:
                continue
            title = (layout.get(axis, {}).get("title") or {}).get("text", "")
            if axis.startswith("yaxis") and layout.get(axis, {}).get("showticklabels") is False:
                continue
            assert title.strip(), f"{page}: {axis} has no title"


def test_every_chart_has_alt_text(page_charts):
    page, nodes = page_charts
    for node in nodes:
        assert node.proto.alt.strip(), f"{page}: a chart has no alt text"


def test_animations_have_controls_and_stay_small(page_charts):
    page, nodes = page_charts
    for node in nodes:
        assert len(node.proto.spec) <= MAX_BYTES, f"{page}: figure over 1 MB"
        spec = json.loads(node.proto.spec)
        frames = spec.get("frames") or []
        if not frames:
            continue
        assert len(frames) <= MAX_FRAMES, f"{page}: {len(frames)} frames"
        labels = [b["label"] for menu in spec["layout"]["updatemenus"] for b in menu["buttons"]]
        assert any("Play" in label for label in labels), page
        assert any("Pause" in label for label in labels), page
        assert any("Speed" in label for label in labels), page
        slider_steps = spec["layout"]["sliders"][0]["steps"]
        assert len(slider_steps) == len(frames), f"{page}: slider steps != frames"


def test_every_figure_is_valid_plotly(page_charts):
    """The app hands figures to Streamlit unvalidated (ui/charts.py), so validate them here."""
    import plotly.graph_objects as go

    page, nodes = page_charts
    for node in nodes:
        spec = json.loads(node.proto.spec)
        go.Figure(spec)  # raises ValueError on any invalid property
