"""What only a browser shows: every page renders its charts, every animation plays and pauses
(its buttons clickable at projector size), a slider press redraws the chart, a quiz answer
updates the sidebar. One screenshot per page goes to test-output/screenshots/ for a person to
look at."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from lessons.course import lessons
from tests.browser.helpers import (
    CHART,
    READY,
    TITLE_GAPS,
    chart_state,
    full_screenshot,
    open_page,
    settled_state,
)

pytestmark = pytest.mark.browser

# (url path, screenshot name, Plotly charts the page must draw; None: at least one)
PAGES = [
    ("/", "start", 0),
    *[(f"/{lesson.url}", f"lesson_{lesson.id}", None) for lesson in lessons()],
    ("/practice", "practice", 0),
    ("/playground", "playground", 1),
    ("/trace", "trace", 3),
    ("/progress", "progress", 0),
]


@pytest.mark.parametrize(("path", "name", "charts"), PAGES, ids=[p[1] for p in PAGES])
def test_page_renders(page: Page, app_url: str, shots, path: str, name: str, charts):
    drawn = open_page(page, app_url + path, charts=charts)
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    expect(page.get_by_text("Page not found")).to_have_count(0)
    expect(page.locator("[data-testid=stSidebar]")).to_contain_text("XP")
    for i in range(drawn):
        expect(page.locator(CHART).nth(i).locator(".gtitle")).not_to_be_empty()
    full_screenshot(page, str(shots / f"{name}.png"))


def _animated(page: Page) -> list[int]:
    return page.evaluate(
        "() => [...document.querySelectorAll('"
        + CHART
        + "')].map((g, i) => (g._transitionData?._frames || []).length > 1 ? i : -1)"
        ".filter(i => i >= 0)"
    )


def _button(page: Page, chart, name: str):
    """The chart's Play or Pause button, checked to be the element a click at its centre hits
    (on a projector the speed menu once covered Pause)."""
    button = chart.locator(".updatemenu-button", has_text=name).first
    box = button.bounding_box()
    assert box, f"no {name} button drawn"
    hit = page.evaluate(
        "([x, y]) => { const e = document.elementFromPoint(x, y);"
        " return e && e.closest('.updatemenu-button')?.textContent || ''; }",
        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
    )
    assert name in hit, f"{name} is covered by {hit!r}"
    return button


@pytest.mark.parametrize("lesson", lessons(), ids=[lesson.id for lesson in lessons()])
def test_every_animation_plays_and_pauses_on_a_projector(browser, app_url: str, shots, lesson):
    """At 1280x720, Play and Pause of every animation can be clicked, Play advances the frames
    (new data drawn) and Pause stops them."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        open_page(page, f"{app_url}/{lesson.url}", charts=None)
        # no chart's title printed on its legend (a legend that wraps into rows pushes the
        # plot down but not the title up: lessons/kit/legend.py)
        gaps = [g for g in page.evaluate(TITLE_GAPS) if g is not None]
        assert gaps and min(gaps) >= 0, (lesson.id, gaps)
        animated = _animated(page)
        assert animated, f"{lesson.id} has no animation"
        for index in animated:
            chart = page.locator(CHART).nth(index)
            chart.scroll_into_view_if_needed()
            before = chart_state(page, index)
            # Play goes on from the frame the chart opened at (the controls' state): two frames
            # on from there, or, opened at its last frame, anywhere else
            start = int(before["slider"] or 0)
            left = before["frames"] - 1 - start
            moved = ">= s + 2" if left >= 2 else "!== s"
            _button(page, chart, "Play").click()
            page.wait_for_function(
                "([i, s]) => (document.querySelectorAll('"
                + CHART
                + "')[i]._fullLayout._currentFrame|0) "
                + moved,
                arg=[index, start],
                timeout=20_000,
            )
            _button(page, chart, "Pause").click()
            still = settled_state(page, index)  # raises if the frames keep coming: Pause failed
            if left >= 20:  # a short run may end before Pause lands on a busy machine
                assert int(still["current"]) < still["frames"] - 1, (
                    f"{lesson.id}: chart {index} ran to its end; Pause was not what stopped it"
                )
            drawn = [(s["y"], s["x"], s["z"]) for s in (before, still)]
            assert drawn[0] != drawn[1], (
                f"{lesson.id}: chart {index} advanced frames but drew the same data"
            )
            chart.screenshot(path=str(shots / f"lesson_{lesson.id}_animation_{index}.png"))
    finally:
        context.close()


