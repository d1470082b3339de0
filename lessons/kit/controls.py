"""Controls declared once, as the metadata of a lesson's frozen `Params` fields.

A field reads `tokens: int = control(2048, Steps("Prompt tokens in the step", TOKENS))`. From
that one declaration the kit derives the widget (ui/lesson_page.py), the URL key, the check of a
value that arrives from a link and the message shown when it is bad. This module is pure Python,
so the same declarations drive the cross-page tests.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_LINK_CHARS = 40  # a value from a link is shown cut to this length
ZWSP = "\u200b"
_AUTOLINK = re.compile(r"(?i)https?|ftp|www\.|mailto|xmpp|@")


class BadValue(ValueError):
    """A value (from a link) that a control does not accept; the message says what it expects."""


@dataclass(frozen=True)
class Control:
    """What every control has. `key` is the URL key; lesson controls are prefixed by the lesson's
    own prefix, shared ones (`shared=True`) keep the same key on every page."""

    label: str
    help: str | None = None
    key: str | None = None
    shared: bool = False
    main: bool = False  # one of the lesson's main controls (kept on screen when presenting)

    def parse(self, raw: str) -> Any:
        raise NotImplementedError

    def to_url(self, value: Any) -> str:
        return str(value)

    def expected(self) -> str:
        raise NotImplementedError

    def lowest(self) -> Any:
        raise NotImplementedError

    def highest(self) -> Any:
        raise NotImplementedError

    def accepts(self, value: Any) -> bool:
        try:
            return self.parse(self.to_url(value)) == value
        except BadValue:
            return False


def _names(options: Sequence, fmt: Callable[[Any], str]) -> list[str]:
    return [fmt(o) for o in options]


@dataclass(frozen=True)
class Choice(Control):
    """One of a list of options (a select box). The URL carries the option as shown; a link
    typed by hand may spell it in any case (`fp8`, `priority`) when that names one option."""

    options: tuple = ()
    format: Callable[[Any], str] = str

    def parse(self, raw: str) -> Any:
        names = _names(self.options, self.format)
        for option, name in zip(self.options, names, strict=True):
            if raw == name:
                return option
        folded = raw.casefold()
        like = {
            i
            for i, (option, name) in enumerate(zip(self.options, names, strict=True))
            if folded in (name.casefold(), str(option).casefold())
        }
        if len(like) == 1:
            return self.options[like.pop()]
        raise BadValue(self.expected())

    def to_url(self, value: Any) -> str:
        return self.format(value)

    def expected(self) -> str:
        names = _names(self.options, self.format)
        if len(names) > 8:
            return f"one of {', '.join(names[:3])}, ..., {names[-1]}"
        return "one of " + ", ".join(names)

    def lowest(self) -> Any:
        return self.options[0]

    def highest(self) -> Any:
        return self.options[-1]


@dataclass(frozen=True)
class Steps(Control):
    """A slider over a fixed list of numbers (powers of two, round sizes)."""

    options: tuple[int, ...] = ()
    unit: str = ""

    def parse(self, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise BadValue(self.expected()) from None
        if value not in self.options:
            raise BadValue(self.expected())
        return value

    def expected(self) -> str:
        o = self.options
        if len(o) > 3:
            return f"one of {o[0]:,}, {o[1]:,}, ..., {o[-1]:,}"
        return "one of " + ", ".join(f"{v:,}" for v in o)

    def lowest(self) -> int:
        return self.options[0]

    def highest(self) -> int:
        return self.options[-1]


@dataclass(frozen=True)
class Integer(Control):
    """A whole number from lo to hi on a grid of `step` (a slider)."""

    lo: int = 0
    hi: int = 100
    step: int = 1
    unit: str = ""

    def parse(self, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise BadValue(self.expected()) from None
        if not self.lo <= value <= self.hi or (value - self.lo) % self.step:
            raise BadValue(self.expected())
        return value

    def expected(self) -> str:
        grid = "" if self.step == 1 else f" in steps of {self.step:,}"
        return f"a whole number from {self.lo:,} to {self.hi:,}{grid}"

    def lowest(self) -> int:
        return self.lo

    def highest(self) -> int:
        return self.hi


@dataclass(frozen=True)
class Toggle(Control):
    """On or off (a toggle). The URL carries 1 or 0."""

    def parse(self, raw: str) -> bool:
        if raw in ("1", "true", "True"):
            return True
        if raw in ("0", "false", "False"):
            return False
        raise BadValue(self.expected())

    def to_url(self, value: Any) -> str:
        return "1" if value else "0"

    def expected(self) -> str:
        return "1 (on) or 0 (off)"

    def lowest(self) -> bool:
        return False

    def highest(self) -> bool:
        return True


@dataclass(frozen=True)
class Text(Control):
    """Free text checked by `check` (which raises BadValue with the reason), at most max_chars."""

    check: Callable[[str], Any] = str
    max_chars: int = 400
    extremes: tuple[str, str] = ("1", "1")

    expects: str = "text"  # what the check accepts, as a bad link's message says it

    def parse(self, raw: str) -> str:
        if len(raw) > self.max_chars:
            raise BadValue(f"{self.expects}, at most {self.max_chars:,} characters")
        try:
            self.check(raw)
        except BadValue:  # the checker's own words may quote the value, which the link
            raise BadValue(self.expected()) from None  # message already shows as plain text
        return raw

    def expected(self) -> str:
        return self.expects

    def lowest(self) -> str:
        return self.extremes[0]

    def highest(self) -> str:
        return self.extremes[1]


def control(default: Any, spec: Control) -> Any:
    """A dataclass field with its control: use as the default of a Params field."""
    if not spec.accepts(default):
        raise ValueError(f"default {default!r} is not accepted by control {spec.label!r}")
    return field(default=default, metadata={"control": spec})


@dataclass(frozen=True)
class Declared:
    """One control of a Params class: the field name, its control and its default."""

    name: str
    spec: Control
    default: Any

    def url_key(self, prefix: str) -> str:
        key = self.spec.key or self.name.replace("_", "-")
        return key if self.spec.shared else f"{prefix}-{key}"


def declared(params_cls: type) -> tuple[Declared, ...]:
    """The controls of a Params dataclass, in field order (fields without a control are skipped)."""
    out = []
    for f in dataclasses.fields(params_cls):
        spec = f.metadata.get("control")
        if spec is not None:
            out.append(Declared(f.name, spec, f.default))
    return tuple(out)


def shown(value: object, limit: int = MAX_LINK_CHARS) -> str:
    """A value from a link or an upload, made safe to show as plain text: one line, at most
    `limit` characters, every ASCII punctuation mark escaped so that Markdown renders none of it
    (no link, image, heading, code span, HTML tag or Streamlit directive can form)."""
    text = " ".join(str(value).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    # Markdown renderers link bare URLs and e-mail addresses even when every mark is escaped
    # (GFM autolink literals): a zero-width space breaks "http", "www." and "@" apart.
    text = _AUTOLINK.sub(lambda m: m.group(0)[0] + ZWSP + m.group(0)[1:], text)
    return "".join(
        "\\" + ch if ch.isascii() and not ch.isalnum() and ch != " " else ch for ch in text
    )


def step_from_link(raw: str | None, num_steps: int, key: str) -> tuple[int, dict | None]:
    """A stepper's step from a link (URL key `key`): (step, None), or (1, the arguments of
    ui/links.bad_link, which reports it as plain text) if it is not a step 1..num_steps."""
    if raw is None:
        return 1, None
    try:
        return Integer("Step", lo=1, hi=max(num_steps, 1)).parse(raw), None
    except BadValue as exc:
        return 1, {"key": key, "raw": raw, "expected": str(exc), "default": "1"}
