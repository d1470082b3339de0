"""Lesson "The sequence budget and the throughput curve": Readout, page, charts, quiz, exercises.

Why: the curves must say what the lesson says (more concurrency, more tokens per second in total
and fewer for each user; longer contexts bend the curve sooner), the knee and the ITL pick must
follow their stated definitions on the chart's own data, every control must move the numbers it
stands for, the animation must stay within what the engine can reach and open where the controls
point, and every exercise answer must agree with an independent scheduler
(tests/reference_scheduler.py) priced by the cost model.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from lessons.course import lesson
from lessons.kit import story
from lessons.kit.controls import declared
from lessons.throughput_curve import exercise
from lessons.throughput_curve.lesson import MAX_SEQS, PREFIX, Params, build, decode_curves
from sim.config import SchedulerConfig
from sim.cost import OVERHEAD_MS, Deployment, step_costs
from sim.hardware import default_batch_limits
from sim.load import load_workload
from sim.metrics import summarize
from sim.models import kv_pool, num_gpu_blocks
from sim.sweep import sweep_values
from sim.timed import config_for, run_timed, timer_for
from sim.workload import Workload
from tests import reference_scheduler
from tests.apptest_util import assert_quiz_awards_xp_once, charts, run_page, trace_values
from tests.scenarios import base_settings

PAGE = "views/lesson_throughput_curve.py"


# -- helpers ---------------------------------------------------------------------------------
def _chart(at, title_word: str) -> dict:
    for chart in charts(at):
        if title_word in chart["layout"]["title"]["text"]:
            return chart
    raise AssertionError(f"no chart titled with {title_word!r}")


def _curve_chart(at) -> dict:
    return _chart(at, "Throughput on")


def _loop_chart(at) -> dict:
    return _chart(at, "closed loop on")


def _text(at) -> str:
    """All the page's markdown, with every run of whitespace (line breaks too) as one space."""
    return " ".join(" ".join(m.value for m in at.markdown).split())


def _loop_series(chart: dict) -> dict[str, tuple[list, list]]:
    """Each series of the loop chart by its legend name, its piece up to what the engine holds
    and its dotted piece beyond joined (the pieces share `meta`; the point where they meet
    once)."""
    xs, ys = trace_values(chart, "x"), trace_values(chart, "y")
    names: dict[str, str] = {}
    points: dict[str, dict] = {}
    for trace, x, y in zip(chart["data"], xs, ys, strict=True):
        key = trace.get("meta") or trace["name"]
        if trace.get("legendgroup") != "queued":
            names[key] = trace["name"]
        points.setdefault(key, {}).update(zip(x, y, strict=True))
    return {names[key]: (sorted(p), [p[k] for k in sorted(p)]) for key, p in points.items()}


def _anim(at) -> dict:
    return next(c for c in charts(at) if c.get("frames"))


def _curves(at) -> dict[str, np.ndarray]:
    """The total and per-user curves as drawn (reachable part and beyond, joined)."""
    chart = _curve_chart(at)
    xs, ys = trace_values(chart, "x"), trace_values(chart, "y")
    out: dict[str, list] = {"total_x": [], "total": [], "user_x": [], "user": []}
    for trace, x, y in zip(chart["data"], xs, ys, strict=True):
        if trace.get("mode") != "lines" or len(x) < 3:
            continue
        key = "user" if trace.get("yaxis") == "y2" else "total"
        out[f"{key}_x"] += x
        out[key] += y
    res = {}
    for key in ("total", "user"):
        order = np.argsort(out[f"{key}_x"])
        res[f"{key}_x"] = np.asarray(out[f"{key}_x"])[order]
        res[key] = np.asarray(out[key])[order]
    return res


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric if m.label != "XP"}


def _metric(at, start: str) -> str:
    return next(v for label, v in _metrics(at).items() if label.startswith(start))


def _as_int(text: str) -> int | None:
    return None if text == "none" else int(text.replace(",", ""))


def _named(chart: dict, start: str) -> dict:
    return next(t for t in chart["data"] if t.get("name", "").startswith(start))


def _own_limits(at, budget: int | None = None, seqs: int | None = None):
    at.toggle(key="w:tput-defaults").set_value(False).run()
    if budget is not None:
        at.select_slider(key="w:tput-budget").set_value(budget).run()
    if seqs is not None:
        at.slider(key="w:tput-seqs").set_value(seqs).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


# -- the seed numbers and the definitions ----------------------------------------------------
def test_opens_at_the_seed_numbers():
    """H100-SXM, Llama-3.1-8B, 2,048 tokens of context, 20 ms, async scheduling: the numbers the
    lesson quotes (the cost model's, with the CPU's 1 ms per step hidden by async scheduling;
    with it off they are the synchronous cost model's: knee 33, pick 128, 6.5 ms, 3,460 tok/s)."""
    r = build(Params())
    assert r.async_on
    assert (r.knee, r.pick, r.kv_cap, r.reach) == (29, 139, 218, 218)
    assert round(r.knee_total) == 3587
    assert round(r.one_step_ms, 1) == 5.5 and round(r.one_total) == 181
    assert round(r.weight_gb, 1) == 15.0 and round(r.kv_per_seq_mb) == 268
    assert round(r.crossover) == 56 and round(r.pool_gib) == 55
    assert round(r.top_total) == 9302 and round(r.top_per_user, 1) == 9.1
    assert (r.budget, r.max_num_seqs) == (8192, 1024)  # vLLM's defaults for the H100
    sync = build(Params(async_scheduling=False))
    assert (sync.knee, sync.pick, round(sync.knee_total), round(sync.one_step_ms, 1)) == (
        33,
        128,
        3460,
        6.5,
    )
    at = run_page(PAGE)
    assert _metrics(at) == {
        "Knee (sequences)": "29",
        "Total at the knee (tok/s)": "3,587",
        "Largest within 20 ms": "139",
        "KV cache holds (seqs)": "218",
        "Runs at most (seqs)": "218",
    }
    text = " ".join(m.value for m in at.markdown)
    assert "**29 sequences**" in text and "**139 sequences**" in text


