"""No page writes a stray value: Streamlit's "magic" puts any bare expression of a page script on
the page, so a line such as `a() if held else b()` showed `None` under the memory lesson's
metrics. Every page, with its predictions skipped, is searched for that output."""

import pytest

from tests.apptest_util import past_predictions, run_page
from tests.test_cross_page import PAGES

STRAY = {"`None`", "None", "`True`", "`False`"}


def _markdown_bodies(node) -> list[str]:
    out = []
    proto = getattr(node, "proto", None)
    if type(node).__name__ == "Markdown" and proto is not None:
        out.append(proto.body.strip())
    children = getattr(node, "children", None)
    for child in (children or {}).values() if isinstance(children, dict) else []:
        out.extend(_markdown_bodies(child))
    return out


@pytest.mark.parametrize("page", PAGES)
def test_no_page_shows_a_stray_value(page):
    at = past_predictions(run_page(page, timeout=120))
    stray = [body for body in _markdown_bodies(at._tree) if body in STRAY]
    assert not stray, f"{page} writes {stray}"
