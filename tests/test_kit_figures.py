"""The kit's figure vocabulary: animation controls laid out so none can cover another, an
animation that opens (and reopens from a link) at a chosen frame, and the block grid's cells
equal to the pool they draw."""

from __future__ import annotations

import numpy as np
import pytest

from lessons.kit import anim
from lessons.kit.figures import (
    CACHED,
    FREE,
    NULL,
    OUTSIDE,
    SHIFT,
    axis,
    block_grid,
    category_axis,
    grid_owners,
)
from lessons.theme import palette


def _animated(n: int = 5, start: int = 0) -> dict:
    frames = [{"data": [{"type": "scatter", "x": [i], "y": [i]}], "traces": [1]} for i in range(n)]
    figure = {"data": [{"type": "scatter", "x": [0, 9], "y": [0, 9]}, dict(frames[0]["data"][0])]}
    figure["layout"] = {}
    return anim.animate(figure, frames, [str(i) for i in range(n)], start=start)


def test_controls_have_rows_of_their_own():
    layout = _animated()["layout"]
    buttons, speed = layout["updatemenus"]
    slider = layout["sliders"][0]
    assert buttons["x"] == 0 and buttons["xanchor"] == "left"
    assert speed["x"] == 1 and speed["xanchor"] == "right"  # the far edge, not over Pause
    assert slider["y"] < buttons["y"] == speed["y"]  # the slider on a row below the buttons
    assert slider["len"] == 1.0


@pytest.mark.parametrize("start", [0, 3, 4])
def test_an_animation_opens_at_its_start_frame(start):
    figure = _animated(start=start)
    assert figure["layout"]["sliders"][0]["active"] == start
    assert figure["data"][1]["x"] == [start]
    assert figure["data"][0]["x"] == [0, 9]  # traces the frames leave alone stay


def test_reopen_copies_and_moves_to_a_frame():
    figure = _animated()
    again = anim.reopen(figure, 4)
    assert again["data"][1]["x"] == [4] and anim.opened_at(again) == 4
    assert figure["data"][1]["x"] == [0] and anim.opened_at(figure) == 0  # untouched
    assert anim.signature(figure) != anim.signature(again)
    with pytest.raises(ValueError):
        anim.reopen(figure, 5)


def test_the_block_grid_draws_the_pool_cell_for_cell():
    owner = np.array([NULL, 0, 0, 1, FREE, 2, CACHED])
    trace = block_grid(owner, columns=4)
    z = grid_owners(trace["z"])
    assert z.shape == (2, 4)
    assert z.ravel()[:7].tolist() == owner.tolist() and z.ravel()[7] == OUTSIDE
    # every request's cells get that request's palette colour, free and null their own
    scale = trace["colorscale"]
    span = trace["zmax"] - trace["zmin"]

    def colour(value: int) -> str:
        at = (value + SHIFT - trace["zmin"] + 0.5) / span
        return next(
            c for (lo, c), (hi, _) in zip(scale[::2], scale[1::2], strict=True) if lo <= at <= hi
        )

    assert colour(1) == palette()[1] and colour(FREE) != colour(NULL)
    cells = (FREE, NULL, CACHED, OUTSIDE, 0, 1)
    assert len({colour(c) for c in cells}) == len(cells)
    assert "#000000" not in {colour(r) for r in range(3)}  # black is the null block's


def test_axis_titles_need_a_unit():
    assert axis("time (ms)")["title"]["text"] == "time (ms)"
    with pytest.raises(ValueError):
        axis("time")


def test_an_axis_of_names_has_no_unit():
    assert category_axis("policy") == {"title": {"text": "policy"}, "type": "category"}
    with pytest.raises(ValueError):
        category_axis("policy (name)")