def test_both_curves_and_the_knee_by_its_definition_on_the_drawn_data():
    at = run_page(PAGE)
    c = _curves(at)
    assert c["total_x"].tolist() == list(range(1, MAX_SEQS + 1))
    total, user = c["total"], c["user"]
    # More concurrency: more total throughput and less for each user, doubling by doubling.
    for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
        assert total[2 * n - 1] > total[n - 1]
        assert user[2 * n - 1] < user[n - 1]
    # Each user gets one token per step: per-user x concurrency = total.
    assert np.allclose(user * c["user_x"], total)
    # The knee, as the lesson defines it: the first N where doubling to 2N adds less than 50%.
    knee = _as_int(_metric(at, "Knee"))
    gain = total[2 * np.arange(1, 513) - 1] / total[:512]
    assert knee == int(np.flatnonzero(gain < 1.5)[0]) + 1
    assert gain[knee - 2] >= 1.5
    # The dotted part is exactly what the KV cache cannot hold.
    chart = _curve_chart(at)
    beyond = trace_values(chart, "x")[chart["data"].index(_named(chart, "beyond the KV"))]
    assert beyond[0] == build(Params()).kv_cap + 1 and beyond[-1] == MAX_SEQS


def test_the_curves_are_sims_steady_decode_steps():
    """The Readout's step times are sim.cost's price of N sequences decoding one token each;
    with async scheduling, what the timed runs' timer makes of it (the CPU's part hidden)."""
    r = build(Params(context=4096, async_scheduling=False))
    hidden = build(Params(context=4096))
    dep = Deployment("H100-SXM", "Llama-3.1-8B")
    timer = timer_for(dep, async_scheduling=True)
    for n in (1, 7, 64, 300, 1024):
        shape = {
            "query_tokens": n,
            "num_seqs": n,
            "kv_read_tokens": n * 4096,
            "attn_pairs": n * 4097,
        }
        ms = float(step_costs(dep, **shape).step_ms)
        assert r.curves.step_ms[n - 1] == pytest.approx(ms, rel=1e-12)
        assert hidden.curves.step_ms[n - 1] == pytest.approx(float(timer(**shape)), rel=1e-12)
        assert hidden.curves.step_ms[n - 1] == pytest.approx(ms - OVERHEAD_MS, rel=1e-12)
        parts = sum(hidden.curves.parts_ms[k][n - 1] for k in hidden.curves.parts_ms)
        assert parts == pytest.approx(hidden.curves.step_ms[n - 1], rel=1e-12)
    # The KV limit: vLLM's pool for this budget, in blocks of the config's size, per sequence.
    pool = kv_pool("H100-SXM", "Llama-3.1-8B", max_num_batched_tokens=8192)
    assert r.kv_cap == (pool.num_gpu_blocks - 1) // -(-4096 // SchedulerConfig.block_size)


def test_every_chart_is_a_valid_plotly_figure_and_sets_no_legend_position():
    """ui/charts.show sends the dicts unvalidated, so validate what the page sent here; a figure
    that places its own legend can put it over the curves or break the animation's controls."""
    import plotly.graph_objects as go

    at = run_page(PAGE)
    for chart in charts(at):
        go.Figure(chart)  # raises on any property Plotly does not know
        assert "legend" not in chart["layout"]
    # The curve chart's labels are legend entries, never text drawn over the curves.
    assert all("text" not in t.get("mode", "") for t in _curve_chart(at)["data"])


@pytest.mark.parametrize(
    "query",
    [
        {"gpu": "H100-PCIe", "model": "Llama-3.1-70B", "tp": "8", "tput-context": "131072"},
        {"gpu": "A100-80GB", "model": "Mixtral-8x7B", "tp": "2", "tput-context": "16384"},
    ],
)
def test_titles_stay_short_enough_for_a_projector(query):
    """At 1280x720 a chart is about 800 px wide: a title of more than ~85 characters is cut."""
    at = run_page(PAGE, query=query)
    for chart in charts(at):
        for frame in [chart, *chart.get("frames", [])]:
            assert len(frame["layout"]["title"]["text"]) <= 85, frame["layout"]["title"]["text"]


# -- every control moves what it stands for --------------------------------------------------
def test_the_itl_target_picks_the_largest_concurrency_that_meets_it():
    at = run_page(PAGE, query={"tput-itl": "15"})
    tight = _as_int(_metric(at, "Largest within 15 ms"))
    at.slider(key="w:tput-itl").set_value(25).run()
    loose = _as_int(_metric(at, "Largest within 25 ms"))
    assert tight is not None and loose is not None and loose > tight
    r = build(Params(itl_target_ms=25))
    assert r.pick == loose
    step = r.curves.step_ms
    assert step[loose - 1] <= 25
    assert loose == r.kv_cap or step[loose] > 25  # the next one misses (or memory is full)
    star = _named(_curve_chart(at), "largest within 25 ms")
    assert star["x"] == [loose] and star["y"][0] == pytest.approx(r.pick_total)


