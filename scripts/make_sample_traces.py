"""Writes the playground's sample traces (lessons/trace_lab/samples/*.csv) from sim's generators.

Run `python scripts/make_sample_traces.py` to rebuild them; the seeds make them reproducible.
- chat.csv: 240 chat requests, Poisson at 8 per second, lognormal prompts (median 800 tokens)
  and answers (median 200), two tenants.
- documents.csv: the same chat traffic with a quarter of the requests batch jobs on long
  documents (median 6,000-token prompts, priority 1), the rest interactive (priority 0).
"""

from __future__ import annotations

from pathlib import Path

from sim.generators import poisson_workload
from sim.trace import write_trace_csv

OUT = Path(__file__).resolve().parents[1] / "lessons" / "trace_lab" / "samples"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    chat = dict(prompt="lognormal:800:0.8", output="lognormal:200:0.8", prompt_max=32_000)
    write_trace_csv(poisson_workload(240, 8.0, seed=11, tenants=2, **chat), OUT / "chat.csv")
    docs = poisson_workload(
        240,
        8.0,
        seed=12,
        tenants=2,
        interactive=0.75,
        batch_prompt="lognormal:6000:0.5",
        batch_output="lognormal:300:0.5",
        **chat,
    )
    write_trace_csv(docs, OUT / "documents.csv")


if __name__ == "__main__":
    main()
