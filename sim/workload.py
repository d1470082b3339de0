"""Workloads: the requests a run serves, as NumPy arrays indexed by request.

`Workload` is what the scheduler consumes; `Workload.build` validates arrays and raises
`SimInputError` with a clear one-line message. Two modules build one from a description: seeded
generators and their spec grammar (sim/generators.py) and CSV traces (sim/trace.py); they
import this module, and `sim.load.load_workload` picks between them for `--workload`, so this
module imports neither.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from sim.errors import SimInputError


@dataclass(frozen=True, eq=False)
class Workload:
    """Requests as arrays of equal length n, in list order (the order vLLM receives them).

    Exactly one of `arrival_s` (timed runs, seconds), `arrival_step` (step replays, 1-based
    step numbers) and `concurrency` is set. `concurrency` = C is a closed loop (as `vllm bench
    serve --max-concurrency C` runs): the first C requests arrive at 0 s and each finish sends
    the next request in list order at that moment, so the arrival times exist only once a timed
    run has happened (`Run.arrival_s`). `priority` follows vLLM: a lower value is more important.
    `prefix_id` = -1 means no shared prefix; requests with the same id share their first
    `prefix_tokens` prompt tokens (a system prompt), which prefix caching can reuse.
    """

    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    arrival_s: np.ndarray | None
    arrival_step: np.ndarray | None
    priority: np.ndarray
    tenant: np.ndarray
    prefix_id: np.ndarray
    prefix_tokens: np.ndarray
    request_ids: tuple[str, ...]
    concurrency: int | None = None

    @property
    def num_requests(self) -> int:
        return int(self.prompt_tokens.shape[0])

    def take(self, index: np.ndarray) -> Workload:
        """The requests at `index`, in that order, as a workload of their own (a replica's
        share of a stream, say)."""
        if self.concurrency is not None:
            raise SimInputError("a closed-loop workload cannot be split: its run sends them")
        idx = np.asarray(index)
        if idx.dtype == bool:
            raise SimInputError("take wants request indices, not a mask (use np.flatnonzero)")
        idx = idx.astype(np.int64)
        n = self.num_requests
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise SimInputError(f"take: indices must be in 0..{n - 1}")
        if np.unique(idx).size != idx.size:
            raise SimInputError("take: each request can be taken once (request ids stay unique)")

        def pick(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else np.asarray(a)[idx]

        return dataclasses.replace(
            self,
            prompt_tokens=pick(self.prompt_tokens),
            output_tokens=pick(self.output_tokens),
            arrival_s=pick(self.arrival_s),
            arrival_step=pick(self.arrival_step),
            priority=pick(self.priority),
            tenant=pick(self.tenant),
            prefix_id=pick(self.prefix_id),
            prefix_tokens=pick(self.prefix_tokens),
            request_ids=tuple(self.request_ids[i] for i in idx.tolist()),
        )

    @classmethod
    def build(
        cls,
        prompt_tokens: ArrayLike,
        output_tokens: ArrayLike,
        *,
        arrival_s: ArrayLike | None = None,
        arrival_step: ArrayLike | None = None,
        priority: ArrayLike | None = None,
        tenant: ArrayLike | None = None,
        prefix_id: ArrayLike | None = None,
        prefix_tokens: ArrayLike | None = None,
        request_ids: Sequence[str] | None = None,
        concurrency: int | None = None,
    ) -> Workload:
        """Validate and fill defaults (priority 0, tenant 0, no prefix, ids "0".."n-1")."""
        prompt = np.asarray(prompt_tokens, dtype=np.int64).reshape(-1)
        output = np.asarray(output_tokens, dtype=np.int64).reshape(-1)
        n = prompt.shape[0]
        given = sum(x is not None for x in (arrival_s, arrival_step, concurrency))
        if given != 1:
            raise SimInputError(
                "give exactly one of arrival_s (seconds), arrival_step (steps) or concurrency "
                "(a closed loop of clients)"
            )
        if concurrency is not None:
            if isinstance(concurrency, bool) or not isinstance(concurrency, int | np.integer):
                raise SimInputError(f"concurrency must be a whole number, got {concurrency!r}")
            if concurrency < 1:
                raise SimInputError(f"concurrency={concurrency} must be at least 1 client")
            concurrency = int(concurrency)

        def column(values, default, dtype, name):
            if values is None:
                return np.full(n, default, dtype=dtype)
            arr = np.asarray(values, dtype=dtype).reshape(-1)
            if arr.shape[0] != n:
                raise SimInputError(f"{name} has {arr.shape[0]} values, expected {n}")
            return arr

        out = column(output, 0, np.int64, "output_tokens")
        arr_s = None if arrival_s is None else column(arrival_s, 0.0, np.float64, "arrival_s")
        arr_step = (
            None if arrival_step is None else column(arrival_step, 1, np.int64, "arrival_step")
        )
        prio = column(priority, 0, np.int64, "priority")
        ten = column(tenant, 0, np.int64, "tenant")
        pid = column(prefix_id, -1, np.int64, "prefix_id")
        ptok = column(prefix_tokens, 0, np.int64, "prefix_tokens")
        ids = tuple(str(i) for i in range(n)) if request_ids is None else tuple(request_ids)
        if len(ids) != n:
            raise SimInputError(f"request_ids has {len(ids)} values, expected {n}")
        if len(set(ids)) != n:
            raise SimInputError("request ids must be unique")
        if n and prompt.min() < 1:
            raise SimInputError("every prompt needs at least 1 token")
        if n and out.min() < 1:
            raise SimInputError("every request needs at least 1 output token")
        if arr_s is not None and n and (not np.all(np.isfinite(arr_s)) or arr_s.min() < 0):
            raise SimInputError("arrival times must be finite and >= 0 seconds")
        if arr_step is not None and n and arr_step.min() < 1:
            raise SimInputError("arrival steps are 1-based")
        if n and (ptok.min() < 0 or np.any(ptok > prompt)):
            raise SimInputError("prefix_tokens must be between 0 and the prompt length")
        return cls(prompt, out, arr_s, arr_step, prio, ten, pid, ptok, ids, concurrency)
