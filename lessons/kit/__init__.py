"""The lesson kit: what every lesson shares.

- `controls`: a control declared once, as the metadata of a `Params` field (label, range, step,
  unit, help, URL key); widgets, link validation and bad-link messages are generated from it.
- `shared`: the settings that follow the learner from lesson to lesson (GPU, model, TP, weights).
- `story`: a lesson's text.md as ordered sections, each optionally shown only when a condition
  on the lesson's Readout holds, with placeholders filled from the Readout's fields.
- `figures`: the figure vocabulary (house template, axes, curves, bars, block grids).
- `anim`: animation controls (Play, Pause, speed, step slider) laid out so nothing overlaps.
- `words`: number formatting.
"""
