"""Named workloads the lessons share, built once here instead of in every lesson.

`stream_then_prompt`: users are streaming answers when one long prompt arrives. It is the
course's central picture (one token budget, decode first, chunked prefill, choosing the budget):
`users` requests of `user_prompt_tokens` arrive at step 1, and once every one of them is
decoding, the long prompt arrives. Their outputs are long enough by default to keep them
decoding until the long prompt has produced its first tokens, so every step in between shows
the budget shared between decodes and prompt chunks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike

from sim.kv import cdiv
from sim.scheduler import Engine
from sim.timed import timer_for
from sim.workload import Workload


@dataclass(frozen=True)
class StreamThenPrompt:
    """The scenario's settings. `arrival_step` None: the step after every user has started
    decoding under `budget` (plus `lead_steps` decode-only steps before the prompt arrives)."""

    users: int
    user_prompt_tokens: int
    prompt_tokens: int
    budget: int
    user_output_tokens: int | None = None
    long_output_tokens: int = 4
    lead_steps: int = 1
    arrival_step: int | None = None

    @property
    def long_index(self) -> int:
        """The long prompt's request index (it comes after the users)."""
        return self.users

    def warm_steps(self) -> int:
        """Steps until every user has had its prompt read (all are decoding after this)."""
        if self.users == 0:
            return 0
        return cdiv(self.users * self.user_prompt_tokens, self.budget)

    def arrival(self) -> int:
        """The step at which the long prompt arrives."""
        if self.arrival_step is not None:
            return self.arrival_step
        return self.warm_steps() + self.lead_steps + 1

    def chunk_steps(self) -> int:
        """Steps the long prompt needs next to the users' decodes (one chunk per step)."""
        return cdiv(self.prompt_tokens, max(self.budget - self.users, 1))

    def outputs(self) -> int:
        """Each user's output length: given, or enough to outlast the long prompt's chunks."""
        if self.user_output_tokens is not None:
            return self.user_output_tokens
        return self.arrival() + self.chunk_steps() + self.long_output_tokens + 4

    def blocks_needed(self, block_size: int = 16) -> int:
        """KV blocks that hold every request at its longest, plus the null block."""
        users = self.users * cdiv(self.user_prompt_tokens + self.outputs(), block_size)
        long = cdiv(self.prompt_tokens + self.long_output_tokens, block_size)
        return users + long + 1

    def workload(self, *, request_ids: list[str] | None = None) -> Workload:
        return Workload.build(
            [self.user_prompt_tokens] * self.users + [self.prompt_tokens],
            [self.outputs()] * self.users + [self.long_output_tokens],
            arrival_step=[1] * self.users + [self.arrival()],
            request_ids=request_ids,
        )


def stream_then_prompt(
    users: int, user_prompt_tokens: int, prompt_tokens: int, budget: int, **options
) -> StreamThenPrompt:
    """Users stream, then a long prompt arrives (see the module docstring)."""
    return StreamThenPrompt(users, user_prompt_tokens, prompt_tokens, budget, **options)


# ---------------------------------------------------------------------------------------------
# Appended for the lesson "One token budget": the same picture with a cached prefix, and its
# arrival step found by a run (the users' decodes take budget while the rest are read).


@dataclass(frozen=True)
class StreamThenCachedPrompt(StreamThenPrompt):
    """`stream_then_prompt` where the long prompt's first `cached_tokens` tokens were seen before.

    An earlier conversation that carried them (the same system prompt) arrives with the users
    and ends after one output token; with prefix caching on, its KV blocks stay in the cache,
    and the long prompt, which shares that prefix, finds them there. The earlier conversation
    comes right after the users in request order, the long prompt last. With `cached_tokens` 0
    there is no earlier conversation and the workload is stream_then_prompt's own.
    """

    cached_tokens: int = 0

    @property
    def earlier(self) -> int:
        """1 if there is an earlier conversation, else 0."""
        return 1 if self.cached_tokens else 0

    @property
    def before(self) -> int:
        """Requests that come before the long prompt (the users and the earlier conversation)."""
        return self.users + self.earlier

    @property
    def long_index(self) -> int:
        return self.before

    def warm_steps(self) -> int:
        if self.before == 0:
            return 0
        return cdiv(self.users * self.user_prompt_tokens + self.cached_tokens, self.budget)

    def blocks_needed(self, block_size: int = 16) -> int:
        earlier = self.earlier * cdiv(self.cached_tokens + 1, block_size)
        return super().blocks_needed(block_size) + earlier

    def _columns(self) -> dict[str, list[int]]:
        users, earlier, cached = self.users, self.earlier, self.cached_tokens
        return {
            "prompt_tokens": [self.user_prompt_tokens] * users
            + [cached] * earlier
            + [self.prompt_tokens],
            "output_tokens": [self.outputs()] * users + [1] * earlier + [self.long_output_tokens],
            "prefix_id": [-1] * users + [1] * earlier + [1 if earlier else -1],
            "prefix_tokens": [0] * users + [cached] * earlier + [cached],
        }

    def workload(self, *, request_ids: list[str] | None = None) -> Workload:
        c = self._columns()
        return Workload.build(
            c["prompt_tokens"],
            c["output_tokens"],
            arrival_step=[1] * self.before + [self.arrival()],
            prefix_id=c["prefix_id"],
            prefix_tokens=c["prefix_tokens"],
            request_ids=request_ids,
        )

    def before_workload(self) -> Workload:
        """The requests before the long prompt alone, timed (sim.timed), all arriving at 0 s: a
        run of it shows when every one of them has sampled its first token (see `settled`)."""
        c = {k: v[: self.before] for k, v in self._columns().items()}
        return Workload.build(
            c["prompt_tokens"],
            c["output_tokens"],
            arrival_s=[0.0] * self.before,
            prefix_id=c["prefix_id"],
            prefix_tokens=c["prefix_tokens"],
        )

    def settled(self, first_token_steps: list[int]) -> StreamThenCachedPrompt:
        """The scenario with its arrival step found by a run: `first_token_steps` are the
        first-token steps of the requests before the long prompt (from a run of
        `before_workload()`); the long prompt arrives `lead_steps` decode-only steps after the
        last of them. Unlike `warm_steps()`, this counts the budget the users' decodes take."""
        last = max((int(s) for s in first_token_steps), default=0)
        return replace(self, arrival_step=last + self.lead_steps + 1 if self.before else 1)