def test_an_unreachable_target_says_so():
    at = run_page(PAGE, query={"tput-itl": "5"})
    assert _metric(at, "Largest within 5 ms") == "none"
    r = build(Params(itl_target_ms=5))
    assert not r.has_pick and r.one_step_ms > 5
    assert not any(t.get("name", "").startswith("largest") for t in _curve_chart(at)["data"])


def test_longer_context_bends_the_curve_sooner():
    at = run_page(PAGE, query={"tput-context": "512"})
    short = _curves(at)
    knee_short = _as_int(_metric(at, "Knee"))
    cap_short = _as_int(_metric(at, "KV cache holds"))
    at.select_slider(key="w:tput-context").set_value(8192).run()
    long = _curves(at)
    assert _as_int(_metric(at, "Knee")) < knee_short
    assert _as_int(_metric(at, "KV cache holds")) < cap_short
    assert long["total"][-1] < short["total"][-1]
    assert long["user"][0] < short["user"][0]
    reads = _chart(at, "reads from GPU memory")
    kv = trace_values(reads)[reads["data"].index(_named(reads, "KV cache"))]
    assert kv[1] == pytest.approx(2 * kv[0])  # the KV read grows with every sequence
    assert kv[0] == pytest.approx(build(Params(context=8192)).kv_per_seq_gb)


def test_a_faster_gpu_lifts_the_curve_and_its_defaults_follow():
    at = run_page(PAGE)
    h100 = _curves(at)
    at.selectbox(key="w:gpu").set_value("H200").run()
    h200 = _curves(at)
    assert not at.exception
    assert h200["total"][-1] > h100["total"][-1]
    assert _as_int(_metric(at, "KV cache holds")) > 218  # more memory, more sequences
    assert _metric(at, "Total at the knee") != "3,587"
    at.selectbox(key="w:gpu").set_value("L4").run()
    assert any("2,048" in c.value for c in at.caption)  # vLLM's defaults for the L4
    assert build(Params(gpu="L4")).budget == default_batch_limits("L4")["max_num_batched_tokens"]


def test_weights_and_tensor_parallelism_follow_sim():
    base = build(Params())
    fp8 = build(Params(dtype="fp8"))
    tp2 = build(Params(tp=2))
    assert fp8.weight_gb == pytest.approx(base.weight_gb / 2, rel=0.05)
    assert fp8.one_step_ms < base.one_step_ms
    assert tp2.weight_gb == pytest.approx(base.weight_gb / 2, rel=0.05)
    assert tp2.kv_cap > base.kv_cap  # half the weights and half the KV per GPU
    at = run_page(PAGE)
    at.selectbox(key="w:dtype").set_value("fp8").run()
    assert _metric(at, "Total at the knee") != "3,587" or _metric(at, "Knee") != "29"
    at.selectbox(key="w:tp").set_value(2).run()
    assert _as_int(_metric(at, "KV cache holds")) == build(Params(dtype="fp8", tp=2)).kv_cap


def test_a_model_that_does_not_fit_is_explained_and_reaches_nothing():
    at = run_page(PAGE)
    at.selectbox(key="w:model").set_value("Llama-3.1-70B").run()
    assert any("could not load this model" in w.value for w in at.warning)
    assert _metric(at, "Runs at most") == "0"
    r = build(Params(model="Llama-3.1-70B"))
    assert not r.fits and r.kv_cap == 0 and not r.can_serve
    anim = _anim(at)
    assert len(anim["frames"]) == 1  # nothing is reachable: the animation stays at one sequence
    assert r.no_closed and r.cl_runs == 0  # nor can a closed loop run: no chart, a sentence
    assert not any("closed loop on" in c["layout"]["title"]["text"] for c in charts(at))
    assert "cannot start with these" in " ".join(m.value for m in at.markdown)
    at.selectbox(key="w:tp").set_value(4).run()
    assert not any("could not load this model" in w.value for w in at.warning)
    assert _as_int(_metric(at, "Runs at most")) > 0
    assert _loop_chart(at)["data"]


def test_own_limits_start_at_the_gpus_defaults_move_the_cap_and_vllms_check_is_shown():
    at = _own_limits(run_page(PAGE))
    assert at.select_slider(key="w:tput-budget").value == 8192  # the H100's defaults
    assert at.slider(key="w:tput-seqs").value == 1024
    at.slider(key="w:tput-seqs").set_value(64).run()
    text = " ".join(m.value for m in at.markdown)
    assert "`max_num_seqs` = 64" in text and "**64 sequences**" in text
    assert _metric(at, "Runs at most") == "64"
    cap = _named(_curve_chart(at), "max_num_seqs")
    assert cap["x"] == [64, 64]
    at.select_slider(key="w:tput-budget").set_value(256).run()
    at.slider(key="w:tput-seqs").set_value(512).run()
    assert any("greater than or equal to max_num_seqs" in w.value for w in at.warning)
    # The budget sizes the activation memory, so it moves the KV cache's room.
    assert (
        build(Params(vllm_defaults=False, max_num_batched_tokens=256)).kv_cap
        > build(Params(vllm_defaults=False, max_num_batched_tokens=32768)).kv_cap
    )


