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

The rule itself is written once, in the engine's loop (sim/engine/kernel.py `_admission`), which
checks each arrival against the outputs processed before it arrived. This module names the
limits' reason codes and counts a run's refusals.
"""

from __future__ import annotations

import numpy as np

ADMITTED, QUEUED_REQS, QUEUED_TOKENS = 0, 1, 2
REASONS = {QUEUED_REQS: "max_num_queued_reqs", QUEUED_TOKENS: "max_num_queued_tokens"}


def rejected_counts(codes: np.ndarray | None) -> dict[str, int]:
    """Refused requests in total and by limit, from a run's per-request codes (None: none)."""
    codes = np.zeros(0, np.int8) if codes is None else np.asarray(codes)
    counts = {name: int(np.count_nonzero(codes == code)) for code, name in REASONS.items()}
    return {"total": int(np.count_nonzero(codes)), **counts}
