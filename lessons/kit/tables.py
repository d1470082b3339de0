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


_NUMBER = re.compile(r"^[-+]?\d[\d,]*(\.\d+)?$")
_WITH_UNIT = re.compile(r"^([-+]?\d[\d,]*(?:\.\d+)?)\s?(%|ms|s|GB|GiB|MB|TB/s|tokens|×)$")
_FORMULA = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as the start of a formula


def safe_cell(value: object, numbers: bool = True) -> object:
    """A cell as spreadsheets take it safely: text that starts like a formula (`=`, `+`, `-`,
    `@`, a tab or a carriage return) gets a leading apostrophe, so a request id such as
    `=HYPERLINK(...)` stays text (OWASP's rule for CSV injection). `numbers`: a cell that reads
    as a number ("-4") is one and stays as it is; False for a column of text (request ids)."""
    if not isinstance(value, str) or not value.startswith(_FORMULA):
        return value
    return value if numbers and _NUMBER.match(value) else "'" + value


def _units_in_header(rows: list[list[str]]) -> list[list[str]]:
    """A column whose every cell is a number with the same unit ("51.9 s", "33%") carries the
    unit in its header ("TTFT (s)") and plain numbers, which a spreadsheet can chart; numbers
    lose their thousands separators."""
    if len(rows) < 2:
        return rows
    out = [list(r) for r in rows]
    for j in range(len(rows[0])):
        cells = [r[j] for r in rows[1:] if j < len(r) and r[j] not in ("", "–")]
        found = [_WITH_UNIT.match(c) for c in cells]
        units = {m.group(2) for m in found if m}
        unit = units.pop() if cells and all(found) and len(units) == 1 else None
        for r in out[1:]:
            if j >= len(r):
                continue
            m = _WITH_UNIT.match(r[j]) if unit else None
            number = m.group(1) if m else r[j]
            r[j] = number.replace(",", "") if _NUMBER.match(number) else r[j]
        if unit:
            out[0][j] = f"{out[0][j]} ({unit})"
    return out


def to_csv(rows: list[list[str]]) -> str:
    """Rows of cells as CSV text: units in the headers, formula-like text neutralized."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows([[safe_cell(c) for c in r] for r in _units_in_header(rows)])
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
