"""vLLM's admission control: the API server's two limits on what it lets in (both off by default).

vLLM 0.33 (`AsyncLLM.check_admission`, before a request reaches the engine) refuses a new request
with HTTP 503 when
- `max_num_queued_reqs` is set and the unfinished requests (waiting plus running, as the output
  processor counts them) plus the new one would exceed it: `unfinished + n > limit`;
- else when `max_num_queued_tokens` is set and the prompt tokens of the requests that have not
  produced their first token yet are already at the limit or above: `queued >= limit`. The new
  prompt is not counted, and a partly prefilled prompt counts in full.
The request limit is checked first, so a request refused by both counts under it. A refused
request never reaches the scheduler.

`check_admission` is the rule for one request. `admit_in_order` applies it to the arrivals that
one state sees (sim/scheduler.py checks the arrivals of a step against the state of the outputs
processed before each arrived), vectorized: each admitted arrival joins the counts of the next,
so the admitted ones are a prefix and the rest share one reason.
"""

from __future__ import annotations

import numpy as np

ADMITTED, QUEUED_REQS, QUEUED_TOKENS = 0, 1, 2
REASONS = {QUEUED_REQS: "max_num_queued_reqs", QUEUED_TOKENS: "max_num_queued_tokens"}


def check_admission(
    num_unfinished: int,
    num_queued_tokens: int,
    max_num_queued_reqs: int | None,
    max_num_queued_tokens: int | None,
    n: int = 1,
) -> int:
    """ADMITTED, or the code of the limit that refuses a request asking for n sequences."""
    if max_num_queued_reqs is not None and num_unfinished + n > max_num_queued_reqs:
        return QUEUED_REQS
    if max_num_queued_tokens is not None and num_queued_tokens >= max_num_queued_tokens:
        return QUEUED_TOKENS
    return ADMITTED


def admit_in_order(
    prompt_tokens: np.ndarray,
    num_unfinished: int,
    num_queued_tokens: int,
    max_num_queued_reqs: int | None,
    max_num_queued_tokens: int | None,
) -> tuple[int, int]:
    """Arrivals checked one after another against one state: (how many of the first are
    admitted, the reason code of all the others, ADMITTED if there are none)."""
    prompt = np.asarray(prompt_tokens, dtype=np.int64)
    m = prompt.shape[0]
    if m == 1:  # one arrival: the rule itself
        code = check_admission(
            num_unfinished, num_queued_tokens, max_num_queued_reqs, max_num_queued_tokens
        )
        return int(code == ADMITTED), code
    ahead = np.arange(m, dtype=np.int64)  # arrivals admitted before this one, if all were
    ok = np.ones(m, dtype=bool)
    if max_num_queued_reqs is not None:
        ok &= num_unfinished + ahead + 1 <= max_num_queued_reqs
    queued = num_queued_tokens + np.concatenate(([0], np.cumsum(prompt)))
    if max_num_queued_tokens is not None:
        ok &= queued[:m] < max_num_queued_tokens
    taken = int(np.argmin(ok)) if not ok.all() else m
    if taken == m:
        return m, ADMITTED
    reason = check_admission(
        num_unfinished + taken, int(queued[taken]), max_num_queued_reqs, max_num_queued_tokens
    )
    return taken, reason


def rejected_counts(codes: np.ndarray | None) -> dict[str, int]:
    """Refused requests in total and by limit, from a run's per-request codes (None: none)."""
    codes = np.zeros(0, np.int8) if codes is None else np.asarray(codes)
    counts = {name: int(np.count_nonzero(codes == code)) for code, name in REASONS.items()}
    return {"total": int(np.count_nonzero(codes)), **counts}