def test_every_metric_follows_its_control():
    moves = {
        "Knee": ("select_slider", "w:tput-context", 8192),
        "Total at the knee": ("selectbox", "w:gpu", "H200"),
        "Largest within": ("slider", "w:tput-itl", 30),
        "KV cache holds": ("select_slider", "w:tput-context", 512),
        "Runs at most": ("slider", "w:tput-seqs", 100),
    }
    for start, (kind, key, value) in moves.items():
        at = _own_limits(run_page(PAGE)) if key == "w:tput-seqs" else run_page(PAGE)
        before = _metric(at, start)
        getattr(at, kind)(key=key).set_value(value).run()
        assert _metric(at, start) != before, start


# -- the closed loop -------------------------------------------------------------------------
def _direct(p: Params, clients: int, requests: int, async_scheduling: bool = True) -> dict:
    """The closed loop at one concurrency run here, straight through sim: the workload from its
    spec string (sim.load), vLLM's config for the lesson's limits, a timed run, its summary."""
    dep = Deployment(p.gpu, p.model)
    budget, seqs = p.max_num_batched_tokens, p.max_num_seqs
    if p.vllm_defaults:
        limits = default_batch_limits(p.gpu)
        budget, seqs = limits["max_num_batched_tokens"], limits["max_num_seqs"]
    config = config_for(
        dep,
        max_num_batched_tokens=budget,
        max_num_seqs=seqs,
        async_scheduling=async_scheduling,
    )
    spec = (
        f"concurrency:clients={clients},n={requests},prompt=fixed:{p.context},"
        f"output=fixed:{p.output_tokens},seed=0"
    )
    workload = load_workload(spec, max_model_len=config.max_model_len)
    return summarize(run_timed(config, workload, dep))


def _at(r, clients: int) -> int:
    return int(np.flatnonzero(r.loop.clients == clients)[0])


@pytest.mark.parametrize(
    "params",
    [Params(), Params(vllm_defaults=False, max_num_batched_tokens=2048, max_num_seqs=256)],
    ids=["defaults", "own-limits"],
)
def test_the_closed_loop_is_sims_closed_loop_run(params):
    """Each point is a `vllm bench serve --max-concurrency C` run of the lesson's lengths: the
    same workload run here through sim gives the same output tokens/s, mean ITL and mean TTFT,
    at a power of two and at the star (where the text compares), in both scheduling modes."""
    r = build(params)
    assert r.cmp_pick and r.cmp_n == r.pick  # the star is one of the runs
    for clients in (32, r.pick):
        i = _at(r, clients)
        n = int(r.loop.requests[i])
        assert clients <= n <= 4 * clients
        s = _direct(params, clients, n)
        assert r.loop.output_tps[i] == pytest.approx(s["output_tokens_per_s"], rel=1e-12)
        assert r.loop.itl_ms[i] == pytest.approx(s["itl_ms"]["mean"], rel=1e-12)
        assert r.loop.ttft_ms[i] == pytest.approx(s["ttft_ms"]["mean"], rel=1e-12)
        assert r.loop.preemptions[i] == s["total_preemptions"]
    sync = _direct(params, r.cmp_n, r.cmp_requests, async_scheduling=False)
    assert r.cmp_itl_other_ms == pytest.approx(sync["itl_ms"]["mean"], rel=1e-12)
    assert r.cmp_itl_other_ms > r.cmp_itl_ms  # synchronous steps also wait for the CPU


@pytest.mark.parametrize(
    "params",
    [
        Params(),
        Params(context=512),
        Params(context=8192, output_tokens=1024),
        Params(async_scheduling=False),
        Params(gpu="A100-80GB", model="Qwen2.5-7B"),
    ],
    ids=["defaults", "short", "long", "sync", "a100"],
)
def test_more_clients_more_throughput_and_never_a_shorter_wait(params):
    """On the closed loop's own data: up to what the engine holds at once, each doubling of the
    clients raises output tokens/s (a point in between may sit a few percent lower: requests of
    equal lengths fall into step with the budget); the mean ITL never falls as clients rise.
    And the closed loop stays below the decode-only picture at the same average context."""
    r = build(params)
    cl = r.loop
    assert cl.clients.tolist() == sorted(cl.clients.tolist()) and cl.clients.size >= 4
    pow2 = [i for i, c in enumerate(cl.clients) if c & (c - 1) == 0 and c <= r.cl_held]
    assert len(pow2) >= 4
    assert all(np.diff(cl.output_tps[pow2]) > 0)
    best = np.maximum.accumulate(cl.output_tps)
    assert all(cl.output_tps[cl.clients <= r.cl_held] >= 0.95 * best[cl.clients <= r.cl_held])
    assert all(np.diff(cl.itl_ms) >= 0)
    assert all(cl.output_tps < cl.decode_total)
    expect = decode_curves(r.gpu, r.model, 1, "bf16", r.mid_context, r.async_on)
    assert np.array_equal(cl.decode_step_ms, expect.step_ms[cl.clients - 1])


