"""Plotly frame animations with the controls every Stepwise animation has.

`animate(figure, frames, labels)` adds Play, Pause, a speed choice and a step slider to a figure
dict. The buttons and the speed menu share one row under the chart (the menu at the right edge,
opening downwards), and the step slider has a row of its own below them, so no control can cover
another at any width down to a projector's 1280x720. Frames are plain dicts (building
`go.Frame` objects is ~15x slower). `start` opens the animation at the frame that matches the
lesson's controls. Animations stay within `MAX_FRAMES` frames; `sample_steps` picks which steps
to show when a run is longer.
"""

from __future__ import annotations

import numpy as np

MAX_FRAMES = 200
BUTTONS_Y = -0.22  # below the x-axis title
SLIDER_Y = -0.36
BOTTOM_MARGIN_PX = 190
SPEEDS_MS = {"0.5x": 600, "1x": 300, "2x": 150, "4x": 75}


def sample_steps(num_steps: int, max_frames: int = MAX_FRAMES) -> np.ndarray:
    """Indices of the steps to draw: all of them; nearly all (an even sample, when fewer than
    every other step would be left out); else steps a round number apart, with the first and
    the last (step 1, 5, 10, 15 … rather than 1, 4, 6, 9, 11 …)."""
    if num_steps <= max_frames:
        return np.arange(num_steps)
    if max_frames <= 2:  # room for the ends only
        return np.unique([0, num_steps - 1])[: max(max_frames, 1)]
    raw = (num_steps - 1) / (max_frames - 2)
    if raw < 2:  # a round spacing (2) would halve the frames: skip a few steps evenly instead
        return np.unique(np.linspace(0, num_steps - 1, max_frames).round().astype(int))
    spacing = round_spacing(raw, whole=True)
    inner = np.arange(spacing, num_steps, spacing, dtype=np.int64) - 1  # steps spacing, 2 spacing …
    return np.unique(np.concatenate(([0], inner, [num_steps - 1])))


NICE_STEPS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)  # times 10^k: a time slider's spacings


def round_spacing(raw: float, whole: bool = False) -> float:
    """The smallest of NICE_STEPS times a power of ten that is at least `raw`; `whole`: a whole
    number of at least 1 (step counts: 1.5 and 2.5 are left out below 10)."""
    power = 10.0 ** np.floor(np.log10(raw)) if raw > 0 else 1.0
    for scale in (power, 10 * power):
        for f in NICE_STEPS:
            value = f * scale
            if value >= raw * (1 - 1e-9) and (not whole or (value >= 1 and value.is_integer())):
                return int(value) if whole else value
    return 10 * power


def time_grid(end_s: float, max_points: int, *, from_zero: bool = False) -> np.ndarray:
    """At most `max_points` evenly spaced times, the spacing a short round number of seconds
    (one of NICE_STEPS times a power of ten, the smallest that keeps within `max_points`), the
    last at or just past `end_s`: a slider labelled with them counts up evenly (0.6 s, 1.2 s,
    1.8 s … instead of 1 s, 3 s, 5 s, 7 s, 9 s, 12 s).
    `from_zero`: the first time is 0, else one spacing."""
    if end_s <= 0:
        return np.zeros(1)
    intervals = max_points - 1 if from_zero else max_points
    step = round_spacing(end_s / max(intervals, 1))
    count = int(np.ceil(end_s / step - 1e-9))
    first = 0 if from_zero else 1
    return np.round(np.arange(first, count + 1) * step, 6)


def time_label(t_s: float) -> str:
    """A time_grid time as a slider shows it: "0.5 s", "12 s", "2.5 s"."""
    return f"{round(float(t_s), 3):g} s"


def _play_args(duration_ms: int) -> list:
    return [
        None,
        {
            "frame": {"duration": duration_ms, "redraw": True},
            "transition": {"duration": 0},
            "fromcurrent": True,
            "mode": "immediate",
        },
    ]


def _jump_args(name: str) -> list:
    return [
        [name],
        {
            "mode": "immediate",
            "frame": {"duration": 0, "redraw": True},
            "transition": {"duration": 0},
        },
    ]