def test_slider_press_updates_chart(page: Page, app_url: str):
    open_page(page, app_url + "/step-cost", charts=3)
    # null while Streamlit swaps the chart's element during the rerun (not a change yet)
    xs = (
        "(() => { const el = document.querySelector('" + CHART + "'); "
        "return el && el._fullData ? JSON.stringify(el._fullData.map(t => t.x)) : null; })()"
    )
    page.evaluate("() => { window.__xsBefore = " + xs + "; }")
    before = chart_state(page, 0)
    slider = page.get_by_role("slider", name="Prompt tokens in the step")
    slider.focus()
    slider.press("ArrowRight")
    page.wait_for_function(
        "() => { const now = " + xs + "; return now !== null && now !== window.__xsBefore; }",
        timeout=20_000,
    )
    after = chart_state(page, 0)
    assert after["x"] != before["x"]


def test_quiz_answer_updates_sidebar_xp(page: Page, app_url: str, shots):
    lesson = lessons()[0]
    q = lesson.bank().questions[0]
    open_page(page, app_url + "/practice")
    key = f"quiz-{lesson.id}-{q.id}".replace("_", "-")
    card = page.locator(f".st-key-{key}")
    card.get_by_text(q.correct_choice, exact=True).click()
    page.locator(f".st-key-{key}-check button").click()
    expect(page.get_by_text("Correct! +10 XP").first).to_be_visible(timeout=15_000)
    sidebar_xp = page.locator("[data-testid=stSidebar] [data-testid=stMetricValue]").first
    expect(sidebar_xp).to_have_text("10", timeout=15_000)
    page.screenshot(path=str(shots / "practice_answered.png"), full_page=False)


def test_saved_progress_loads_back_after_a_reload(page: Page, app_url: str, shots, tmp_path):
    """A reload starts at 0 XP; loading the saved file on the Progress page brings the XP back,
    sidebar included."""
    from lessons.quiz.progress import grade_question
    from lessons.quiz.saved import dump

    bank = lessons()[0].bank()
    saved = tmp_path / "stepwise-progress.json"
    saved.write_bytes(
        dump([grade_question(bank, q.id, q.correct_choice) for q in bank.questions[:2]])
    )
    open_page(page, app_url + "/progress")
    sidebar_xp = page.locator("[data-testid=stSidebar] [data-testid=stMetricValue]").first
    expect(sidebar_xp).to_have_text("0")
    page.locator("[data-testid=stFileUploader] input[type=file]").set_input_files(str(saved))
    expect(page.get_by_text("Progress loaded: 20 XP added").first).to_be_visible(timeout=15_000)
    expect(sidebar_xp).to_have_text("20", timeout=15_000)
    full_screenshot(page, str(shots / "progress_loaded.png"))


def test_a_clamped_step_stays_in_the_link(page: Page, app_url: str):
    """Open the last step, then make the run shorter: the step shown is clamped to the new last
    step, and the address bar must say so, so that a copied link reopens the same picture."""
    import re

    open_page(page, app_url + "/step-loop?sl-step=58", charts=None)
    # the KV pool: more blocks, fewer preemptions (the first slider is the stepper's, above the
    # picture)
    slider = page.get_by_role("slider", name="KV cache pool (blocks of 16 tokens)")
    slider.focus()
    for _ in range(8):
        slider.press("ArrowRight")
        page.wait_for_timeout(300)
        page.wait_for_function(
            "() => document.querySelector('[data-testid=stApp]')"
            "?.getAttribute('data-test-script-state') === 'notRunning'"
        )
    shown = re.search(r"Step (\d+) of (\d+)", page.locator(CHART).first.text_content())
    assert shown and shown.group(1) == shown.group(2)  # clamped to the last step
    assert int(shown.group(2)) < 58
    expect(page).to_have_url(re.compile(rf"sl-step={shown.group(1)}\b"))


def _policies_title(key: str) -> str:
    """A chart title of the policies lesson (its text.md `title-<key>` label)."""
    from lessons.policies.figures import labels

    return labels()[f"title-{key}"]


