"""House rules every chart on every lesson page must follow, checked on the real pages.

Axis titles on every axis, alt text, at most 200 frames and 1 MB of JSON per figure, and on every
animation: Play, Pause, a speed choice and a step slider with one step per frame.
"""

from __future__ import annotations

import json

import pytest

from lessons.course import lessons
from lessons.kit.present import MAX_HEIGHT_PX, presented
from tests.apptest_util import past_predictions, run_page

MAX_FRAMES = 200
MAX_BYTES = 1_000_000


def _axes(layout: dict) -> list[str]:
    return [k for k in layout if k.startswith(("xaxis", "yaxis"))]


@pytest.fixture(scope="module", params=[lesson.page for lesson in lessons()])
def page_charts(request):
    at = past_predictions(run_page(request.param))
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


def _fonts(node: object, path: str = "") -> list[tuple[str, float]]:
    """Every font size set anywhere in a layout (template included)."""
    out = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "font" and isinstance(value, dict) and "size" in value:
                out.append((f"{path}.font", float(value["size"])))
            out += _fonts(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _fonts(value, f"{path}[{i}]")
    return out


def test_chart_text_is_readable_on_a_projector(page_charts):
    """At least 14 px everywhere, in the house's near-black (the theme's 12 px grey was not)."""
    page, nodes = page_charts
    for node in nodes:
        layout = json.loads(node.proto.spec)["layout"]
        base = layout["template"]["layout"]["font"]
        assert base["size"] >= 14 and base["color"].lower() in ("#1b1b1f",), page
        small = [(p, s) for p, s in _fonts(layout) if s < 14]
        assert not small, f"{page}: {small}"
        assert node.proto.theme != "streamlit", f"{page}: Streamlit's chart theme overrides ours"


def _text_sizes(node: object, path: str = "") -> list[tuple[str, float]]:
    """Every text size set in a figure: fonts, tick fonts and trace text fonts."""
    out = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key.endswith("font") and isinstance(value, dict) and "size" in value:
                out.append((f"{path}.{key}", float(value["size"])))
            out += _text_sizes(value, f"{path}.{key}")
    elif isinstance(node, list) and node and isinstance(node[0], (dict, list)):
        for i, value in enumerate(node):
            out += _text_sizes(value, f"{path}[{i}]")
    return out


def _top_margin(layout: dict) -> float:
    from lessons.kit.figures import HOUSE

    return {**HOUSE["margin"], **layout.get("margin", {})}["t"]


def test_presenter_mode_makes_every_text_projector_size(page_charts):
    """Presenter mode (lessons/kit/present.py): every text at least 18 px, taller plots, and
    the house rules still hold (valid Plotly, the legend where the template puts it)."""
    page, nodes = page_charts
    for node in nodes:
        spec = json.loads(node.proto.spec)
        spec["layout"].pop("template")
        big = presented(spec)
        sizes = _text_sizes(big["layout"]) + _text_sizes(big.get("data", []))
        sizes += _text_sizes(big.get("frames", []))
        small = [(p, s) for p, s in sizes if s < 18]
        assert not small, f"{page}: {small}"
        for key in ("title", "legend", "hoverlabel"):  # the template's 14-18 px, overridden
            assert big["layout"][key]["font"]["size"] >= 18, (page, key)
        for key in ("xaxis", "yaxis"):
            axis = big["layout"][key]
            assert min(axis["tickfont"]["size"], axis["title"]["font"]["size"]) >= 18, page
        height, top = spec["layout"].get("height", 450), _top_margin(spec["layout"])
        grown, grown_top = big["layout"]["height"], big["layout"]["margin"]["t"]
        # taller, up to a 720 px screen; never a smaller plot area than on the page (the step
        # loop's 700 px chart, cut to 640 with larger text, lost its category labels)
        assert grown - grown_top >= height - top, page
        assert grown > 1.2 * height or grown == MAX_HEIGHT_PX or height * 1.2 > MAX_HEIGHT_PX
        assert grown <= 1.5 * max(MAX_HEIGHT_PX, height), page
        # no two labels of a y axis with fixed ticks closer than their font size (the lanes of
        # chunked prefill were printed on top of each other)
        plot = grown - grown_top - big["layout"]["margin"]["b"]
        for key, axis in big["layout"].items():
            if not key.startswith("yaxis") or axis.get("showticklabels") is False:
                continue
            ticks = axis.get("tickvals")
            if ticks is None and axis.get("type") == "category":
                ticks = list(range(len(axis.get("categoryarray", []))))
            if not ticks or len(ticks) < 2:
                continue
            ticks = sorted(ticks)
            gap = min(b - a for a, b in zip(ticks, ticks[1:], strict=False))
            lo, hi = sorted(axis.get("range") or (ticks[0] - gap / 2, ticks[-1] + gap / 2))
            share = axis.get("domain", [0, 1])[1] - axis.get("domain", [0, 1])[0]
            spacing_px = plot * share * gap / (hi - lo)
            assert spacing_px >= axis["tickfont"]["size"], (page, key, spacing_px)
        assert not {"x", "y", "xanchor", "yanchor"} & set(big["layout"]["legend"]), page
        import plotly.graph_objects as go

        go.Figure(big)  # raises ValueError on any invalid property


def test_legends_sit_above_the_plot(page_charts):
    """The house legend is a row above the plot area; a figure that moves it onto the plot can
    cover data (and a legend.x breaks Plotly's slider layout)."""
    page, nodes = page_charts
    for node in nodes:
        layout = json.loads(node.proto.spec)["layout"]
        legend = layout.get("legend", {})
        assert not {"x", "y", "xanchor", "yanchor"} & set(legend), f"{page}: legend {legend}"


def test_axis_titles_carry_units(page_charts):
    page, nodes = page_charts
    for node in nodes:
        layout = json.loads(node.proto.spec)["layout"]
        for axis in _axes(layout):
            title = (layout[axis].get("title") or {}).get("text", "")
            if title.strip() and layout[axis].get("type") == "category":
                assert "(" not in title, f"{page}: {axis} names things: {title!r} has a unit"
            elif title.strip():
                assert "(" in title, f"{page}: {axis} title {title!r} has no unit"


def _looks(trace: dict) -> tuple:
    """What tells a legend entry apart: the mark's kind, colour, dash, symbol and fill."""
    line, marker = trace.get("line") or {}, trace.get("marker") or {}
    colour = marker.get("color") if isinstance(marker.get("color"), str) else None
    pattern = (marker.get("pattern") or {}).get("shape")
    return (
        trace.get("type", "scatter"),
        trace.get("mode"),
        line.get("color"),
        line.get("dash"),
        colour,
        marker.get("symbol"),
        trace.get("fillcolor"),
        pattern,
    )


def test_no_two_legend_entries_look_alike(page_charts):
    """Within a chart, two legend entries never share a look (colour, dash, symbol, fill): a
    reader matches a line to its entry by the look alone."""
    page, nodes = page_charts
    for node in nodes:
        figure = json.loads(node.proto.spec)
        seen: dict[tuple, str] = {}
        for trace in figure["data"]:
            name = trace.get("name")
            if not name or trace.get("showlegend") is False:
                continue
            look = _looks(trace)
            other = seen.setdefault(look, name)
            title = (figure["layout"].get("title") or {}).get("text", "")
            assert other == name, f"{page}, {title!r}: {other!r} and {name!r} look alike"
