"""A plain-Python reference scheduler: a direct reading of SCHEDULER.md, written for the tests.

Why it exists: `sim/` implements vLLM 0.33's v1 scheduling rules as vectorized NumPy. This module
implements the same rules a second time, independently, in the most literal way possible (one
object per request, a `running` list, a waiting deque or heap, a block pool with a free queue), so
that the two readings of the specification can be held against each other on thousands of random
workloads (tests/test_differential.py), and this one against vLLM's own recordings
(tests/test_reference_oracle.py). Speed is not a goal; readability is.

Entry point: `replay(scenario) -> {"steps": [...], "per_request": {...}}`, scenario and result in
the schema of tests/data/README.md. A configuration vLLM refuses raises `ConfigRejected` with
vLLM's message.

`async_scheduling=True` is vLLM's `AsyncScheduler` (SCHEDULER.md g), read as literally as the
rest: each request carries `num_output_placeholders`; step k is scheduled, then the output of
step k-1 is handed to `update_from_output` (the list of requests that sampled in it, kept from
its schedule); its finishes and KV blocks are written into step k-1's record; after the loop the
last output is processed once more.

Choices made where SCHEDULER.md is silent (vLLM's behaviour, as far as it is known):

- Prefix-cache blocks are hashed when they are *allocated for* tokens that will be computed by the
  end of the step (vLLM's `allocate_slots` calls `cache_blocks` with
  `num_computed_tokens + num_new_tokens`), so a request admitted later in the same step can hit
  them. A preempted victim's hashed blocks keep their hashes.
- Two blocks can carry the same content identity (two requests computed the same prefix block
  without a hit); a lookup then returns the earliest cached one still present (vLLM's
  `BlockHashToBlockMap.get_one_block`), and eviction removes only the evicted block.
- A request's `prefix_tokens` longer than its prompt count only up to the prompt.
- `finished_req_ids` and `sampled_req_ids` are in scheduling order (running loop, then admissions).
- A run stops after `settings["max_steps"]` steps if given (the recording harness's safety cap);
  requests never scheduled keep `None` in their per-request record.
- Async: a preempted request whose stale in-flight output carries its last token finishes there
  and leaves the waiting queue (vLLM's `stopped_preempted_reqs` in `update_from_output`). With
  prefix caching, a request's blocks are hashed at schedule time up to its known tokens (vLLM
  caps `cache_blocks` at `request.num_tokens`, which leaves out placeholders) and, when its
  output is processed while it runs, up to `num_computed_tokens - num_output_placeholders`.
"""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ConfigRejected", "replay"]

WAITING = "WAITING"
RUNNING = "RUNNING"
PREEMPTED = "PREEMPTED"
FINISHED = "FINISHED"


class ConfigRejected(ValueError):
    """The configuration or workload is one vLLM refuses; the message is vLLM's where it has one."""


# --------------------------------------------------------------------------------------------
# Settings and validation (SCHEDULER.md e6, f5)
# --------------------------------------------------------------------------------------------

DEFAULTS: dict[str, Any] = {
    "block_size": 16,
    "enable_chunked_prefill": True,
    "enable_prefix_caching": False,
    "policy": "fcfs",
    "long_prefill_token_threshold": 0,
    "watermark": 0.0,
    "scheduler_reserve_full_isl": True,
    "async_scheduling": False,
    "cache_aware_admission_window": 0,
    "cache_aware_admission_threshold": 0.5,
    "max_steps": None,
}
REQUIRED = ("max_num_batched_tokens", "max_num_seqs", "max_model_len", "num_gpu_blocks")


@dataclass(frozen=True)
class Settings:
    """The scheduler inputs of a scenario, with vLLM's defaults filled in."""

    max_num_batched_tokens: int
    max_num_seqs: int
    max_model_len: int
    num_gpu_blocks: int
    block_size: int
    enable_chunked_prefill: bool
    enable_prefix_caching: bool
    policy: str
    long_prefill_token_threshold: int
    watermark: float
    scheduler_reserve_full_isl: bool
    async_scheduling: bool
    cache_aware_admission_window: int
    cache_aware_admission_threshold: float
    max_steps: int | None
    vllm_version: str = "0.34"


