"""Every Markdown table a lesson shows has a CSV download (lessons/kit/tables.py, issue 12): the
cells as the page shows them, one file per table, the header first."""

import csv
import io

import pytest

from lessons.kit.tables import markdown_tables, to_csv
from tests.apptest_util import download_data, past_predictions, run_page


def test_a_markdown_table_becomes_rows_without_its_rule_or_emphasis():
    body = (
        "Some text.\n\n| Effect | **Whole** | `Chunked` |\n|---|:---:|---|\n"
        "| Step time | 12.5 ms | 3.1 ms |\n| Gap, *worst* | 1,200 ms | 40 ms |\n\nAfter.\n"
        "| a | b |\n|---|---|\n| 1 | 2 |"
    )
    first, second = markdown_tables(body)
    assert first == [
        ["Effect", "Whole", "Chunked"],
        ["Step time", "12.5 ms", "3.1 ms"],
        ["Gap, worst", "1,200 ms", "40 ms"],
    ]
    assert second == [["a", "b"], ["1", "2"]]
    got = list(csv.reader(io.StringIO(to_csv(first))))  # units in the header (issue 37)
    assert got[0] == ["Effect", "Whole (ms)", "Chunked (ms)"]
    assert got[2] == ["Gap, worst", "1200", "40"]
    assert markdown_tables("No table here.\n- a list | with a bar") == []


@pytest.mark.parametrize(
    ("page", "name"),
    [
        ("views/lesson_chunked_prefill.py", "table-body"),
        ("views/lesson_overload.py", "gateway"),
        ("views/lesson_watch.py", "bands"),
    ],
)
def test_each_table_of_a_lesson_downloads_as_the_csv_of_what_it_shows(page, name):
    at = past_predictions(run_page(page, timeout=120))
    buttons = [b for b in at.get("download_button") if f"csv-{name}-" in b.proto.id]
    assert len(buttons) == 1, f"one CSV download under the table of {name!r}"
    assert buttons[0].proto.label == "⬇ Table (CSV)"
    got = list(csv.reader(io.StringIO(download_data(buttons[0]).decode("utf-8"))))
    shown = [t for m in at.markdown for t in markdown_tables(m.value)]
    as_csv = [list(csv.reader(io.StringIO(to_csv(t)))) for t in shown]
    assert got in as_csv  # the table as the page draws it, cell for cell, units in its header
    assert len(got) > 2 and all(len(row) == len(got[0]) for row in got)


def test_data_tables_read_with_thousands_separators():
    """The memory lesson's tables showed 123456 for 123,456 (a walk finding): whole numbers get
    separators, decimals keep the places their column carries, text stays text."""
    from lessons.kit.tables import readable

    shown = readable(
        [
            {"request": "r1", "tokens": 123456, "ms": 1234.5, "share": 0.125},
            {"request": "r2", "tokens": 7, "ms": 2.0, "share": 1.0},
        ]
    )
    html = shown.to_html()
    for cell in ("123,456", ">7<", "1,234.5", "2.0", "0.125", "1.000", "r1"):
        assert cell in html, cell
    assert "123456" not in html


def test_units_go_in_the_header_and_numbers_chart():
    """Issue 37: cells carried units ("51.9 s", "33%"), which a spreadsheet reads as text."""
    rows = [["run", "TTFT", "busy", "mixed"], ["a", "51.9 s", "33%", "4 s"]]
    rows.append(["b", "1.2 s", "5%", "n/a"])
    got = list(csv.reader(io.StringIO(to_csv(rows))))
    assert got == [["run", "TTFT (s)", "busy (%)", "mixed"], ["a", "51.9", "33", "4 s"],
                   ["b", "1.2", "5", "n/a"]]  # fmt: skip


@pytest.mark.parametrize("cell", ['=HYPERLINK("http://e.x")', "+1+1", "-2+3", "@SUM(A1)", "\tx"])
def test_formula_like_text_is_neutralized_and_numbers_are_not(cell):
    """Issue 37, fault 7: a request id starting with = + - @ went into the CSV as it was."""
    got = list(csv.reader(io.StringIO(to_csv([["id", "n"], [cell, "-4"]]))))
    assert got[1] == ["'" + cell, "-4"]
