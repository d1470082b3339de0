"""A lesson's text as data: the ordered sections of its text.md, filled from its Readout.

A section starts with `<!-- section: name -->`. It may carry a condition on the Readout,
`<!-- section: name when: field -->` or `when: not field`, where `field` is a bool field of the
Readout: which paragraph shows is decided there, in one place, not by branches in a page.
Placeholders (`{weight_read_ms:.1f}`) name Readout fields, or an attribute of one
(`{problem.ttft_p99_s:.2f}`). A count can carry its noun: `{preemptions:~preemption}` reads
"1 preemption" or "3 preemptions" (`{n:~child|children}` for a plural that is not "+s");
`{prompt:a}-token` reads "an 8,000-token" or "a 4,096-token". A
"metrics" section holds lines `- label :: value`, both sides templates, drawn as a row of
st.metric; a "labels" section holds `- key :: words` for charts, and a "deeper" section the
topics of the lesson's folded "Go deeper" asides (`- key :: topic`).
"""

from __future__ import annotations

import dataclasses
import re
import string
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

_MARK = re.compile(
    r"^<!--\s*section:\s*([\w-]+)(?:\s+when:\s*(not\s+)?(\w+))?\s*-->\s*$", re.MULTILINE
)


@dataclass(frozen=True)
class Section:
    """One section of a text.md: its body and an optional condition on a Readout field."""

    name: str
    body: str
    when: str | None = None
    negate: bool = False

    def shows(self, readout: Any) -> bool:
        if self.when is None:
            return True
        value = getattr(readout, self.when)
        if not isinstance(value, bool):
            raise TypeError(f"section {self.name!r}: {self.when} must be a bool field")
        return value != self.negate

    def fill(self, readout: Any = None, extra: dict | None = None) -> str:
        if not placeholders(self.body):
            return self.body
        return fill(self.body, {**values(readout), **(extra or {})})


def article(number: int) -> str:
    """ "a" or "an" before a number as it is read out: an 8,000, an 11, an 18,500, a 1,024."""
    lead = f"{int(number):,}".split(",")[0]
    return "an" if lead.startswith("8") or lead in ("11", "18") else "a"


class _Counts(string.Formatter):
    """str.format, plus the spec `~noun` (or `~noun|plural`): the count with its noun, and the
    spec `a`: the count after its article ("an 8,000", "a 4,096")."""

    def format_field(self, value: Any, format_spec: str) -> Any:
        if format_spec == "a":
            return f"{article(value)} {value:,}"
        if not format_spec.startswith("~"):
            return super().format_field(value, format_spec)
        one, _, many = format_spec[1:].partition("|")
        many = many or one + "s"
        if isinstance(value, str):  # a span such as "4–9": plural
            return f"{value} {many}"
        return f"{value:,} {one if value == 1 else many}"


_COUNTS = _Counts()


def fill(template: str, values: dict[str, Any]) -> str:
    """A template filled from `values` with the specs above (KeyError if one is missing)."""
    return _COUNTS.vformat(template, (), values)


@cache
def parse(path: str | Path) -> tuple[Section, ...]:
    """Every section of a text.md, in file order (a name may appear once per condition)."""
    raw = Path(path).read_text(encoding="utf-8")
    parts = _MARK.split(raw)
    # parts = [preamble, name, negate, when, body, name, negate, when, body, ...]
    out = []
    for i in range(1, len(parts), 4):
        name, negate, when, body = parts[i : i + 4]
        out.append(Section(name, body.strip(), when, bool(negate)))
    return tuple(out)


def placeholders(template: str) -> set[str]:
    """The names a template needs filled in (of `{a.b}`, the field `a`)."""
    found = (name for _, name, _, _ in string.Formatter().parse(template) if name)
    return {re.split(r"[.\[]", name, maxsplit=1)[0] for name in found}


def values(readout: Any) -> dict[str, Any]:
    """A Readout's fields by name (empty for None)."""
    if readout is None:
        return {}
    return {f.name: getattr(readout, f.name) for f in dataclasses.fields(readout)}


def pick(path: str | Path, name: str, readout: Any = None) -> list[Section]:
    """The sections called `name` whose condition holds (usually one, or none)."""
    found = [s for s in parse(path) if s.name == name]
    if not found:
        raise KeyError(f"{path}: no section {name!r}")
    return [s for s in found if s.shows(readout)]


def text(path: str | Path, name: str, readout: Any = None, **extra: Any) -> str:
    """The filled body of section `name` (empty if its condition does not hold)."""
    return "\n\n".join(s.fill(readout, extra) for s in pick(path, name, readout))


@cache
def labels(path: str | Path, name: str = "labels") -> dict[str, str]:
    """A text.md's `labels` section (or another section of `- key :: words` lines, such as
    `deeper`) as {key: words}."""
    body = next(s.body for s in parse(path) if s.name == name)
    pairs = (line.removeprefix("- ").split("::", 1) for line in body.splitlines() if "::" in line)
    return {key.strip(): words.strip() for key, words in pairs}


def metrics(path: str | Path, name: str, readout: Any) -> list[tuple[str, str]]:
    """(label, value) pairs of a metrics section: lines `- label :: value`."""
    out = []
    for line in text(path, name, readout).splitlines():
        line = line.strip().removeprefix("- ")
        if "::" in line:
            label, value = (part.strip() for part in line.split("::", 1))
            out.append((label, value))
    return out