def test_the_text_quotes_the_closed_loop_and_no_longer_promises_the_line():
    """Statement 12 said max_num_seqs near the pick "holds the line when traffic surges". The
    closed loop at the pick says otherwise: its mean ITL is far above the decode-only step (and
    the target), because the steps that carry prompt chunks are much longer. The text must say
    so with the Readout's own numbers, and say which scheduling mode it shows."""
    r = build(Params())
    i = _at(r, r.cmp_n)
    assert r.cmp_itl_ms == r.loop.itl_ms[i] and r.cmp_tput == r.loop.output_tps[i]
    assert (
        r.cmp_step_ms == r.loop.decode_step_ms[i] and r.cmp_decode_total == r.loop.decode_total[i]
    )
    assert r.cmp_itl_ratio == pytest.approx(r.cmp_itl_ms / r.cmp_step_ms)
    assert r.cmp_itl_ms > 1.5 * r.cmp_step_ms and r.cmp_itl_ms > r.target_ms
    assert r.cmp_mixed_ms > 5 * r.cmp_pure_ms and r.cmp_over_target
    within = r.loop.clients[r.loop.itl_ms <= r.target_ms]
    assert r.cl_pick == within.max() < r.pick
    at = run_page(PAGE)
    text = _text(at)
    assert "holds the line" not in text
    assert f"`max_num_seqs` near {r.pick:,} does not hold a {r.target_ms} ms line" in text
    for quoted in (
        f"At the star, **{r.cmp_n:,} clients**",
        f"**{r.cmp_itl_ms:.1f} ms**, {r.cmp_itl_ratio:.1f} times the {r.cmp_step_ms:.1f} ms",
        f"**{r.cmp_tput:,.0f} output tokens/s**, {r.cmp_tput_share:.0%} of",
        f"the decode-only {r.cmp_decode_total:,.0f}",
        f"**{r.cmp_mixed_ms:,.1f} ms** on average, against {r.cmp_pure_ms:.1f} ms",
        f"{r.cmp_ttft_ms:,.0f} ms on average",
        f"is **{r.cl_pick:,} clients**",
        f"would wait {r.cmp_itl_other_ms:.1f} ms",
        "**Scheduling mode: async**",
        f"{r.one_step_ms:.1f} ms a step here, against {r.one_step_other_ms:.1f} ms",
    ):
        assert quoted in text, quoted
    caption = " ".join(c.value for c in at.caption)
    assert f"at most {r.cl_requests_max:,} in one run" in caption


def test_the_loop_chart_draws_the_readout_with_units_and_alt_text():
    at = run_page(PAGE)
    r = build(Params())
    chart = _loop_chart(at)
    by_name = _loop_series(chart)
    x, y = by_name["closed loop (prompts arriving)"]
    assert x == r.loop.clients.tolist() and y == pytest.approx(r.loop.output_tps.tolist())
    x, y = by_name["closed loop: mean ITL"]
    assert x == r.loop.clients.tolist() and y == pytest.approx(r.loop.itl_ms.tolist())
    assert all(np.diff(y) >= 0)  # per-request waits never shrink as clients rise, as drawn
    x, y = by_name["closed loop: mean TTFT"]
    assert y == pytest.approx(r.loop.ttft_ms.tolist())
    x, y = by_name[f"decode only, {r.mid_context:,} tokens held"]
    assert x == list(range(1, r.cl_max + 1))
    assert y == pytest.approx(r.loop.decode.total[: r.cl_max].tolist())
    for name in ("xaxis", "yaxis", "yaxis2"):
        assert "(" in chart["layout"][name]["title"]["text"]
    node = next(n for n in at.get("plotly_chart") if "closed loop on" in n.proto.spec)
    assert f"{r.cmp_itl_ms:.1f}" in node.proto.alt and str(r.cl_max) in node.proto.alt


def test_the_async_toggle_says_what_changes():
    at = run_page(PAGE)
    at.toggle(key="w:tput-async").set_value(False).run()
    assert not at.exception
    sync = build(Params(async_scheduling=False))
    text = _text(at)
    assert "**Scheduling mode: synchronous**" in text
    assert f"{sync.one_step_ms:.1f} ms a step, against {sync.one_step_other_ms:.1f} ms" in text
    assert sync.one_step_ms == pytest.approx(build(Params()).one_step_ms + OVERHEAD_MS)
    assert _metric(at, "Largest within 20 ms") == f"{sync.pick:,}" == "128"
    assert f"would wait {sync.cmp_itl_other_ms:.1f} ms" in text
    _, y = _loop_series(_loop_chart(at))["closed loop: mean ITL"]
    assert y == pytest.approx(sync.loop.itl_ms.tolist())


def test_the_output_length_moves_the_closed_loop():
    at = run_page(PAGE)
    at.select_slider(key="w:tput-output").set_value(1024).run()
    assert not at.exception
    r = build(Params(output_tokens=1024))
    assert r.mid_context == 2048 + 512
    text = _text(at)
    assert "2,048 prompt tokens and 1,024 output" in text
    assert r.cl_held < build(Params()).cl_held  # longer answers: fewer fit in the cache
    assert r.loop.itl_ms[0] != build(Params()).loop.itl_ms[0]


# -- the animation ---------------------------------------------------------------------------
def _frames_n(anim: dict) -> list[int]:
    return [f["data"][0]["x"][0] for f in anim["frames"]]


