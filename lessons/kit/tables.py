"""The Markdown tables of a text section as CSV, so that every table a lesson shows can be
downloaded for a slide or a spreadsheet, not only the st.dataframe ones (issue 12); and a
lesson's data tables as a learner reads them, numbers with thousands separators (`readable`).

A table is a run of lines that start with `|`; its second line is the `|---|` rule. Cells lose
the Markdown emphasis a lesson uses (`**`, `*`, `` ` ``); the numbers stay as the page shows them.
"""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

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


def readable(rows: list[dict]) -> Styler:
    """Rows (column -> value) as a styled table: whole numbers with thousands separators
    (12,345), and decimals at the places their column's values carry (at most 3)."""
    frame = pd.DataFrame(rows)
    formats = {}
    for name in frame.columns:
        col = frame[name]
        if pd.api.types.is_integer_dtype(col):
            formats[name] = "{:,}"
        elif pd.api.types.is_float_dtype(col):
            places = next(
                (k for k in range(4) if np.allclose(col.round(k), col, rtol=0, atol=1e-9)), 3
            )
            formats[name] = f"{{:,.{places}f}}"
    return frame.style.format(formats, na_rep="–")


# A data grid sizes each column to its longest text (header or cell) on a canvas, and clips the
# table at the page's width: about 7 px a character plus 16 px of padding per column, measured
# on the memory lesson's grids at 1280 px, where the main column is 820 px wide.
GRID_PX_PER_CHAR = 7
GRID_PAD_PX = 16
GRID_WIDTH_PX = 800  # the main column at 1280 px, less a margin


def grid_px(shown: Styler) -> int:
    """About how wide a data grid draws these rows (`readable`'s table), in pixels."""
    frame = shown.data
    text = shown.to_string(delimiter="\t").splitlines()[1:]  # the cells as formatted
    widths = [len(str(name)) for name in frame.columns]
    for line in text:
        for i, cell in enumerate(line.split("\t")[-len(widths) :]):
            widths[i] = max(widths[i], len(cell))
    return sum(w * GRID_PX_PER_CHAR + GRID_PAD_PX for w in widths)