def test_a_cached_free_block_is_a_grey_no_request_colour_is_near():
    # the pale blue it had was taken for the palette's sky blue, a request's colour
    from lessons.kit.figures import CACHED_TINT, FREE_TINT
    from lessons.theme import palette

    def rgb(hex_: str) -> np.ndarray:
        return np.array([int(hex_[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)

    cached = rgb(CACHED_TINT)
    assert np.ptp(cached) == 0  # a neutral grey, like the free cells, only darker
    assert rgb(FREE_TINT).mean() - cached.mean() >= 40
    for c in palette():  # every request colour is a clear hue, never a grey
        if c.lower() != "#000000":
            assert np.ptp(rgb(c)) >= 60, c


def test_a_count_axis_tops_out_above_its_largest_count_and_at_one_when_all_are_zero():
    from lessons.kit.figures import count_axis, count_top

    assert count_top([]) == count_top([0, 0]) == pytest.approx(1.08)
    assert count_top(np.array([2, 5, 3])) == pytest.approx(5.4)
    assert count_axis("preemptions (count)", count_top([1]))["dtick"] == 1  # whole numbers


@pytest.mark.parametrize(
    ("end_s", "from_zero"),
    [(33.4, False), (120.0, True), (7.3, False), (1000.0, True), (0.9, False), (60.0, False)],
)
def test_a_time_slider_counts_up_in_round_even_steps(end_s, from_zero):
    """The dashboards' time slider read 1 s, 3 s, 5 s, 7 s, 9 s, 12 s: a linspace over the
    run's length, rounded. The grid's spacing is now a short round number (NICE_STEPS times a
    power of ten), every label is distinct and says its time exactly, the grid covers the run,
    and it keeps most of the points it may have."""
    grid = anim.time_grid(end_s, 60, from_zero=from_zero)
    assert 60 * 0.6 < grid.shape[0] <= 60
    gaps = np.diff(grid)
    assert np.allclose(gaps, gaps[0])
    mantissa = gaps[0] / 10 ** np.floor(np.log10(gaps[0]))
    assert any(np.isclose(mantissa, f) for f in anim.NICE_STEPS)
    assert grid[0] == (0 if from_zero else gaps[0])
    assert end_s <= grid[-1] < end_s + gaps[0]
    labels = [anim.time_label(t) for t in grid]
    assert len(set(labels)) == len(labels)
    assert [float(s.removesuffix(" s")) for s in labels] == pytest.approx(grid.tolist())


@pytest.mark.parametrize(("num_steps", "max_frames"), [(456, 190), (1000, 200), (5000, 120)])
def test_a_long_run_is_drawn_at_steps_a_round_number_apart(num_steps, max_frames):
    """The memory animation's slider read step 1, 4, 6, 9, 11, 14: an even sample of a long
    run, rounded. The steps between the first and the last are now multiples of a whole round
    spacing (NICE_STEPS times a power of ten), and most of the frames allowed are used."""
    picked = anim.sample_steps(num_steps, max_frames) + 1  # as the slider labels them
    assert picked[0] == 1 and picked[-1] == num_steps
    assert max_frames * 0.6 < picked.shape[0] <= max_frames
    inner = picked[1:-1]
    gap = int(inner[0])
    assert np.all(np.diff(inner) == gap) and gap >= 2
    mantissa = gap / 10 ** np.floor(np.log10(gap))
    assert any(np.isclose(mantissa, f) for f in anim.NICE_STEPS)
    assert num_steps - inner[-1] <= gap


def test_a_run_just_longer_than_the_animation_skips_only_a_few_steps():
    # a round spacing of 2 would halve a 205-step loop's frames: an even sample keeps 200
    picked = anim.sample_steps(205, 200)
    assert picked.shape[0] == 200 and picked[0] == 0 and picked[-1] == 204
    assert set(np.diff(picked).tolist()) == {1, 2}


@pytest.mark.parametrize(("num_steps", "max_frames"), [(101, 2), (11, 2), (5, 1)])
def test_an_animation_with_room_for_two_frames_keeps_the_ends(num_steps, max_frames):
    # the memory animation asks for 2 frames when its events fill the rest
    picked = anim.sample_steps(num_steps, max_frames)
    assert picked.shape[0] <= max_frames and picked[0] == 0
    if max_frames == 2:
        assert picked.tolist() == [0, num_steps - 1]
