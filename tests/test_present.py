"""Presenter mode without a browser: the brief of a text section, and what a presenting page
draws (main controls only, briefs, the link) in AppTest. tests/browser/test_present.py checks
what only a browser shows (sizes on screen, the keyboard, the downloads)."""

from __future__ import annotations

import re

import pytest

from lessons.course import lessons
from lessons.kit import story
from lessons.kit.legend import has_legend
from lessons.kit.present import SCALE, TOP_SCALE, brief, presented
from tests.apptest_util import run_page

PAGE = "views/lesson_step_cost.py"


def test_brief_keeps_headings_and_the_first_sentence():
    text = (
        "### The floor\n\nA step of **one token. Really** costs 5 ms. The rest is detail.\n\nMore."
    )
    assert brief(text) == "### The floor\n\nA step of **one token. Really** costs 5 ms."


def test_brief_of_a_list_a_table_and_nothing():
    assert brief("- First item. Second sentence.\n- Another item") == "- First item."
    assert brief("| a | b |\n|---|---|\n| 1 | 2 |\n\nAfter the table. Yes.") == "After the table."
    assert brief("") == ""
    assert brief("e.g. this stays whole. Then this goes.") == "e.g. this stays whole."
    assert brief("# Title") == "# Title"


def test_every_lesson_section_has_a_short_brief():
    """No brief is empty where its section has prose, and none is longer than its section."""
    for lesson in lessons():
        for section in story.parse(lesson.text_path):
            body = section.body
            short = brief(body)
            assert len(short) <= len(body), (lesson.id, section.name)
            if body and not body.startswith(("|", "-", "<")):
                assert short, (lesson.id, section.name)


def _drawn_labels(at) -> set[str]:
    return {w.label for w in [*at.slider, *at.select_slider, *at.selectbox, *at.toggle]}


def _asked(markdown: str) -> bool:
    """A question or an exercise drawn on the page (said whole, presenting or not; the lesson
    asks some of them next to their chart, issue 36), not a text section."""
    return re.match(r"\*\*(\d+\.|Exercise)", markdown) is not None


def test_a_presenting_page_draws_main_controls_and_briefs():
    at = run_page(PAGE, query={"present": "1", "cost-decodes": "8"})
    labels = _drawn_labels(at)
    assert "Prompt tokens in the step" in labels and "Running decodes" not in labels
    assert at.query_params["present"] == "1"
    assert at.query_params["cost-decodes"] == "8"  # off screen, still in the link
    plain = run_page(PAGE, query={"cost-decodes": "8"})
    assert "Running decodes" in _drawn_labels(plain)
    words = sum(len(m.value.split()) for m in at.markdown if not _asked(m.value))
    assert words < 0.5 * sum(len(m.value.split()) for m in plain.markdown if not _asked(m.value))
    # the run itself is the same: the hidden control still counts
    assert [m.value for m in at.metric] == [m.value for m in plain.metric]
    # and the class is told what the link set off screen (and nothing when all are defaults)
    notes = [c.value for c in at.caption if "off screen while presenting" in c.value]
    assert notes == ["Also set, off screen while presenting: Running decodes: 8."]
    long = run_page("views/lesson_memory.py", query={"present": "1", "mem-rate": "8"})
    said = [c.value for c in long.caption if "off screen while presenting" in c.value]
    assert said == [
        "Also set, off screen while presenting: Interactive arrivals \\(requests per second\\): 8."
    ]  # the whole label, as plain text
    calm = run_page(PAGE, query={"present": "1"})
    assert not [c for c in calm.caption if "off screen while presenting" in c.value]


def test_presenter_mode_follows_to_the_next_page_and_turns_off():
    at = run_page(PAGE, query={"present": "1"})
    at.switch_page("views/lesson_overload.py").run()
    assert not at.exception and at.toggle(key="w:present").value is True
    at.toggle(key="w:present").set_value(False).run()
    assert "present" not in at.query_params
    assert "Offered load (% of capacity)" in _drawn_labels(at)


@pytest.mark.parametrize("raw", ["yes", "`[x](http://e.x)`", "1" * 500])
def test_a_bad_present_link_is_reported_as_plain_text(raw):
    at = run_page(query={"present": raw})  # the frame reads it on the first run, on any page
    warning = at.warning[0].value
    assert "present" in warning and "](" not in warning and len(warning) < 300
    at.switch_page(PAGE).run()
    assert not at.exception and at.toggle(key="w:present").value is False


def test_the_defaults_caption_asks_to_switch_off_only_when_the_switch_is_on_screen():
    """Presenting hides the defaults toggle (not a main control): the caption still names the
    limits the run uses, but no longer asks to switch off a toggle nobody can see."""
    page = "views/lesson_memory.py"
    plain, presenting = run_page(page), run_page(page, query={"present": "1"})
    captions = [" ".join(c.value for c in at.caption) for at in (plain, presenting)]
    assert "`max_num_batched_tokens`" in captions[0] and "Switch off" in captions[0]
    assert "`max_num_batched_tokens`" in captions[1] and "Switch off" not in captions[1]
    assert "Use vLLM's defaults for this GPU" in _drawn_labels(plain)
    assert "Use vLLM's defaults for this GPU" not in _drawn_labels(presenting)


def test_a_presenting_lesson_shows_its_tables_as_plain_tables():
    # the data grid draws 14 px cells on a canvas and scrolled a wide table's last column away;
    # a plain table takes presenter mode's font size and shows every column
    shown = run_page("views/lesson_memory.py", query={"present": "1"})
    assert not shown.exception and len(shown.table) == 1 and len(shown.dataframe) == 0
    desk = run_page("views/lesson_memory.py")
    assert not desk.exception and len(desk.table) == 0 and len(desk.dataframe) == 1


def test_the_room_above_a_plot_grows_for_a_legend_only_where_plotly_draws_one():
    """Presenting, a legend's larger entries may take more rows, so the top margin grows by
    TOP_SCALE; a chart without one (the memory grid) grows only with its text, by SCALE."""
    line = {"type": "scatter", "x": [0, 1], "y": [0, 1]}
    cases = [
        ({"data": [line, line], "layout": {}}, True),
        ({"data": [line], "layout": {}}, False),  # Plotly's default: one trace, no legend
        ({"data": [{**line, "showlegend": True}], "layout": {}}, True),
        ({"data": [line, line], "layout": {"showlegend": False}}, False),
        ({"data": [{"type": "heatmap", "z": [[1]]}, line], "layout": {}}, False),
    ]
    for figure, legend in cases:
        assert has_legend(figure) is legend, figure
        figure["layout"]["margin"] = {"t": 100}
        top = presented(figure)["layout"]["margin"]["t"]
        assert top == round(100 * (TOP_SCALE if legend else SCALE)), figure
