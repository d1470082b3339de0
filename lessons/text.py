"""Lesson text: Markdown files with named sections and numbers filled in from sim results.

A lesson's `text.md` is split by lines of the form `<!-- section: name -->`. Sections may hold
`{placeholders}` with format specs (`{weight_read_ms:.1f}`); `section(...)` fills them from a
dict the figure builder returned, so every number a learner reads comes from the same result as
the chart beside it. A missing value is an error, never a silent blank.
"""

from __future__ import annotations

import re
import string
from functools import cache
from pathlib import Path

_MARK = re.compile(r"^<!--\s*section:\s*([\w-]+)\s*-->\s*$", re.MULTILINE)


@cache
def sections(path: str | Path) -> dict[str, str]:
    """All named sections of a Markdown file, in file order."""
    raw = Path(path).read_text(encoding="utf-8")
    parts = _MARK.split(raw)
    # parts = [preamble, name1, body1, name2, body2, ...]
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts), 2)}


def placeholders(template: str) -> set[str]:
    """The names a section needs filled in."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def section(path: str | Path, name: str, values: dict | None = None) -> str:
    """One section, with its placeholders filled from `values` (KeyError if one is missing)."""
    body = sections(path)[name]
    if not placeholders(body):
        return body
    return body.format_map(values or {})
