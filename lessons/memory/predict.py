"""The lesson's predict-then-reveal questions, answered by the run the lesson opens with.

quiz.toml marks them `computed = "first_victim"` and `computed = "first_step"`. `answers()`
runs the opening settings (lesson.Params()) once per process, untraced, and gives each question
its choices: the true answer from the run and distractors that real misconceptions lead to
(the oldest request, the least important one, the step the queue first backed up, "never").
"""

from __future__ import annotations

from functools import cache

import numpy as np

from lessons.memory import lesson
from sim.run import Run
from sim.timed import run_timed

NEVER = "None"  # the misconception: admission checks that requests fit, so none is pushed out

# a question's `computed` name -> the entry of answers() that holds its choices (course.py)
CHOICES = {"first_victim": "who", "first_step": "steps"}


@cache
def opening_run() -> Run:
    """The run of the lesson's opening settings (lesson.setup), with per-step detail and no
    block tables: the same decisions as the traced run the grid draws."""
    s = lesson.setup(lesson.Params())
    return run_timed(s.config, s.workload, s.deployment, record_detail=True)


def answers() -> dict:
    """The facts the two questions are about: the first victim, its step, and distractors."""
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
    waited = np.flatnonzero(np.asarray(run.num_waiting) > 0)
    usage = np.asarray(run.kv_blocks_used) / run.kv_blocks_usable
    candidates = [
        d.step * 2,  # as many digits as the answer, so its length gives nothing away
        int(waited[0]) + 1 if waited.size else 0,  # the queue first backs up
        int(np.argmax(usage >= 0.5)) + 1,  # the cache is half full
        d.step // 2,
    ]
    steps = [d.step]
    for s in candidates:
        if s > 0 and s not in steps and len(steps) < 3:
            steps.append(s)
    return {
        "victim": names[victim],
        "victim_kind": "a batch" if prio[victim] == prio.max() else "an interactive",
        "step": d.step,
        "who": tuple(who),
        "steps": tuple(f"Step {s}" for s in steps) + (NEVER,),
        "policy": run.config.policy.upper(),
        "usable": run.kv_blocks_usable,
    }
