"""The Markdown tables of a text section as CSV, so that every table a lesson shows can be
downloaded for a slide or a spreadsheet, not only the st.dataframe ones (issue 12).

A table is a run of lines that start with `|`; its second line is the `|---|` rule. Cells lose
the Markdown emphasis a lesson uses (`**`, `*`, `` ` ``); the numbers stay as the page shows them.
"""

from __future__ import annotations

import csv
import io
import re

_EMPHASIS = re.compile(r"\*\*|`|(?<!\w)\*|\*(?!\w)")


def markdown_tables(body: str) -> list[list[list[str]]]:
    """Each table in `body`: its rows (header first, the rule left out) as lists of cells."""
    tables: list[list[list[str]]] = []
    rows: list[list[str]] = []
    for line in [*body.splitlines(), ""]:
        text = line.strip()
        if text.startswith("|"):
            cells = [_EMPHASIS.sub("", c).strip() for c in text.strip("|").split("|")]
            if not all(set(c) <= set("-: ") for c in cells):  # not the |---| rule
                rows.append(cells)
        elif rows:
            tables.append(rows)
            rows = []
    return tables


def to_csv(rows: list[list[str]]) -> str:
    """Rows of cells as CSV text."""
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()
