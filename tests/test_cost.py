"""Cost model: seed numbers, calibration error bars and drift, roofline shape, TP, MoE, input."""

import json

import numpy as np
import pytest

from sim import calibrate
from sim.cost import (
    Deployment,
    GemmFactors,
    calibration,
    factors_for,
    ridge_tokens,
    smooth_max,
    step_costs,
    weight_read_ms,
)
from sim.errors import SimInputError
from sim.hardware import get_gpu

H100_8B = Deployment("H100-SXM", "Llama-3.1-8B")


def costs(dep, tokens, seqs=None, kv=None, **kw):
    t = np.asarray(tokens, dtype=float)
    return step_costs(
        dep,
        query_tokens=t,
        num_seqs=np.ones_like(t) if seqs is None else seqs,
        kv_read_tokens=np.zeros_like(t) if kv is None else kv,
        **kw,
    )


def test_seed_numbers_by_computation():
    w = weight_read_ms(H100_8B, "seed")
    assert 5.0 <= w <= 5.5  # 16 GB at 3 TB/s
    c = costs(H100_8B, [1, 2048], assumptions="seed")
    assert c.step_ms[0] == pytest.approx(w)
    assert 64.0 <= c.step_ms[1] <= 67.0  # 2 x 8e9 x 2048 FLOPs at 500 TFLOP/s
    assert bool(c.memory_bound[0]) and not bool(c.memory_bound[1])


def test_calibrated_floor_and_2048_step_are_plausible():
    w = weight_read_ms(H100_8B)
    assert 4.0 < w < 6.5  # 15 GB at the fitted fraction of 3.35 TB/s
    c = costs(H100_8B, [1, 2048])
    assert w < c.step_ms[0] < w + 3.0
    assert 30 < c.step_ms[1] < 70


def test_error_bars_hold_in_sample_and_leave_one_out():
    """Regression fences on the generated error tables (the issue's bar and its misses are
    reported in docs/calibration.md): every profiled GPU/model/TP row has an in-sample and
    left-out median <= 10% and worst <= 35%, and the left-out medians' median is <= 5%."""
    errs = calibration()["errors"]
    df = calibrate.load_linear_profiles()
    pairs = df.groupby(["gpu", "model", "tp"]).ngroups
    assert len(errs["in_sample"]) == pairs
    # each row is left out twice: with its model and with its TP size
    assert len(errs["leave_one_out"]) == 2 * pairs
    for row in errs["in_sample"] + errs["leave_one_out"]:
        assert row["median_rel_err"] <= 0.10, row
        assert row["worst_rel_err"] <= 0.35, row
    assert np.median([r["median_rel_err"] for r in errs["leave_one_out"]]) <= 0.05


def test_large_gemms_stay_flat_longer_than_small_ones():
    """The shape the profiles show on H100: a 70B model's linear layers cost almost the same at
    128 tokens as at one, a 7B model's bend earlier (split-K, few tiles)."""
    big = Deployment("H100-SXM", "Llama-2-70B")
    small = Deployment("H100-SXM", "Llama-2-7B")
    rb = costs(big, [1, 128]).linear_ms
    rs = costs(small, [1, 128]).linear_ms
    assert rb[1] / rb[0] < 1.2
    assert rs[1] / rs[0] > rb[1] / rb[0] + 0.05


def test_step_costs_linear_matches_profiles():
    """The cost model itself (not the fit code) against Vidur's A100 Llama-3-8B profile."""
    df = calibrate.load_linear_profiles()
    sub = df[(df["model"] == "Llama-3-8B") & (df["tp"] == 2)]
    dep = Deployment("A100-80GB", "Llama-3.1-8B", tp=2)  # same shapes as Llama-3-8B
    t = sub["num_tokens"].to_numpy(dtype=float)
    c = costs(dep, t)
    rel = np.abs(c.linear_ms / 32 / sub["measured_ms"].to_numpy() - 1)
    assert np.median(rel) <= 0.10 and rel.max() <= 0.30


def test_calibration_json_matches_the_code():
    cal = calibration()
    df = calibrate.load_linear_profiles()
    rows = []
    for fam, fd in df.groupby("family", sort=True):
        fd = fd.reset_index(drop=True)
        f = calibrate._rounded(cal["gemm"][fam])
        pred = calibrate.predict_linear_ms(fd, f)
        # the cost model's envelope only ever lowers the kernel time the fit sees
        kernel = calibrate._kernel_sum(calibrate._arrays(fd), f)
        assert (pred <= kernel * (1 + 1e-9)).all()
        assert np.mean(pred < kernel * (1 - 1e-9)) < 0.2
        for (gpu, model, tp), idx in fd.groupby(["gpu", "model", "tp"], sort=True).groups.items():
            rows.append(
                calibrate._err_row(
                    fd.loc[idx], pred[np.asarray(idx)], gpu=gpu, model=model, tp=int(tp)
                )
            )
        # the stored factors are the fit's optimum: nudging any of them makes the loss worse
        meas = fd["measured_ms"].to_numpy()
        base = calibrate.fit_loss(kernel, meas)
        for field in calibrate.FITTED:
            for s in (0.98, 1.02):
                d = dict(f.__dict__)
                d[field] = d[field] * s
                if field.endswith("efficiency") and d[field] > cal["efficiency_cap"]:
                    continue
                nudged = calibrate._kernel_sum(calibrate._arrays(fd), GemmFactors(**d))
                assert calibrate.fit_loss(nudged, meas) > base - 1e-9, (fam, field, s)
    assert rows == cal["errors"]["in_sample"]
    assert calibrate.fit_all_reduce() == cal["all_reduce"]
    on_disk = json.loads((calibrate.CAL_PATH).read_text())
    assert calibrate.render_markdown(on_disk) == calibrate.DOC_PATH.read_text()


