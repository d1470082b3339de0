"""Closed-loop workloads (`concurrency:clients=C,...`): arrivals that the run itself produces.

Benchmark clients such as `vllm bench serve --max-concurrency C`, AIPerf or genai-perf hold C
requests in flight: the first C requests are sent at 0 s, and each time one finishes (the end of
the step that produced its last token, its `finish_s`) the next unsent request, in list order,
is sent at that moment; several finishes at one moment send as many requests, in list order. So
arrival times are known only as the run goes. The Engine keeps them in its sorted arrival array
(the unsent ones at +inf) and `_release` fills them in; a released request joins the first step
that starts at or after its arrival, which is the step after its releaser's last one (under
async scheduling too: the last token is known when it is scheduled, sim/async_sched.py).

Windows stay exact: in a window, a finish at step f sends a request that arrives in step f + 1,
a step number, whatever the step times. `_closed_window` plans the window with those releases
computed inside it (`WindowMixin._plan(closed=True)`), prices its steps with one cost call and
sets the released requests' times to the ends of their releasers' steps.
"""

from __future__ import annotations

import numpy as np

from sim.step_arrays import running_kv_read


class ClosedLoopMixin:
    """Adds the closed loop's releases to the Engine (sim/scheduler.py)."""

    def _release(self, count: int, time_s: float) -> None:
        """`count` requests finished at `time_s`: as many unsent ones arrive then."""
        lo = self.unsent
        hi = min(self.n, lo + count)
        self.arrival_sorted[lo:hi] = time_s
        self.unsent = hi

    def _closed_window(self, T: int, R: np.ndarray, comp0: np.ndarray) -> int:
        """A timed window of a closed loop (see the module docstring); returns its length."""
        ptr = self.arrival_ptr
        arr_ids = self.arrival_order[ptr : self.unsent]  # sent already, arrive in step 0
        if R.shape[0] == 0 and self.waiting.shape[0] == 0 and arr_ids.shape[0] == 0:
            return 0
        arr_t = np.zeros(arr_ids.shape[0], dtype=np.int64)
        running = self._running_part(T, R, comp0)
        stop, admits, fin0, final0 = self._plan(T, R, comp0, arr_ids, arr_t, running, closed=True)
        if stop <= 0:
            return 0
        m = stop
        kv_r = running_kv_read(running[0], comp0, T)
        ms = np.asarray(
            self.timer(*self._step_shapes(m, running[2], kv_r, admits)), dtype=np.float64
        )
        ends = self.now_s + np.cumsum(ms) / 1e3
        starts = np.concatenate(([self.now_s], ends[:-1]))
        arrays = self._window_arrays(m, R, comp0, fin0, final0, admits)
        # every finish inside the window sends one request, in finishing order
        finj = arrays["finj"]
        fin = np.concatenate((fin0[(fin0 >= 0) & (fin0 < m)], finj[finj < m]))
        fin.sort(kind="stable")
        count = min(fin.shape[0], self.n - self.unsent)
        fin = fin[:count]
        land = fin + 1
        inside = land < m
        new_ids = np.arange(self.unsent, self.unsent + count)
        arr_ids = np.concatenate((arr_ids, new_ids[inside]))
        arr_t = np.concatenate((arr_t, land[inside]))
        # the times `Run.finish_s` gives the releasers (step start + duration), to the bit
        self._release_at(starts[fin] + ms[fin] / 1e3)
        self.now_s = float(starts[m - 1] + ms[m - 1] / 1e3)
        self.avg_step_ms = float(ms.mean())
        return self._apply_window(m, arrays, R, comp0, fin0, arr_ids, arr_t, starts, ms)

    def _release_at(self, times_s: np.ndarray) -> None:
        """One request sent at each of `times_s` (non-decreasing), the next unsent first."""
        lo = self.unsent
        hi = lo + times_s.shape[0]
        self.arrival_sorted[lo:hi] = times_s
        self.unsent = hi
