"""A compiled run's per-step lists, read as `StepDetail`s only when a lesson asks for a step.

The step loop writes each step's lists (arrived, scheduled pairs, new, resumed, preempted,
running, waiting, sampled, finished) into one flat array with the segment starts per step
(sim/engine/layout.py `D_*`). `FlatDetail` reads as a list of StepDetail, like sim/detail.py's
`DetailLog`: `len`, indexing (negative too), slices and iteration, in step order. Under async
scheduling a step's `finished` and `kv_blocks_used` are those its output processing saw, one
turn later (SCHEDULER.md g); the last step's come from the final processing.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from sim.engine import layout as L
from sim.run import StepDetail


class FlatDetail(Sequence):
    """StepDetail k (0-based) of a run of `num_steps` steps, made on access."""

    def __init__(
        self,
        det: np.ndarray,
        didx: np.ndarray,
        kv_after_schedule: np.ndarray,
        kv_used: np.ndarray,
        num_steps: int,
        async_final: tuple[np.ndarray, int] | None,
    ) -> None:
        self._det = det
        self._didx = didx
        self._kv_sched = kv_after_schedule
        self._kv_used = kv_used  # per step, as measured in that turn (not yet shifted)
        self._n = num_steps
        self._final = async_final
        self._det.flags.writeable = False

    def __len__(self) -> int:
        return self._n

    def _seg(self, k: int, s: int) -> np.ndarray:
        return self._det[self._didx[s, k] : self._didx[s + 1, k]]

    def _step(self, k: int) -> StepDetail:
        finished, kv = self._seg(k, L.D_FINISHED), int(self._kv_used[k])
        if self._final is not None:  # async: read from the turn that processed step k's output
            if k + 1 < self._n:
                finished, kv = self._seg(k + 1, L.D_FINISHED), int(self._kv_used[k + 1])
            else:
                finished, kv = self._final
        return StepDetail(
            step=k + 1,
            arrived=self._seg(k, L.D_ARRIVED),
            scheduled_req=self._seg(k, L.D_SCHED_REQ),
            scheduled_tokens=self._seg(k, L.D_SCHED_TOK),
            new=self._seg(k, L.D_NEW),
            resumed=self._seg(k, L.D_RESUMED),
            preempted=self._seg(k, L.D_PREEMPTED),
            sampled=self._seg(k, L.D_SAMPLED),
            finished=finished,
            running=self._seg(k, L.D_RUNNING),
            waiting=self._seg(k, L.D_WAITING),
            kv_blocks_used_after_schedule=int(self._kv_sched[k]),
            kv_blocks_used=kv,
        )

    def __getitem__(self, k):  # noqa: ANN001, ANN204 (an int or a slice, as a list takes)
        if isinstance(k, slice):
            return [self._step(i) for i in range(*k.indices(self._n))]
        if k < 0:
            k += self._n
        if not 0 <= k < self._n:
            raise IndexError("step detail index out of range")
        return self._step(k)

    def __iter__(self) -> Iterator[StepDetail]:
        return (self._step(k) for k in range(self._n))
