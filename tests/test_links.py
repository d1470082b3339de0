"""Links carry a lesson's state in the URL; a bad value is reported, never a traceback."""

import pytest

from tests.apptest_util import charts, run_page, trace_values


def test_link_sets_the_lesson_state():
    at = run_page("pages/lesson_step_cost.py", query={"gpu": "A100-80GB", "tokens": "4096"})
    assert at.selectbox(key="gpu").value == "A100-80GB"
    assert at.select_slider(key="tokens").value == 4096
    # The marker of "your step" sits at the linked token count.
    marker = charts(at)[0]["data"][-1]
    assert trace_values({"data": [marker]}, "x")[0] == [4096, 4096]
    assert not at.warning


@pytest.mark.parametrize(
    ("query", "shown"),
    [
        ({"gpu": "ZZ-9000"}, "gpu=ZZ-9000"),
        ({"tokens": "3"}, "tokens=3"),
        ({"decodes": "-4"}, "decodes=-4"),
        ({"decodes": "lots"}, "decodes=lots"),
        ({"tp": "3"}, "tp=3"),
    ],
)
def test_bad_link_value_is_reported_and_replaced(query, shown):
    at = run_page("pages/lesson_step_cost.py", query=query)
    messages = " ".join(w.value for w in at.warning)
    assert shown in messages and "Showing the default" in messages


def test_bad_tokens_in_calculator_give_a_message():
    at = run_page("pages/playground.py")
    at.text_input(key="tokens").set_value("1, two, 3").run()
    assert not at.exception
    assert any("two" in e.value for e in at.error)
