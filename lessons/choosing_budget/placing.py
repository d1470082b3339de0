"""Where the budget chart's line labels go (lessons/choosing_budget/figures.py): at a height
clear of the curve of the longest step, the decode and target lines, and the other label, over
the stretch of the log budget axis the label's text covers. Estimated from the text's length
at 1280 px, so that a label does not sit on the curve at any setting."""

from __future__ import annotations

import numpy as np

from lessons.choosing_budget.readout import Readout

# A budget line's label sits at the first of these heights (0 = bottom, 1 = top of the upper
# panel) that keeps clear of the curve and the two flat lines where its text runs.
LABEL_HEIGHTS = (1.0, 0.75, 0.5, 0.3)
LABEL_BAND = 0.1  # the panel height a label's text takes below its point
PLOT_PX = 700  # about the plot's width at 1280 px, to size a label's run along the x axis
CHAR_PX = 7


def label_place(
    r: Readout,
    x: int,
    label: str,
    left: bool,
    ranges: list[list[float]],
    taken: tuple[float, float, float] | None = None,
) -> tuple[float, float, float]:
    """Where the label of budget line `x` goes: (height, and the stretch of the log x axis its
    text covers). The height is the first of LABEL_HEIGHTS where the text clears the curve, the
    decode and target lines, and the other label (`taken`, if any); else the one that keeps
    farthest from them."""
    lo_x, hi_x = np.log10(r.budget_min / 1.1), np.log10(r.budget_max * 1.1)
    run = (len(label) + 2) * CHAR_PX / PLOT_PX * (hi_x - lo_x)  # with the backing's margin
    start = float(np.log10(x) - run if left else np.log10(x))
    across = np.linspace(start, start + run, 16)
    curve = np.interp(across, np.log10(r.curve_budgets), np.log10(r.curve_worst_ms))
    lo, hi = ranges[0]
    marks = (np.append(curve, np.log10([r.decode_ms, r.target_ms])) - lo) / (hi - lo)

    def clearance(h: float) -> float:  # how far the nearest mark keeps from the text's band
        gap = float(np.min(np.maximum(marks - h, (h - LABEL_BAND) - marks)))
        if taken is not None and start < taken[2] and taken[1] < start + run:
            gap = min(gap, abs(h - taken[0]) - LABEL_BAND)  # the other label's text, side by side
        return gap

    clear = [h for h in LABEL_HEIGHTS if clearance(h) > 0]
    height = clear[0] if clear else max(LABEL_HEIGHTS, key=clearance)
    return height, start, start + run
