"""The lesson's predict-then-reveal questions, answered by the run the lesson opens with.

quiz.toml marks them `computed = "first_victim"` (which request goes first) and
`computed = "dry_cause"` (what asks for the block that is not there). `answers()` runs the
opening settings (lesson.Params()) once per process, untraced, and gives each question its
choices, the true answer from the run first: for the victim, distractors that real
misconceptions lead to (the oldest request, the least important one, the longest prompt); for
the cause, the other cause the run could have had (a running request's prompt chunk, or its
answer), a new request's admission (admission never preempts) and "nothing" (the belief that
vLLM keeps room for every answer). The choices' words are text.md's labels `dry-*`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from lessons.kit import story
from lessons.memory import lesson
from sim.run import Run
from sim.timed import run_timed

TEXT = Path(__file__).with_name("text.md")

# a question's `computed` name -> the entry of answers() that holds its choices (course.py)
CHOICES = {"first_victim": "who", "dry_cause": "dry"}
CAUSES = ("decode", "prefill")  # what asks for the missing block: an answer, or a prompt chunk


@cache
def opening_run() -> Run:
    """The run of the lesson's opening settings (lesson.setup), with per-step detail and no
    block tables: the same decisions as the traced run the grid draws."""
    s = lesson.setup(lesson.Params())
    return run_timed(s.config, s.workload, s.deployment, record_detail=True)


def dry_cause(run: Run, step: int) -> str:
    """ "decode" if every request the preempting step schedules writes one token of its answer
    (the running requests' growth ran the pool dry), else "prefill" (a running request's next
    prompt chunk did). A step that preempts admits no new request (vLLM skips the waiting
    queue then), so these are the only two."""
    d = run.detail[step - 1]
    prompt = np.asarray(run.workload.prompt_tokens)
    done = _computed_before(run, step)
    reqs = d.scheduled_req.tolist()
    decoding = all(done.get(q, 0) >= int(prompt[q]) for q in reqs)
    return CAUSES[0] if decoding else CAUSES[1]


def _computed_before(run: Run, step: int) -> dict[int, int]:
    """Tokens each request had scheduled before `step` since it was last (re)admitted."""
    done: dict[int, int] = {}
    for d in run.detail[: step - 1]:
        for q in d.preempted.tolist():
            done.pop(q, None)
        for q, n in zip(d.scheduled_req.tolist(), d.scheduled_tokens.tolist(), strict=True):
            done[q] = done.get(q, 0) + n
    return done


def answers() -> dict:
    """The facts the two questions are about: the first victim, its step, what ran the pool
    dry, and distractors."""
    run = opening_run()
    d = next(d for d in run.detail if d.preempted.size)
    names = run.workload.request_ids
    victim = int(d.preempted[0])
    before = run.detail[d.step - 2].running.tolist()
    prio = np.asarray(run.workload.priority)
    batch = [q for q in before if prio[q] == prio.max()]
    others = [
        before[0],  # the oldest running request
        batch[-1] if batch else before[-1],  # the least important, newest of them
        max(before, key=lambda q: int(run.workload.prompt_tokens[q])),  # the longest prompt
        before[len(before) // 2],
    ]
    who = [names[victim]]
    for q in others:
        if names[q] not in who and len(who) < 4:
            who.append(names[q])
    cause = dry_cause(run, d.step)
    words = story.labels(TEXT)
    other = CAUSES[1] if cause == CAUSES[0] else CAUSES[0]
    dry = tuple(words[f"dry-{k}"] for k in (cause, other, "admit", "never"))
    return {
        "victim": names[victim],
        "victim_kind": "a batch" if prio[victim] == prio.max() else "an interactive",
        "step": d.step,
        "who": tuple(who),
        "dry": dry,
        "cause": cause,
        "running": len(before),
        "scheduled": int(d.scheduled_req.size),
        "admitted": int(d.new.size),
        "block_size": run.config.block_size,
        "policy": run.config.policy.upper(),
        "usable": run.kv_blocks_usable,
    }
