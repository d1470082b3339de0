"""A window's admissions (sim/window.py), chunked prompts included, and the prompt work they add
to each step.

A window admits requests from the waiting queue's head. Most get their whole prompt (or whole
recompute) in the step they are admitted, sample their first token in it and decode from the
next. A prompt longer than the budget the running decodes leave is chunked, as vLLM does with
chunked prefill: it takes the budget left in its admission step, then, at the tail of the running
list behind the decodes, the budget left in each later step, until its last chunk samples its first
token; only then can the next request be admitted (with what budget that step has left), so at
most one prompt is part-way at any step's end. `Admits` keeps, per admission, the step it is
admitted in (`t`) and the step it samples its first token in (`s`, the same unless chunked), and
for each chunked one its chunk sizes from `t` to `s`; also the tokens it computes when admitted and
the outputs it had (`nt`, `out`: prompt and nothing, or for a resumed request prompt plus its
outputs), and, for one preempted later in the same window, that step (`pre`). Requests running
when the window starts and preempted inside it are kept apart (`cut_running`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sim.kv import cdiv

NEVER = np.iinfo(np.int64).max // 4  # `pre` of a request not preempted inside the window


@dataclass
class Admits:
    """A plan's admissions in order, and its preemptions (see the module docstring)."""

    ids: list = field(default_factory=list)
    t: list = field(default_factory=list)  # admitted (first scheduled) in this step
    # samples its first token in this step; for one still part-way when the window ends, the
    # window's end (so `s >= m` marks it part-way at a cut of m steps)
    s: list = field(default_factory=list)
    spans: list = field(default_factory=list)  # (index into ids, chunk tokens on steps t .. s)
    nt: list = field(default_factory=list)  # tokens it computes from its admission on
    out: list = field(default_factory=list)  # outputs it had when admitted
    pre: list = field(default_factory=list)  # the step it is preempted in, or NEVER
    # requests running at the window's start and preempted inside it: their index in the
    # running list, the step, their last decode step had they not been, and their computed
    # tokens at that step
    cut: list = field(default_factory=list)

    @classmethod
    def whole(cls, ids: np.ndarray, t: np.ndarray, nt: np.ndarray, out: np.ndarray) -> Admits:
        """Admissions that each take their whole prompt in their admission step."""
        return cls(ids, t, t, [], nt, out, np.full(ids.shape[0], NEVER, dtype=np.int64))

    def add(
        self, r: int, t: int, s: int, chunks: np.ndarray | None = None, nt: int = 0, out: int = 0
    ) -> None:
        """Request r admitted at step t, first token at step s; `chunks`: its chunk sizes on
        steps t, t + 1, ... (None: its whole prompt at t = s); `nt` tokens to compute, `out`
        outputs it had."""
        if chunks is not None:
            self.spans.append((len(self.ids), chunks))
        self.ids.append(r)
        self.t.append(t)
        self.s.append(s)
        self.nt.append(nt)
        self.out.append(out)
        self.pre.append(NEVER)

    def cut_running(self, i: np.ndarray, t: int, last: np.ndarray, comp: np.ndarray) -> None:
        """Running requests i (indices into the window's running list) preempted in step t."""
        rows = zip(i.tolist(), [t] * i.shape[0], last.tolist(), comp.tolist(), strict=True)
        self.cut.extend(rows)

    def cuts(self) -> tuple[np.ndarray, ...]:
        """(index, step, last decode step had it not been, computed tokens then) of the running
        requests preempted inside the window, as arrays."""
        a = np.asarray(self.cut, dtype=np.int64).reshape(-1, 4)
        return a[:, 0], a[:, 1], a[:, 2], a[:, 3]

    def state(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(nt, out, pre) of the first n admissions, as arrays."""
        return (
            np.asarray(self.nt[:n], dtype=np.int64),
            np.asarray(self.out[:n], dtype=np.int64),
            np.asarray(self.pre[:n], dtype=np.int64),
        )

    def __len__(self) -> int:
        return len(self.ids)

    def upto(self, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
        """(ids, admission steps, first-sampling steps, spans) of those admitted before step m
        (a prefix: admissions are in step order). One admitted last may still be part-way
        through its prompt at step m (its first sampling step is m or later)."""
        tj = np.asarray(self.t, dtype=np.int64)
        n = int(np.searchsorted(tj, m, side="left"))
        spans = [(j, c) for j, c in self.spans if j < n]
        return (
            np.asarray(self.ids, dtype=np.int64)[:n],
            tj[:n],
            np.asarray(self.s, dtype=np.int64)[:n],
            spans,
        )


def prompt_steps(m: int, tj, sj, ntj, spans, bs: int) -> dict[str, np.ndarray]:
    """Per step t < m, the admissions' prompt work: how many are scheduled for prompt tokens
    (`cnt`), their tokens (`tok`), the KV tokens they read (computed before their chunk: `kv`),
    the attention pairs (`attn`) and the blocks they newly take (`blk`); how many sample their
    first token (`first`) and how many are in the running list without one yet
    (`waiting_first`)."""
    if not spans:  # every prompt whole, in its admission step
        cnt = np.bincount(tj, minlength=m)[:m]
        zeros = np.zeros(m, dtype=np.int64)
        return {
            "cnt": cnt,
            "tok": np.bincount(tj, weights=ntj, minlength=m)[:m].astype(np.int64),
            "kv": zeros,
            "attn": np.bincount(tj, weights=ntj * (ntj + 1) // 2, minlength=m)[:m].astype(np.int64),
            "blk": np.bincount(tj, weights=cdiv(ntj, bs), minlength=m)[:m].astype(np.int64),
            "first": cnt,
            "waiting_first": zeros,
        }
    whole = tj == sj
    tw, nw = tj[whole], ntj[whole]
    # every chunk of every chunked prompt at once: its step, size and the tokens before it
    lens = np.array([c.shape[0] for _, c in spans], dtype=np.int64)
    chunk = np.concatenate([c for _, c in spans])
    start = np.cumsum(lens) - lens
    first = np.repeat(tj[[j for j, _ in spans]], lens)
    offset = np.arange(chunk.shape[0], dtype=np.int64) - np.repeat(start, lens)
    run = np.cumsum(chunk)
    ctx = run - chunk - np.repeat(run[start] - chunk[start], lens)
    on = (chunk > 0) & (first + offset < m)
    st = np.concatenate((tw, (first + offset)[on]))
    cc, cx = chunk[on], ctx[on]
    tok_all = np.concatenate((nw, cc))
    cnt = np.bincount(st, minlength=m)[:m]
    tok = np.bincount(st, weights=tok_all, minlength=m)[:m]
    attn_w = np.concatenate((nw * (nw + 1) // 2, cc * cx + cc * (cc + 1) // 2))
    attn = np.bincount(st, weights=attn_w, minlength=m)[:m]
    blk_w = np.concatenate((cdiv(nw, bs), cdiv(cx + cc, bs) - cdiv(cx, bs)))
    blk = np.bincount(st, weights=blk_w, minlength=m)[:m]
    kv = np.bincount(st, weights=np.concatenate((np.zeros(nw.shape[0]), cx)), minlength=m)[:m]
    lo = np.minimum(tj, m)
    hi = np.minimum(sj, m)
    pending = np.cumsum(np.bincount(lo, minlength=m + 1) - np.bincount(hi, minlength=m + 1))[:m]
    return {
        "cnt": cnt.astype(np.int64),
        "tok": tok.astype(np.int64),
        "kv": kv.astype(np.int64),
        "attn": attn.astype(np.int64),
        "blk": blk.astype(np.int64),
        "first": np.bincount(sj, minlength=m)[:m],
        "waiting_first": pending,
    }


def chunk_plan(left: np.ndarray, t_h: int, nt: int, limit: int) -> tuple[np.ndarray, bool]:
    """The chunks of an `nt`-token prompt admitted at step t_h with `left` the budget each step
    has left after the running decodes: left[t_h] in its admission step, then left[t] (or what
    remains) in each later step before `limit`; and whether the last of them ends the prompt."""
    c0 = int(left[t_h])
    rest = nt - c0
    later = np.maximum(left[t_h + 1 : limit], 0)
    cs = np.cumsum(later)
    k = int(np.searchsorted(cs, rest, side="left"))
    if k >= later.shape[0]:
        return np.concatenate(([c0], later)).astype(np.int64), False
    chunks = np.empty(k + 2, dtype=np.int64)
    chunks[0] = c0
    chunks[1 : k + 1] = later[:k]
    chunks[k + 1] = rest - (int(cs[k - 1]) if k else 0)
    return chunks, True