def parse_settings(raw: dict[str, Any], vllm_version: str | None = None) -> Settings:
    """Fill defaults and validate, raising `ConfigRejected` with vLLM's wording where vLLM has one.

    vLLM's `SchedulerConfig.verify_max_model_len` checks, in this order: chunked prefill off with
    `max_num_batched_tokens < max_model_len`, then `max_num_batched_tokens < max_num_seqs`.
    """
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise ConfigRejected(f"settings lack {', '.join(missing)}")
    values = {**DEFAULTS, **{k: v for k, v in raw.items() if k in DEFAULTS or k in REQUIRED}}
    for key in REQUIRED + ("block_size",):
        if not isinstance(values[key], int) or values[key] < 1:
            raise ConfigRejected(f"{key} must be a positive integer, got {values[key]!r}")
    if values["num_gpu_blocks"] < 2:
        raise ConfigRejected("num_gpu_blocks must be at least 2 (block 0 is the null block)")
    if values["policy"] not in ("fcfs", "priority"):
        raise ConfigRejected(f"policy must be 'fcfs' or 'priority', got {values['policy']!r}")
    if not 0.0 <= float(values["watermark"]) < 1.0:
        raise ConfigRejected(f"watermark must be in [0, 1), got {values['watermark']!r}")
    if values["long_prefill_token_threshold"] < 0:
        raise ConfigRejected("long_prefill_token_threshold must be >= 0")
    budget, mml = values["max_num_batched_tokens"], values["max_model_len"]
    if budget < mml and not values["enable_chunked_prefill"]:
        raise ConfigRejected(
            f"max_num_batched_tokens ({budget}) is smaller than max_model_len ({mml}). "
            "This effectively limits the maximum sequence length to max_num_batched_tokens "
            "and makes vLLM reject longer sequences. Please increase max_num_batched_tokens "
            "or decrease max_model_len."
        )
    if budget < values["max_num_seqs"]:
        raise ConfigRejected(
            f"max_num_batched_tokens ({budget}) must be greater than or equal to "
            f"max_num_seqs ({values['max_num_seqs']})."
        )
    return Settings(
        max_num_batched_tokens=budget,
        max_num_seqs=values["max_num_seqs"],
        max_model_len=mml,
        num_gpu_blocks=values["num_gpu_blocks"],
        block_size=values["block_size"],
        enable_chunked_prefill=bool(values["enable_chunked_prefill"]),
        enable_prefix_caching=bool(values["enable_prefix_caching"]),
        policy=values["policy"],
        long_prefill_token_threshold=int(values["long_prefill_token_threshold"]),
        watermark=float(values["watermark"]),
        scheduler_reserve_full_isl=bool(values["scheduler_reserve_full_isl"]),
        async_scheduling=bool(values["async_scheduling"]),
        cache_aware_admission_window=int(values["cache_aware_admission_window"]),
        cache_aware_admission_threshold=float(values["cache_aware_admission_threshold"]),
        max_steps=values["max_steps"],
        vllm_version="0.33" if str(vllm_version or "").startswith("0.33") else "0.34",
    )