@pytest.mark.parametrize(
    "dep",
    [
        H100_8B,
        Deployment("A100-80GB", "Llama-2-70B", tp=4),
        Deployment("L4", "Qwen2.5-7B"),
        Deployment("H100-SXM", "Mixtral-8x7B", tp=2, dtype="fp8"),
        Deployment("MI300X", "Llama-3.1-70B"),
    ],
)
def test_more_tokens_never_faster(dep):
    t = np.arange(1, 20001, dtype=float)
    c = costs(dep, t)
    assert (np.diff(c.step_ms) >= -1e-12).all()
    assert (np.diff(c.linear_ms) >= -1e-12).all()
    # more cached context never faster either
    k = costs(dep, np.full(50, 64.0), seqs=np.full(50, 64.0), kv=np.linspace(0, 1e6, 50))
    assert (np.diff(k.step_ms) > 0).all()


@pytest.mark.parametrize(
    "gpu,model",
    [("H100-SXM", "Llama-3.1-8B"), ("A100-80GB", "Qwen2.5-7B"), ("B200", "Llama-3.1-70B")],
)
def test_memory_to_compute_at_the_ridge(gpu, model):
    dep = Deployment(gpu, model)
    r = ridge_tokens(dep)
    assert 50 < r < 2000
    c = costs(dep, [1, r / 1.3, r * 1.3, 8192])
    assert c.memory_bound.tolist() == [True, True, False, False]
    # the floor: below the ridge the step costs about the weight read, above it grows ~linearly
    c2 = costs(dep, [r * 4, r * 8])
    assert c2.linear_ms[1] / c2.linear_ms[0] == pytest.approx(2.0, rel=0.15)


def test_seed_ridge_is_weight_time_over_token_time():
    s = ridge_tokens(H100_8B, "seed")
    c = costs(H100_8B, [s * 0.99, s * 1.01], assumptions="seed")
    assert c.memory_bound.tolist() == [True, False]


def test_tensor_parallel_effects():
    t = [1, 512, 4096]
    one = costs(H100_8B, t)
    two = costs(Deployment("H100-SXM", "Llama-3.1-8B", tp=2), t)
    eight = costs(Deployment("H100-SXM", "Llama-3.1-8B", tp=8), t)
    assert (one.comm_ms == 0).all() and (two.comm_ms > 0).all()
    assert (two.linear_ms < one.linear_ms).all() and (eight.linear_ms < two.linear_ms).all()
    assert (two.comm_ms[1:] > two.comm_ms[:-1]).all()
    assert weight_read_ms(Deployment("H100-SXM", "Llama-3.1-8B", tp=2)) == pytest.approx(
        weight_read_ms(H100_8B) / 2, rel=0.05
    )


def test_lm_head_per_sequence_and_attention_per_sequence():
    c = costs(H100_8B, [256, 256], seqs=np.array([1.0, 256.0]), kv=np.array([0.0, 0.0]))
    assert c.lm_head_ms[1] > c.lm_head_ms[0]
    # one 8k-context prefill chunk vs the same tokens spread over many short sequences
    pairs_long = np.array([512 * 8000 + 512 * 513 / 2])
    pairs_short = np.array([512 * 1.0])
    a = step_costs(
        H100_8B, query_tokens=[512], num_seqs=[1], kv_read_tokens=[8000], attn_pairs=pairs_long
    )
    b = step_costs(
        H100_8B, query_tokens=[512], num_seqs=[1], kv_read_tokens=[8000], attn_pairs=pairs_short
    )
    assert a.attention_ms[0] > b.attention_ms[0]


def test_moe_reads_more_experts_as_tokens_grow():
    dep = Deployment("H100-SXM", "Mixtral-8x7B", tp=2)
    c = costs(dep, [1, 8, 64])
    assert c.linear_ms[0] < c.linear_ms[1] < c.linear_ms[2]
    assert c.linear_ms[2] / c.linear_ms[0] > 2.5  # 2 experts -> nearly all 8


