"""Metrics (sim/metrics.py): hand-computed TTFT/ITL/E2E, percentiles, goodput, tables.

The fake runs below are frozen dataclasses with exactly the fields of the `Run` contract that
metrics read, filled by hand so that every expected number can be checked on paper.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np
import pytest

from sim.errors import SimInputError
from sim.metrics import (
    good_requests,
    inter_token_gaps,
    kv_usage,
    measure,
    percentiles,
    request_latencies,
    request_metrics,
    request_table,
    summarize,
    time_series,
    token_times_s,
)
from sim.workload import Workload


@dataclass(frozen=True, eq=False)
class FakeRun:
    workload: Workload
    kv_blocks_usable: int
    num_steps: int
    timed: bool
    num_scheduled_tokens: np.ndarray
    num_scheduled_seqs: np.ndarray
    num_running: np.ndarray
    num_waiting: np.ndarray
    kv_blocks_used: np.ndarray
    num_preempted: np.ndarray
    num_finished: np.ndarray
    step_start_s: np.ndarray
    step_ms: np.ndarray
    token_req: np.ndarray
    token_step: np.ndarray
    first_scheduled_step: np.ndarray
    first_token_step: np.ndarray
    finish_step: np.ndarray
    num_preemptions: np.ndarray
    num_output_tokens: np.ndarray
    num_recomputed_tokens: np.ndarray
    arrival_s: np.ndarray
    rejected: np.ndarray | None = None


def a(*values):
    return np.array(values)


# Two requests, four steps ending at 0.1, 0.2, 0.35 and 0.4 s.
# Request 0 (arrives 0.00 s): tokens at the end of steps 1, 2, 4 -> 0.10, 0.20, 0.40 s:
#   TTFT 100 ms, ITL 100 and 200 ms (TPOT 150, max 200), E2E 0.40 s.
# Request 1 (arrives 0.05 s): tokens in steps 2, 3, 4 -> 0.20, 0.35, 0.40 s:
#   TTFT 150 ms, ITL 150 and 50 ms (TPOT 100, max 150), E2E 0.35 s.
TIMED = FakeRun(
    workload=Workload.build([10, 20], [3, 3], arrival_s=[0.0, 0.05], request_ids=["a", "b"]),
    kv_blocks_usable=10,
    num_steps=4,
    timed=True,
    num_scheduled_tokens=a(10, 21, 1, 2),
    num_scheduled_seqs=a(1, 2, 1, 2),
    num_running=a(1, 2, 2, 0),
    num_waiting=a(1, 0, 0, 0),
    kv_blocks_used=a(1, 3, 5, 0),
    num_preempted=a(0, 0, 1, 0),
    num_finished=a(0, 0, 0, 2),
    step_start_s=a(0.0, 0.1, 0.2, 0.35),
    step_ms=a(100.0, 100.0, 150.0, 50.0),
    token_req=a(0, 0, 1, 1, 0, 1),
    token_step=a(1, 2, 2, 3, 4, 4),
    first_scheduled_step=a(1, 2),
    first_token_step=a(1, 2),
    finish_step=a(4, 4),
    num_preemptions=a(1, 0),
    num_output_tokens=a(3, 3),
    num_recomputed_tokens=a(11, 0),
    arrival_s=a(0.0, 0.05),
)

# The same tokens as a step replay: request 0 arrives in step 1, request 1 in step 2.
STEPS = replace(
    TIMED,
    workload=Workload.build([10, 20], [3, 3], arrival_step=[1, 2]),
    timed=False,
    step_start_s=np.full(4, np.nan),
    step_ms=np.full(4, np.nan),
    arrival_s=np.full(2, np.nan),
)


# --- pure functions ------------------------------------------------------------------------


def test_token_times_are_step_ends():
    times = token_times_s(TIMED.token_step, TIMED.step_start_s, TIMED.step_ms)
    assert times == pytest.approx([0.1, 0.2, 0.2, 0.35, 0.4, 0.4])
    with pytest.raises(SimInputError, match="token steps must lie in 1..4"):
        token_times_s(a(5), TIMED.step_start_s, TIMED.step_ms)


def test_latencies_by_hand_in_any_token_order():
    times = np.array([0.1, 0.2, 0.2, 0.35, 0.4, 0.4])
    arrival = np.array([0.0, 0.05])
    lat = request_latencies(TIMED.token_req, times, arrival)
    assert lat["ttft"] == pytest.approx([0.10, 0.15])
    assert lat["e2e"] == pytest.approx([0.40, 0.35])
    assert lat["tpot"] == pytest.approx([0.15, 0.10])
    assert lat["max_itl"] == pytest.approx([0.20, 0.15])
    assert lat["num_tokens"].tolist() == [3, 3]
    shuffled = np.array([4, 1, 5, 0, 3, 2])
    again = request_latencies(TIMED.token_req[shuffled], times[shuffled], arrival)
    for key, value in lat.items():
        assert np.allclose(again[key], value), key


@pytest.mark.parametrize("num_requests", [50, 70_000])  # the 16-bit radix path and the packed sort
def test_latencies_match_a_plain_group_by(num_requests):
    """Tokens in time order, requests interleaved (as a run logs them): every per-request figure
    and the gaps agree with a plain lexsort by (request, time) and a loop over the requests."""
    rng = np.random.default_rng(3)
    n_tok = 4 * num_requests
    req = rng.integers(0, num_requests, n_tok)
    req[: num_requests // 2] = np.arange(num_requests // 2)  # ids on both sides of 2**16 too
    times = np.sort(rng.uniform(0, 100, n_tok))
    arrival = np.zeros(num_requests)
    lat = request_latencies(req, times, arrival)
    got_req, got_gap = inter_token_gaps(req, times)
    order = np.lexsort((times, req))
    r, t = req[order], times[order]
    same = r[1:] == r[:-1]
    assert got_req.tolist() == r[1:][same].tolist()
    assert np.array_equal(got_gap, np.diff(t)[same])
    for i in rng.choice(num_requests, min(num_requests, 200), replace=False).tolist():
        mine = t[r == i]
        assert lat["num_tokens"][i] == mine.size
        if mine.size == 0:
            assert np.isnan(lat["ttft"][i]) and np.isnan(lat["e2e"][i])
            continue
        assert lat["ttft"][i] == mine[0] and lat["e2e"][i] == mine[-1]
        if mine.size > 1:
            assert lat["max_itl"][i] == np.diff(mine).max()
            assert lat["tpot"][i] == pytest.approx((mine[-1] - mine[0]) / (mine.size - 1))
        else:
            assert np.isnan(lat["max_itl"][i]) and np.isnan(lat["tpot"][i])


def test_every_inter_token_gap_grouped_by_request():
    req, gap = inter_token_gaps(a(0, 0, 1, 1, 0, 1), a(0.1, 0.2, 0.2, 0.35, 0.4, 0.4))
    assert req.tolist() == [0, 0, 1, 1]
    assert gap == pytest.approx([0.1, 0.2, 0.15, 0.05])


def test_requests_without_tokens_or_with_one_token():
    lat = request_latencies(a(1), a(2.0), a(0.0, 0.5, 1.0))
    assert np.isnan(lat["ttft"][0]) and np.isnan(lat["ttft"][2])
    assert lat["ttft"][1] == pytest.approx(1.5)
    assert np.isnan(lat["tpot"][1]) and np.isnan(lat["max_itl"][1])
    empty = request_latencies(np.empty(0), np.empty(0), a(0.0))
    assert np.isnan(empty["e2e"][0])
    with pytest.raises(SimInputError, match="request indices in 0..0"):
        request_latencies(a(3), a(1.0), a(0.0))


def test_percentiles_match_numpy():
    rng = np.random.default_rng(7)
    values = rng.lognormal(3, 1, 1001)
    got = percentiles(values)
    assert got["p50"] == pytest.approx(np.percentile(values, 50))
    assert got["p90"] == pytest.approx(np.percentile(values, 90))
    assert got["p99"] == pytest.approx(np.percentile(values, 99))
    assert got["max"] == values.max()
    assert got["mean"] == pytest.approx(values.mean())
    assert percentiles(a(1.0, 2.0, 3.0, 4.0)) == pytest.approx(
        {"p50": 2.5, "p90": 3.7, "p99": 3.97, "max": 4.0, "mean": 2.5}
    )
    assert percentiles(a(np.nan, 5.0)) == {
        "p50": 5.0,
        "p90": 5.0,
        "p99": 5.0,
        "max": 5.0,
        "mean": 5.0,
    }
    assert percentiles(a(1.0, np.inf, 2.0))["mean"] == 1.5  # finite values only
    assert percentiles(np.empty(0)) == dict.fromkeys(("p50", "p90", "p99", "max", "mean"))


def test_goodput_mask_edge_cases():
    finished = np.array([True, True, True, False])
    ttft = a(100.0, 200.0, 50.0, 10.0)
    tpot = a(20.0, 10.0, np.nan, 1.0)  # request 2 has one token: no TPOT
    assert good_requests(finished, ttft, tpot).tolist() == [True, True, True, False]
    assert good_requests(finished, ttft, tpot, ttft_slo_ms=100).tolist() == [
        True,
        False,
        True,
        False,
    ]
    assert good_requests(finished, ttft, tpot, itl_slo_ms=15).tolist() == [
        False,
        True,
        True,
        False,
    ]
    both = good_requests(finished, ttft, tpot, ttft_slo_ms=100, itl_slo_ms=15)
    assert both.tolist() == [False, False, True, False]
    with pytest.raises(SimInputError, match="ttft_slo_ms=0 must be a number > 0"):
        good_requests(finished, ttft, tpot, ttft_slo_ms=0)


def test_kv_usage_fraction():
    assert kv_usage(a(0, 5, 10), 10).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(SimInputError):
        kv_usage(a(1), 0)


# --- on a run --------------------------------------------------------------------------------


def test_request_metrics_of_a_timed_run():
    m = request_metrics(TIMED)
    assert m.ttft_ms == pytest.approx([100.0, 150.0])
    assert m.tpot_ms == pytest.approx([150.0, 100.0])
    assert m.max_itl_ms == pytest.approx([200.0, 150.0])
    assert m.e2e_s == pytest.approx([0.40, 0.35])
    assert m.itl_req.tolist() == [0, 0, 1, 1]
    assert m.itl == pytest.approx([100.0, 200.0, 150.0, 50.0])
    assert np.isnan(m.ttft_steps).all()


def test_summary_of_a_timed_run():
    s = summarize(TIMED)
    assert json.loads(json.dumps(s)) == s  # plain JSON values
    assert s["num_requests"] == 2
    assert s["num_finished"] == 2
    assert s["num_steps"] == 4
    assert s["total_preemptions"] == 1
    assert s["total_recomputed_tokens"] == 11
    assert s["peak_kv_usage"] == 0.5
    assert s["mean_kv_usage"] == pytest.approx(0.225)
    assert s["makespan_s"] == pytest.approx(0.4)
    assert s["ttft_ms"]["p50"] == pytest.approx(125.0)
    assert s["ttft_ms"]["max"] == pytest.approx(150.0)
    itl = [100.0, 200.0, 150.0, 50.0]
    for key, q in (("p50", 50), ("p90", 90), ("p99", 99)):
        assert s["itl_ms"][key] == pytest.approx(np.percentile(itl, q))
    assert s["e2e_s"]["max"] == pytest.approx(0.4)
    # every latency distribution has its mean too (by hand: see TIMED)
    assert s["ttft_ms"]["mean"] == pytest.approx((100.0 + 150.0) / 2)
    assert s["itl_ms"]["mean"] == pytest.approx(sum(itl) / 4)
    assert s["tpot_ms"]["mean"] == pytest.approx((150.0 + 100.0) / 2)
    assert s["e2e_s"]["mean"] == pytest.approx((0.40 + 0.35) / 2)
    for key in ("ttft_ms", "itl_ms", "tpot_ms", "e2e_s", "ttft_steps", "itl_steps", "e2e_steps"):
        assert set(s[key]) == {"p50", "p90", "p99", "max", "mean"}
    assert s["output_tokens_per_s"] == pytest.approx(6 / 0.4)
    assert s["total_tokens_per_s"] == pytest.approx((30 + 6) / 0.4)
    assert s["scheduled_tokens_per_s"] == pytest.approx(34 / 0.4)
    assert s["ttft_steps"]["p50"] is None
    assert "goodput_req_per_s" not in s


def test_goodput_of_a_timed_run():
    assert summarize(TIMED, ttft_slo_ms=120)["goodput_req_per_s"] == pytest.approx(1 / 0.4)
    assert summarize(TIMED, itl_slo_ms=120)["goodput_req_per_s"] == pytest.approx(1 / 0.4)
    both = summarize(TIMED, ttft_slo_ms=120, itl_slo_ms=120)
    assert both["goodput_req_per_s"] == 0.0
    assert both["num_good"] == 0
    loose = summarize(TIMED, ttft_slo_ms=1000, itl_slo_ms=1000)
    assert loose["goodput_req_per_s"] == pytest.approx(2 / 0.4)
    unfinished = replace(TIMED, finish_step=a(4, 0))
    assert summarize(unfinished, ttft_slo_ms=1000)["num_good"] == 1


def test_step_replay_counts_in_steps():
    m = request_metrics(STEPS)
    # request 0: arrives in step 1, tokens in steps 1, 2, 4; request 1: step 2; tokens 2, 3, 4
    assert m.ttft_steps.tolist() == [1.0, 1.0]
    assert m.e2e_steps.tolist() == [4.0, 3.0]
    assert m.itl.tolist() == [1.0, 2.0, 1.0, 1.0]
    assert np.isnan(m.ttft_ms).all()
    s = summarize(STEPS)
    assert json.loads(json.dumps(s)) == s
    assert s["e2e_steps"]["max"] == 4.0
    assert s["e2e_steps"]["mean"] == 3.5 and s["ttft_steps"]["mean"] == 1.0
    assert s["ttft_ms"]["mean"] is None
    assert s["output_tokens_per_step"] == 1.5
    assert s["ttft_ms"]["p50"] is None
    assert s["makespan_s"] is None
    with pytest.raises(SimInputError, match="goodput needs a timed run"):
        summarize(STEPS, ttft_slo_ms=100)


def test_request_table_and_time_series():
    table = request_table(TIMED)
    assert table["request_id"].tolist() == ["a", "b"]
    assert table["ttft_ms"].tolist() == pytest.approx([100.0, 150.0])
    assert table["num_preemptions"].tolist() == [1, 0]
    assert "ttft_steps" not in table.columns
    assert "ttft_steps" in request_table(STEPS).columns
    series = time_series(TIMED)
    assert series["step"].tolist() == [1, 2, 3, 4]
    assert series["kv_usage"].tolist() == [0.1, 0.3, 0.5, 0.0]
    assert series["preemptions"].tolist() == [0, 0, 1, 0]
    assert series["time_s"].tolist() == [0.0, 0.1, 0.2, 0.35]
    assert list(series.columns) == [
        "step",
        "time_s",
        "step_ms",
        "running",
        "waiting",
        "seqs",
        "tokens",
        "kv_blocks_used",
        "kv_usage",
        "preemptions",
        "finished",
    ]


# --- on a real run of the scheduler ------------------------------------------------------------


def test_metrics_of_a_real_step_replay():
    from sim.config import SchedulerConfig
    from sim.scheduler import run_steps

    config = SchedulerConfig(
        max_num_batched_tokens=2048, max_num_seqs=8, max_model_len=8192, num_gpu_blocks=1000
    )
    # request 0: 2048 + 952 prompt tokens in steps 1-2 (first token in step 2), decodes in 3, 4;
    # request 1 arrives in step 3, prefills and samples there, decodes in step 4.
    run = run_steps(config, Workload.build([3000, 100], [3, 2], arrival_step=[1, 3]))
    m = request_metrics(run)
    assert m.ttft_steps.tolist() == [2.0, 1.0]
    assert m.e2e_steps.tolist() == [4.0, 2.0]
    assert m.itl.tolist() == [1.0, 1.0, 1.0]
    s = summarize(run)
    assert (s["num_finished"], s["num_steps"], s["num_output_tokens"]) == (2, 4, 5)
    assert np.isnan(time_series(run)["time_s"]).all()


def test_metrics_agree_with_a_run_under_preemption():
    from sim.config import SchedulerConfig
    from sim.scheduler import run_steps

    rng = np.random.default_rng(11)
    n = 60
    workload = Workload.build(
        rng.integers(20, 400, n),
        rng.integers(1, 80, n),
        arrival_step=np.sort(rng.integers(1, 40, n)),
    )
    config = SchedulerConfig(
        max_num_batched_tokens=512, max_num_seqs=16, max_model_len=1024, num_gpu_blocks=80
    )
    run = run_steps(config, workload)
    m = request_metrics(run)
    arrival = workload.arrival_step
    assert np.array_equal(m.num_tokens, run.num_output_tokens)
    assert np.array_equal(m.ttft_steps, run.first_token_step - arrival + 1)
    assert np.array_equal(m.e2e_steps, run.finish_step - arrival + 1)
    s = summarize(run)
    assert s["total_preemptions"] == int(run.num_preemptions.sum()) > 0
    assert s["num_finished"] == n
    assert 0 < s["peak_kv_usage"] <= 1
    assert len(time_series(run)) == run.num_steps


def ten_ms_per_step(query_tokens, num_seqs, kv_read_tokens, attn_pairs):
    return np.full(np.shape(query_tokens), 10.0)


def test_metrics_of_a_real_timed_run():
    from sim.config import SchedulerConfig
    from sim.timed import run_with_timer

    config = SchedulerConfig(
        max_num_batched_tokens=2048, max_num_seqs=8, max_model_len=8192, num_gpu_blocks=1000
    )
    # Steps of 10 ms from 0 s. Request 0: prompt in steps 1-2, tokens at 20, 30, 40 ms.
    # Request 1 arrives at 15 ms, is admitted in step 3 (20 ms), tokens at 30 and 40 ms.
    workload = Workload.build([3000, 100], [3, 2], arrival_s=[0.0, 0.015])
    run = run_with_timer(config, workload, ten_ms_per_step)
    m = request_metrics(run)
    assert m.ttft_ms == pytest.approx([20.0, 15.0])
    assert m.itl == pytest.approx([10.0, 10.0, 10.0])
    assert m.e2e_s == pytest.approx([0.040, 0.025])
    s = summarize(run, ttft_slo_ms=18)
    assert s["makespan_s"] == pytest.approx(0.04)
    assert s["output_tokens_per_s"] == pytest.approx(5 / 0.04)
    assert s["goodput_req_per_s"] == pytest.approx(1 / 0.04)
    assert time_series(run)["time_s"].tolist() == pytest.approx([0.0, 0.01, 0.02, 0.03])
    once = measure(run)  # what a page showing both computes once
    assert summarize(run, ttft_slo_ms=18, measured=once) == s
    assert request_table(run, measured=once).equals(request_table(run))
    assert once.metrics.ttft_ms == pytest.approx([20.0, 15.0])


def test_timed_metrics_agree_with_the_engine_clock():
    from sim.config import SchedulerConfig
    from sim.generators import from_spec
    from sim.timed import run_with_timer

    workload = from_spec(
        "poisson:rate=50,n=200,prompt=lognormal:300:0.8,output=uniform:5:120,seed=1",
        max_model_len=1024,
    )
    config = SchedulerConfig(
        max_num_batched_tokens=512, max_num_seqs=32, max_model_len=1024, num_gpu_blocks=150
    )
    run = run_with_timer(
        config, workload, lambda q, s, kv, ap: 5.0 + 0.01 * np.asarray(q, dtype=float)
    )
    m = request_metrics(run)
    assert run.num_preemptions.sum() > 0
    assert m.ttft_ms == pytest.approx((run.first_token_s - workload.arrival_s) * 1000)
    assert m.e2e_s == pytest.approx(run.finish_s - workload.arrival_s)
    assert m.itl.size == run.token_req.size - workload.num_requests
    assert (m.itl > 0).all()
    s = summarize(run, ttft_slo_ms=1e9, itl_slo_ms=1e9)
    assert s["num_good"] == s["num_finished"] == 200


def test_summary_of_a_run_priced_by_the_cost_model():
    from sim.config import SchedulerConfig
    from sim.generators import from_spec
    from sim.timed import deployment, run_timed

    workload = from_spec(
        "poisson:rate=20,n=40,prompt=lognormal:512:0.8,output=uniform:8:64,seed=0",
        max_model_len=4096,
    )
    config = SchedulerConfig(
        max_num_batched_tokens=2048, max_num_seqs=64, max_model_len=4096, num_gpu_blocks=400
    )
    run = run_timed(config, workload, deployment("H100-SXM", "Llama-3.1-8B"))
    s = summarize(run, ttft_slo_ms=500, itl_slo_ms=50)
    assert json.loads(json.dumps(s)) == s
    assert s["num_finished"] == 40
    assert s["num_output_tokens"] == int(workload.output_tokens.sum())
    m = request_metrics(run)
    assert m.ttft_ms == pytest.approx((run.first_token_s - workload.arrival_s) * 1000)
    assert s["makespan_s"] == pytest.approx(run.finish_s.max() - workload.arrival_s.min())
    # a light load (TTFT well under 500 ms, TPOT under 50 ms): every request is good
    assert s["num_good"] == 40
    assert s["goodput_req_per_s"] == pytest.approx(40 / s["makespan_s"])
    assert s["ttft_ms"]["p50"] <= s["ttft_ms"]["p90"] <= s["ttft_ms"]["p99"] <= s["ttft_ms"]["max"]


# --- tokens grouped by request without a sort (metrics._by_request_of_run) ----------------------


def _runs_to_group():
    """Real runs of many kinds: sync and async, preempting or not, prefix caching, step
    replays and timed runs."""
    from sim.config import SchedulerConfig
    from sim.scheduler import run_steps
    from sim.timed import run_with_timer

    rng = np.random.default_rng(5)
    for seed in range(6):
        n = 80
        wl = Workload.build(
            rng.integers(40, 600, n),
            rng.integers(1, 120, n),
            arrival_step=np.sort(rng.integers(1, 60, n)),
            prefix_id=rng.integers(-1, 3, n),
            prefix_tokens=np.full(n, 32),
        )
        config = SchedulerConfig(
            max_num_batched_tokens=int(rng.choice([256, 512, 2048])),
            max_num_seqs=int(rng.choice([8, 32])),
            max_model_len=1024,
            num_gpu_blocks=int(rng.choice([70, 120, 2000])),
            enable_prefix_caching=bool(seed % 2),
            async_scheduling=bool(seed % 3 == 0),
            policy="priority" if seed == 4 else "fcfs",
        )
        yield run_steps(config, wl)
        timed = replace(wl, arrival_step=None, arrival_s=np.sort(rng.uniform(0, 2, n)))
        yield run_with_timer(config, timed, ten_ms_per_step)


def test_grouping_without_a_sort_is_the_sort_element_for_element():
    from sim.metrics import _by_request, _by_request_of_run, _token_clock

    preempting = 0
    for run in _runs_to_group():
        times, _ = _token_clock(run)
        want = _by_request(run.token_req, times)
        got = _by_request_of_run(run, times)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        preempting += int(run.num_preemptions.sum() > 0)
    assert preempting >= 2  # requests with a gap in their tokens were sorted apart


def test_grouping_without_a_sort_by_hand():
    """TIMED's request 0 has no token in step 3 (a gap): it is sorted apart; a wrong first
    step or two tokens of one request in one step fall back to the sort, with its result."""
    from sim.metrics import _by_request_of_run, _token_clock

    times, _ = _token_clock(TIMED)
    req, time = _by_request_of_run(TIMED, times)
    assert req.tolist() == [0, 0, 0, 1, 1, 1]
    np.testing.assert_allclose(time, [0.1, 0.2, 0.4, 0.2, 0.35, 0.4])
    wrong_first = replace(TIMED, first_token_step=a(2, 1))
    np.testing.assert_array_equal(_by_request_of_run(wrong_first, times)[1], time)
    twice = replace(TIMED, token_req=a(0, 0, 1, 1, 1, 0), token_step=a(1, 2, 2, 3, 3, 4))
    times, _ = _token_clock(twice)
    req, time = _by_request_of_run(twice, times)
    assert req.tolist() == [0, 0, 0, 1, 1, 1]
    np.testing.assert_allclose(time, [0.1, 0.2, 0.4, 0.2, 0.35, 0.35])


def test_a_run_without_preemptions_is_grouped_without_any_sort(monkeypatch):
    """The point of the placement: a run whose requests never pause (no preemption) sorts
    nothing at all; a preempting one sorts only its victims' tokens."""
    import sim.metrics as metrics

    sorted_sizes: list[int] = []
    plain = metrics._by_request

    def spy(req, time):
        sorted_sizes.append(int(np.size(req)))
        return plain(req, time)

    monkeypatch.setattr(metrics, "_by_request", spy)
    seen = {"calm": 0, "preempting": 0}
    for run in _runs_to_group():
        sorted_sizes.clear()
        times, _ = metrics._token_clock(run)
        metrics._by_request_of_run(run, times)
        if run.num_preemptions.sum() == 0:
            assert sorted_sizes == []
            seen["calm"] += 1
        else:
            victims = run.num_preemptions > 0
            assert sum(sorted_sizes) <= run.num_output_tokens[victims].sum()
            seen["preempting"] += 1
    assert min(seen.values()) >= 2