def test_the_animation_grows_the_concurrency_up_to_what_the_engine_reaches():
    at = run_page(PAGE)
    anim = _anim(at)
    frames = anim["frames"]
    assert 2 <= len(frames) <= 200
    ns = _frames_n(anim)
    assert ns == sorted(ns) and ns[0] == 1
    assert ns[-1] == 218  # the KV-cache limit the static chart draws, not 1,024
    totals = [f["data"][0]["y"][0] for f in frames]
    users = [f["data"][1]["y"][0] for f in frames]
    assert totals[-1] > totals[0] * 10 and users[-1] < users[0] / 3
    steps = [sum(f["data"][2]["y"]) for f in frames]
    assert all(b >= a for a, b in zip(steps, steps[1:], strict=False))  # steps only grow
    assert steps[-1] > 3 * steps[0]
    c = decode_curves("H100-SXM", "Llama-3.1-8B", 1, "bf16", 2048, True)  # async, as it opens
    assert totals == pytest.approx([float(c.total[n - 1]) for n in ns])


def _opening(anim: dict) -> int:
    """The concurrency the animation opens at: its slider, its dot and its frame agree."""
    active = anim["layout"]["sliders"][0]["active"]
    n = _frames_n(anim)[active]
    assert anim["layout"]["sliders"][0]["steps"][active]["label"] == f"{n:,}"
    dot = anim["data"][4]
    assert dot["x"] == [n]
    assert anim["layout"]["title"]["text"].startswith(f"{n:,} sequence")
    return n


def test_the_animation_opens_at_the_latency_targets_pick_and_follows_it():
    at = run_page(PAGE)
    assert _opening(_anim(at)) == build(Params()).pick == 139  # the star
    at.slider(key="w:tput-itl").set_value(25).run()
    assert _opening(_anim(at)) == build(Params(itl_target_ms=25)).pick == 196
    at.slider(key="w:tput-itl").set_value(5).run()
    assert _opening(_anim(at)) == 1  # nothing meets 5 ms: the closest is one sequence


def test_max_num_seqs_below_the_pick_ends_the_animation_there():
    at = _own_limits(run_page(PAGE), seqs=64)
    anim = _anim(at)
    assert _frames_n(anim)[-1] == 64
    assert _opening(anim) == 64
    at.slider(key="w:tput-seqs").set_value(500).run()
    anim = _anim(at)
    assert _frames_n(anim)[-1] == 218  # the KV cache stops it first
    assert _opening(anim) == 139


# -- links and extremes ----------------------------------------------------------------------
def test_a_bad_link_is_reported_and_replaced_by_the_default():
    at = run_page(PAGE, query={"tput-itl": "500", "tput-context": "3000"})
    warned = " ".join(w.value for w in at.warning)
    assert "tput-itl" in warned and "tput-context" in warned
    assert _metric(at, "Largest within 20 ms") == "139"


@pytest.mark.parametrize("high", [False, True], ids=["min", "max"])
def test_every_control_at_its_extremes_runs_clean(high):
    at = run_page(PAGE)
    at.toggle(key="w:tput-defaults").set_value(False).run()
    for kind, key in [
        ("selectbox", "w:gpu"),
        ("selectbox", "w:model"),
        ("selectbox", "w:dtype"),
        ("selectbox", "w:tp"),
        ("select_slider", "w:tput-context"),
        ("select_slider", "w:tput-output"),
        ("slider", "w:tput-itl"),
        ("toggle", "w:tput-async"),
        ("select_slider", "w:tput-budget"),
        ("slider", "w:tput-seqs"),
    ]:
        widget = getattr(at, kind)(key=key)
        if kind == "selectbox":
            widget.select_index(len(widget.options) - 1 if high else 0)
        elif kind == "toggle":
            widget.set_value(high)
        elif kind == "select_slider":
            widget.set_value(int(widget.proto.options[-1 if high else 0]))
        else:
            widget.set_value(int(widget.proto.max if high else widget.proto.min))
        at.run()
        assert not at.exception, (key, [e.value for e in at.exception])
    at.toggle(key="w:tput-defaults").set_value(True).run()
    assert not at.exception


# -- quiz and exercises ----------------------------------------------------------------------
def test_quiz_grades_and_awards_xp_once():
    assert len(lesson("throughput_curve").bank().questions) >= 6
    at = assert_quiz_awards_xp_once(PAGE, "throughput_curve", "lever")
    spec = next(e for e in exercise.EXERCISES if e.id == "pick")
    box = next(n for n in at.number_input if "sequences" in n.label)
    box.set_value(spec.draw(0).answer).run()
    at.button(key="exercise-throughput-curve-pick-check").click().run()
    assert not at.exception
    assert at.session_state["progress"].xp == 20


