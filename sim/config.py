"""`SchedulerConfig`: one run's scheduler settings, named and checked as vLLM names and checks them.

A frozen dataclass so that a configuration can be hashed, cached and shared by a sweep. The checks
are the ones vLLM's `SchedulerConfig` makes (config/scheduler.py); a configuration vLLM would reject
raises `SimInputError` with vLLM's reason, word for word, so a learner sees the real message.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.errors import SimInputError

VLLM_VERSIONS = ("0.34", "0.33")  # the releases whose scheduling rules sim follows
POLICIES = ("fcfs", "priority")  # vLLM's; sim/policy.py also registers teaching policies


@dataclass(frozen=True)
class SchedulerConfig:
    """vLLM v1 scheduler inputs (SCHEDULER.md). `num_gpu_blocks` includes the null block.

    `async_scheduling=True` is vLLM's `AsyncScheduler` (SCHEDULER.md g, the default of real
    deployments): step k is scheduled before the output of step k-1 is processed. It is off by
    default so that the synchronous recordings keep their meaning.
    """

    max_num_batched_tokens: int
    max_num_seqs: int
    max_model_len: int
    num_gpu_blocks: int
    block_size: int = 16
    enable_chunked_prefill: bool = True
    enable_prefix_caching: bool = False
    policy: str = "fcfs"
    long_prefill_token_threshold: int = 0
    watermark: float = 0.0
    scheduler_reserve_full_isl: bool = True
    async_scheduling: bool = False
    # vLLM's admission limits (checked by its API server on arrival, sim/admission.py); None: off
    max_num_queued_reqs: int | None = None
    max_num_queued_tokens: int | None = None
    # a gateway's queue timeout in seconds (a teaching model, not vLLM: sim/gateway.py); None: off
    gateway_timeout_s: float | None = None
    # vLLM 0.34's cache-aware admission (SCHEDULER.md h2): with prefix caching and FCFS, once KV
    # usage reaches the threshold, the first `window` plain waiting requests are admitted most
    # cached prompt first. window 0: off (vLLM's default).
    cache_aware_admission_window: int = 0
    cache_aware_admission_threshold: float = 0.5
    # the vLLM release whose rules the scheduler follows: "0.34" (the course's), or "0.33" for
    # a recording made with it (sim/replay.py reads its `vllm_version`). They differ in one rule
    # (SCHEDULER.md h1): 0.34 ignores long_prefill_token_threshold without chunked prefill.
    vllm_version: str = "0.34"

    def __post_init__(self) -> None:
        for name in ("max_num_batched_tokens", "max_num_seqs", "max_model_len", "block_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SimInputError(f"{name} must be a positive integer, got {value!r}")
        nb = self.num_gpu_blocks
        if isinstance(nb, bool) or not isinstance(nb, int) or nb < 2:
            raise SimInputError(
                f"num_gpu_blocks must be an integer >= 2 (one is the null block), got {nb!r}"
            )
        thr = self.long_prefill_token_threshold
        if isinstance(thr, bool) or not isinstance(thr, int) or thr < 0:
            raise SimInputError(
                f"long_prefill_token_threshold must be an integer >= 0, got {thr!r}"
            )
        for name in ("max_num_queued_reqs", "max_num_queued_tokens"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise SimInputError(f"{name} must be an integer >= 0 or None, got {value!r}")
        t = self.gateway_timeout_s
        if t is not None and (isinstance(t, bool) or not isinstance(t, int | float) or not t > 0):
            raise SimInputError(f"gateway_timeout_s must be a number of seconds > 0, got {t!r}")
        if t is not None and not np.isfinite(t):
            raise SimInputError(f"gateway_timeout_s must be finite, got {t!r}")
        if not isinstance(self.async_scheduling, bool | np.bool_):
            raise SimInputError(
                f"async_scheduling must be true or false, got {self.async_scheduling!r}"
            )
        object.__setattr__(self, "async_scheduling", bool(self.async_scheduling))
        # vLLM 0.34: Field(default=0, ge=0) and Field(default=0.5, ge=0.0, le=1.0)
        w = self.cache_aware_admission_window
        if isinstance(w, bool) or not isinstance(w, int | np.integer) or w < 0:
            raise SimInputError(f"cache_aware_admission_window must be an integer >= 0, got {w!r}")
        object.__setattr__(self, "cache_aware_admission_window", int(w))
        c = self.cache_aware_admission_threshold
        if (
            isinstance(c, bool)
            or not isinstance(c, int | float | np.integer | np.floating)
            or not 0.0 <= float(c) <= 1.0
        ):
            raise SimInputError(
                f"cache_aware_admission_threshold must be a number in [0, 1], got {c!r}"
            )
        object.__setattr__(self, "cache_aware_admission_threshold", float(c))
        if self.vllm_version not in VLLM_VERSIONS:
            raise SimInputError(
                f"vllm_version must be one of {', '.join(VLLM_VERSIONS)}, got {self.vllm_version!r}"
            )
        if not 0.0 <= float(self.watermark) < 1.0:
            raise SimInputError(f"watermark must be in [0, 1), got {self.watermark!r}")
        # Imported here: policy.py imports nothing from config, but keep the registry the judge.
        from sim.policy import POLICY_REGISTRY

        if self.policy not in POLICY_REGISTRY:
            known = ", ".join(sorted(POLICY_REGISTRY))
            raise SimInputError(f"unknown policy {self.policy!r} (known: {known})")
        # vLLM's SchedulerConfig.verify_max_model_len, same order, same words.
        if self.max_num_batched_tokens < self.max_model_len and not self.enable_chunked_prefill:
            raise SimInputError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) is smaller than "
                f"max_model_len ({self.max_model_len}). This effectively limits the maximum "
                "sequence length to max_num_batched_tokens and makes vLLM reject longer "
                "sequences. Please increase max_num_batched_tokens or decrease max_model_len."
            )
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise SimInputError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens}) must be greater than "
                f"or equal to max_num_seqs ({self.max_num_seqs})."
            )

    @property
    def admission_control(self) -> bool:
        """Whether either of vLLM's admission limits is set."""
        return self.max_num_queued_reqs is not None or self.max_num_queued_tokens is not None

    @property
    def effective_long_prefill_token_threshold(self) -> int:
        """The threshold the scheduler applies: vLLM 0.34 sets it to 0 unless chunked prefill
        is on (SCHEDULER.md h1); 0.33 applied it either way."""
        if self.vllm_version == "0.33" or self.enable_chunked_prefill:
            return self.long_prefill_token_threshold
        return 0

    @property
    def kv_blocks_usable(self) -> int:
        """Blocks a request can hold: the pool minus vLLM's null block."""
        return self.num_gpu_blocks - 1

    @property
    def watermark_blocks(self) -> int:
        """`int(watermark * num_gpu_blocks)`, the pool size including the null block (f4)."""
        return int(self.watermark * self.num_gpu_blocks)
