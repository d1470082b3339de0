"""The one-step pricer and the landing pass of timed windows (sim/cost.step_pricer,
sim/landing.py): the pricer gives the vectorized cost model's times, and the landings it finds
are a fixed point of the vectorized definition (price every step of the story they make, and
each arrival lands in the first step starting at or after it)."""

from __future__ import annotations

import numpy as np
import pytest

from sim.cost import Deployment, step_ms, step_pricer
from sim.landing import landings
from sim.timed import timer_for

DEPLOYMENTS = [
    Deployment("H100-SXM", "Llama-3.1-8B"),
    Deployment("A100-80GB", "Llama-3.1-70B", tp=4),
    Deployment("H100-SXM", "Mixtral-8x7B", tp=2),
    Deployment("L4", "Llama-3.1-8B"),
]


def _shapes(rng, n):
    s = rng.integers(1, 256, n)
    q = s + rng.integers(0, 4000, n) * (rng.random(n) < 0.3)
    kv = rng.integers(0, 500_000, n)
    q[:3] = s[:3] = kv[:3] = 0  # idle steps too
    return q, s, kv, kv + q * (q + 1) // 2


@pytest.mark.parametrize("dep", DEPLOYMENTS, ids=lambda d: f"{d.gpu}-{d.model}-tp{d.tp}")
def test_the_pricer_gives_the_cost_models_times(dep):
    q, s, kv, pairs = _shapes(np.random.default_rng(1), 600)
    want = step_ms(dep, q, s, kv, pairs)
    price = step_pricer(dep, int(q.max()), int(s.max()))
    got = np.array(
        [
            price(*row)
            for row in zip(q.tolist(), s.tolist(), kv.tolist(), pairs.tolist(), strict=True)
        ]
    )
    np.testing.assert_allclose(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_the_timers_pricer_follows_the_scheduling_mode(async_scheduling):
    dep = DEPLOYMENTS[0]
    q, s, kv, pairs = _shapes(np.random.default_rng(2), 300)
    timer = timer_for(dep, async_scheduling=async_scheduling)
    price = timer.pricer(int(q.max()), int(s.max()))
    want = timer(q, s, kv, pairs)
    got = [
        price(*row) for row in zip(q.tolist(), s.tolist(), kv.tolist(), pairs.tolist(), strict=True)
    ]
    np.testing.assert_allclose(got, want, rtol=0, atol=0)


def _story_ms(timer, decoding, kv_read, landed, prompt, rem):
    """Every step's time in the story the landings make, built and priced vectorized."""
    T = decoding.shape[0]
    q, s, kv = decoding.copy(), decoding.copy(), kv_read.copy()
    pairs = kv_read + decoding
    for t, p, r in zip(landed.tolist(), prompt.tolist(), rem.tolist(), strict=False):
        q[t] += p
        s[t] += 1
        pairs[t] += p * (p + 1) // 2
        steps = np.arange(t + 1, min(t + r, T))
        ctx = p + steps - t - 1
        q[steps] += 1
        s[steps] += 1
        kv[steps] += ctx
        pairs[steps] += ctx + 1
    return np.asarray(timer(q, s, kv, pairs), dtype=np.float64)


@pytest.mark.parametrize("seed", range(6))
def test_landings_are_a_fixed_point_of_the_priced_story(seed):
    rng = np.random.default_rng(seed)
    dep = DEPLOYMENTS[seed % 2]
    timer = timer_for(dep, async_scheduling=bool(seed % 3 == 0))
    T = int(rng.integers(50, 400))
    decoding = np.maximum(0, 40 - np.arange(T) // 5).astype(np.int64)
    kv_read = decoding * 900 + np.arange(T, dtype=np.int64) * decoding
    n = int(rng.integers(5, 80))
    now_s = 12.5
    arrival_s = now_s + np.sort(rng.uniform(0, T * 0.02, n))
    prompt = rng.integers(20, 3000, n)
    rem = rng.integers(1, 300, n)
    price = timer.pricer(1 << 16, 1 << 16)
    landed = landings(price, now_s, decoding, kv_read, arrival_s, prompt, rem, 1 << 16)
    assert landed.shape[0] > 0
    ms = _story_ms(timer, decoding, kv_read, landed, prompt, rem)
    starts = now_s + np.concatenate(([0.0], np.cumsum(ms)[:-1] / 1e3))
    want = np.searchsorted(starts, arrival_s, side="left")
    inside = want < T
    assert landed.tolist() == want[inside].tolist()


def test_landings_stop_before_a_step_over_the_token_limit():
    dep = DEPLOYMENTS[0]
    price = timer_for(dep).pricer(1 << 16, 1 << 16)
    decoding = np.full(100, 10, dtype=np.int64)
    kv_read = np.full(100, 5000, dtype=np.int64)
    arrival_s = np.array([0.0, 0.05, 0.05001, 0.5])  # the two at 0.05 s share a step
    prompt = np.array([100, 3000, 3000, 100])
    rem = np.array([5, 5, 5, 5])
    landed = landings(price, 0.0, decoding, kv_read, arrival_s, prompt, rem, 4096)
    assert landed.tolist() == [0]  # the step holding both long prompts would pass 4,096 tokens
    assert landings(price, 0.0, decoding, kv_read, arrival_s, prompt, rem, 8192).shape[0] == 4
