"""Text outside a lesson's story (site.md, exercise prompts): one named section, filled in.

The parsing is the kit's (lessons/kit/story.py): `<!-- section: name -->` splits a file into
sections, and `{placeholders}` with format specs (the kit's too: `{n:~token}`, `{n:a}`) are
filled from a dict. A missing value is an error, never a silent blank.
"""

from __future__ import annotations

from pathlib import Path

from lessons.kit.story import fill, parse, placeholders

__all__ = ["placeholders", "section", "sections"]


def sections(path: str | Path) -> dict[str, str]:
    """All unconditional sections of a Markdown file, in file order."""
    return {s.name: s.body for s in parse(path) if s.when is None}


def section(path: str | Path, name: str, values: dict | None = None) -> str:
    """One section, with its placeholders filled from `values` (KeyError if one is missing)."""
    body = sections(path)[name]
    if not placeholders(body):
        return body
    return fill(body, values or {})
