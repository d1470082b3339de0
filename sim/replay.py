"""Replay a reference scenario (the JSON schema of ../oracle/README.md) through the scheduler.

`replay(scenario)` reads `settings` and `requests`, runs `run_steps` with per-step detail and
returns `{"steps": [...], "per_request": {...}}` with every step key of vLLM's recordings, so the
two can be compared key by key. Settings Stepwise does not model, or a configuration vLLM would
reject, raise `SimInputError` (the command line turns that into one line and exit code 2).
"""

from __future__ import annotations

import numpy as np

from sim.config import VLLM_VERSIONS, SchedulerConfig
from sim.errors import SimInputError
from sim.run import Run
from sim.scheduler import Engine
from sim.workload import Workload

# Settings that map onto SchedulerConfig fields.
_CONFIG_KEYS = (
    "max_num_batched_tokens",
    "max_num_seqs",
    "max_model_len",
    "block_size",
    "num_gpu_blocks",
    "enable_chunked_prefill",
    "enable_prefix_caching",
    "policy",
    "long_prefill_token_threshold",
    "watermark",
    "scheduler_reserve_full_isl",
    "async_scheduling",
    "cache_aware_admission_window",
    "cache_aware_admission_threshold",
)
_REQUIRED = ("max_num_batched_tokens", "max_num_seqs", "max_model_len", "num_gpu_blocks")
# Settings accepted only at the value Stepwise models (vLLM's default).
_FIXED = {
    "long_prefill_token_threshold_adaptive": (False, None),
    "max_num_partial_prefills": (1, None),
    "max_long_partial_prefills": (1, None),
    "prefill_schedule_interval": (1, None),
    "num_speculative_tokens": (0, None),
    "num_lookahead_slots": (0, None),
}
_HARNESS = ("max_steps",)


def release(vllm_version: object) -> str:
    """The rules a recording follows, from its `vllm_version` ("0.33.0" -> "0.33"); a scenario
    that names none (one written by hand) runs the newest rules."""
    if vllm_version is None:
        return VLLM_VERSIONS[0]
    text = str(vllm_version)
    for known in VLLM_VERSIONS:
        if text == known or text.startswith(known + "."):
            return known
    raise SimInputError(
        f"vllm_version {text!r} is not a release Stepwise models ({', '.join(VLLM_VERSIONS)})"
    )


def config_from_settings(settings: dict, vllm_version: object = None) -> SchedulerConfig:
    """SchedulerConfig from a scenario's `settings` and the release it was recorded with
    (`vllm_version`, see `release`); unmodelled settings raise SimInputError."""
    if not isinstance(settings, dict):
        raise SimInputError("scenario 'settings' must be an object")
    for key, value in settings.items():
        if key in _CONFIG_KEYS or key in _HARNESS:
            continue
        if key in _FIXED:
            default = _FIXED[key][0]
            accepted = value is None or (
                value == default and isinstance(value, bool) == isinstance(default, bool)
            )
            if not accepted:
                raise SimInputError(f"setting {key}={value!r} is not modelled by Stepwise")
            continue
        if value not in (None, False):
            raise SimInputError(f"setting {key}={value!r} is not modelled by Stepwise")
    missing = [k for k in _REQUIRED if k not in settings]
    if missing:
        raise SimInputError(f"settings lack {', '.join(missing)}")
    # A null value leaves the setting at SchedulerConfig's default (async_scheduling: off, the
    # synchronous `Scheduler` the recordings without `_async` were made with).
    kwargs = {k: settings[k] for k in _CONFIG_KEYS if settings.get(k) is not None}
    kwargs["vllm_version"] = release(vllm_version)
    if "watermark" in kwargs:
        kwargs["watermark"] = float(kwargs["watermark"])
    try:
        return SchedulerConfig(**kwargs)
    except TypeError as exc:  # pragma: no cover - guarded by the key filter
        raise SimInputError(str(exc)) from None


