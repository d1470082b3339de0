"""The class load bench's websocket client (bench/bench_load.py) against the real app server: two
sessions open two heavy lessons and move their main sliders once, so the harness cannot rot
silently (a renamed slider, a changed protocol, a move the page does not take)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from streamlit.proto.Slider_pb2 import Slider as SliderProto

from bench import bench_load
from tests.browser import server


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("STEPWISE_LOAD_WARM", "0")  # fast: no background warm-up in this test
        proc, url = bench_load.start_server(tmp_path_factory.mktemp("load"))
    yield url
    server.stop(proc)


def test_two_sessions_open_their_lessons_and_move_a_slider(app_url):
    plan = bench_load.Plan(sessions=2, moves=1, think_s=(0, 0), arrive_s=0, deadline_s=60)
    # in a thread of its own: a worker that ran browser tests has Playwright's loop running
    with ThreadPoolExecutor(1) as pool:
        r = pool.submit(asyncio.run, bench_load.drive(app_url, plan)).result()
    assert r.errors == []
    assert sorted(lesson for lesson, _ in r.opens) == ["memory", "policies"]
    assert sorted(lesson for lesson, _, _ in r.moves) == ["memory", "policies"]
    assert r.unfinished == 0
    kinds = {lesson: kind for lesson, _, kind in r.moves}
    assert kinds["policies"] == "page"  # no fragment on Who goes first
    assert kinds["memory"].startswith("fragment")  # its lab is an st.fragment
    section = bench_load.report(r, (0.0, 0.0), 1.0, 100.0)
    assert section.startswith("## Load: 2 sessions on one server")
    assert "| first open | 2 |" in section and "| slider move | 2 |" in section


def test_a_select_slider_steps_through_its_options_and_turns_back_at_the_ends():
    proto = SliderProto(id="w", options=["25", "50", "100"], default=[2])
    s = bench_load.Slider.of(proto, "", None)
    assert s.value == "100"
    state, direction = s.moved(+1)  # at the top: goes down instead
    assert (list(state.string_array_value.data), direction) == (["50"], -1)
    proto.set_value, proto.raw_value[:] = True, ["25"]
    state, direction = bench_load.Slider.of(proto, "", s).moved(-1)
    assert (list(state.string_array_value.data), direction) == (["50"], 1)


def test_a_slider_redrawn_without_a_value_keeps_the_one_the_browser_holds():
    proto = SliderProto(id="w", options=["1", "2", "3"], default=[0])
    held = bench_load.Slider("w", ("1", "2", "3"), "3", "")
    assert bench_load.Slider.of(proto, "", held).value == "3"


def test_the_link_shows_a_move_or_leaves_a_default_out():
    assert bench_load.took("mem-prompt=768&gpu=L4", "mem-prompt", "768", "1024")
    assert bench_load.took("gpu=L4", "mem-prompt", "1024", "1024")
    assert not bench_load.took("gpu=L4", "mem-prompt", "768", "1024")
