"""Scheduling policies: the order of the waiting queue and the choice of a preemption victim.

vLLM's scheduler asks its policy two things only (SCHEDULER.md c2, c4, d): where a request goes in
the waiting queue (on arrival, and when it is preempted) and which running request to preempt when
a running request cannot get KV blocks. Everything else (budget, blocks, chunking) is the core's.
A policy here declares its answers as data (`engine_capabilities`): vLLM's FCFS deque or a rank
per request for a sorted queue, and one of the engine's victim rules with its ranks. The rules
themselves are written once, in the engine (sim/engine/kernel.py `_enqueue`, `_victim`,
`_sort_by_cache`), so a teaching policy is one small class registered by name.

`fcfs` and `priority` are vLLM's. `sjf` (shortest job first), `fair-share` (tenants take
turns) and `prefix-aware` (cached prefixes first) are teaching policies that vLLM does not
have. The first two keep their waiting queue sorted by a key fixed at arrival, as `priority`
does; `prefix-aware` re-sorts the FCFS queue every step by the blocks the prefix cache holds.
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

# How the compiled engine (sim/engine/kernel.py) picks a victim: the last running request, the
# largest victim rank (the first such in running order), or the last running request of the
# tenant that holds the most running requests.
VICTIM_LAST, VICTIM_RANK, VICTIM_TENANT = 0, 1, 2


@dataclass(frozen=True, eq=False)
class EngineCapabilities:
    """What a policy declares to the compiled engine, so the engine never asks its name:
    `queue_rank` None for vLLM's FCFS deque, else each request's place in the queue's order;
    `victim_kind` and `victim_rank` the victim rule; `reorders_by_cache` True if the queue is
    re-sorted every step by cached blocks."""

    queue_rank: np.ndarray | None
    victim_kind: int
    victim_rank: np.ndarray | None = None
    reorders_by_cache: bool = False


def _dense_rank(*keys: np.ndarray) -> np.ndarray:
    """Rank of each element by the keys (most significant last, np.lexsort order); equal keys
    share a rank."""
    n = keys[0].shape[0]
    order = np.lexsort(keys)
    rank = np.empty(n, dtype=np.int64)
    if n:
        stacked = np.stack([k[order] for k in keys])
        new = np.ones(n, dtype=bool)
        new[1:] = np.any(stacked[:, 1:] != stacked[:, :-1], axis=0)
        rank[order] = np.cumsum(new) - 1
    return rank


class Policy(ABC):
    """One run's policy. Built once per run from per-request key arrays (see `make_policy`)."""

    name: ClassVar[str]
    # True if the victim is always the last running request, so a preemption never takes back
    # tokens already scheduled in the step (sim/dominance.py relies on it).
    victim_is_last: ClassVar[bool] = False
    # True if the queue order changes with the prefix cache: the scheduler calls `reorder` at
    # the start of every schedule() (only with prefix caching on) and skips its quiet runs.
    dynamic: ClassVar[bool] = False

    def __init__(
        self,
        *,
        priority: np.ndarray,
        arrival_time: np.ndarray,
        request_ids,
        job_tokens: np.ndarray | None = None,
        tenant: np.ndarray | None = None,
    ) -> None:
        self.priority = np.asarray(priority, dtype=np.int64)
        self.arrival_time = np.asarray(arrival_time, dtype=np.float64)
        self.request_ids = tuple(request_ids)
        n = self.priority.shape[0]
        # prompt tokens + max_tokens (what a job-size policy may know), and each request's tenant
        self.job_tokens = np.zeros(n, np.int64) if job_tokens is None else np.asarray(job_tokens)
        self.tenant = np.zeros(n, np.int64) if tenant is None else np.asarray(tenant, np.int64)

    def engine_capabilities(self) -> EngineCapabilities:
        """The queue and victim rules as the compiled engine runs them."""
        raise NotImplementedError(f"policy {self.name!r} declares no engine capabilities")


class FCFS(Policy):
    """vLLM's default: a deque; arrivals at the tail, preempted at the head; victim = last."""

    name = "fcfs"
    victim_is_last = True

    def engine_capabilities(self) -> EngineCapabilities:
        return EngineCapabilities(None, VICTIM_LAST, reorders_by_cache=self.dynamic)


