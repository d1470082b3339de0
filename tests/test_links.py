"""Links carry a page's state in the URL; a bad value is reported as plain text and replaced by
the default, never a traceback."""

import pytest

from tests.apptest_util import charts, run_page, trace_values

COST = "views/lesson_step_cost.py"


def _warnings(at) -> str:
    return " ".join(w.value for w in at.warning)


def test_link_sets_the_lesson_state():
    at = run_page(COST, query={"gpu": "A100-80GB", "cost-tokens": "4096"})
    assert at.selectbox(key="w:gpu").value == "A100-80GB"
    assert at.select_slider(key="w:cost-tokens").value == 4096
    marker = charts(at)[0]["data"][-1]  # "your step" sits at the linked token count
    assert trace_values({"data": [marker]}, "x")[0] == [4096, 4096]
    assert not at.warning


@pytest.mark.parametrize(
    ("query", "key"),
    [
        ({"gpu": "ZZ-9000"}, "gpu"),
        ({"cost-tokens": "3"}, "cost-tokens"),
        ({"cost-decodes": "-4"}, "cost-decodes"),
        ({"cost-decodes": "lots"}, "cost-decodes"),
        ({"tp": "3"}, "tp"),
    ],
)
def test_bad_link_value_is_reported_and_replaced(query, key):
    at = run_page(COST, query=query)
    assert f"This link sets {key} to" in _warnings(at)
    assert "Showing" in _warnings(at)
    assert at.metric[0].value  # the page still draws, at the default


def test_a_hostile_value_is_escaped_and_cut():
    hostile = "`[Log in again here](https://evil.example/login)`" + "x" * 5000
    at = run_page(COST, query={"cost-tokens": hostile})
    message = _warnings(at)
    assert "\\[Log in again here\\]\\(h\u200bttps\\:" in message  # every mark escaped
    assert len(message) < 400


def test_bad_tokens_in_calculator_give_a_message():
    at = run_page("views/playground.py")
    at.text_input(key="w:calc-tokens").set_value("1, two, 3").run()
    assert not at.exception
    assert any("two" in e.value for e in at.error)


@pytest.mark.parametrize("page", [COST, "views/playground.py"])
def test_a_weights_link_reopens_as_shown(page):
    """The URL carries the label the learner sees (FP8); reopening it gives FP8, no warning."""
    at = run_page(page, query={"gpu": "L4", "dtype": "FP8"})
    assert at.selectbox(key="w:dtype").value == "fp8"
    # no warning about the link (on the L4 the step cost lesson's 64 running requests of 2,048
    # tokens need more KV cache than it has, which that lesson says in a warning of its own)
    assert not [w for w in at.warning if "KV cache does not fit" not in w.value]
    assert "FP8" in charts(at)[0]["layout"]["title"]["text"]


def test_a_link_typed_in_another_case_opens_the_option_it_names():
    at = run_page(COST, query={"gpu": "L4", "dtype": "fp8"})
    assert at.selectbox(key="w:dtype").value == "fp8"
    assert not [w for w in at.warning if "KV cache does not fit" not in w.value]  # see above
    at = run_page("views/lesson_memory.py", query={"mem-policy": "priority"})
    assert at.selectbox(key="w:mem-policy").value == "priority" and not at.warning


def test_a_link_naming_no_option_is_still_reported():
    at = run_page(COST, query={"dtype": "fp9"})
    assert "This link sets dtype to" in _warnings(at) and "one of BF16\\, FP8" in _warnings(at)


def test_fp8_falls_back_to_bf16_on_a_gpu_without_it():
    """A10G has no FP8 tensor cores: a link asking for FP8 shows BF16 and says so; moving from
    an FP8 GPU to it resets the choice, so the widget and the URL agree."""
    at = run_page(COST, query={"gpu": "A10G", "dtype": "FP8"})
    assert "no FP8" in " ".join(c.value for c in at.caption)
    assert "BF16" in charts(at)[0]["layout"]["title"]["text"]
    at = run_page(COST, query={"gpu": "H100-SXM", "dtype": "FP8"})
    assert at.selectbox(key="w:dtype").value == "fp8"
    at.selectbox(key="w:gpu").set_value("A10G").run()
    assert at.selectbox(key="w:dtype").value == "bf16"
    assert "BF16" in charts(at)[0]["layout"]["title"]["text"]
    at.selectbox(key="w:gpu").set_value("H100-SXM").run()
    assert at.selectbox(key="w:dtype").value == "bf16"  # not FP8 again behind the learner's back


