"""Sweeps: one call runs many scheduler configurations on the same workload (a lesson's curve).

`sweep(configs, workload, deployment=...)` returns a pandas DataFrame with one row per
configuration: the settings that vary, then the run's figures from `sim.metrics.summarize`
(steps, preemptions, throughput, TTFT/ITL/E2E percentiles flattened to columns such as
`ttft_ms_p50`) and the scheduler's own time. `sweep_values(base, "max_num_batched_tokens",
[...], workload)` varies one setting of a base configuration.

What is shared: the workload's arrays are validated once and used read-only by every run; its
arrival order and the policy's keys are computed once per policy (`scheduler.prepare`); the
deployment's cost model is resolved once. And whole runs: configurations that differ only in
`max_num_batched_tokens` / `max_num_seqs` run from the smallest limits up, and a finished run that
never reached a limit answers for every larger one (sim/dominance.py: raising a limit nobody hit
changes no decision). Such rows repeat that run's figures, name it in `run_of` (the row index of
the run that produced them) and cost no scheduler time. On a trace whose busiest step holds 7,008
tokens, every budget above that is one run. `share=False` runs every configuration.

Every other configuration is its own step-exact run (its own windows and events): the runs are not
fused into one array program, because every configuration takes different decisions at different
steps. `workers=2` runs configurations in two processes (the machine has two cores), which helps
only for long sweeps; it runs every configuration (no sharing).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import Any

import pandas as pd

from sim.config import SchedulerConfig
from sim.dominance import Slack, answers_for, limits_key, slack
from sim.errors import SimInputError
from sim.run import Run
from sim.scheduler import Engine, Prepared, prepare
from sim.workload import Workload

MAX_CONFIGS = 4096


def _flatten(summary: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in summary.items():
        if isinstance(value, dict):
            for sub, v in value.items():
                out[f"{key}_{sub}"] = v
        else:
            out[key] = value
    return out


def _varied(configs: Sequence[SchedulerConfig]) -> list[str]:
    names = [f.name for f in dataclasses.fields(SchedulerConfig)]
    first = dataclasses.asdict(configs[0])
    return [n for n in names if any(getattr(c, n) != first[n] for c in configs[1:])] or [
        "max_num_batched_tokens"
    ]


def _one(
    config: SchedulerConfig,
    workload: Workload,
    deployment: Any,
    prepared: Prepared,
    max_steps: int | None,
    slo: tuple[float | None, float | None],
    metrics: bool = True,
) -> tuple[dict[str, Any], Run]:
    timer = None
    if deployment is not None:
        from sim.timed import timer_for

        timer = timer_for(deployment, async_scheduling=config.async_scheduling)
    t0 = time.perf_counter()
    run = Engine(config, workload, timer=timer, max_steps=max_steps, prepared=prepared).run()
    seconds = time.perf_counter() - t0
    if metrics:
        from sim.metrics import summarize

        row = _flatten(summarize(run, ttft_slo_ms=slo[0], itl_slo_ms=slo[1]))
    else:
        row = {
            "num_steps": run.num_steps,
            "total_preemptions": run.total_preemptions,
            "num_finished": int((run.finish_step > 0).sum()),
            "num_output_tokens": int(run.token_req.shape[0]),
        }
    row["scheduler_seconds"] = seconds
    return row, run


def _one_packed(args: tuple, keep_run: bool) -> tuple[dict[str, Any], Run | None]:
    row, run = _one(*args)
    return row, (run if keep_run else None)  # only kept runs travel back between processes


def _shared(jobs: list[tuple], configs: list[SchedulerConfig], keep_runs: bool) -> list[tuple]:
    """Run the jobs from the smallest limits up; reuse a run wherever it answers for a config.

    Returns (row, run or None, run_of) per job, in the given order.
    """
    order = sorted(
        range(len(configs)),
        key=lambda i: (configs[i].max_num_batched_tokens, configs[i].max_num_seqs),
    )
    done: dict[tuple, list[tuple[int, Slack]]] = {}
    out: list[tuple] = [()] * len(configs)
    for i in order:
        config = configs[i]
        group = done.setdefault(limits_key(config), [])
        source = next((j for j, s in group if answers_for(s, config)), None)
        if source is not None:
            row, run, _ = out[source]
            row = dict(row, scheduler_seconds=0.0)
            if run is not None:
                run = dataclasses.replace(run, config=config, scheduler_seconds=0.0)
            out[i] = (row, run, source)
            continue
        row, run = _one(*jobs[i])
        group.append((i, slack(run)))  # answers for itself (equal limits) and maybe more
        out[i] = (row, run if keep_runs else None, i)
    return out


def sweep(
    configs: Iterable[SchedulerConfig],
    workload: Workload,
    *,
    deployment: Any = None,
    ttft_slo_ms: float | None = None,
    itl_slo_ms: float | None = None,
    max_steps: int | None = None,
    keep_runs: bool = False,
    workers: int = 1,
    metrics: bool = True,
    share: bool = True,
) -> pd.DataFrame:
    """Run every configuration on `workload`; one row per configuration, in the given order.

    With `deployment` (sim.cost.Deployment) the runs are timed (workload.arrival_s); without it
    they are step replays (workload.arrival_step). `keep_runs=True` stores each Run in the
    frame's `attrs["runs"]` (memory: one Run per configuration). `metrics=False` skips
    sim.metrics.summarize and keeps only steps, preemptions, finished and output tokens.
    `run_of` names the row whose run produced each row (itself, or a smaller configuration
    whose run answers for it: see the module docstring); `share=False` runs every one.
    """
    configs = list(configs)
    if not configs:
        raise SimInputError("a sweep needs at least one configuration")
    if len(configs) > MAX_CONFIGS:
        raise SimInputError(f"a sweep takes at most {MAX_CONFIGS} configurations")
    if not all(isinstance(c, SchedulerConfig) for c in configs):
        raise SimInputError("every configuration of a sweep must be a SchedulerConfig")
    timed = deployment is not None
    prepared: dict[str, Prepared] = {}
    for c in configs:
        if c.policy not in prepared:
            prepared[c.policy] = prepare(workload, c.policy, timed)
    slo = (ttft_slo_ms, itl_slo_ms)
    jobs = [(c, workload, deployment, prepared[c.policy], max_steps, slo, metrics) for c in configs]
    if workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            done = pool.map(partial(_one_packed, keep_run=keep_runs), jobs)
            results = [(row, run, i) for i, (row, run) in enumerate(done)]
    elif share:
        results = _shared(jobs, configs, keep_runs)
    else:
        results = [_one_packed(job, keep_runs) + (i,) for i, job in enumerate(jobs)]
    varied = _varied(configs)
    rows = []
    for config, (row, _, run_of) in zip(configs, results, strict=True):
        rows.append({name: getattr(config, name) for name in varied} | row | {"run_of": run_of})
    frame = pd.DataFrame(rows)
    if keep_runs:
        frame.attrs["runs"] = [run for _, run, _ in results]
    return frame


def sweep_values(
    base: SchedulerConfig,
    name: str,
    values: Iterable[Any],
    workload: Workload,
    **kwargs: Any,
) -> pd.DataFrame:
    """`sweep` over copies of `base` with setting `name` set to each of `values`."""
    fields = {f.name for f in dataclasses.fields(SchedulerConfig)}
    if name not in fields:
        raise SimInputError(f"unknown scheduler setting {name!r}")
    configs = [dataclasses.replace(base, **{name: v}) for v in values]
    return sweep(configs, workload, **kwargs)