def test_parts_sum_and_shape():
    q = np.array([[1.0, 100.0], [1000.0, 5000.0]])
    c = step_costs(H100_8B, query_tokens=q, num_seqs=np.ones_like(q), kv_read_tokens=q * 3)
    assert c.step_ms.shape == q.shape
    total = c.linear_ms + c.attention_ms + c.lm_head_ms + c.comm_ms + c.overhead_ms
    np.testing.assert_allclose(c.step_ms, total)
    z = costs(H100_8B, [0.0], seqs=np.array([0.0]))
    assert z.step_ms[0] == 0


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"query_tokens": [-1]}, "query_tokens"),
        ({"query_tokens": [float("nan")]}, "finite"),
        ({"query_tokens": [2e7]}, "absurd"),
        ({"query_tokens": ["x"]}, "numbers"),
        ({"num_seqs": [5]}, "num_seqs"),
        ({"kv_read_tokens": [-3]}, "kv_read_tokens"),
        ({"kv_read_tokens": [1, 2]}, "shape"),
    ],
)
def test_bad_input(kw, match):
    args = {"query_tokens": [4], "num_seqs": [1], "kv_read_tokens": [0], **kw}
    with pytest.raises(SimInputError, match=match):
        step_costs(H100_8B, **args)


def test_bad_deployment():
    with pytest.raises(SimInputError, match="FP8"):
        Deployment("A100-80GB", "Llama-3.1-8B", dtype="fp8")
    with pytest.raises(SimInputError, match="tp"):
        Deployment("H100-SXM", "Llama-3.1-8B", tp=3)
    with pytest.raises(SimInputError, match="unknown GPU"):
        Deployment("TPU", "Llama-3.1-8B")
    with pytest.raises(SimInputError, match="assumptions"):
        costs(H100_8B, [1], assumptions="guess")


def test_unprofiled_gpus_use_their_generation():
    assert factors_for(get_gpu("L40S")) == factors_for(get_gpu("A100-80GB"))
    assert factors_for(get_gpu("B200")) == factors_for(get_gpu("H100-SXM"))


@pytest.mark.parametrize("p", [1.05, 1.1, 1.5, 2.0, 3.0])
def test_fast_smooth_max_is_exact_enough(p):
    a = np.concatenate([np.geomspace(1e-9, 1e3, 20001), [0.0, 5.0]])
    b = np.concatenate([np.ones(20001), [0.0, 0.0]])
    exact = (a**p + b**p) ** (1 / p)
    np.testing.assert_allclose(smooth_max(a, b, p), exact, rtol=1e-5, atol=0)


def test_roofline_sides_bound_the_step():
    """memory_ms and compute_ms are each at most the step, and decide memory_bound."""
    from sim.cost import Deployment, mixed_batch, step_costs

    for dep in (Deployment("H100-SXM", "Llama-3.1-8B"), Deployment("A100-80GB", "Mixtral-8x7B", 2)):
        c = step_costs(dep, **mixed_batch([1, 16, 256, 2048, 16384], 32, 4096))
        assert (c.memory_ms > 0).all() and (c.compute_ms > 0).all()
        assert (c.memory_ms <= c.step_ms + 1e-9).all()
        assert (c.compute_ms <= c.step_ms + 1e-9).all()
        assert ((c.memory_ms >= c.compute_ms) == c.memory_bound).all()
        # More prompt tokens: the compute side's share grows, the memory side's share falls.
        assert (np.diff(c.compute_ms / c.step_ms) > 0).all()
        # (Activation bytes grow with tokens too, so tiny steps may tick up by a hair.)
        assert (np.diff(c.memory_ms / c.step_ms) < 1e-3).all()
        assert (c.memory_ms / c.step_ms)[0] > 3 * (c.memory_ms / c.step_ms)[-1]


@pytest.mark.parametrize(
    ("gpu", "model", "tp"),
    [
        ("H100-SXM", "Llama-3.1-8B", 1),
        ("A100-80GB", "Llama-3.1-70B", 4),
        ("L4", "Llama-3.1-8B", 1),
        ("H100-SXM", "Mixtral-8x7B", 2),
    ],
)
def test_a_lookup_table_gives_the_same_numbers_whatever_its_size(gpu, model, tp):
    """The step-time tables are kept per size (a power of two above the largest count asked),
    and a larger one serves a smaller request: a count's value must not depend on the size."""
    from sim import cost

    dep = Deployment(gpu, model, tp=tp)
    _, _, bw, flops, _, f = cost.cost_constants(dep)
    big = cost._linear_per_layer(dep, f, np.arange(1 << 15, dtype=np.float64), bw, flops)[0]
    for size in (1024, 4096):
        small = cost._linear_per_layer(dep, f, np.arange(size, dtype=np.float64), bw, flops)[0]
        np.testing.assert_array_equal(small, big[:size])
    cost._TABLES.clear()
    x = np.array([5, 900], dtype=np.int64)
    cost._table_for(np.array([20_000]), dep, "test", lambda u: (u * 2.0,))
    # no table of 1,024 rows yet: the larger one serves (its fn, not this one, made it)
    reused = cost._table_for(x, dep, "test", lambda u: (u * 3.0,))[0]
    assert reused.shape[0] > 20_000 and np.array_equal(reused[x], x * 2.0)
    cost._TABLES.clear()