def stream_then_cached_prompt(
    users: int,
    user_prompt_tokens: int,
    prompt_tokens: int,
    budget: int,
    cached_tokens: int = 0,
    **options,
) -> StreamThenCachedPrompt:
    """stream_then_prompt with the long prompt's first `cached_tokens` tokens already cached."""
    return StreamThenCachedPrompt(
        users, user_prompt_tokens, prompt_tokens, budget, cached_tokens=cached_tokens, **options
    )


# ---------------------------------------------------------------------------------------------
# Appended for the lesson "Chunked prefill versus the whole prompt at once": a timed run of the
# scenario in which the long prompt arrives just as its arrival step starts.

ARRIVAL_EARLY_S = 1e-9  # the long prompt arrives this much before its step starts (see timed_run)


def timed_run(scenario: StreamThenPrompt, config, deployment, *, record_detail: bool = False):
    """A timed run (sim.timed) of `scenario.workload()` in which the long prompt is admitted in
    step `scenario.arrival()`, as in a step replay, and its TTFT counts from that step's start.

    Every request before the long prompt arrives at 0 s. The long prompt is held back
    (`Engine.hold`) while the engine runs the steps before its arrival step; the clock then
    says when that step starts (or when the last of them ended, if the engine ran out of work
    sooner), and the long prompt arrives then, ARRIVAL_EARLY_S early so that float rounding
    cannot push it into the next step (`Engine.pin_arrival`); the same engine goes on to the
    end. Returns that `sim.run.Run`: `run.arrival_s[scenario.long_index]` is the moment the
    long prompt arrived.
    """
    wl = scenario.workload()
    late = scenario.long_index
    arrival_s = np.zeros(wl.num_requests)
    arrival_s[late] = 1.0  # orders it last; it arrives when pinned
    held = replace(wl, arrival_s=arrival_s, arrival_step=None)
    engine = Engine(
        config,
        held,
        timer=timer_for(deployment, async_scheduling=config.async_scheduling),
        record_detail=record_detail,
    )
    engine.hold(late)
    engine.advance(until_step=scenario.arrival() - 1)
    engine.pin_arrival(late, max(engine.now_s - ARRIVAL_EARLY_S, 0.0) if engine.step else 0.0)
    return engine.run()


# ---------------------------------------------------------------------------------------------
# Appended for the lesson "The sequence budget and the throughput curve": steady decode steps of
# N sequences at once, for every N of a sweep, as step_costs inputs.


def decode_sweep(num_seqs: ArrayLike, context_tokens: int) -> dict[str, np.ndarray]:
    """Steady decode steps, one per value N of `num_seqs`: N running sequences, each holding
    `context_tokens` computed tokens, decode one token apiece (what vLLM's scheduler gives every
    running request when nothing else waits). Returns the inputs of `sim.cost.step_costs` as
    int64 arrays: N query tokens from N sequences, N x context KV tokens read, N x (context + 1)
    attention pairs.
    """
    n = np.asarray(num_seqs, dtype=np.int64).reshape(-1)
    ctx = int(context_tokens)
    return {
        "query_tokens": n,
        "num_seqs": n,
        "kv_read_tokens": n * ctx,
        "attn_pairs": n * (ctx + 1),
    }
