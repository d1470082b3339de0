"""The throughput curve as a benchmark measures it: closed-loop runs at a set of concurrencies.

`vllm bench serve --max-concurrency C` keeps C requests in flight: the first C arrive at once and
each finish sends the next. Here that is `sim.generators.concurrency_workload` (N requests of the
lesson's prompt and output lengths), run by `sim.timed.run_timed` on the SchedulerConfig vLLM
would use with the lesson's limits (`sim.timed.config_for`, async scheduling as the control
says) and summarized by `sim.metrics.summarize`: output tokens per second, mean ITL and mean
TTFT. New prompts keep arriving, so their chunks join the decode steps; the decode-only curves
of lesson.py leave them out.

What the engine holds at once (`held`) is max_num_seqs or what the KV cache holds of sequences
at their longest (prompt + output), whichever is less. Keeping the page responsive: N = ROUNDS x
C requests, fewer when a run would take the simulator more than about RUN_MS (`run_ms`, an
estimate), never fewer than C; concurrencies go in powers of two up to twice what the engine
holds (at most CLIENTS_MAX), plus the decode-only pick (capped at what the engine holds), while
C requests stay within 2 x RUN_MS. Each run is cached on its own (`point`): moving the ITL
target adds one run at most, and the toggle's other mode is one run too.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from sim.cost import Deployment
from sim.generators import concurrency_workload
from sim.metrics import summarize
from sim.models import get_model
from sim.timed import config_for, run_timed

CLIENTS_MAX = 256
ROUNDS = 4  # requests per client
RUN_MS = 300.0  # about this much simulator time per run at most (see `run_ms`)
SEED = 0  # fixed lengths: the seed draws nothing, but the spec names one


@dataclass(frozen=True)
class Point:
    """One closed-loop run at `clients` concurrency, summarized."""

    clients: int
    requests: int
    output_tps: float  # output tokens per second of makespan (vLLM's benchmark)
    itl_ms: float  # mean inter-token latency, over every gap of every request
    ttft_ms: float  # mean time to first token, from each request's realized arrival
    preemptions: int
    mixed_share: float  # steps that carried a prompt chunk, of all steps that computed
    mixed_ms: float  # their mean duration
    pure_ms: float  # mean duration of the steps of decodes alone


def prompt_tokens(model: str, context: int, output: int) -> int:
    """The closed loop's prompt: the lesson's context, cut so prompt + output fit the model."""
    return max(1, min(context, get_model(model).max_position_embeddings - output))


def run_ms(clients: int, requests: int, prompt: int, output: int, budget: int, held: int) -> float:
    """A rough estimate of the simulator's own time for one run, in ms (fitted on this lesson's
    runs; it decides how many requests a run gets, never what a run computes). A step that reads
    a prompt chunk costs ~0.25 ms, plus ~1.3 us per running sequence and ~4 ns per prompt token;
    decodes go in vectorized stretches of one KV block (16 tokens), ~0.3 ms plus ~4 us per
    running sequence each, and the sequences running together share them."""
    running = max(min(clients, held), 1)
    chunk = max(budget - running, budget / 4)  # the decodes take their share of the budget first
    prefill = requests * prompt / chunk * (0.25 + 0.0013 * running + 4e-6 * prompt)
    decode = requests / running * output / 16 * (0.3 + 0.004 * running)
    return prefill + decode


def requests_for(clients: int, prompt: int, output: int, budget: int, held: int) -> int:
    """N for a run at `clients`: ROUNDS per client, fewer if the run would exceed RUN_MS, and
    never fewer than `clients` (each client sends at least one request)."""
    one = run_ms(clients, 1, prompt, output, budget, held)
    return max(clients, min(ROUNDS * clients, int(RUN_MS // one)))


def clients_for(held: int, pick: int, prompt: int, output: int, budget: int) -> tuple[int, ...]:
    """Powers of two up to 2 x what the engine holds at once (at most CLIENTS_MAX), and the
    decode-only pick (or what the engine holds, if that is less); each while one request per
    client stays within 2 x RUN_MS (one client always runs)."""
    top = min(CLIENTS_MAX, max(2 * held, 1))
    grid = [1 << k for k in range(top.bit_length()) if 1 << k <= top]
    extra = [min(pick, held)] if pick > 0 else []

    def affordable(c: int) -> bool:
        return c == 1 or run_ms(c, c, prompt, output, budget, held) <= 2 * RUN_MS

    return tuple(c for c in sorted({*grid, *extra}) if affordable(c))


@lru_cache(maxsize=512)
def point(
    dep: Deployment,
    budget: int,
    seqs: int,
    prompt: int,
    output: int,
    async_scheduling: bool,
    clients: int,
    requests: int,
) -> Point:
    """One closed-loop run, timed by the cost model, and what the lesson reads off it."""
    config = config_for(
        dep,
        max_num_batched_tokens=budget,
        max_num_seqs=seqs,
        async_scheduling=async_scheduling,
    )
    workload = concurrency_workload(
        requests,
        clients,
        prompt=f"fixed:{prompt}",
        output=f"fixed:{output}",
        seed=SEED,
        max_model_len=config.max_model_len,
    )
    run = run_timed(config, workload, dep)
    s = summarize(run)
    tokens = np.asarray(run.num_scheduled_tokens)
    seqs_run = np.asarray(run.num_scheduled_seqs)
    ms = np.asarray(run.step_ms, dtype=np.float64)
    mixed = tokens > seqs_run  # a prompt chunk rode along (decodes add one token each)
    pure = (tokens > 0) & ~mixed
    computed = max(int((tokens > 0).sum()), 1)
    return Point(
        clients=clients,
        requests=requests,
        output_tps=float(s["output_tokens_per_s"]),
        itl_ms=float(s["itl_ms"]["mean"]) if s["itl_ms"]["mean"] is not None else float("nan"),
        ttft_ms=float(s["ttft_ms"]["mean"]),
        preemptions=int(s["total_preemptions"]),
        mixed_share=float(mixed.sum() / computed),
        mixed_ms=float(ms[mixed].mean()) if mixed.any() else float("nan"),
        pure_ms=float(ms[pure].mean()) if pure.any() else float("nan"),
    )


def sweep(
    dep: Deployment,
    budget: int,
    seqs: int,
    prompt: int,
    output: int,
    async_scheduling: bool,
    clients: tuple[int, ...],
    held: int,
) -> list[Point]:
    """The closed loop at every concurrency of `clients` (each run cached by `point`)."""
    args = (dep, budget, seqs, prompt, output, async_scheduling)
    return [point(*args, c, requests_for(c, prompt, output, budget, held)) for c in clients]
