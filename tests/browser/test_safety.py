"""What a browser shows about links: a hostile value in a link renders as plain text on every
page (no link, image, heading or markup, no traceback), and no request leaves the machine.
(That every Play and Pause button can be clicked at 1280x720 is in test_pages.py.)

Why: link values used to be echoed inside a code span, and a backtick broke out of it (20 of 50
hostile page loads rendered a link, an image, a heading or markup); on a projector the speed
menu covered the Pause button; the page icon came from a font server on the internet.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Page

from lessons.course import lessons
from lessons.kit.controls import declared
from tests.browser.helpers import open_page, outside, watch_requests

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]

HOSTILE = [
    "`[Log in again here](https://evil.example/login)`",
    "x\n# Big heading\n![pic](https://evil.example/a.png)",
    "<b>bold</b><img src=https://evil.example/i.png>",
    ":red[alarm] **loud** <a href='https://evil.example'>hi</a>",
    "y" * 50_000,
]


def _keys(module: str, prefix_attr: str = "PREFIX") -> list[str]:
    mod = importlib.import_module(module)
    return [d.url_key(getattr(mod, prefix_attr)) for d in declared(mod.Params)]


def _link_keys(lesson) -> list[str]:
    """The keys a lesson's links carry besides its controls: presenter mode, autoplay, the class
    room it follows, its stepper's step and its charts' frames (keys read off its page)."""
    prefix = lesson.prefix
    charts = re.findall(r'page\.chart\(.*, "([a-z_-]+)"', (ROOT / lesson.page).read_text())
    steps = [f"{prefix}-step"] if "stepper(" in (ROOT / lesson.page).read_text() else []
    return ["present", "play", f"{prefix}-room", *steps, *(f"{prefix}-{c}-frame" for c in charts)]


PAGES = [
    (f"/{lesson.url}", _keys(f"lessons.{lesson.id}.lesson") + _link_keys(lesson))
    for lesson in lessons()
] + [
    ("/playground", _keys("lessons.calculator.tool") + ["present"]),
    ("/trace", _keys("lessons.trace_lab.tool")),
    ("/", ["gpu", "x"]),
    ("/progress", ["x"]),
    ("/practice", ["present", "lesson", "x"]),
    ("/class", ["room", "host", "present"]),
    ("/class", ["lesson", "present"]),
]


def test_every_lesson_link_key_is_tried():
    """The key list above is read off the pages: it finds the charts and steppers they draw."""
    keys = dict(PAGES)
    assert "sl-step" in keys["/step-loop"] and "mem-step" in keys["/memory"]
    assert "cost-anim-frame" in keys["/step-cost"] and "wch-dashboard-frame" in keys["/watch"]


@pytest.mark.parametrize(("path", "keys"), PAGES, ids=[f"{p}:{k[0]}" for p, k in PAGES])
def test_hostile_link_values_render_as_plain_text(page: Page, app_url: str, path, keys):
    requests = watch_requests(page)
    # Every key gets a hostile value; the 50,000-character one goes to one key per page only,
    # as a link carrying several would pass the server's 64 KB limit on a request's headers.
    short = HOSTILE[:-1]
    values = [HOSTILE[-1] if i == len(short) else short[i % len(short)] for i in range(len(keys))]
    query = "&".join(f"{k}={quote(v)}" for k, v in zip(keys, values, strict=True))
    tools = ("/", "/progress", "/practice", "/class")
    open_page(page, f"{app_url}{path}?{query}", charts=0 if path in tools else None)
    main = page.locator("[data-testid=stMain]")
    assert page.locator("[data-testid=stException]").count() == 0
    assert main.locator("a[href*='evil'], img[src*='evil']").count() == 0
    assert main.locator("h1, h2, h3, h4, h5, h6").filter(has_text="Big heading").count() == 0
    for alert in main.locator("[data-testid=stAlert]").all():
        assert alert.locator("a, img, h1, h2, h3, code, strong, b").count() == 0, alert.inner_html()
        assert len(alert.inner_text()) < 600  # a 50,000-character value is cut
    assert not outside(requests), outside(requests)


@pytest.mark.parametrize("path", ["/practice", "/class", "/class?present=1"])
def test_the_tool_pages_ask_nothing_of_other_hosts(page: Page, app_url: str, path: str):
    """The pages a class uses besides the lessons (offline classrooms): every request, websocket
    included, stays on this machine."""
    requests = watch_requests(page)
    open_page(page, f"{app_url}{path}", charts=0)
    page.wait_for_timeout(1500)  # the fonts, icons and scripts a page loads after its script
    assert page.locator("[data-testid=stException]").count() == 0
    assert requests and not outside(requests), outside(requests)
