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


@pytest.mark.parametrize("page", ["pages/lesson_step_cost.py", "pages/playground.py"])
def test_a_weights_link_reopens_as_shown(page):
    """The URL carries the label the learner sees (FP8); reopening it gives FP8, no warning."""
    at = run_page(page, query={"gpu": "L4", "dtype": "FP8"})
    assert at.selectbox(key="dtype").value == "fp8"
    assert not at.warning
    title = charts(at)[0]["layout"]["title"]["text"]
    assert "FP8" in title


def test_a_lowercase_weights_link_is_reported():
    at = run_page("pages/lesson_step_cost.py", query={"dtype": "fp8"})
    messages = " ".join(w.value for w in at.warning)
    assert "dtype=fp8" in messages and "BF16, FP8" in messages


def test_fp8_falls_back_to_bf16_on_a_gpu_without_it():
    """A10G has no FP8 tensor cores: a link asking for FP8 shows BF16 and says so; moving from
    an FP8 GPU to it resets the choice, so the widget and the URL agree."""
    at = run_page("pages/lesson_step_cost.py", query={"gpu": "A10G", "dtype": "FP8"})
    assert "no FP8" in " ".join(c.value for c in at.caption)
    assert "BF16" in charts(at)[0]["layout"]["title"]["text"]
    at = run_page("pages/lesson_step_cost.py", query={"gpu": "H100-SXM", "dtype": "FP8"})
    assert at.selectbox(key="dtype").value == "fp8"
    at.selectbox(key="gpu").set_value("A10G").run()
    assert at.selectbox(key="dtype").value == "bf16"
    assert "BF16" in charts(at)[0]["layout"]["title"]["text"]
    at.selectbox(key="gpu").set_value("H100-SXM").run()
    assert at.selectbox(key="dtype").value == "bf16"  # not FP8 again behind the learner's back
    assert at.query_params.get("dtype") in (None, [], "BF16", ["BF16"])


@pytest.mark.parametrize("value", ["9999", "abc", "0"])
def test_a_bad_step_in_a_link_is_reported(value):
    at = run_page("pages/lesson_step_loop.py", query={"sl-step": value})
    messages = " ".join(w.value for w in at.warning)
    assert f"sl-step={value}" in messages and "Showing the default (1)" in messages
    assert at.slider(key="sl-step").value == 1


def test_a_good_step_in_a_link_opens_there():
    at = run_page("pages/lesson_step_loop.py", query={"sl-step": "7"})
    assert at.slider(key="sl-step").value == 7
    assert not at.warning