def workload_from_requests(requests: list) -> Workload:
    """Workload (arrival_step) from a scenario's `requests` list."""
    if not isinstance(requests, list) or not requests:
        raise SimInputError("scenario 'requests' must be a non-empty list")
    cols: dict[str, list] = {
        k: [] for k in ("id", "prompt_len", "output_len", "arrival_step", "priority")
    }
    pid: list[int] = []
    ptok: list[int] = []
    for i, req in enumerate(requests):
        if not isinstance(req, dict):
            raise SimInputError(f"request {i} is not an object")
        try:
            cols["id"].append(str(req["id"]))
            for k in ("prompt_len", "output_len", "arrival_step"):
                cols[k].append(_int(req[k], f"request {i} {k}"))
            cols["priority"].append(_int(req.get("priority", 0), f"request {i} priority"))
            pid.append(_int(req.get("prefix_id", -1), f"request {i} prefix_id"))
            ptok.append(_int(req.get("prefix_tokens", 0), f"request {i} prefix_tokens"))
        except KeyError as exc:
            raise SimInputError(f"request {i} lacks {exc.args[0]!r}") from None
    return Workload.build(
        cols["prompt_len"],
        cols["output_len"],
        arrival_step=cols["arrival_step"],
        priority=cols["priority"],
        prefix_id=pid,
        prefix_tokens=ptok,
        request_ids=cols["id"],
    )


def _int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise SimInputError(f"{what} must be an integer, got {value!r}")
    return int(value)


def replay_run(scenario: dict, *, detail: bool = True) -> Run:
    """The Run of a scenario; `detail=False` skips the per-step lists (`to_schema` needs them)."""
    if not isinstance(scenario, dict):
        raise SimInputError("a scenario must be a JSON object with 'settings' and 'requests'")
    settings = scenario.get("settings")
    config = config_from_settings(settings, scenario.get("vllm_version"))
    workload = workload_from_requests(scenario.get("requests"))
    max_steps = settings.get("max_steps")
    engine = Engine(
        config, workload, record_detail=detail, max_steps=max_steps, stop_at_max_steps=True
    )
    return engine.run()


def to_schema(run: Run) -> dict:
    """{"steps": [...], "per_request": {...}} in the recordings' schema."""
    if run.detail is None:
        raise SimInputError("to_schema needs a run recorded with per-step detail")
    ids = np.array(run.workload.request_ids, dtype=object)
    usable = run.kv_blocks_usable
    steps = []
    for d in run.detail:
        sched_ids = ids[d.scheduled_req].tolist()
        tokens = d.scheduled_tokens.tolist()
        steps.append(
            {
                "step": d.step,
                "arrived": ids[d.arrived].tolist(),
                "num_scheduled_tokens": dict(zip(sched_ids, tokens, strict=True)),
                "total_scheduled_tokens": int(sum(tokens)),
                "new_req_ids": ids[d.new].tolist(),
                "resumed_req_ids": ids[d.resumed].tolist(),
                "preempted_req_ids": ids[d.preempted].tolist(),
                "sampled_req_ids": ids[d.sampled].tolist(),
                "finished_req_ids": ids[d.finished].tolist(),
                "running_after_schedule": ids[d.running].tolist(),
                "waiting_after_schedule": ids[d.waiting].tolist(),
                "num_running": int(d.running.shape[0]),
                "num_waiting": int(d.waiting.shape[0]),
                "kv_blocks_used_after_schedule": d.kv_blocks_used_after_schedule,
                "kv_blocks_free_after_schedule": usable - d.kv_blocks_used_after_schedule,
                "kv_blocks_used": d.kv_blocks_used,
                "kv_blocks_free": usable - d.kv_blocks_used,
            }
        )
    per_request = {}
    for i, rid in enumerate(run.workload.request_ids):
        per_request[rid] = {
            "first_scheduled_step": _step(run.first_scheduled_step[i]),
            "first_token_step": _step(run.first_token_step[i]),
            "finish_step": _step(run.finish_step[i]),
            "num_preemptions": int(run.num_preemptions[i]),
            "num_output_tokens": int(run.num_output_tokens[i]),
        }
    return {"steps": steps, "per_request": per_request}


def _step(value) -> int | None:
    return int(value) if value > 0 else None


def replay(scenario: dict) -> dict:
    """Oracle-schema scenario in, {"steps": [...], "per_request": {...}} out (see module doc)."""
    return to_schema(replay_run(scenario))
