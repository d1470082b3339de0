"""Scheduling policies: the order of the waiting queue and the choice of a preemption victim.

vLLM's scheduler asks its policy two things only (SCHEDULER.md c2, c4, d): where a request goes in
the waiting queue (on arrival, and when it is preempted) and which running request to preempt when
a running request cannot get KV blocks. Everything else (budget, blocks, chunking) is the core's.
A policy here answers those two questions over NumPy arrays of request indices, so a teaching
policy (shortest job first, fair share per tenant, prefix-aware) is one small class registered by
name, without touching the scheduler.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np


class Policy(ABC):
    """One run's policy. Built once per run from per-request key arrays (see `make_policy`)."""

    name: ClassVar[str]
    # True if the victim is always the last running request, so a preemption never takes back
    # tokens already scheduled in the step (sim/dominance.py relies on it).
    victim_is_last: ClassVar[bool] = False

    def __init__(self, *, priority: np.ndarray, arrival_time: np.ndarray, request_ids) -> None:
        self.priority = np.asarray(priority, dtype=np.int64)
        self.arrival_time = np.asarray(arrival_time, dtype=np.float64)
        self.request_ids = tuple(request_ids)

    @abstractmethod
    def enqueue(self, waiting: np.ndarray, arrived: np.ndarray) -> np.ndarray:
        """The waiting queue (request indices, queue order) after `arrived` (list order) arrive."""

    @abstractmethod
    def requeue(self, waiting: np.ndarray, preempted: np.ndarray) -> np.ndarray:
        """The waiting queue after `preempted` (in preemption order) are put back."""

    @abstractmethod
    def victim(self, running: np.ndarray) -> int:
        """Position in `running` (running order) of the request to preempt."""


class FCFS(Policy):
    """vLLM's default: a deque; arrivals at the tail, preempted at the head; victim = last."""

    name = "fcfs"
    victim_is_last = True

    def enqueue(self, waiting: np.ndarray, arrived: np.ndarray) -> np.ndarray:
        return np.concatenate((waiting, arrived))

    def requeue(self, waiting: np.ndarray, preempted: np.ndarray) -> np.ndarray:
        # Each preempted request is appendleft-ed in turn: the most recently preempted is first.
        return np.concatenate((preempted[::-1], waiting))

    def victim(self, running: np.ndarray) -> int:
        return int(running.shape[0] - 1)


class Priority(Policy):
    """vLLM's priority policy: a heap by (priority, arrival_time, request_id); victim = max
    (priority, arrival_time) over the running list, the first such in running order on a tie."""

    name = "priority"

    def __init__(self, **keys) -> None:
        super().__init__(**keys)
        n = self.priority.shape[0]
        ids = np.array(self.request_ids, dtype=object).astype(str) if n else np.array([], str)
        # Heap order (Request.__lt__): priority, then arrival time, then request id (string).
        order = np.lexsort((ids, self.arrival_time, self.priority))
        self.queue_rank = np.empty(n, dtype=np.int64)
        self.queue_rank[order] = np.arange(n)
        # Victim key (priority, arrival_time) without the id: equal keys stay equal, so argmax
        # returns the first of them in running order, as Python's max() does.
        pa = np.lexsort((self.arrival_time, self.priority))
        sorted_keys = np.stack((self.priority[pa], self.arrival_time[pa]))
        new_key = np.ones(n, dtype=bool)
        if n > 1:
            new_key[1:] = np.any(sorted_keys[:, 1:] != sorted_keys[:, :-1], axis=0)
        self.victim_rank = np.empty(n, dtype=np.int64)
        self.victim_rank[pa] = np.cumsum(new_key) - 1

    def _sorted(self, queue: np.ndarray) -> np.ndarray:
        return queue[np.argsort(self.queue_rank[queue], kind="stable")]

    def enqueue(self, waiting: np.ndarray, arrived: np.ndarray) -> np.ndarray:
        return self._sorted(np.concatenate((waiting, arrived)))

    def requeue(self, waiting: np.ndarray, preempted: np.ndarray) -> np.ndarray:
        return self._sorted(np.concatenate((waiting, preempted)))

    def victim(self, running: np.ndarray) -> int:
        return int(np.argmax(self.victim_rank[running]))


POLICY_REGISTRY: dict[str, Callable[..., Policy]] = {"fcfs": FCFS, "priority": Priority}


def register_policy(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make a teaching policy available by its `name` in SchedulerConfig.policy."""
    POLICY_REGISTRY[cls.name] = cls
    return cls


def make_policy(
    name: str, *, priority: np.ndarray, arrival_time: np.ndarray, request_ids: Sequence[str]
) -> Policy:
    """The policy registered as `name`, keyed on one run's requests."""
    return POLICY_REGISTRY[name](
        priority=priority, arrival_time=arrival_time, request_ids=request_ids
    )
