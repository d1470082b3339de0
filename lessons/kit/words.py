"""Small text helpers for numbers and lists a learner reads."""

from __future__ import annotations


def ms(value: float) -> str:
    """Milliseconds: one decimal below 100 ms, none above, with thousands separators."""
    return f"{value:,.1f} ms" if abs(value) < 100 else f"{value:,.0f} ms"


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st..."""
    n = int(n)
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n:,}{suffix}"


def join(items: list[str]) -> str:
    """ "R1", "R1 and R2", "R1, R2 and R3" (empty for none)."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def span(lo: float, hi: float, fmt: str = ",.0f") -> str:
    """A range as the text reads it: "4–9", or one number when both ends round alike ("2")."""
    a, b = format(lo, fmt), format(hi, fmt)
    return a if a == b else f"{a}–{b}"


def id_runs(ids: list[int], shortest: int = 3) -> str:
    """Ids in their order, each run of at least `shortest` consecutive ascending ids written
    first–last: [1, 2, 3, 4, 9, 7, 8] -> "1–4, 9, 7, 8" (a block table's neighbours at a glance)."""
    out: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        if j - i + 1 >= shortest:
            out.append(f"{ids[i]}–{ids[j]}")
        else:
            out.extend(str(b) for b in ids[i : j + 1])
        i = j + 1
    return ", ".join(out)