# the policies lesson revealed: the stream, four charts comparing the policies, the queue
POLICIES_REVEALED = "() => document.querySelectorAll('" + CHART + "').length >= 6"


def test_a_prediction_holds_the_charts_back_until_answered(page: Page, app_url: str, shots):
    """Policies at its opening settings: only the setup, the stream of requests that no policy
    has served yet; none of the charts that compare the policies (each would answer the
    question) until the question is answered, here with its first choice."""
    open_page(page, f"{app_url}/policies", charts=0, predict=True)
    expect(page.locator(CHART)).to_have_count(1, timeout=45_000)
    expect(page.locator(CHART).first).to_contain_text(_policies_title("stream"))
    expect(page.get_by_text(_policies_title("classes"))).to_have_count(0)
    expect(page.locator("[class*=predict-skip] button").first).to_be_visible()
    page.screenshot(path=str(shots / "lesson_policies_predicting.png"))
    question = page.locator(".st-key-predict-policies-predict-lowest-p99")
    question.get_by_role("radio").first.check(force=True)
    page.locator(".st-key-predict-policies-predict-lowest-p99-check button").click()
    page.wait_for_function(POLICIES_REVEALED, timeout=45_000)
    expect(page.locator(CHART).nth(1)).to_contain_text(_policies_title("classes"))
    expect(page.locator("[class*=predict-skip] button")).to_have_count(0)


def test_the_question_box_follows_a_slider_out_of_and_back_to_the_opening_run(
    page: Page, app_url: str, shots
):
    """The question box must follow a slider (the load, under the stream, above the box): off
    the opening settings its skip button goes and the note that the runs differ (with the
    button back) comes; the button brings the held opening run back, the stream alone."""
    open_page(page, f"{app_url}/policies", charts=0, predict=True)
    skip = page.locator("[class*=predict-skip] button")
    back = page.locator("[class*=predict-opening] button")
    expect(skip.first).to_be_visible()
    slider = page.get_by_role("slider", name="Offered load (% of capacity)")
    slider.focus()
    slider.press("ArrowRight")
    expect(back.first).to_be_visible(timeout=45_000)
    expect(skip).to_have_count(0)
    page.wait_for_function(POLICIES_REVEALED, timeout=45_000)
    page.screenshot(path=str(shots / "lesson_policies_other_settings.png"))
    back.first.click()
    expect(skip.first).to_be_visible(timeout=45_000)
    expect(page.locator(CHART)).to_have_count(1, timeout=45_000)
    expect(page.locator(CHART).first).to_contain_text(_policies_title("stream"))
    expect(back).to_have_count(0)


def test_the_note_that_the_runs_differ_follows_the_slider_after_the_predictions(
    page: Page, app_url: str
):
    """Past the predictions the box has no skip button, but its note that the runs differ (and
    the button back) must still come and go with the load slider, at once."""
    open_page(page, f"{app_url}/policies", charts=0, predict=True)
    page.locator("[class*=predict-skip] button").first.click()
    page.wait_for_function(POLICIES_REVEALED, timeout=45_000)
    back = page.locator("[class*=predict-opening] button")
    expect(back).to_have_count(0)
    slider = page.get_by_role("slider", name="Offered load (% of capacity)")
    slider.focus()
    slider.press("ArrowRight")
    expect(back.first).to_be_visible(timeout=45_000)
    # the crossing reruns the whole page: while it does, the old slider may still be drawn
    # beside the new one, so wait until the page is idle and one slider is left
    page.wait_for_function(READY, timeout=45_000)
    slider = page.get_by_role("slider", name="Offered load (% of capacity)")
    expect(slider).to_have_count(1, timeout=45_000)
    slider.focus()
    slider.press("ArrowLeft")
    expect(back).to_have_count(0, timeout=45_000)


def test_the_sidebar_lists_every_page(page: Page, app_url: str):
    """No lesson hides behind Streamlit's "View more": every page is a link in the sidebar."""
    open_page(page, app_url + "/", charts=0)
    nav = page.locator("[data-testid=stSidebarNav]")
    for lesson in lessons():
        expect(nav.get_by_role("link", name=lesson.short)).to_be_visible()
    for title in ("Practice", "Your own trace", "Progress"):
        expect(nav.get_by_role("link", name=title)).to_be_visible()
    expect(nav.get_by_text(re.compile(r"^View \d+ more$"))).to_have_count(0)