class _Ranked(Policy):
    """A waiting queue kept sorted by a rank fixed at arrival (ties: arrival time, request id),
    for the teaching policies below; a preempted request goes back to its place."""

    def _keys(self) -> tuple[np.ndarray, ...]:
        """The sort keys, most significant last (np.lexsort order), before arrival and id."""
        raise NotImplementedError

    def __init__(self, **keys) -> None:
        super().__init__(**keys)
        n = self.priority.shape[0]
        ids = np.array(self.request_ids, dtype=object).astype(str) if n else np.array([], str)
        order = np.lexsort((ids, self.arrival_time, *self._keys()))
        self.queue_rank = np.empty(n, dtype=np.int64)
        self.queue_rank[order] = np.arange(n)


class Priority(_Ranked):
    """vLLM's priority policy: a heap by (priority, arrival_time, request_id); victim = max
    (priority, arrival_time) over the running list, the first such in running order on a tie."""

    name = "priority"

    def _keys(self) -> tuple[np.ndarray, ...]:
        return (self.priority,)  # heap order (Request.__lt__): priority, arrival time, id

    def __init__(self, **keys) -> None:
        super().__init__(**keys)
        # Victim key (priority, arrival_time) without the id: equal keys share a rank, so the
        # engine takes the first of them in running order, as Python's max() does.
        self.victim_rank = _dense_rank(self.arrival_time, self.priority)

    def engine_capabilities(self) -> EngineCapabilities:
        return EngineCapabilities(self.queue_rank, VICTIM_RANK, self.victim_rank)


class ShortestJobFirst(_Ranked):
    """Teaching policy (not vLLM's): the waiting queue in order of job size, prompt tokens plus
    max_tokens, smallest first; the victim is the running request with the largest job (the
    latest arrival among equals, the first such in running order on a full tie)."""

    name = "sjf"

    def _keys(self) -> tuple[np.ndarray, ...]:
        return (self.job_tokens,)

    def engine_capabilities(self) -> EngineCapabilities:
        rank = _dense_rank(self.arrival_time, self.job_tokens)
        return EngineCapabilities(self.queue_rank, VICTIM_RANK, rank)


class FairShare(_Ranked):
    """Teaching policy (not vLLM's): the tenants take turns. A request's rank is how many
    earlier requests of its own tenant there are (counted from the start of the run, so a tenant
    that has sent fewer goes first), so every tenant's n-th request comes before any tenant's
    (n+1)-th, in arrival order within a round; the victim is the request admitted last among
    those of the tenant that holds the most running requests."""

    name = "fair-share"

    def _keys(self) -> tuple[np.ndarray, ...]:
        n = self.tenant.shape[0]
        order = np.lexsort((np.arange(n), self.arrival_time))  # arrival order, list order on ties
        turn = np.empty(n, dtype=np.int64)
        t = self.tenant[order]
        by_tenant = np.lexsort((np.arange(n), t))  # stable: arrival order within each tenant
        starts = np.r_[0, np.flatnonzero(np.diff(t[by_tenant])) + 1]
        counts = np.diff(np.r_[starts, n])
        within = np.arange(n) - np.repeat(starts, counts)
        turn[order[by_tenant]] = within
        return (turn,)

    def engine_capabilities(self) -> EngineCapabilities:
        return EngineCapabilities(self.queue_rank, VICTIM_TENANT)


class PrefixAware(FCFS):
    """Teaching policy (not vLLM's; SGLang's `lpm`, "longest prefix match", long its default):
    at every step the waiting queue is sorted by how many of each request's blocks the prefix
    cache holds now, most first, FCFS among equals (a preempted request first among them); the
    victim is the last running request, as FCFS. Without prefix caching nothing is cached and it
    is FCFS. (SGLang falls back to FCFS above 128 waiting requests; this teaching version always
    sorts.)"""

    name = "prefix-aware"
    dynamic = True


POLICY_REGISTRY: dict[str, Callable[..., Policy]] = {
    "fcfs": FCFS,
    "priority": Priority,
    "sjf": ShortestJobFirst,
    "fair-share": FairShare,
    "prefix-aware": PrefixAware,
}
# not vLLM's: the lessons say so on screen
TEACHING_POLICIES = ("sjf", "prefix-aware", "fair-share")


def register_policy(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make a teaching policy available by its `name` in SchedulerConfig.policy."""
    POLICY_REGISTRY[cls.name] = cls
    return cls


def make_policy(
    name: str,
    *,
    priority: np.ndarray,
    arrival_time: np.ndarray,
    request_ids: Sequence[str],
    job_tokens: np.ndarray | None = None,
    tenant: np.ndarray | None = None,
) -> Policy:
    """The policy registered as `name`, keyed on one run's requests."""
    return POLICY_REGISTRY[name](
        priority=priority,
        arrival_time=arrival_time,
        request_ids=request_ids,
        job_tokens=job_tokens,
        tenant=tenant,
    )
