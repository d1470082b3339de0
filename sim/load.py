"""`--workload TRACE|SPEC` -> a Workload: a trace file (sim/trace_formats.py: our CSV, or an Azure,
BurstGPT or Mooncake trace told by its first line) or a seeded spec (sim/generators.py). It sits
above both so that sim/workload.py, which they import, imports neither of them: no import cycle."""

from __future__ import annotations

import os

from sim.generators import from_spec
from sim.trace_formats import read_trace
from sim.workload import Workload

TRACE_SUFFIXES = (".csv", ".jsonl")


def load_workload(text: str, *, max_model_len: int | None = None) -> Workload:
    """A trace path (ends in .csv or .jsonl, or is a file) or a workload spec."""
    return load_workload_described(text, max_model_len=max_model_len)[0]


def load_workload_described(
    text: str, *, max_model_len: int | None = None
) -> tuple[Workload, str | None]:
    """The workload and, for a trace in a published format (not our own CSV, not a spec), one
    plain line saying what was mapped (for the command line to print on stderr)."""
    if text.strip().lower().endswith(TRACE_SUFFIXES) or os.path.isfile(text):
        mapped = read_trace(text, max_model_len=max_model_len)
        return mapped.workload, None if mapped.format == "stepwise" else mapped.description
    return from_spec(text, max_model_len=max_model_len), None
