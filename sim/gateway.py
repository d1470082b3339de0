"""A gateway's queue timeout: a teaching model, not part of vLLM.

Gateways in front of an inference server (a proxy, an API gateway) often give each request a
deadline: a request that the server has not started within `gateway_timeout_s` seconds of its
arrival is answered with HTTP 504 and cancelled, and vLLM aborts a request whose client has gone.
Here a request still waiting, never scheduled, when a step starts at or after its deadline
leaves the waiting queue for good: it never runs and counts as timed out. A request that has
started (even if preempted since) is not cut off. With vLLM's admission limits on, a timed-out
request no longer counts against them.

Windows (sim/window.py) stop before the first step that starts at or after the earliest deadline
of a request that could still time out, and quiet runs (sim/quiet.py, prefix caching) are not
taken while such a request waits, so runs stay exact. Expiry comes after the step's arrivals
join: an arrival at the very moment a request expires is checked against vLLM's admission
counts that still hold the expiring request (a modelling choice: the gateway answers it first).
"""

from __future__ import annotations

import numpy as np


class GatewayMixin:
    """Adds `_expire()` and `_next_deadline()` to the Engine (scheduler.py)."""

    def _expiring(self) -> np.ndarray:
        """Waiting requests that have never been scheduled: those a timeout can still cut off."""
        W = self.waiting
        return W[self.first_sched[W] == 0]

    def _next_deadline(self, arriving: np.ndarray) -> float:
        """The earliest deadline among the waiting requests that can time out and `arriving`
        (inf without a timeout)."""
        if self.timeout_s is None:
            return np.inf
        ids = np.concatenate((self._expiring(), arriving))
        return float(self.deadline_s[ids].min()) if ids.shape[0] else np.inf

    def _expire(self) -> bool:
        """Remove the waiting requests whose deadline has come by this step's start; True if
        that leaves nothing to run (no step then: the engine is idle)."""
        if self.timeout_s is None or not self.waiting.shape[0]:
            return False
        W = self.waiting
        late = (self.first_sched[W] == 0) & (self.deadline_s[W] <= self.now_s)
        if not late.any():
            return False
        gone = W[late]
        self.waiting = W[~late]
        self.timed_out[gone] = True
        self.num_timed_out += gone.shape[0]
        self.status[gone] = 0
        if self.cfg.admission_control:  # they leave vLLM's counts too
            self.num_admitted -= gone.shape[0]
            self.admitted_prompt -= int(self.prompt[gone].sum())
        return not (self.running.shape[0] or self.waiting.shape[0])