# --------------------------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Request:
    """One request's state; what drives scheduling is `num_computed_tokens` vs `num_tokens`."""

    request_id: str
    prompt_len: int
    max_tokens: int
    arrival_step: int
    arrival_time: float
    priority: int
    prefix_id: int
    prefix_tokens: int
    num_computed_tokens: int = 0
    num_output_tokens: int = 0
    num_output_placeholders: int = 0
    status: str = WAITING
    blocks: list[Block] = field(default_factory=list)
    num_cached_blocks: int = 0
    num_preemptions: int = 0
    first_scheduled_step: int | None = None
    first_token_step: int | None = None
    finish_step: int | None = None

    @property
    def num_tokens(self) -> int:
        """Prompt plus output tokens so far."""
        return self.prompt_len + self.num_output_tokens

    def sort_key(self) -> tuple[int, float, str]:
        """vLLM's `Request.__lt__`: lower priority value, earlier arrival, smaller id first."""
        return (self.priority, self.arrival_time, self.request_id)

    def block_identity(self, j: int, block_size: int) -> tuple[str, Any, int]:
        """Content identity of block j: shared prefix blocks are ("p", prefix_id, j)."""
        prefix = min(self.prefix_tokens, self.prompt_len)
        if self.prefix_id >= 0 and (j + 1) * block_size <= prefix:
            return ("p", self.prefix_id, j)
        if self.prefix_id >= 0 and prefix == self.prompt_len:
            return ("po", self.prefix_id, prefix, j)
        return ("r", self.request_id, j)


def parse_requests(raw: list[dict[str, Any]], settings: Settings) -> list[Request]:
    """Build the requests; a prompt of max_model_len tokens or more is refused (SCHEDULER.md f5)."""
    requests: list[Request] = []
    seen: set[str] = set()
    for i, r in enumerate(raw):
        rid = str(r["id"])
        if rid in seen:
            raise ConfigRejected(f"request id {rid!r} appears twice")
        seen.add(rid)
        prompt_len, output_len = int(r["prompt_len"]), int(r["output_len"])
        arrival_step = int(r.get("arrival_step", 1))
        if prompt_len < 1 or output_len < 1 or arrival_step < 1:
            raise ConfigRejected(
                f"request {rid}: prompt_len, output_len and arrival_step must be >= 1"
            )
        if prompt_len >= settings.max_model_len:
            raise ConfigRejected(
                f"request {rid}: prompt of {prompt_len} tokens does not fit max_model_len "
                f"{settings.max_model_len} (it must be shorter, to leave room for one output token)"
            )
        prefix_id = r.get("prefix_id", -1)
        requests.append(
            Request(
                request_id=rid,
                prompt_len=prompt_len,
                max_tokens=output_len,
                arrival_step=arrival_step,
                arrival_time=arrival_step + i * 1e-6,
                priority=int(r.get("priority", 0)),
                prefix_id=-1 if prefix_id is None else int(prefix_id),
                prefix_tokens=int(r.get("prefix_tokens", 0) or 0),
            )
        )
    return requests


# --------------------------------------------------------------------------------------------
# KV blocks (SCHEDULER.md b)
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Block:
    """One KV block: its id, how many requests hold it, and its content identity once cached."""

    block_id: int
    ref_cnt: int = 0
    identity: tuple | None = None


class BlockPool:
    """The pool: block 0 is the null block; the rest sit in a free queue (front = next allocated).

    With prefix caching, a freed block keeps its identity (hash) and stays findable until it is
    taken from the front of the free queue for a new allocation (eviction).
    """

    def __init__(self, num_gpu_blocks: int, caching: bool) -> None:
        self.blocks = [Block(i) for i in range(num_gpu_blocks)]
        self.free_queue: deque[Block] = deque(self.blocks[1:])  # block 0 = null block
        self.usable = num_gpu_blocks - 1
        self.caching = caching
        self.cached: dict[tuple, dict[int, Block]] = {}

    @property
    def num_free(self) -> int:
        """Blocks in the free queue (cached-but-free blocks included: they are evictable)."""
        return len(self.free_queue)

    def lookup(self, identity: tuple) -> Block | None:
        """The earliest-cached block with this identity, if any."""
        blocks = self.cached.get(identity)
        return next(iter(blocks.values())) if blocks else None

    def take_new(self, n: int) -> list[Block]:
        """Allocate n blocks from the front of the free queue, evicting their cached identity."""
        out = []
        for _ in range(n):
            block = self.free_queue.popleft()
            if block.identity is not None:
                holders = self.cached[block.identity]
                del holders[block.block_id]
                if not holders:
                    del self.cached[block.identity]
                block.identity = None
            block.ref_cnt = 1
            out.append(block)
        return out

    def touch(self, blocks: list[Block]) -> None:
        """Share prefix-hit blocks: a block in the free queue is taken out of it."""
        for block in blocks:
            if block.ref_cnt == 0:
                self.free_queue.remove(block)
            block.ref_cnt += 1

    def cache(self, block: Block, identity: tuple) -> None:
        """Record a full block's content identity so later requests can hit it."""
        block.identity = identity
        self.cached.setdefault(identity, {})[block.block_id] = block

    def free(self, blocks: list[Block]) -> None:
        """Release a request's blocks tail first; hashed ones to the back, others to the front."""
        first: list[Block] = []
        for block in reversed(blocks):
            block.ref_cnt -= 1
            if block.ref_cnt == 0:
                if block.identity is not None:
                    self.free_queue.append(block)
                else:
                    first.append(block)
        # vLLM's prepend_n: the unhashed blocks go to the front as one run, in freeing order
        # (tail first), so the request's last block is the next one allocated.
        self.free_queue.extendleft(reversed(first))


