"""A run's per-step detail (`StepDetail`), kept compactly: a quiet run of m steps is one record.

A run asked for its detail (`record_detail=True`) used to build one StepDetail per step, also
for the thousands of quiet steps (sim/quiet.py) in which the same requests each decode a token.
`DetailLog` stores such a run once (who runs, who waits, the block counts per step) and makes a
step's StepDetail only when it is read, so a lesson that reads a hundred steps of a 20,000-step
run does not pay for the rest. It reads as a list of StepDetail: `len`, indexing (negative too)
and iteration, in step order.

Under async scheduling a step's `finished` and `kv_blocks_used` are those measured when its
output is processed, one turn later (SCHEDULER.md g); `shift_async` applies that shift, also
lazily.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from sim.run import StepDetail

_EMPTY = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class QuietSteps:
    """m quiet steps from step k0: `running` each decode one token, `waiting` wait throughout;
    `arrived` came before the first, `finished` finish in the last; block counts per step.
    Requests that arrive during the run (`joining`, in arrival order; `joined[i]` of them
    before step i) join the queue as `enqueue` puts them (sim/quiet.py `_arrivals_wait`)."""

    k0: int
    running: np.ndarray
    waiting: np.ndarray
    arrived: np.ndarray
    finished: np.ndarray
    used_after_schedule: np.ndarray
    used: np.ndarray
    joining: np.ndarray = field(default_factory=lambda: _EMPTY)
    joined: np.ndarray | None = None
    enqueue: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None

    def _queue(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(the waiting queue at step i, the requests that arrived just before it)."""
        if self.joined is None or self.enqueue is None:
            return self.waiting, self.arrived if i == 0 else _EMPTY
        n = int(self.joined[i])
        before = int(self.joined[i - 1]) if i else 0
        arrived = self.arrived if i == 0 else self.joining[before:n]
        return self.enqueue(self.waiting, self.joining[:n]) if n else self.waiting, arrived

    @property
    def m(self) -> int:
        return int(self.used.shape[0])

    def at(self, i: int, ones: np.ndarray) -> StepDetail:
        R = self.running
        waiting, arrived = self._queue(i)
        return StepDetail(
            step=self.k0 + i,
            arrived=arrived,
            scheduled_req=R,
            scheduled_tokens=ones,
            new=_EMPTY,
            resumed=_EMPTY,
            preempted=_EMPTY,
            sampled=R,
            finished=self.finished if i == self.m - 1 else _EMPTY,
            running=R,
            waiting=waiting,
            kv_blocks_used_after_schedule=int(self.used_after_schedule[i]),
            kv_blocks_used=int(self.used[i]),
        )


class DetailLog(Sequence):
    """The steps' StepDetail in order; quiet runs are stored as one QuietSteps each."""

    def __init__(self) -> None:
        self._items: list[StepDetail | QuietSteps] = []
        self._starts: list[int] = []  # the index of each item's first step
        self._ones: list[np.ndarray | None] = []  # a quiet run's read-only token counts
        self._n = 0
        self._final: tuple[np.ndarray, int] | None = None  # set by shift_async

    def append(self, d: StepDetail) -> None:
        self._add(d, 1)

    def add_quiet(self, q: QuietSteps) -> None:
        self._add(q, q.m)

    def _add(self, item: StepDetail | QuietSteps, steps: int) -> None:
        self._items.append(item)
        self._starts.append(self._n)
        self._ones.append(None)
        self._n += steps

    def shift_async(self, finished_last: np.ndarray, kv_last: int) -> None:
        """Read each step's `finished` and `kv_blocks_used` from the next one's (the output
        processed one turn later); the last step's are those of the final processing."""
        self._final = (finished_last, kv_last)

    def __len__(self) -> int:
        return self._n

    def _raw(self, k: int) -> StepDetail:
        j = bisect_right(self._starts, k) - 1
        item = self._items[j]
        if isinstance(item, StepDetail):
            return item
        if self._ones[j] is None:  # shared by the run's steps
            ones = np.ones(item.running.shape[0], dtype=np.int64)
            ones.flags.writeable = False
            self._ones[j] = ones
        return item.at(k - self._starts[j], self._ones[j])

    def _step(self, k: int) -> StepDetail:
        d = self._raw(k)
        if self._final is None:
            return d
        if k + 1 < self._n:
            nxt = self._raw(k + 1)
            return replace(d, finished=nxt.finished, kv_blocks_used=nxt.kv_blocks_used)
        fin, kv = self._final
        return replace(d, finished=fin, kv_blocks_used=kv)

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
