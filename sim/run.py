"""`Run`: everything one simulated run produced, as NumPy arrays (the contract `metrics` reads).

Per step (index k-1 for step k), per sampled output token (emission order) and per request.
Step replays (`run_steps`) have no clock: their time arrays are NaN. Timed runs (`run_timed`)
fill step_start_s/step_ms and the per-request times (a token is out at the end of its step);
`arrival_s` is the workload's, or for a closed loop the times the run sent the requests at.
Under async scheduling a step's `kv_blocks_used` and `num_finished` are those measured when its
output was processed (after the next step's schedule), as vLLM's async recordings have them.
`detail` holds, only when asked for, the per-step lists (scheduled pairs, preempted, finished,
new, resumed, sampled, running and waiting order) that a replay turns into vLLM's JSON schema.
`blocks`, only for a run traced block by block (sim/blocks.py), holds every step's block tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sim.blocks import BlockTrace
from sim.config import SchedulerConfig
from sim.workload import Workload


@dataclass(frozen=True, eq=False)
class StepDetail:
    """One step, request indices in vLLM's order. `scheduled` pairs (request, tokens)."""

    step: int
    arrived: np.ndarray
    scheduled_req: np.ndarray
    scheduled_tokens: np.ndarray
    new: np.ndarray
    resumed: np.ndarray
    preempted: np.ndarray
    sampled: np.ndarray
    finished: np.ndarray
    running: np.ndarray
    waiting: np.ndarray
    kv_blocks_used_after_schedule: int
    kv_blocks_used: int


@dataclass(frozen=True)
class PrefixCacheStats:
    """vLLM's PrefixCacheStats over a run, in tokens, recorded as vLLM 0.33 does it: once per
    admission (a lookup whose request is not admitted in that step is not counted), the request's
    known tokens and the tokens it found cached. `queries` and `hits` are those of requests never
    preempted, which vLLM exports as vllm:prefix_cache_queries and vllm:prefix_cache_hits; a
    preempted request's are kept apart, so that a victim finding its own blocks again does not
    raise the hit rate."""

    queries: int = 0
    hits: int = 0
    preempted_queries: int = 0
    preempted_hits: int = 0

    @property
    def hit_rate_pct(self) -> float:
        """hits / queries in percent, as a dashboard plots vLLM's two counters (0 without any)."""
        return 100.0 * self.hits / self.queries if self.queries else 0.0


@dataclass(frozen=True, eq=False)
class Run:
    """The result of one run. Arrays are read-only by convention; do not mutate them."""

    config: SchedulerConfig
    workload: Workload
    kv_blocks_usable: int
    num_steps: int
    timed: bool
    # per step
    num_scheduled_tokens: np.ndarray
    num_scheduled_seqs: np.ndarray
    kv_read_tokens: np.ndarray
    attn_pairs: np.ndarray
    num_running: np.ndarray
    num_waiting: np.ndarray
    kv_blocks_used: np.ndarray
    num_preempted: np.ndarray
    num_finished: np.ndarray
    step_start_s: np.ndarray
    step_ms: np.ndarray
    # per sampled output token, in emission order
    token_req: np.ndarray
    token_step: np.ndarray
    # per request
    first_scheduled_step: np.ndarray
    first_token_step: np.ndarray
    finish_step: np.ndarray
    num_preemptions: np.ndarray
    num_output_tokens: np.ndarray
    num_recomputed_tokens: np.ndarray
    num_prefix_hit_tokens: np.ndarray
    arrival_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    scheduler_seconds: float = 0.0
    detail: Sequence[StepDetail] | None = field(default=None)  # sim/detail.py DetailLog
    # per request: 0 admitted, else the admission limit that refused it (sim/admission.py)
    rejected: np.ndarray | None = field(default=None)
    # per request: True if a gateway's queue timeout cut it off (sim/gateway.py); None: no timeout
    timed_out: np.ndarray | None = field(default=None)
    blocks: BlockTrace | None = field(default=None)  # block tables per step (trace_blocks)
    prefix_cache: PrefixCacheStats = field(default_factory=PrefixCacheStats)

    @property
    def rejected_requests(self) -> dict[str, int]:
        """Refused requests, in total and by vLLM's limit (simulate's `rejected_requests`)."""
        from sim.admission import rejected_counts

        return rejected_counts(self.rejected)

    @property
    def total_preemptions(self) -> int:
        return int(self.num_preemptions.sum())

    @property
    def token_s(self) -> np.ndarray:
        """Emission time of every sampled token (end of its step); NaN for step replays."""
        if not self.timed:
            return np.full(self.token_step.shape[0], np.nan)
        end = self.step_start_s + self.step_ms / 1e3
        return end[self.token_step - 1]
