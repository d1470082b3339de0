"""The budget-fill bookkeeping: how each scheduler step spends its token budget.

From a `sim.run.Run` recorded with `record_detail=True`, each step's tokens are classified as
decode tokens of requests that are already generating, prompt chunks (new prompts) and
recomputed tokens (requests resuming after a preemption), up to `max_num_batched_tokens`.

Why a shared module: several lessons show the same picture (one budget, decode first, chunks
after), so the classification of scheduled tokens lives in one place and is tested once.
`classify(run)` does the bookkeeping; each lesson draws the picture its own way (One token
budget's Fig. 8.2 in lessons/token_budget/figures.py, the step loop's batch panel).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lessons.kit.figures import kit_labels as labels
from sim.run import Run

DECODE, PROMPT, RECOMPUTE = 0, 1, 2
KIND_NAMES = tuple(labels()[f"kind-{k}"] for k in ("decode", "prompt", "recompute"))
MAX_LABELLED_STEPS = 12
VEIL = "rgba(128, 128, 128, 0.30)"


@dataclass(frozen=True, eq=False)
class BudgetFill:
    """Per step (index k-1 for step k): tokens by kind, and the (request, tokens, kind) items."""

    steps: np.ndarray
    budget: int
    decode: np.ndarray
    prompt: np.ndarray
    recompute: np.ndarray
    items: tuple[tuple[tuple[int, int, int], ...], ...]

    @property
    def used(self) -> np.ndarray:
        return self.decode + self.prompt + self.recompute

    @property
    def unused(self) -> np.ndarray:
        return self.budget - self.used

    def request_tokens(self, req: int, kind: int | None = None) -> np.ndarray:
        """Tokens scheduled for request `req` in each step (of one kind, or all kinds)."""
        out = np.zeros(self.steps.shape[0], dtype=np.int64)
        for k, items in enumerate(self.items):
            out[k] = sum(t for r, t, kd in items if r == req and (kind is None or kd == kind))
        return out


def classify(run: Run) -> BudgetFill:
    """Sort every scheduled token of a detailed run into decode, prompt chunk or recompute.

    A request is decoding once it has sampled a token and is not recomputing; a preemption puts
    it into recompute until it samples again; before its first token it is prefilling its prompt.
    """
    if run.detail is None:
        raise ValueError("budget timelines need a run recorded with record_detail=True")
    n = run.workload.num_requests
    sampled_any = np.zeros(n, dtype=bool)
    recomputing = np.zeros(n, dtype=bool)
    num_steps = len(run.detail)
    tokens = np.zeros((3, num_steps), dtype=np.int64)
    items: list[tuple[tuple[int, int, int], ...]] = []
    for k, d in enumerate(run.detail):
        recomputing[d.preempted] = True
        step_items = []
        for req, tok in zip(d.scheduled_req.tolist(), d.scheduled_tokens.tolist(), strict=True):
            if recomputing[req]:
                kind = RECOMPUTE
            elif sampled_any[req]:
                kind = DECODE
            else:
                kind = PROMPT
            tokens[kind, k] += tok
            step_items.append((req, tok, kind))
        items.append(tuple(step_items))
        sampled_any[d.sampled] = True
        recomputing[d.sampled] = False
    return BudgetFill(
        steps=np.arange(1, num_steps + 1),
        budget=int(run.config.max_num_batched_tokens),
        decode=tokens[DECODE],
        prompt=tokens[PROMPT],
        recompute=tokens[RECOMPUTE],
        items=tuple(items),
    )
