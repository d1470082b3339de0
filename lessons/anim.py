"""Plotly frame animations with the controls every Stepwise animation has.

`animate(figure, frames)` adds Play, Pause, a speed choice and a step slider to a figure dict.
Frames are plain dicts (building `go.Frame` objects is ~15x slower). Animations stay within
`MAX_FRAMES` frames; `sample_steps` picks which steps to show when a run is longer, and says so.
"""

from __future__ import annotations

import numpy as np

MAX_FRAMES = 200
CONTROLS_Y = -0.3  # below the x-axis title
SPEEDS_MS = {"0.5x": 600, "1x": 300, "2x": 150, "4x": 75}


def sample_steps(num_steps: int, max_frames: int = MAX_FRAMES) -> np.ndarray:
    """Indices of the steps to draw: all of them, or an even sample that keeps first and last."""
    if num_steps <= max_frames:
        return np.arange(num_steps)
    return np.unique(np.linspace(0, num_steps - 1, max_frames).round().astype(int))


def _animate_args(duration_ms: int) -> list:
    return [
        None,
        {
            "frame": {"duration": duration_ms, "redraw": True},
            "transition": {"duration": 0},
            "fromcurrent": True,
            "mode": "immediate",
        },
    ]


def animate(
    figure: dict, frames: list[dict], labels: list[str], *, prefix: str = "step ", speed: str = "1x"
) -> dict:
    """Attach `frames` (dicts with "data", optionally "layout") and the playback controls.

    `labels[i]` names frame i on the step slider. The figure's initial data should be frame 0.
    """
    if len(frames) != len(labels):
        raise ValueError("one label per frame")
    if len(frames) > MAX_FRAMES:
        raise ValueError(f"{len(frames)} frames is over the limit of {MAX_FRAMES}")
    named = [{**frame, "name": str(i)} for i, frame in enumerate(frames)]
    pause = [[None], {"frame": {"duration": 0, "redraw": False}, "mode": "immediate"}]
    layout = figure.setdefault("layout", {})
    layout["updatemenus"] = [
        {
            "type": "buttons",
            "direction": "left",
            "x": 0.0,
            "y": CONTROLS_Y,
            "xanchor": "left",
            "yanchor": "top",
            "pad": {"r": 8, "t": 4},
            "showactive": False,
            "buttons": [
                {"label": "▶ Play", "method": "animate", "args": _animate_args(SPEEDS_MS[speed])},
                {"label": "❚❚ Pause", "method": "animate", "args": pause},
            ],
        },
        {
            "type": "dropdown",
            "direction": "up",
            "x": 0.22,
            "y": CONTROLS_Y,
            "xanchor": "left",
            "yanchor": "top",
            "pad": {"r": 8, "t": 4},
            "showactive": True,
            "active": list(SPEEDS_MS).index(speed),
            "buttons": [
                {"label": f"Speed {name}", "method": "animate", "args": _animate_args(ms)}
                for name, ms in SPEEDS_MS.items()
            ],
        },
    ]
    layout["sliders"] = [
        {
            "active": 0,
            "x": 0.42,
            "y": CONTROLS_Y,
            "len": 0.58,
            "xanchor": "left",
            "yanchor": "top",
            "pad": {"t": 4},
            "currentvalue": {"prefix": prefix, "visible": True},
            "steps": [
                {
                    "label": label,
                    "method": "animate",
                    "args": [
                        [str(i)],
                        {
                            "mode": "immediate",
                            "frame": {"duration": 0, "redraw": True},
                            "transition": {"duration": 0},
                        },
                    ],
                }
                for i, label in enumerate(labels)
            ],
        }
    ]
    margin = layout.setdefault("margin", {})
    margin["b"] = max(margin.get("b", 0), 170)
    figure["frames"] = named
    return figure