def test_steady_state_matches_a_full_scheduler_sweep():
    """The lesson's steady decode step is what full runs (prompts included) spend per token."""
    dep = Deployment("H100-SXM", "Llama-3.1-8B")
    n, prompt, output = 256, 1024, 256
    workload = Workload.build([prompt] * n, [output] * n, arrival_s=np.zeros(n))
    base = SchedulerConfig(
        max_num_batched_tokens=8192,
        max_num_seqs=1024,
        max_model_len=4096,
        num_gpu_blocks=num_gpu_blocks("H100-SXM", "Llama-3.1-8B"),
    )
    seqs = [8, 32, 128]
    runs = sweep_values(base, "max_num_seqs", seqs, workload, deployment=dep)
    c = decode_curves("H100-SXM", "Llama-3.1-8B", 1, "bf16", prompt + output // 2)  # mid-answer
    for (_, row), k in zip(runs.iterrows(), seqs, strict=True):
        assert row["total_preemptions"] == 0
        assert row["itl_ms_p50"] == pytest.approx(c.step_ms[k - 1], rel=0.02)
        assert row["output_tokens_per_s"] < c.total[k - 1]  # prompts cost steps too


def _reference_decode_ms(gpu: str, model: str, n: int, context: int) -> float:
    """The decode step of n sequences, scheduled by the reference scheduler, priced here."""
    requests = [
        {"id": f"r{i}", "prompt_len": context, "output_len": 2, "arrival_step": 1, "priority": 0}
        for i in range(n)
    ]
    settings = base_settings(
        max_num_batched_tokens=n * context,
        max_num_seqs=n,
        max_model_len=context + 8,
        num_gpu_blocks=n * (-(-(context + 2) // 16)) + 8,
    )
    ref = reference_scheduler.replay({"settings": settings, "requests": requests})
    prefill = ref["steps"][0]["num_scheduled_tokens"]
    decode = ref["steps"][1]["num_scheduled_tokens"]
    assert list(decode.values()) == [1] * n  # every sequence decodes one token
    ctx = [prefill[r] for r in decode]  # what each had computed before the decode step
    assert ctx == [context] * n
    return float(
        step_costs(
            Deployment(gpu=gpu, model=model),
            query_tokens=sum(decode.values()),
            num_seqs=len(decode),
            kv_read_tokens=sum(ctx),
            attn_pairs=sum(c + 1 for c in ctx),
        ).step_ms
    )


@pytest.mark.parametrize("seed", range(20))
def test_exercise_answers_match_the_reference_scheduler(seed):
    d = exercise.draw_setting(seed)
    drawn = {spec.id: spec.draw(seed) for spec in exercise.EXERCISES}
    ms = _reference_decode_ms(d.gpu, d.model, d.n, d.context)
    assert drawn["throughput"].answer == pytest.approx(d.n * 1e3 / ms, rel=1e-9)
    assert drawn["throughput"].is_correct(d.n * 1e3 / ms * 1.01)
    assert not drawn["throughput"].is_correct(d.n * 1e3 / ms * 1.1)
    # The pick: the largest tabulated concurrency whose steady decode step meets the target.
    solved = exercise.solve_pick(seed)
    rows, target = solved["rows"], solved["target"]
    ok = [
        n
        for n in rows
        if round(
            float(
                step_costs(
                    Deployment(gpu=d.gpu, model=d.model),
                    query_tokens=n,
                    num_seqs=n,
                    kv_read_tokens=n * d.context,
                    attn_pairs=n * (d.context + 1),
                ).step_ms
            ),
            1,
        )
        <= target
    ]
    assert ok and drawn["pick"].answer == max(ok)
    assert max(rows) <= exercise.kv_capacity(d.gpu, d.model, d.context)
    assert f"**{target} ms**" in drawn["pick"].prompt


# -- issue 36: diagram first -----------------------------------------------------------------
TEXT = lesson("throughput_curve").text_path
OWN = {f"w:{d.url_key(PREFIX)}" for d in declared(Params)}  # the lesson's controls' widgets


def _in_order(at) -> list[tuple[str, str]]:
    """The main column in reading order: ("chart", title; "animation" for the animated one),
    ("md", text), ("expander", label), ("control", widget key)."""
    out = []
    for node in at.main:
        kind = getattr(node, "type", "")
        if kind == "plotly_chart":
            spec = json.loads(node.proto.spec)
            title = spec["layout"].get("title", {}).get("text", "")
            out.append(("chart", "animation" if spec.get("frames") else title))
        elif kind == "markdown":
            out.append(("md", node.value))
        elif kind == "expander":
            out.append(("expander", node.label))
        elif kind in ("select_slider", "slider", "selectbox", "toggle") and node.key in OWN:
            out.append(("control", node.key))
    return out


def _question_at(order: list, question_id: str) -> int:
    number = [q.id for q in lesson("throughput_curve").bank().questions].index(question_id) + 1
    return next(i for i, (k, v) in enumerate(order) if k == "md" and v.startswith(f"**{number}.**"))


def _folded(at, topic: str) -> str:
    (box,) = [e for e in at.expander if e.label == f"Go deeper: {topic}"]
    return "\n".join([m.value for m in box.markdown] + [c.value for c in box.caption])


def test_the_page_opens_on_the_context_slider_and_the_curve_on_the_course_cast():
    """Title, one sentence and the context slider, then the curve; every other control after
    it (the output length by the closed loop), their URL keys unchanged; the cast (H100-SXM,
    Llama-3.1-8B, async) said in one line."""
    at = run_page(PAGE)
    order = _in_order(at)
    kinds = [k for k, _ in order]
    assert order[0] == ("md", "# The sequence budget and the throughput curve")
    intro = story.text(TEXT, "intro")
    assert order[1] == ("md", intro) and intro.count(". ") == 0 and intro.endswith(".")
    curve = kinds.index("chart")
    assert order[curve][1].startswith("Throughput on H100-SXM, Llama-3.1-8B")
    controls = [(i, v) for i, (k, v) in enumerate(order) if k == "control"]
    assert [v for i, v in controls if i < curve] == ["w:tput-context"]
    loop = next(i for i, (k, v) in enumerate(order) if k == "chart" and "closed loop on" in v)
    assert [v for i, v in controls if curve < i < loop][-1] == "w:tput-output"
    assert {"w:gpu", "w:model", "w:dtype", "w:tp", "w:tput-itl", "w:tput-async"} <= {
        v for i, v in controls if i > curve
    }
    cast = story.text(TEXT, "cast", build(Params()))
    assert " ".join(cast.split()) in _text(at) and cast.count("\n") <= 1 and "async" in cast


def test_each_question_sits_under_the_chart_that_answers_it():
    at = run_page(PAGE)
    order = _in_order(at)
    charts_at = [i for i, (k, _) in enumerate(order) if k == "chart"]
    curve, reads, anim, loop = charts_at
    for qid in ("shared_read", "past_knee", "lever", "long_context"):
        assert curve < _question_at(order, qid) < reads, qid
    for qid in ("bend", "memory_cap"):
        assert reads < _question_at(order, qid) < anim, qid
    assert loop < _question_at(order, "slo_rule")
    folds = [v for k, v in order if k == "expander"]
    assert "More practice: 2 exercises" in folds
    keys = [r.key for r in at.radio if r.key]
    for q in lesson("throughput_curve").bank().questions:  # each asked once, by its chart
        assert keys.count(f"quiz-throughput-curve-{q.id}".replace("_", "-")) == 1, q.id


def test_go_deeper_holds_what_left_the_main_flow():
    r = build(Params())
    at = run_page(PAGE)
    labels = [e.label for e in at.expander]
    for topic in story.labels(TEXT, "deeper").values():
        assert f"Go deeper: {topic}" in labels, topic
    said = {name: story.text(TEXT, name, r) for name in ("mode", "dips", "dips-pick", "cap")}
    assert said["mode"] in _folded(at, "what async scheduling changes here")
    assert said["dips"] in _folded(at, "why the total drops at a few points")
    assert said["dips-pick"] in _folded(at, "why the total drops at a few points")
    limits = _folded(at, "what your limits let this engine run")
    assert said["cap"] in limits
    seqs = {g: default_batch_limits(g, usage="server")["max_num_seqs"] for g in ("L4", "H100-SXM")}
    assert f"defaults to {seqs['L4']:,} on the L4 and {seqs['H100-SXM']:,} on the H100" in limits
    closed = _folded(at, "why the closed loop falls short")
    for name in ("surge-why", "surge-pick", "surge-mode"):
        assert story.text(TEXT, name, r) in closed, name
    method = _folded(at, "how these numbers are made")
    assert f"at most {r.cl_requests_max:,} in one run" in " ".join(method.split())
    memory = " ".join(story.text(TEXT, "memory", r).split())
    assert "preempted and, by default, recomputed" in memory  # issue 36, statement 1
    q = lesson("throughput_curve").bank().question("memory_cap")
    assert "by default" in q.explanation


def test_the_totals_drops_are_new_rows_of_gemm_tiles_and_the_chart_says_so():
    """The total falls where one more sequence needs a new row of the linear layers' GEMM
    tiles (sim.cost: rows padded to whole tiles of tile_m): every drop is one sequence past a
    multiple of the tile (or past 64, where the small tiles end), the step's linear layers
    jump there, and the chart marks every drop and names the one the text describes."""
    r = build(Params())
    c = r.curves
    drops = np.flatnonzero(np.diff(c.total) < 0) + 2
    assert r.dips.tolist() == drops.tolist() and r.has_dip and r.tile_m == 128
    assert all((n - 1) % r.tile_m == 0 or n - 1 == 64 for n in r.dips)
    linear = c.parts_ms["linear_ms"]
    for n in r.dips:
        assert linear[n - 1] - linear[n - 2] > 20 * (linear[n - 2] - linear[n - 3])
    assert r.dip_n == 129 and r.dip_jump_ms == pytest.approx(c.step_ms[128] - c.step_ms[127])
    assert r.pick_past_dip and r.best_n == 128 and r.best_total > r.pick_total
    chart = _curve_chart(run_page(PAGE))
    marks = _named(chart, "a new row of GEMM tiles")
    assert marks["x"] == r.dips.tolist()
    assert marks["y"] == pytest.approx(c.total[r.dips - 1].tolist())
    (note,) = chart["layout"]["annotations"]
    assert note["text"] == f"{r.dip_n:,}: a new row of tiles, +{r.dip_jump_ms:.1f} ms a step"
    assert 10 ** note["x"] == pytest.approx(r.dip_n)


def test_the_loop_chart_is_dotted_past_what_the_engine_holds_as_the_first_chart_is():
    """Issue 36: the closed loop's lines ran solid past the KV limit that the first chart marks
    "not reachable". Each series is solid up to what the engine holds and dotted beyond, with
    a line at that limit."""
    r = build(Params())
    assert r.cl_max > r.cl_held == 194
    chart = _loop_chart(run_page(PAGE))
    for trace in chart["data"]:
        if not trace.get("meta"):
            continue
        xs = trace["x"]
        if trace.get("legendgroup") == "queued":
            assert trace["line"]["dash"] == "dot" and trace.get("opacity", 1) < 1
            assert min(xs) <= r.cl_held < max(xs)
        else:
            assert max(xs) <= r.cl_held and trace.get("opacity", 1) == 1
    line = _named(chart, f"engine holds {r.cl_held:,} at once")
    assert line["x"] == [r.cl_held, r.cl_held]