# --------------------------------------------------------------------------------------------
# Waiting queues (SCHEDULER.md d)
# --------------------------------------------------------------------------------------------


class FcfsQueue:
    """FCFS waiting queue: arrivals at the back, preempted requests at the head."""

    def __init__(self) -> None:
        self.q: deque[Request] = deque()

    def add(self, req: Request) -> None:
        self.q.append(req)

    def prepend(self, req: Request) -> None:
        self.q.appendleft(req)

    def peek(self) -> Request:
        return self.q[0]

    def pop(self) -> Request:
        return self.q.popleft()

    def ordered(self) -> list[Request]:
        return list(self.q)

    def remove(self, req: Request) -> None:
        self.q.remove(req)

    def __len__(self) -> int:
        return len(self.q)


class PriorityQueue:
    """Priority waiting queue: a min-heap on (priority, arrival_time, request_id)."""

    def __init__(self) -> None:
        self.heap: list[tuple[tuple[int, float, str], Request]] = []

    def add(self, req: Request) -> None:
        heapq.heappush(self.heap, (req.sort_key(), req))

    prepend = add  # "prepend" has no meaning in a heap: the request goes back by its key

    def peek(self) -> Request:
        return self.heap[0][1]

    def pop(self) -> Request:
        return heapq.heappop(self.heap)[1]

    def ordered(self) -> list[Request]:
        return [req for _, req in sorted(self.heap, key=lambda item: item[0])]

    def remove(self, req: Request) -> None:
        self.heap = [item for item in self.heap if item[1] is not req]
        heapq.heapify(self.heap)

    def __len__(self) -> int:
        return len(self.heap)


# --------------------------------------------------------------------------------------------
# The scheduler (SCHEDULER.md a, c, f)
# --------------------------------------------------------------------------------------------


