"""`SchedulerConfig`: one run's scheduler settings, named and checked as vLLM names and checks them.

A frozen dataclass so that a configuration can be hashed, cached and shared by a sweep. The checks
are the ones vLLM's `SchedulerConfig` makes (config/scheduler.py); a configuration vLLM would reject
raises `SimInputError` with vLLM's reason, word for word, so a learner sees the real message.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.errors import SimInputError

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
    def kv_blocks_usable(self) -> int:
        """Blocks a request can hold: the pool minus vLLM's null block."""
        return self.num_gpu_blocks - 1

    @property
    def watermark_blocks(self) -> int:
        """`int(watermark * num_gpu_blocks)`, the pool size including the null block (f4)."""
        return int(self.watermark * self.num_gpu_blocks)