def test_settings_follow_the_learner_but_lesson_values_do_not():
    """GPU is shared: changed on one lesson, the next opens with it. A lesson's own values
    (the token count) stay with that lesson, and a lesson's own default is untouched."""
    at = run_page(COST)
    at.selectbox(key="w:gpu").set_value("A100-80GB").run()
    at.select_slider(key="w:cost-tokens").set_value(16384).run()
    at.switch_page("views/playground.py").run()
    assert at.selectbox(key="w:gpu").value == "A100-80GB"
    assert at.text_input(key="w:calc-tokens").value == "1, 64, 512, 2048, 8192"
    at.switch_page(COST).run()
    assert at.select_slider(key="w:cost-tokens").value == 16384


def test_reset_puts_the_lessons_own_controls_back():
    at = run_page(COST)
    at.selectbox(key="w:gpu").set_value("L4").run()
    at.select_slider(key="w:cost-tokens").set_value(16384).run()
    at.button(key="cost-reset").click().run()
    assert at.select_slider(key="w:cost-tokens").value == 2048
    assert at.selectbox(key="w:gpu").value == "L4"  # a setting that follows the learner stays


def _page_keys():
    import importlib

    from lessons.course import lessons
    from lessons.kit.controls import declared

    out = []
    for page, module in [(x.page, f"lessons.{x.id}.lesson") for x in lessons()] + [
        ("views/playground.py", "lessons.calculator.tool")
    ]:
        mod = importlib.import_module(module)
        out.append((page, [d.url_key(mod.PREFIX) for d in declared(mod.Params)]))
    return out


@pytest.mark.parametrize(("page", "keys"), _page_keys(), ids=[p for p, _ in _page_keys()])
def test_every_link_value_of_every_page_is_checked_and_escaped(page, keys):
    """Every URL key a page reads, set to a hostile value: no traceback, one plain-text message
    per key, each value cut short and every Markdown mark in it escaped."""
    hostile = "`[x](https://evil.example)`\n# H\n" + "z" * 3000
    at = run_page(page, query={key: hostile for key in keys})
    assert not at.exception
    messages = [w.value for w in at.warning if "This link sets" in w.value]
    assert len(messages) == len(keys)
    for message in messages:
        assert "\\`\\[x\\]\\(h\u200bttps\\:\\/\\/evil\\.example\\)\\`" in message
        assert "\n#" not in message and len(message) < 400


def test_a_bad_link_value_is_reported_across_the_page_not_in_its_control_s_column():
    """The note for a bad value sits above the controls at full width: squeezed into the
    column of its slider it read one word per line."""
    at = run_page("views/lesson_policies.py", query={"pol-load": "abc"}, timeout=180)
    assert any("pol-load" in w.value for w in at.warning)
    for col in at.columns:
        assert not any("pol-load" in w.value for w in col.warning), "drawn in a column"


HOSTILE = "[Log in again](https://evil.example/login) ![x](https://evil.example/x.png) **bold**"


def test_a_link_s_value_is_plain_text_in_every_part_of_its_message():
    """Issue 37, fault 5: the calculator's check quoted the raw value into the message's
    Markdown, so a link rendered live, an outside image loaded and **bold** was bold. Rendered
    as Markdown now, the message has no link, image or emphasis, and it reads as a sentence."""
    from markdown_it import MarkdownIt

    at = run_page("views/playground.py", query={"calc-tokens": HOSTILE})
    message = _warnings(at)
    html = MarkdownIt("gfm-like").render(message)
    for tag in ("<a ", "<img", "<strong", "<em"):
        assert tag not in html, html
    assert "which this page cannot use: it expects whole numbers separated by commas" in message
    assert "which is not" not in message