def _open_at(figure: dict, frame: dict) -> None:
    """Make the figure's initial state the given frame: its traces merged into the figure's (as
    Plotly merges a frame, so a frame may carry only what changes) and its layout changes."""
    data = figure["data"]
    indices = frame.get("traces", list(range(len(frame["data"]))))
    for index, trace in zip(indices, frame["data"], strict=True):
        data[index] = {**data[index], **trace}
    for key, value in frame.get("layout", {}).items():
        figure["layout"][key] = value


def animate(
    figure: dict,
    frames: list[dict],
    labels: list[str],
    *,
    prefix: str = "step ",
    speed: str = "1x",
    start: int = 0,
) -> dict:
    """Attach `frames` (dicts with "data", optionally "traces" and "layout") and the controls.

    `labels[i]` names frame i on the step slider. The figure opens at frame `start`.
    """
    if len(frames) != len(labels):
        raise ValueError("one label per frame")
    if len(frames) > MAX_FRAMES:
        raise ValueError(f"{len(frames)} frames is over the limit of {MAX_FRAMES}")
    if not 0 <= start < len(frames):
        raise ValueError(f"start frame {start} is outside 0..{len(frames) - 1}")
    named = [{**frame, "name": str(i)} for i, frame in enumerate(frames)]
    layout = figure.setdefault("layout", {})
    _open_at(figure, frames[start])
    pause = [[None], {"frame": {"duration": 0, "redraw": False}, "mode": "immediate"}]
    row = {"y": BUTTONS_Y, "yanchor": "top", "pad": {"r": 8, "t": 4}}
    layout["updatemenus"] = [
        {
            **row,
            "type": "buttons",
            "direction": "left",
            "x": 0.0,
            "xanchor": "left",
            "showactive": False,
            "buttons": [
                {"label": "▶ Play", "method": "animate", "args": _play_args(SPEEDS_MS[speed])},
                {"label": "❚❚ Pause", "method": "animate", "args": pause},
            ],
        },
        {
            **row,
            "type": "dropdown",
            "direction": "down",
            "x": 1.0,
            "xanchor": "right",
            "showactive": True,
            "active": list(SPEEDS_MS).index(speed),
            "buttons": [
                {"label": f"Speed {name}", "method": "animate", "args": _play_args(ms)}
                for name, ms in SPEEDS_MS.items()
            ],
        },
    ]
    layout["sliders"] = [
        {
            "active": start,
            "x": 0.0,
            "y": SLIDER_Y,
            "len": 1.0,
            "xanchor": "left",
            "yanchor": "top",
            "pad": {"t": 4},
            # centred: the Play and Pause buttons sit above the slider's left end, Speed its right
            "currentvalue": {"prefix": prefix, "visible": True, "xanchor": "center"},
            "steps": [
                {"label": label, "method": "animate", "args": _jump_args(str(i))}
                for i, label in enumerate(labels)
            ],
        }
    ]
    margin = layout.setdefault("margin", {})
    margin["b"] = max(margin.get("b", 0), BOTTOM_MARGIN_PX)
    figure["frames"] = named
    return figure


def opened_at(figure: dict) -> int:
    """The frame an animated figure opens at (its step slider's active step)."""
    return int(figure["layout"]["sliders"][0]["active"])


def signature(figure: dict) -> tuple:
    """What identifies an animation for a link's frame: its frame labels and opening frame."""
    steps = figure["layout"]["sliders"][0]["steps"]
    return (tuple(s["label"] for s in steps), opened_at(figure))


def reopen(figure: dict, frame: int, show: dict | None = None) -> dict:
    """A copy of an animated figure that opens at `frame` (the original is left untouched);
    `show`: a frame-shaped state to draw instead of that frame's (a step between two sampled
    frames), with the slider still at `frame`. Then the slider's label is hidden: it would name
    `frame`'s step, not the one drawn (the figure's title names that)."""
    frames = figure["frames"]
    if not 0 <= frame < len(frames):
        raise ValueError(f"frame {frame} is outside 0..{len(frames) - 1}")
    layout = dict(figure["layout"])
    slider = dict(layout["sliders"][0])
    slider["active"] = frame
    if show is not None:
        slider["currentvalue"] = {**slider.get("currentvalue", {}), "visible": False}
    layout["sliders"] = [slider, *layout["sliders"][1:]]
    out = {**figure, "data": list(figure["data"]), "layout": layout}
    _open_at(out, frames[frame] if show is None else show)
    return out
