"""The room above a plot (lessons/kit/legend.py): a legend that wraps into rows gets a top margin
that holds the title as well; a chart without a legend keeps its own."""

from __future__ import annotations

from lessons.kit.figures import HOUSE
from lessons.kit.legend import PLOT_WIDTH_PX, ROW_EM, TITLE_PX, legend_rows, top_room


def _figure(names: list[str], title: str = "A chart", **layout) -> dict:
    data = [{"type": "scatter", "name": n, "x": [0, 1], "y": [0, 1]} for n in names]
    return {"data": data, "layout": {"title": {"text": title}, **layout}}


def test_a_short_legend_takes_one_row_and_the_house_margin_holds_it():
    figure = _figure(["whole prompt at once", "chunked prefill"])
    assert legend_rows(figure) == 1
    assert top_room(figure) == HOUSE["margin"]["t"]


def test_a_legend_that_wraps_pushes_the_title_up_by_its_rows():
    long = "plus 64 decodes reading 2,048 tokens of KV each"  # the step-cost lesson's longest
    names = ["prompt tokens only", long, "weight read: 4.8 ms", "ridge: 255 tokens", "your step"]
    figure = _figure(names)
    rows = legend_rows(figure)
    assert rows == 3  # two columns, as Plotly draws it at 1280x720
    assert top_room(figure) >= TITLE_PX + rows * ROW_EM * HOUSE["legend"]["font"]["size"]
    assert top_room(figure) > HOUSE["margin"]["t"]


def test_more_entries_never_take_fewer_rows():
    names = [f"entry number {i} with some words" for i in range(12)]
    rows = [legend_rows(_figure(names[:n])) for n in range(2, 13)]
    assert rows == sorted(rows) and rows[-1] > 1
    one_wide = _figure(["x" * int(PLOT_WIDTH_PX / 4), "y" * int(PLOT_WIDTH_PX / 4)])
    assert legend_rows(one_wide) == 2  # each entry wider than half the width: one per row


def test_no_legend_and_a_larger_margin_are_kept():
    hidden = _figure(["a", "b", "c" * 200], showlegend=False)
    assert legend_rows(hidden) == 0 and top_room(hidden) == HOUSE["margin"]["t"]
    roomy = _figure(["a", "b"], margin={"t": 200})
    assert top_room(roomy) == 200
    titled = _figure(["x" * 80] * 4, title="Two<br>lines")
    assert top_room(titled) > top_room(_figure(["x" * 80] * 4))
