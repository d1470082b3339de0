"""No page can break another, the second half of the pages (see tests/test_cross_page.py)."""

from __future__ import annotations

import pytest

from tests.test_cross_page import HALF, PAGES, cases, check_page

SECOND = PAGES[HALF:]


@pytest.mark.parametrize(("page", "extreme"), cases(SECOND))
def test_extremes_on_one_page_break_no_other(page: str, extreme: str):
    check_page(page, extreme)
