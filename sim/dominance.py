"""When one finished run answers for another configuration without running it (used by sweeps).

vLLM's scheduler reads `max_num_batched_tokens` and `max_num_seqs` only as limits (SCHEDULER.md
a3, a4): the budget caps `min(num_new_tokens, token_budget)` and ends the loops when it reaches 0
(or, with chunked prefill off, when the next prompt does not fit); `max_num_seqs` ends the waiting
loop when the running list is full. If a finished run never came near a limit, raising that limit
changes no decision, so the run with the higher limit is the same run, step for step.

What "never came near" means, read off the run's own per-step arrays:

- the sequence limit never bound if no step ended with `max_num_seqs` requests running (the
  running list only grows inside the waiting loop, so it never reached the limit there either);
- the token budget never bound if every step scheduled fewer tokens than the budget (a cut
  prompt, or a loop stopped by an empty budget, leaves a step at exactly the budget); with chunked
  prefill off, every step must also leave room for the longest possible prompt (`max_model_len`),
  because a prompt that does not fit ends the waiting loop without filling the budget. A policy
  that may preempt a request already scheduled in the step gives that request's tokens back, which
  could leave a cut request in a step below the budget; for such policies (priority) a run lends
  its budget only if it preempted nobody. This guard is conservative: we have not found a run
  where it changes the answer. FCFS (victim = the last running request) needs no guard.

tests/test_sweep.py checks the rule against separate runs on random workloads.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from sim.config import SchedulerConfig
from sim.policy import POLICY_REGISTRY
from sim.run import Run

LIMITS = ("max_num_batched_tokens", "max_num_seqs")


def limits_key(config: SchedulerConfig) -> tuple:
    """Every setting of `config` except the two limits (runs that differ only in limits)."""
    return tuple(
        getattr(config, f.name) for f in dataclasses.fields(config) if f.name not in LIMITS
    )


def budget_never_bound(run: Run) -> bool:
    """True if a larger `max_num_batched_tokens` would make every decision of `run` again."""
    cfg = run.config
    budget = cfg.max_num_batched_tokens
    peak = int(run.num_scheduled_tokens.max()) if run.num_steps else 0
    if peak >= budget:
        return False
    if not cfg.enable_chunked_prefill and peak + cfg.max_model_len > budget:
        return False
    victim_is_last = getattr(POLICY_REGISTRY[cfg.policy], "victim_is_last", False)
    return victim_is_last or run.total_preemptions == 0


def seqs_never_bound(run: Run) -> bool:
    """True if a larger `max_num_seqs` would make every decision of `run` again."""
    peak = int(run.num_running.max()) if run.num_steps else 0
    return peak < run.config.max_num_seqs


@dataclass(frozen=True)
class Slack:
    """What a finished run says about its limits: which of them it never reached."""

    config: SchedulerConfig
    budget_free: bool
    seqs_free: bool


def slack(run: Run) -> Slack:
    """The limits `run` never reached (see the module docstring)."""
    return Slack(run.config, budget_never_bound(run), seqs_never_bound(run))


def answers_for(done: Slack, config: SchedulerConfig) -> bool:
    """True if `config` would give exactly the run `done` describes (same steps, same records)."""
    mine = done.config
    if limits_key(mine) != limits_key(config):
        return False
    b0, b1 = mine.max_num_batched_tokens, config.max_num_batched_tokens
    s0, s1 = mine.max_num_seqs, config.max_num_seqs
    if b1 < b0 or s1 < s0:
        return False
    return (b1 == b0 or done.budget_free) and (s1 == s0 or done.seqs_free)
