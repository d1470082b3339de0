"""Number formatting for text a learner reads: one rule per kind of number."""

from __future__ import annotations


def ms(value: float) -> str:
    """Milliseconds: one decimal below 100 ms, none above, with thousands separators."""
    return f"{value:,.1f} ms" if abs(value) < 100 else f"{value:,.0f} ms"


def tokens(n: int) -> str:
    return f"{int(n):,} token" + ("" if int(n) == 1 else "s")


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st..."""
    n = int(n)
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n:,}{suffix}"


def pct(value: float) -> str:
    return f"{value:.0f}%"
