"""vLLM's admission limits (sim/admission.py): the rule, read plainly, and the runs that use it."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.admission import ADMITTED, QUEUED_REQS, QUEUED_TOKENS
from sim.cli_sched import human_readable_int
from sim.config import SchedulerConfig
from sim.errors import SimInputError
from sim.generators import from_spec
from sim.metrics import summarize
from sim.scheduler import Engine
from sim.timed import config_for, deployment, timer_for
from sim.workload import Workload
from tests.test_cli_sched import _sim
from tests.test_scheduler_props import cases


# The rule, read plainly from vLLM's `AsyncLLM.check_admission` (sim/admission.py), to hold the
# engine's one copy of it (sim/engine/kernel.py `_admission`) against.
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


# vLLM's own unit tests of AsyncLLM.check_admission (tests/v1/engine/test_admission_control.py),
# as (unfinished, queued tokens, max_num_queued_reqs, max_num_queued_tokens, n, expected)
VLLM_CASES = [
    (999, 999, None, None, 1, ADMITTED),  # no limits
    (5, 0, 10, None, 1, ADMITTED),  # under the request limit
    (10, 0, 10, None, 1, QUEUED_REQS),  # at it: the new one would make 11
    (8, 0, 10, None, 3, QUEUED_REQS),  # n = 3 would make 11
    (7, 0, 10, None, 3, ADMITTED),  # n = 3 makes exactly 10
    (0, 0, 0, None, 1, QUEUED_REQS),  # a zero limit refuses everything
    (0, 500, None, 1000, 1, ADMITTED),  # under the token limit
    (0, 1000, None, 1000, 1, QUEUED_TOKENS),  # tokens exactly at the limit
    (0, 1500, None, 1000, 1, QUEUED_TOKENS),
    (0, 0, None, 0, 1, QUEUED_TOKENS),
    (5, 1000, 100, 1000, 1, QUEUED_TOKENS),  # the limits are independent
    (10, 1000, 10, 1000, 1, QUEUED_REQS),  # the request limit is checked first
]


@pytest.mark.parametrize(
    ("unfinished", "queued", "max_reqs", "max_tokens", "n", "want"), VLLM_CASES
)
def test_the_rule_is_vllms(unfinished, queued, max_reqs, max_tokens, n, want):
    assert check_admission(unfinished, queued, max_reqs, max_tokens, n) == want


@settings(max_examples=200, deadline=None)
@given(
    prompts=st.lists(st.integers(1, 3000), max_size=30),
    unfinished=st.integers(0, 40),
    queued=st.integers(0, 20_000),
    max_reqs=st.none() | st.integers(0, 60),
    max_tokens=st.none() | st.integers(0, 30_000),
)
def test_a_batch_of_arrivals_is_the_rule_applied_one_after_another(
    prompts, unfinished, queued, max_reqs, max_tokens
):
    taken, reason = admit_in_order(np.array(prompts), unfinished, queued, max_reqs, max_tokens)
    codes = []
    for p in prompts:  # the plain reading: each admitted arrival joins the counts
        code = check_admission(unfinished, queued, max_reqs, max_tokens)
        codes.append(code)
        if code == ADMITTED:
            unfinished, queued = unfinished + 1, queued + p
    assert codes == [ADMITTED] * taken + [reason] * (len(prompts) - taken)


# ------------------------------------------------------------------------------------ in runs
STEP_MS = 125.0  # a step lasts 1/8 s: step ends are exact in binary, so ties are exact too


def _flat_timer(query_tokens, num_seqs, kv_read_tokens, attn_pairs):
    return np.full(np.shape(query_tokens), STEP_MS)


def _config(**limits) -> SchedulerConfig:
    return SchedulerConfig(
        max_num_batched_tokens=2048,
        max_num_seqs=16,
        max_model_len=16_384,
        num_gpu_blocks=4000,
        **limits,
    )


def _run(prompts, outputs, arrivals, **limits):
    wl = Workload.build(prompts, outputs, arrival_s=arrivals)
    return Engine(_config(**limits), wl, timer=_flat_timer).run()


def test_a_partly_prefilled_prompt_counts_in_full():
    # A's 10,000 tokens take five 2,048-token chunks (steps ending 0.125 ... 0.625 s). B comes
    # during step 3, when 4,096 of them are computed: the whole 10,000 still count.
    run = _run([10_000, 100, 100], [4, 4, 4], [0.0, 0.3, 0.7], max_num_queued_tokens=10_000)
    assert run.rejected.tolist() == [ADMITTED, QUEUED_TOKENS, ADMITTED]  # C: after A's token
    assert run.first_scheduled_step[1] == 0 and run.num_output_tokens[1] == 0
    run = _run([10_000, 100, 100], [4, 4, 4], [0.0, 0.3, 0.7], max_num_queued_tokens=10_001)
    assert run.rejected.tolist() == [ADMITTED] * 3
    assert run.rejected_requests == {
        "total": 0,
        "max_num_queued_reqs": 0,
        "max_num_queued_tokens": 0,
    }


def test_the_request_limit_counts_waiting_and_running_and_the_new_one():
    # max_num_queued_reqs=2: A and B make two; C (same moment) would make three.
    run = _run([100] * 4, [3, 3, 3, 3], [0.0, 0.0, 0.0, 0.6], max_num_queued_reqs=2)
    assert run.rejected.tolist() == [ADMITTED, ADMITTED, QUEUED_REQS, ADMITTED]
    assert run.rejected_requests == {
        "total": 1,
        "max_num_queued_reqs": 1,
        "max_num_queued_tokens": 0,
    }
    assert int((run.finish_step > 0).sum()) + run.rejected_requests["total"] == 4


def test_an_arrival_sees_the_outputs_of_the_steps_ended_before_it():
    # A's three tokens end at 0.125, 0.25 and 0.375 s. With room for one request, B arriving
    # during A's last step is refused; B arriving at the very moment A's last token is out is
    # let in, as is one after it.
    for arrival_b, want in ((0.3, QUEUED_REQS), (0.375, ADMITTED), (0.5, ADMITTED)):
        run = _run([100, 100], [3, 3], [0.0, arrival_b], max_num_queued_reqs=1)
        assert run.rejected.tolist() == [ADMITTED, want], arrival_b
    # the same for first tokens and the token limit: A's first token is out at 0.125 s
    for arrival_b, want in ((0.1, QUEUED_TOKENS), (0.125, ADMITTED)):
        run = _run([100, 100], [3, 3], [0.0, arrival_b], max_num_queued_tokens=100)
        assert run.rejected.tolist() == [ADMITTED, want], arrival_b


def test_limits_off_change_nothing():
    wl = from_spec("poisson:n=300,rate=40,prompt=uniform:100:2000,output=uniform:10:200,seed=1")
    dep = deployment("L4", "Llama-3.1-8B")
    plain = Engine(config_for(dep), wl, timer=timer_for(dep)).run()
    assert plain.rejected_requests["total"] == 0
    wide = Engine(config_for(dep, max_num_queued_reqs=10_000), wl, timer=timer_for(dep)).run()
    assert np.array_equal(plain.finish_step, wide.finish_step)  # the same steps, in the same
    np.testing.assert_allclose(plain.finish_s, wide.finish_s)  # times (sums grouped otherwise)


def _plain_reading(run) -> np.ndarray:
    """Every arrival in order, checked by `check_admission` against what the run had put out
    by then: the requests let in before it that had not finished, the prompts of those that
    had no first token. One request at a time, no shortcut."""
    cfg = run.config
    prompt = run.workload.prompt_tokens
    codes = np.zeros(run.workload.num_requests, dtype=np.int8)
    admitted: list[int] = []
    for i in np.argsort(run.arrival_s, kind="stable").tolist():
        t = run.arrival_s[i]
        a = np.array(admitted, dtype=np.int64)
        unfinished = int(np.count_nonzero(~(run.finish_s[a] <= t)))
        queued = int(prompt[a][~(run.first_token_s[a] <= t)].sum())
        codes[i] = check_admission(
            unfinished, queued, cfg.max_num_queued_reqs, cfg.max_num_queued_tokens
        )
        if codes[i] == ADMITTED:
            admitted.append(i)
    return codes


LIMITS = [
    {"max_num_queued_reqs": 48},
    {"max_num_queued_tokens": 24_000},
    {"max_num_queued_reqs": 64, "max_num_queued_tokens": 40_000},
]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("limits", LIMITS, ids=["reqs", "tokens", "both"])
def test_overloaded_runs_refuse_exactly_whom_the_plain_reading_refuses(limits, asynchronous):
    dep = deployment("L4", "Llama-3.1-8B")
    wl = from_spec("poisson:n=600,rate=14,prompt=uniform:200:3000,output=uniform:20:300,seed=5")
    cfg = config_for(dep, async_scheduling=asynchronous, **limits)
    timer = timer_for(dep, async_scheduling=asynchronous)
    run = Engine(cfg, wl, timer=timer).run()
    codes = np.asarray(run.rejected)
    assert 0 < np.count_nonzero(codes) < wl.num_requests  # the limits bind, and not always
    assert np.array_equal(codes, _plain_reading(run))
    refused = codes > 0
    assert np.all(run.first_scheduled_step[refused] == 0)  # refused requests never run
    assert np.all(run.num_output_tokens[refused] == 0)
    assert np.all(run.num_output_tokens[~refused] == wl.output_tokens[~refused])


def test_summary_counts_refusals_by_limit():
    dep = deployment("L4", "Llama-3.1-8B")
    wl = from_spec("poisson:n=400,rate=14,prompt=uniform:200:3000,output=uniform:20:300,seed=2")
    run = Engine(config_for(dep, max_num_queued_reqs=32), wl, timer=timer_for(dep)).run()
    out = summarize(run)
    rej = out["rejected_requests"]
    assert rej["total"] == rej["max_num_queued_reqs"] > 0 and rej["max_num_queued_tokens"] == 0
    assert out["num_finished"] + rej["total"] == out["num_requests"]


@pytest.mark.parametrize("field", ["max_num_queued_reqs", "max_num_queued_tokens"])
@pytest.mark.parametrize("bad", [-1, 1.5, True, "10"])
def test_bad_limits_are_refused_with_a_message(field, bad):
    with pytest.raises(SimInputError, match=field):
        _config(**{field: bad})


def test_a_closed_loop_with_limits_is_refused():
    wl = from_spec("concurrency:clients=4,n=10,seed=0")
    with pytest.raises(SimInputError, match="open-loop"):
        Engine(_config(max_num_queued_reqs=2), wl, timer=_flat_timer)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("32k", 32_000),
        ("1k", 1_000),
        ("1K", 1_024),
        ("1m", 1_000_000),
        ("1M", 1_048_576),
        ("100", 100),
        ("2.5k", 2_500),
        ("0", 0),
    ],
)
def test_token_counts_read_as_vllm_reads_them(text, value):
    assert human_readable_int(text) == value


@pytest.mark.parametrize("text", ["abc", "1x", "", "k", "1.5K", "-3"])
def test_bad_token_counts_are_refused(text):
    with pytest.raises(Exception, match="not a"):
        human_readable_int(text)


def test_simulate_takes_the_limits_and_reports_refusals():
    spec = "poisson:n=200,rate=20,prompt=uniform:200:3000,output=uniform:20:200,seed=4"
    base = ("simulate", "--gpu", "L4", "--model", "Llama-3.1-8B", "--workload", spec)
    proc = _sim(*base, "--max-num-queued-reqs", "24", "--max-num-queued-tokens", "20k")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    rej = out["rejected_requests"]
    assert rej["total"] == rej["max_num_queued_reqs"] + rej["max_num_queued_tokens"] > 0
    assert out["num_finished"] + rej["total"] == 200
    proc = _sim(*base, "--max-num-queued-tokens", "lots")
    assert proc.returncode == 2 and "not a count" in proc.stderr
    assert "Traceback" not in proc.stderr


def _toy_timer(q, s, kv, attn):
    return 2.0 + 0.01 * q + 0.05 * s + 1e-4 * kv + 1e-6 * attn


@settings(max_examples=120, deadline=None)
@given(
    case=st.booleans().flatmap(lambda a: cases(timed=True, async_scheduling=a)),
    max_reqs=st.none() | st.integers(0, 6),
    max_tokens=st.none() | st.integers(0, 600),
)
def test_every_policy_and_setting_refuses_as_the_plain_reading_does(case, max_reqs, max_tokens):
    config, wl = case
    config = dataclasses.replace(
        config, max_num_queued_reqs=max_reqs, max_num_queued_tokens=max_tokens
    )
    run = Engine(config, wl, timer=_toy_timer, max_steps=200_000).run()
    codes = np.asarray(run.rejected)
    assert np.array_equal(codes, _plain_reading(run))
    let_in = codes == 0
    expected = np.minimum(wl.output_tokens, config.max_model_len - wl.prompt_tokens)
    assert np.array_equal(run.num_output_tokens, np.where(let_in, expected, 0))
    assert np.all((run.finish_step > 0) == let_in)
    assert np.all(run.num_scheduled_tokens <= config.max_num_batched_tokens)
