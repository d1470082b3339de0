"""`--workload TRACE.csv|SPEC` -> a Workload: a CSV trace (sim/trace.py) or a seeded spec
(sim/generators.py). It sits above both so that sim/workload.py, which they import, imports
neither of them: no import cycle."""

from __future__ import annotations

import os

from sim.generators import from_spec
from sim.trace import read_trace_csv
from sim.workload import Workload


def load_workload(text: str, *, max_model_len: int | None = None) -> Workload:
    """A CSV trace path (ends in .csv or is a file) or a workload spec."""
    if text.strip().lower().endswith(".csv") or os.path.isfile(text):
        return read_trace_csv(text, max_model_len=max_model_len)
    return from_spec(text, max_model_len=max_model_len)
