"""The lesson's tables as rows (column name -> value), headed with text.md's labels: each
request's block table at a step, the price of every preemption, and the fixes side by side."""

from __future__ import annotations

from lessons.memory.figures import fix_label, labels
from lessons.memory.readout import Comparison, Readout, StepReadout


def block_tables(s: StepReadout) -> list[dict]:
    w = labels()
    return [
        {w["col-request"]: name, w["col-tokens"]: tokens, w["col-blocks"]: n, w["col-ids"]: ids}
        for name, tokens, n, ids in s.tables
    ]


def victims(r: Readout) -> list[dict]:
    w, v = labels(), r.victims
    return [
        {
            w["col-request"]: v.names[int(v.request[i])],
            w["col-step"]: int(v.step[i]),
            w["col-lost"]: int(v.lost_tokens[i]),
            w["col-back"]: int(v.resume_step[i]),
            w["col-hits"]: int(v.hit_tokens[i]),
            w["col-again"]: int(v.recomputed_tokens[i]),
            w["col-lost-steps"]: int(v.lost_steps[i]),
            w["col-lost-ms"]: round(float(v.lost_ms[i])),
        }
        for i in range(v.count)
    ]


def fixes(c: Comparison) -> list[dict]:
    w = labels()
    return [
        {
            w["col-fix"]: fix_label(f),
            w["col-pool"]: f.num_gpu_blocks - 1,  # the null block holds no tokens
            w["col-seqs"]: f.max_num_seqs,
            w["col-preemptions"]: f.preemptions,
            w["col-recomputed"]: f.recomputed_tokens,
            w["col-ttft50"]: round(f.ttft_p50_ms / 1e3, 2),  # seconds, as the chart shows them
            w["col-ttft99"]: round(f.ttft_p99_ms / 1e3, 2),
            w["col-itl50"]: round(f.itl_p50_ms, 1),
            w["col-itl99"]: round(f.itl_p99_ms, 1),
            w["col-tput"]: round(f.output_tokens_per_s),
        }
        for f in c.fixes
    ]