def cdiv(a: int, b: int) -> int:
    """Ceiling division."""
    return -(-a // b)


class Scheduler:
    """One `schedule()` plus one output update per step, exactly as SCHEDULER.md lays them out."""

    def __init__(self, settings: Settings) -> None:
        self.s = settings
        self.pool = BlockPool(settings.num_gpu_blocks, settings.enable_prefix_caching)
        self.running: list[Request] = []
        self.waiting: FcfsQueue | PriorityQueue = (
            PriorityQueue() if settings.policy == "priority" else FcfsQueue()
        )
        self.watermark_blocks = int(settings.watermark * settings.num_gpu_blocks)

    # ---- KV manager ------------------------------------------------------------------------

    def find_prefix_hits(self, req: Request) -> list[Block]:
        """Longest run of leading cached full blocks, capped at num_tokens - 1 tokens (b5)."""
        if not self.s.enable_prefix_caching:
            return []
        bs = self.s.block_size
        hits: list[Block] = []
        for j in range((req.num_tokens - 1) // bs):
            block = self.pool.lookup(req.block_identity(j, bs))
            if block is None:
                break
            hits.append(block)
        return hits

    def allocate(
        self,
        req: Request,
        num_new_tokens: int,
        hits: list[Block] | None = None,
        admission: bool = False,
    ) -> bool:
        """`allocate_slots`: grow the request's blocks for this step, or return False (b2-b4)."""
        hits = hits or []
        bs = self.s.block_size
        computed = req.num_computed_tokens + len(hits) * bs
        evictable_hits = sum(1 for b in hits if b.ref_cnt == 0)
        watermark = self.watermark_blocks if admission and self.running else 0
        if admission and self.s.scheduler_reserve_full_isl:
            full = cdiv(req.num_tokens, bs) - len(hits) - len(req.blocks) + evictable_hits
            if full + watermark > self.pool.num_free:
                return False
        needed = cdiv(computed + num_new_tokens, bs) - len(hits) - len(req.blocks)
        needed = max(needed, 0)
        if needed + evictable_hits + watermark > self.pool.num_free:
            return False
        if hits:
            self.pool.touch(hits)
            req.blocks.extend(hits)
            req.num_cached_blocks = len(hits)
        req.blocks.extend(self.pool.take_new(needed))
        if self.s.enable_prefix_caching:
            upto = min(computed + num_new_tokens, req.num_tokens) // bs
            for j in range(req.num_cached_blocks, upto):
                self.pool.cache(req.blocks[j], req.block_identity(j, bs))
            req.num_cached_blocks = max(req.num_cached_blocks, upto)
        return True

    def free_request(self, req: Request) -> None:
        """Give back all of a request's blocks."""
        self.pool.free(req.blocks)
        req.blocks = []
        req.num_cached_blocks = 0

    # ---- schedule() ------------------------------------------------------------------------

    def cap(self, n: int, threshold_on: bool) -> int:
        """`long_prefill_token_threshold`, when active this step. vLLM 0.34 applies it only
        with chunked prefill on (SCHEDULER.md h1); 0.33 applied it either way."""
        t = self.s.long_prefill_token_threshold
        if self.s.vllm_version != "0.33" and not self.s.enable_chunked_prefill:
            return n
        if threshold_on and 0 < t < n:
            return t
        return n

    def cache_aware_reorder(self) -> None:
        """vLLM 0.34's `_reorder_waiting_by_cached_prefix` (SCHEDULER.md h2): FCFS with prefix
        caching, KV usage at least the threshold: the plain WAITING requests (never preempted,
        nothing computed) among the first `window` of the queue are put in their own slots in
        order of cached prompt tokens, most first, queue order among equals."""
        window = self.s.cache_aware_admission_window
        if not (window and self.s.enable_prefix_caching and self.s.policy == "fcfs"):
            return
        if len(self.waiting) < 2:
            return
        usage = 1.0 - self.pool.num_free / self.pool.usable
        if usage < self.s.cache_aware_admission_threshold:
            return
        head = self.waiting.ordered()[:window]
        slots = [i for i, r in enumerate(head) if r.status == WAITING and not r.num_computed_tokens]
        if len(slots) < 2:
            return
        cached = {i: len(self.find_prefix_hits(head[i])) * self.s.block_size for i in slots}
        order = sorted(slots, key=lambda i: (-cached[i], i))
        reordered = list(head)
        for slot, source in zip(slots, order, strict=True):
            reordered[slot] = head[source]
        rest = self.waiting.ordered()[window:]
        self.waiting.q = deque(reordered + rest)

    def pick_victim(self) -> Request:
        """FCFS: the last of `running`; priority: the largest (priority, arrival_time) (c2)."""
        if self.s.policy == "priority":
            return max(self.running, key=lambda r: (r.priority, r.arrival_time))
        return self.running[-1]

    def preempt(self, req: Request) -> None:
        """Recompute preemption: free everything, back to the waiting queue (c4)."""
        self.free_request(req)
        req.status = PREEMPTED
        req.num_computed_tokens = 0
        req.num_output_placeholders = 0  # async: an output still in flight for it is stale
        req.num_preemptions += 1
        self.waiting.prepend(req)

    def schedule(self, step: int) -> dict[str, Any]:
        """One `Scheduler.schedule()` call; returns what this step scheduled."""
        budget = self.s.max_num_batched_tokens
        threshold_on = len(self.running) + len(self.waiting) > 1
        scheduled: dict[Request, int] = {}
        preempted: list[Request] = []
        new: list[Request] = []
        resumed: list[Request] = []

        # RUNNING loop (a3, c, f1)
        i = 0
        while i < len(self.running) and budget > 0:
            req = self.running[i]
            if (
                req.num_output_placeholders > 0
                and req.num_computed_tokens + 2 - req.num_output_placeholders
                >= req.prompt_len + req.max_tokens
            ):
                i += 1  # async: the step in flight already produces its last token
                continue
            n = req.num_tokens + req.num_output_placeholders - req.num_computed_tokens
            n = self.cap(n, threshold_on)
            n = min(n, budget)
            n = min(n, self.s.max_model_len - req.num_computed_tokens - 1)
            if n <= 0:
                i += 1
                continue
            self_preempted = False
            while not self.allocate(req, n):
                victim = self.pick_victim()
                pos = self.running.index(victim)
                self.running.remove(victim)
                if victim in scheduled:
                    budget += scheduled.pop(victim)
                if pos < i:
                    i -= 1
                self.preempt(victim)
                preempted.append(victim)
                if victim is req:
                    self_preempted = True
                    break
            if self_preempted:
                if self.s.policy == "priority":
                    continue  # index stays: it now points at the next running request
                break
            scheduled[req] = n
            budget -= n
            i += 1

        # WAITING loop (a4), only in a step without preemption
        if not preempted:
            self.cache_aware_reorder()
            while len(self.waiting) and budget > 0:
                if len(self.running) >= self.s.max_num_seqs:
                    break
                req = self.waiting.peek()
                hits = self.find_prefix_hits(req) if req.num_computed_tokens == 0 else []
                n = req.num_tokens - req.num_computed_tokens - len(hits) * self.s.block_size
                n = self.cap(n, threshold_on)
                if not self.s.enable_chunked_prefill and n > budget:
                    break
                n = min(n, budget)
                if not self.allocate(req, n, hits, admission=True):
                    break
                self.waiting.pop()
                req.num_computed_tokens += len(hits) * self.s.block_size
                self.running.append(req)
                if req.status == PREEMPTED:
                    resumed.append(req)
                else:
                    new.append(req)
                    req.first_scheduled_step = step
                req.status = RUNNING
                scheduled[req] = n
                budget -= n

        # _update_after_schedule (a5); async: a request that will sample gets a placeholder
        sampled: list[Request] = []
        for req, n in scheduled.items():
            req.num_computed_tokens += n
            if req.num_computed_tokens >= req.num_tokens + req.num_output_placeholders:
                sampled.append(req)
                if self.s.async_scheduling:
                    req.num_output_placeholders += 1
        return {
            "scheduled": scheduled,
            "sampled": sampled,
            "preempted": preempted,
            "new": new,
            "resumed": resumed,
        }

    # ---- update_from_output() ----------------------------------------------------------------

    def update_from_output(self, step: int, sampled: list[Request]) -> list[Request]:
        """The output of `step`: append each sampled token, stop finished requests and free
        their blocks (a6). Async (g2, g6): a running request gives back a placeholder and
        hashes its newly full blocks; a preempted one (stale output) keeps its reset counters,
        and if the token was its last it finishes from the waiting queue."""
        finished: list[Request] = []
        for req in sampled:
            was_running = req.status == RUNNING
            req.num_output_tokens += 1
            if req.first_token_step is None:
                req.first_token_step = step
            if self.s.async_scheduling and was_running:
                req.num_output_placeholders -= 1
                if self.s.enable_prefix_caching:
                    self.cache_full_blocks(
                        req, req.num_computed_tokens - req.num_output_placeholders
                    )
            if req.num_output_tokens >= req.max_tokens or req.num_tokens >= self.s.max_model_len:
                req.status = FINISHED
                req.finish_step = step
                if was_running:
                    self.running.remove(req)
                else:
                    self.waiting.remove(req)
                self.free_request(req)
                finished.append(req)
        return finished

    def cache_full_blocks(self, req: Request, num_tokens: int) -> None:
        """Hash the request's blocks that `num_tokens` tokens fill (those not hashed yet)."""
        bs = self.s.block_size
        upto = num_tokens // bs
        for j in range(req.num_cached_blocks, upto):
            self.pool.cache(req.blocks[j], req.block_identity(j, bs))
        req.num_cached_blocks = max(req.num_cached_blocks, upto)


def _ids(reqs: list[Request]) -> list[str]:
    return [r.request_id for r in reqs]


def replay(scenario: dict[str, Any]) -> dict[str, Any]:
    """Replay a scenario (oracle schema: `settings`, `requests`) step by step.

    Returns `{"steps": [...], "per_request": {...}}` in the oracle schema. Raises
    `ConfigRejected` for a configuration or request vLLM would refuse.
    """
    settings = parse_settings(scenario["settings"], scenario.get("vllm_version"))
    requests = parse_requests(scenario["requests"], settings)
    sched = Scheduler(settings)
    by_step: dict[int, list[Request]] = {}
    for req in requests:
        by_step.setdefault(req.arrival_step, []).append(req)

    steps: list[dict[str, Any]] = []
    unfinished = len(requests)
    step = 0
    in_flight: list[Request] = []  # async: the requests that sampled in the previous step

    def after_output(record: dict[str, Any], finished: list[Request]) -> None:
        record["finished_req_ids"] = _ids(finished)
        record["kv_blocks_free"] = sched.pool.num_free
        record["kv_blocks_used"] = sched.pool.usable - sched.pool.num_free

    while unfinished > 0:
        step += 1
        if settings.max_steps is not None and step > settings.max_steps:
            break
        arrived = by_step.get(step, [])
        for req in arrived:
            sched.waiting.add(req)
        out = sched.schedule(step)
        kv_free_sched = sched.pool.num_free
        running_after = _ids(sched.running)
        waiting_after = _ids(sched.waiting.ordered())
        counts = {r.request_id: n for r, n in out["scheduled"].items()}
        record = {
            "step": step,
            "arrived": _ids(arrived),
            "num_scheduled_tokens": counts,
            "total_scheduled_tokens": sum(counts.values()),
            "new_req_ids": _ids(out["new"]),
            "resumed_req_ids": _ids(out["resumed"]),
            "preempted_req_ids": _ids(out["preempted"]),
            "sampled_req_ids": _ids(out["sampled"]),
            "finished_req_ids": [],
            "running_after_schedule": running_after,
            "waiting_after_schedule": waiting_after,
            "num_running": len(running_after),
            "num_waiting": len(waiting_after),
            "kv_blocks_free_after_schedule": kv_free_sched,
            "kv_blocks_used_after_schedule": sched.pool.usable - kv_free_sched,
        }
        steps.append(record)
        if settings.async_scheduling:
            # the previous step's output arrives now, after this step was scheduled (g1)
            if steps[:-1]:
                finished = sched.update_from_output(step - 1, in_flight)
                after_output(steps[-2], finished)
                unfinished -= len(finished)
            in_flight = out["sampled"]
            after_output(record, [])  # until its own output is processed
        else:
            finished = sched.update_from_output(step, out["sampled"])
            after_output(record, finished)
            unfinished -= len(finished)
    if settings.async_scheduling and steps:
        # the loop is over: the last step's output is processed once more, no schedule()
        after_output(steps[-1], sched.update_from_output(steps[-1]["step"], in_flight))
    per_request = {
        r.request_id: {
            "first_scheduled_step": r.first_scheduled_step,
            "first_token_step": r.first_token_step,
            "finish_step": r.finish_step,
            "num_preemptions": r.num_preemptions,
            "num_output_tokens": r.num_output_tokens,
        }
        for r in requests
    }
    return {"steps": steps, "per_request": per_request}
