"""Lesson "Chunked prefill versus the whole prompt at once": Readout, page, controls, exercises.

Why: every number the lesson quotes must be read off the two timed runs (sim.timed, sim.metrics),
the page must open on the seed's numbers and at its own defaults whatever another lesson set,
each control must move the Readout and the charts the way sim says, every control at its
extremes must give a message rather than a traceback, and the exercises' answers must match the
scheduler (an independent replay, and the timed engine sim.timed.run_timed).
"""

from __future__ import annotations

import dataclasses
import random
import re

import numpy as np
import pytest

from lessons.chunked_prefill import exercise, figures
from lessons.chunked_prefill.lesson import Params, build, run_lane, simulate
from lessons.chunked_prefill.readout import CHUNK, WHOLE
from lessons.course import lesson
from lessons.kit import story
from sim.config import SchedulerConfig
from sim.cost import OVERHEAD_MS, ridge_tokens, step_costs, weight_read_ms
from sim.metrics import request_metrics
from sim.scheduler import run_steps
from sim.timed import run_timed
from sim.workload import Workload
from tests.apptest_util import assert_quiz_awards_xp_once, charts, run_page, walk

PAGE = "views/lesson_chunked_prefill.py"
STEP_COST = "views/lesson_step_cost.py"
KIND = {CHUNK: "decode step plus a prompt chunk", WHOLE: "whole prompt in one step"}


def _lanes(at) -> dict:
    found = [c for c in charts(at) if c.get("frames")]
    assert len(found) == 1, "one animated chart: the two lanes"
    return found[0]


def _counters(chart: dict, frame: int = -1) -> tuple[float, float]:
    """The live counters at a frame (the last by default): (whole prompt lane, chunked lane)."""
    texts = [t for t in chart["frames"][frame]["data"][0]["text"] if t]
    values = [float(re.search(r"([\d,]+\.\d) ms", t).group(1).replace(",", "")) for t in texts]
    return values[0], values[1]


def _bars(chart: dict, kind: int) -> int:
    """Steps drawn in a strip trace: rectangles of 5 points and a gap each."""
    for trace in chart["data"]:
        if trace.get("name") == KIND[kind]:
            return len(trace["x"]) // 6
    raise AssertionError(f"no trace {KIND[kind]!r}")


def _metrics(at) -> list[float]:
    return [
        float(m.value.replace(",", "").removesuffix(" ms")) for m in at.metric if "ms" in m.value
    ]


def _shown(at, r) -> None:
    """The page shows this Readout: metrics, counters at the end and the chunk steps drawn."""
    assert _metrics(at) == [round(v) for v in (r.whole_worst_gap_ms, r.chunked_worst_gap_ms)] + [
        round(v) for v in (r.whole_ttft_ms, r.chunked_ttft_ms)
    ]
    chart = _lanes(at)
    whole, chunked = _counters(chart)
    assert whole == pytest.approx(r.whole_worst_gap_ms, abs=0.06)
    assert chunked == pytest.approx(r.chunked_worst_gap_ms, abs=0.06)
    assert _bars(chart, CHUNK) == (r.chunk_steps if not r.merged else _bars(chart, CHUNK))


@pytest.fixture(scope="module")
def opening():
    return run_page(PAGE)


@pytest.fixture(scope="module")
def seed():
    return build(Params())


def test_the_readout_holds_the_seed_numbers(seed):
    r = seed
    # The seed's example: budget 2,048 (A100 default), 48 users, 8,000 tokens -> 4 x 2,000.
    assert (r.gpu, r.budget, r.users, r.prompt, r.chunk, r.chunk_steps) == (
        "A100-80GB",
        2048,
        48,
        8000,
        2000,
        4,
    )
    assert r.whole_step_tokens == 8048 and r.whole_budget == 131_072
    assert r.whole_worst_gap_ms > 3 * r.chunked_worst_gap_ms
    assert r.ttft_longer and not r.ttft_shorter and not r.one_chunk
    assert not (r.memory_short or r.users_clamped or r.prompt_clamped or r.seqs_clamped)
    assert r.preemptions == 0
    assert r.chunk_steps == 4
    said = " ".join(story.text(lesson("chunked_prefill").text_path, "reading-chunked", r).split())
    assert "and 4 steps in all" in said


def test_the_numbers_are_the_runs_own(seed):
    """TTFT from sim.metrics, and the waits: a user's longest wait is the longest step."""
    s, scenario, lanes, _ = simulate(Params())
    long = scenario.long_index
    for name, lane in lanes.items():
        ttft = request_metrics(lane.run).ttft_ms[long]
        steps = lane.run.step_ms[lane.prompt_steps]
        assert ttft == pytest.approx(getattr(seed, f"{name}_ttft_ms"))
        # The prompt arrives as its first step starts: its TTFT is the sum of its steps.
        assert ttft == pytest.approx(steps.sum(), abs=1e-5)  # it arrives 1 ns early
        assert getattr(seed, f"{name}_worst_gap_ms") == pytest.approx(steps.max(), rel=1e-9)
        assert lane.run.first_scheduled_step[long] == scenario.arrival()
    assert seed.whole_step_ms == pytest.approx(seed.whole_ttft_ms, abs=1e-5)
    assert seed.ride_along_ms == pytest.approx(seed.first_step_ms - seed.chunk_alone_ms)
    assert s.users == seed.users


def test_the_text_says_both_lanes_run_the_synchronous_scheduler(opening, seed):
    """Issue 9: the lesson says which mode it shows, and the page shows it."""
    _, _, lanes, _ = simulate(Params())
    assert not any(lane.run.config.async_scheduling for lane in lanes.values())
    told = _flat("mode", seed)
    assert told.startswith("**Scheduling mode: synchronous**")
    assert f"the CPU's {OVERHEAD_MS:.0f} ms of work per step included" in told
    assert told in " ".join(" ".join(m.value for m in opening.markdown).split())


@pytest.mark.parametrize(
    "p", [Params(), Params(gpu="H100-SXM", prompt_tokens=32000, users=128)], ids=["seed", "h100"]
)
def test_async_scheduling_would_keep_the_tokens_and_shorten_each_step(p):
    """What the mode paragraph claims, run: both lanes under vLLM's AsyncScheduler schedule the
    same tokens in every step (plus a last step that only processes an output), and each step
    with a pass is OVERHEAD_MS shorter."""
    s, scenario, lanes, _ = simulate(p)
    for chunked, name in ((False, "whole"), (True, "chunked")):
        sync = lanes[name].run
        asyn = run_lane(chunked, s, scenario, async_scheduling=True).run
        assert asyn.config.async_scheduling and not sync.config.async_scheduling
        n = sync.num_steps
        assert asyn.num_steps == n + 1 and asyn.num_scheduled_tokens[n] == 0
        assert (asyn.num_scheduled_tokens[:n] == sync.num_scheduled_tokens).all()
        assert np.allclose(sync.step_ms - asyn.step_ms[:n], OVERHEAD_MS)


def test_opens_clean_on_the_seed_numbers(opening, seed):
    at = opening
    assert not at.exception and not at.warning
    _shown(at, seed)
    chart = _lanes(at)
    assert 1 <= len(chart["frames"]) <= 200
    assert _bars(chart, WHOLE) == 1
    assert len(charts(at)) == 2
    text = " ".join(m.value for m in at.markdown)
    assert f"{seed.chunk_step_ms_max:,.1f} ms" in text  # the table, from the Readout


def test_the_animation_opens_at_its_start_frame(opening, seed):
    """No control sets a time: the lanes open as the window begins, every user streaming and
    the counters at the steady wait of one decode step."""
    chart = _lanes(opening)
    start = seed.start_frame
    assert start == 0
    assert chart["layout"]["sliders"][0]["active"] == start
    assert chart["data"][-1]["x"] == chart["frames"][start]["data"][0]["x"]
    _, scenario, lanes, _ = simulate(Params())
    before = scenario.arrival() - 2  # the decode step just before the prompt arrives
    for counter, name in zip(_counters(chart, start), ("whole", "chunked"), strict=True):
        assert counter == pytest.approx(lanes[name].run.step_ms[before], rel=0.01)


def test_another_lessons_values_do_not_leak_in():
    """The walk: opened after another lesson, the page showed that lesson's settings."""
    at = run_page(STEP_COST)
    at.select_slider(key="w:cost-tokens").set_value(512).run()
    at.slider(key="w:cost-decodes").set_value(512).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert at.selectbox(key="w:gpu").value == "A100-80GB"  # this lesson's own default
    assert at.select_slider(key="w:chunk-prompt").value == 8000
    _shown(at, build(Params()))
    # A shared setting follows the learner once they change it.
    at.switch_page(STEP_COST).run()
    at.selectbox(key="w:gpu").set_value("H200").run()
    at.switch_page(PAGE).run()
    assert at.selectbox(key="w:gpu").value == "H200"
    _shown(at, build(Params(gpu="H200")))


def test_the_address_bar_and_the_screen_agree():
    at = run_page(PAGE, query={"chunk-prompt": "16000"})
    assert at.select_slider(key="w:chunk-prompt").value == 16000
    r = build(Params(prompt_tokens=16000))
    _shown(at, r)
    at.select_slider(key="w:chunk-prompt").set_value(32000).run()
    assert at.query_params["chunk-prompt"] == "32000"
    _shown(at, build(Params(prompt_tokens=32000)))


def test_longer_prompt_makes_a_longer_worst_gap_without_chunking():
    at = run_page(PAGE, query={"chunk-prompt": "4000"})
    before = build(Params(prompt_tokens=4000))
    _shown(at, before)
    at.select_slider(key="w:chunk-prompt").set_value(32000).run()
    assert not at.exception
    after = build(Params(prompt_tokens=32000))
    _shown(at, after)
    assert after.whole_worst_gap_ms > 4 * before.whole_worst_gap_ms
    # With chunking the worst gap stays near one budget-sized step (attention grows a little).
    assert after.chunked_worst_gap_ms < 2 * before.chunked_worst_gap_ms
    assert after.chunk_steps > before.chunk_steps


def test_smaller_budget_means_more_chunk_steps_and_a_smaller_gap():
    at = run_page(PAGE)
    at.toggle(key="w:chunk-defaults").set_value(False).run()
    at.select_slider(key="w:chunk-budget").set_value(2048).run()
    big = build(Params(vllm_defaults=False, max_num_batched_tokens=2048))
    _shown(at, big)
    at.select_slider(key="w:chunk-budget").set_value(512).run()
    assert not at.exception
    small = build(Params(vllm_defaults=False, max_num_batched_tokens=512))
    _shown(at, small)
    assert small.chunk_steps > big.chunk_steps
    assert small.chunked_worst_gap_ms < big.chunked_worst_gap_ms
    # The lane without chunking runs with a budget of max_model_len either way.
    assert small.whole_budget == big.whole_budget == 131_072
    assert small.whole_worst_gap_ms == pytest.approx(big.whole_worst_gap_ms, rel=0.02)


def test_more_users_leave_smaller_chunks():
    at = run_page(PAGE)
    at.slider(key="w:chunk-users").set_value(200).run()
    assert not at.exception
    r = build(Params(users=200))
    _shown(at, r)
    assert r.chunk == 2048 - 200 and r.chunk_steps == 5


def test_a_small_sequence_budget_clamps_the_users_with_a_message():
    at = run_page(PAGE)
    at.toggle(key="w:chunk-defaults").set_value(False).run()
    at.slider(key="w:chunk-seqs").set_value(16).run()
    r = build(Params(vllm_defaults=False, max_num_seqs=16))
    assert (r.users, r.users_asked, r.users_clamped) == (15, 48, True)
    _shown(at, r)
    assert len(at.warning) == 1
    at.slider(key="w:chunk-seqs").set_value(1).run()  # once a traceback
    assert not at.exception
    r = build(Params(vllm_defaults=False, max_num_seqs=1))
    assert (r.max_num_seqs, r.seqs_asked, r.seqs_clamped, r.users) == (2, 1, True, 1)
    assert len(at.warning) == 2


def test_gpu_choice_sets_vllm_defaults_and_model_sets_max_model_len():
    at = run_page(PAGE)
    at.selectbox(key="w:gpu").set_value("H100-SXM").run()
    assert not at.exception
    r = build(Params(gpu="H100-SXM"))
    assert r.budget == 8192 and r.one_chunk  # 8,000 tokens fit in one chunk of 8,144
    assert any("8,192" in c.value for c in at.caption)
    _shown(at, r)
    at.selectbox(key="w:model").set_value("Llama-2-7B").run()
    assert not at.exception
    r = build(Params(gpu="H100-SXM", model="Llama-2-7B"))
    assert r.max_model_len == 4096 and r.whole_budget == 8192  # max(8,192, max_model_len)
    assert r.prompt_clamped and r.prompt == 4096 - 16
    titles = " ".join(a["text"] for a in _lanes(at)["layout"]["annotations"])
    assert "budget 8,192" in titles
    assert len(at.warning) == 1


def test_fp8_and_tensor_parallel_make_the_big_step_faster():
    at = run_page(PAGE, query={"gpu": "H100-SXM"})
    bf16 = build(Params(gpu="H100-SXM"))
    at.selectbox(key="w:dtype").set_value("fp8").run()
    fp8 = build(Params(gpu="H100-SXM", dtype="fp8"))
    assert fp8.dtype == "FP8" and fp8.whole_step_ms < 0.8 * bf16.whole_step_ms
    _shown(at, fp8)
    at.selectbox(key="w:tp").set_value(2).run()
    tp2 = build(Params(gpu="H100-SXM", dtype="fp8", tp=2))
    assert not tp2.single_gpu and tp2.whole_step_ms < fp8.whole_step_ms
    _shown(at, tp2)
    # On a GPU without FP8 the lesson falls back to BF16, as the page does.
    assert build(Params(dtype="fp8")).dtype == "BF16"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (Params(gpu="L4", model="Llama-3.1-70B"), "whole_no_weights"),
        (Params(prompt_tokens=100), "prompt_memory_bound"),
        (Params(gpu="H100-SXM"), "one_chunk"),
    ],
)
def test_each_condition_can_hold(params, field):
    r = build(params)
    assert getattr(r, field) is True
    assert getattr(build(Params()), field) is False
    if field == "whole_no_weights":
        assert r.memory_short and r.chunked_no_weights


def test_long_windows_switch_to_seconds_and_merge_bars():
    r = build(Params(vllm_defaults=False, max_num_batched_tokens=256, prompt_tokens=131072))
    assert r.time_unit == "s" and r.merged and r.thinned
    fig = figures.lanes(r)
    assert "(s)" in fig["layout"]["xaxis"]["title"]["text"]


def _every_control(at) -> list[tuple[str, str]]:
    found = []
    for kind in ("selectbox", "select_slider", "slider", "toggle"):
        for widget in getattr(at, kind):
            # the lesson's own controls (the frame's presenter toggle is tested on its own)
            if widget.key and widget.key.startswith("w:") and widget.key != "w:present":
                found.append((kind, widget.key))
    return found


@pytest.mark.parametrize("high", [False, True], ids=["min", "max"])
def test_every_control_at_its_extremes_gives_no_traceback(high):
    at = run_page(PAGE)
    at.toggle(key="w:chunk-defaults").set_value(False).run()  # reveals the two limits
    for kind, key in _every_control(at):
        widget = getattr(at, kind)(key=key)
        if kind == "selectbox":
            widget.select_index(len(widget.options) - 1 if high else 0)
        elif kind == "select_slider":
            widget.set_value(int(widget.proto.options[-1 if high else 0]))
        elif kind == "slider":
            widget.set_value(int(widget.proto.max if high else widget.proto.min))
        else:
            widget.set_value(high)
        at.run()
        assert not at.exception, (key, [e.value for e in at.exception])
    assert len(charts(at)) == 2


def test_quiz_grades_and_awards_xp_once():
    assert len(lesson("chunked_prefill").bank().questions) >= 6
    assert_quiz_awards_xp_once(PAGE, "chunked_prefill", "protects_itl")


def _timed_worst_gap(lane, users: int, dep) -> float:
    """The lane's worst gap after the arrival, recomputed with the timed engine (run_timed) on
    a workload built here, the prompt arriving at the start of its step in the lesson's run."""
    wl = lane.run.workload
    t_arrival = float(wl.arrival_s[users])
    timed = Workload.build(
        wl.prompt_tokens, wl.output_tokens, arrival_s=[0.0] * users + [t_arrival]
    )
    run = run_timed(lane.run.config, timed, dep)
    t = run.step_start_s[run.token_step - 1] + run.step_ms[run.token_step - 1] / 1e3
    first = float(run.first_token_s[users])
    worst = 0.0
    for u in range(users):
        times = t[run.token_req == u]
        ends = times[1:]
        gaps = np.diff(times)[(ends > t_arrival + 1e-6) & (ends <= first + 1e-6)]
        worst = max(worst, float(gaps.max()) if gaps.size else 0.0)
    return worst * 1e3


@pytest.mark.parametrize("seed", [0, *random.Random(4).sample(range(1, 10**6), 2)])
def test_worst_gap_exercise_matches_the_timed_engine(seed):
    drawn = exercise.draw_gap(seed)
    b, u, p = (drawn.params[k] for k in ("budget", "users", "prompt"))
    params = Params(prompt_tokens=p, users=u, vllm_defaults=False, max_num_batched_tokens=b)
    s, _, lanes, _ = simulate(params)
    gaps = {name: _timed_worst_gap(lane, u, s.dep) for name, lane in lanes.items()}
    assert drawn.answer == pytest.approx(gaps["whole"] - gaps["chunked"], rel=1e-6)
    # The worst gap is the longest step: the whole prompt's step, or the slowest chunk step.
    r = build(params)
    assert gaps["whole"] == pytest.approx(r.whole_step_ms, rel=1e-6)
    assert gaps["chunked"] == pytest.approx(r.chunk_step_ms_max, rel=1e-6)
    assert drawn.is_correct(drawn.answer) and not drawn.is_correct(drawn.answer * 1.1 + 1)


TEXT = lesson("chunked_prefill").text_path
BELOW_RIDGE = Params(gpu="L4", vllm_defaults=False, max_num_batched_tokens=256, users=100)


def _flat(name: str, r) -> str:
    return " ".join(story.text(TEXT, name, r).split())


@pytest.mark.parametrize(
    "p",
    [
        Params(),
        Params(gpu="H100-SXM", vllm_defaults=False, max_num_batched_tokens=2048),
        BELOW_RIDGE,
    ],
    ids=["seed", "h100", "below-ridge"],
)
def test_the_extra_wait_for_the_first_token_is_the_sum_of_the_cost_models_parts(p):
    """Chunking's price (issue 9): the five parts add up to the extra time to first token, and
    each is the cost model's: the overhead per extra step, the linear layers' time (the users'
    tokens plus the smaller products) and the rest, from step_costs on the two runs' steps."""
    r = build(p)
    s, _, lanes, _ = simulate(p)
    parts = (
        r.extra_fixed_ms,
        r.extra_decode_ms,
        r.extra_gemm_ms,
        r.extra_attention_ms,
        r.extra_lm_head_ms,
    )
    assert sum(parts) == pytest.approx(r.ttft_diff_ms, abs=1e-4)
    assert r.extra_steps == r.chunk_steps - 1 > 0 and r.ttft_longer
    assert r.extra_fixed_ms == pytest.approx(r.extra_steps * OVERHEAD_MS)
    priced = {}
    for name, lane in lanes.items():
        run, rows = lane.run, lane.prompt_steps
        priced[name] = step_costs(
            s.dep,
            query_tokens=run.num_scheduled_tokens[rows],
            num_seqs=run.num_scheduled_seqs[rows],
            kv_read_tokens=run.kv_read_tokens[rows],
            attn_pairs=run.attn_pairs[rows],
        )
    linear = priced["chunked"].linear_ms.sum() - priced["whole"].linear_ms.sum()
    assert r.extra_decode_ms + r.extra_gemm_ms == pytest.approx(linear, rel=1e-9)
    assert r.extra_decode_ms > 0 and r.extra_gemm_ms > 0 and r.extra_attention_ms > 0
    attention = priced["chunked"].attention_ms.sum() - priced["whole"].attention_ms.sum()
    assert r.extra_attention_ms == pytest.approx(attention, rel=1e-9)
    assert r.ridge == pytest.approx(ridge_tokens(s.dep))
    assert r.weight_read_ms == pytest.approx(weight_read_ms(s.dep))
    past = r.chunk_step_tokens >= r.ridge
    assert (r.longer_past_ridge, r.longer_below_ridge) == (past, not past)
    told = _flat("ttft", r)
    for value in parts:
        assert f"**{value:,.1f} ms**" in told
    assert f"paid {r.extra_steps} more times" in told
    assert f"({r.user_kv_reread:,} more tokens in all)" in told
    assert f"({r.chunk_kv_reread:,} tokens)" in told
    assert f"{r.gemm_loss_pct:.1f}% more" in told or f"{r.gemm_loss_pct:.0f}% more" in told
    assert f"about {r.ridge:,.0f}" in told
    if past:
        assert "Reading the weights again is not on this list" in told
        assert f"{r.ridge_ratio:.1f} times this GPU's ridge point" in told
    else:
        assert "every extra step also pays for reading the weights again" in told
    assert "reads all the weights again" not in told


def test_the_seed_prompt_is_chunked_far_past_the_ridge(seed):
    """The seed's 2,000-token chunks: far past the ridge (so the weight read is not chunking's
    price), each chunk reading the earlier chunks' KV (2,000 + 4,000 + 6,000 tokens)."""
    r = seed
    assert r.longer_past_ridge and r.ridge_ratio > 4
    k = r.chunk_steps
    assert r.chunk_kv_reread == r.chunk * k * (k - 1) // 2 == 12_000
    # The users' KV is read in each of the k steps instead of once: about (k - 1) more reads
    # of what the one-step lane reads (the lanes' users differ by a few tokens each).
    _, _, lanes, _ = simulate(Params())
    whole = lanes["whole"]
    ctx = int(whole.run.kv_read_tokens[whole.prompt_steps[0]])
    assert ctx > r.users * r.user_prompt
    assert r.user_kv_reread == pytest.approx((k - 1) * ctx, rel=0.02)
    assert build(BELOW_RIDGE).longer_below_ridge


def test_chunking_leaves_head_of_line_blocking_on_memory():
    """Issue 10: with chunked prefill on, a prompt that the free KV blocks cannot hold whole
    stops the waiting loop, and a short request behind it, which would fit, waits too
    (scheduler_reserve_full_isl, SCHEDULER.md a4)."""
    cfg = SchedulerConfig(
        max_num_batched_tokens=512, max_num_seqs=8, max_model_len=4096, num_gpu_blocks=100
    )
    assert cfg.enable_chunked_prefill
    wl = Workload.build([400, 1200, 16], [200, 4, 4], arrival_step=[1, 2, 2])
    run = run_steps(cfg, wl, record_detail=True)
    big, small = run.first_scheduled_step[1], run.first_scheduled_step[2]
    free_at_arrival = run.kv_blocks_usable - run.detail[1].kv_blocks_used_after_schedule
    assert free_at_arrival >= 1  # the short request's one block was free all along
    assert big > 2 and small >= big  # both waited for the running request to finish
    assert big >= run.finish_step[0]
    r = build(Params())
    rule = _flat("budget-rule", r)
    assert "scheduler_reserve_full_isl" in rule and "It does not remove it for memory" in rule
    assert "chunking removes it, because a chunk always fits" not in rule
    q = lesson("chunked_prefill").bank().question("hol_memory")
    assert q.correct_choice.startswith("It waits too")


def test_the_quiz_on_mixed_steps_matches_the_table(seed):
    """Issue 11: the mixed steps use most of the compute and little of the bandwidth; the
    decodes ride along for much less than a step of their own."""
    assert seed.chunked_compute_prompt_pct > 50 > 20 > seed.chunked_bw_prompt_pct
    assert 0 < seed.ride_along_ms < seed.decode_ms / 4
    bank = lesson("chunked_prefill").bank()
    assert (
        "both bandwidth and compute are better used"
        not in bank.question("mixing_uses_gpu").explanation
    )
    assert "rereads the weights" not in bank.question("ttft_cost").correct_choice


def test_readout_fields_are_named_numbers(seed):
    """Every number the text quotes is a field: no dicts of numbers in the Readout."""
    for f in dataclasses.fields(seed):
        assert not isinstance(getattr(seed, f.name), dict), f.name


def test_exercise_on_the_page_grades():
    """Kept minimal (progress storage is being rewritten): a wrong and a right answer, checked."""
    at = run_page(PAGE)
    drawn = exercise.draw_gap(0)
    check = "exercise-chunked-prefill-worst-gap-check"
    for value in (round(drawn.answer * 1.5, 2), round(drawn.answer, 2)):
        at.number_input(key="answer-chunked-prefill-worst-gap-0").set_value(value)
        at.button(key=check).click().run()
        assert not at.exception
    assert any("Correct" in s.value for s in at.success)


def test_reset_this_lesson_restores_its_defaults():
    at = run_page(PAGE)
    at.select_slider(key="w:chunk-prompt").set_value(32000).run()
    at.slider(key="w:chunk-users").set_value(200).run()
    at.button(key="chunk-reset").click().run()
    assert not at.exception
    assert at.select_slider(key="w:chunk-prompt").value == 8000
    assert at.slider(key="w:chunk-users").value == 48
    _shown(at, build(Params()))


# -- diagram first (issue 36) ----------------------------------------------------------------------


_walk = walk  # tests/apptest_util.py


def _order(at) -> list[str]:
    """The page's charts (by title) and quiz questions (by id), in the order drawn."""
    import json

    out = []
    for node in _walk(at.main):
        if node.type == "plotly_chart":
            out.append("chart:" + json.loads(node.proto.spec)["layout"]["title"]["text"])
        elif node.type == "radio" and str(node.key).startswith("quiz-chunked-prefill-"):
            out.append(str(node.key).removeprefix("quiz-chunked-prefill-"))
    return out


def _expander_text(at, topic: str) -> str:
    """The markdown inside the folded section whose label holds `topic`."""
    (box,) = [e for e in at.expander if topic in e.label]
    return " ".join(" ".join(m.value.split()) for m in box.markdown)


def test_the_cast_line_says_why_the_lesson_opens_on_the_a100(opening, seed):
    """One cast: the lesson opens on the A100-80GB, not the course's H100-SXM, and says why in
    one line, from the defaults it quotes (the H100's budget would take the prompt whole)."""
    r = seed
    assert (r.cast_gpu, r.course_gpu, r.cast_prompt) == (Params().gpu, "H100-SXM", r.prompt)
    assert r.cast_budget == r.budget and r.chunk_steps > 1  # chunked here...
    h100 = build(Params(gpu="H100-SXM"))
    assert h100.budget == r.course_budget and h100.one_chunk  # ... whole on the H100
    line = _flat("cast", r)
    assert "synchronous" in line and line in [" ".join(c.value.split()) for c in opening.caption]


def test_questions_sit_next_to_their_charts(opening):
    """The lanes' question right under the lanes, the GPU-use question under that chart; every
    question of the bank is asked on the page, none left for the practice at its end."""
    order = _order(opening)
    lanes = next(i for i, o in enumerate(order) if o.startswith("chart:The same users"))
    use = next(i for i, o in enumerate(order) if o.startswith("chart:How much of the GPU"))
    assert order[lanes + 1] == "protects-itl"
    assert order[use + 1] == "mixing-uses-gpu"
    asked = {o for o in order if not o.startswith("chart:")}
    bank = {q.id.replace("_", "-") for q in lesson("chunked_prefill").bank().questions}
    assert asked == bank


def test_go_deeper_holds_what_left_the_main_flow(opening, seed):
    r = seed
    assert f"**{r.extra_fixed_ms:,.1f} ms**" in _expander_text(opening, "extra wait")
    assert _expander_text(opening, "synchronous").startswith("**Scheduling mode: synchronous**")
    assert f"{r.chunk_step_ms_max:,.1f} ms" in _expander_text(opening, "every effect")
    assert "scheduler_reserve_full_isl" in _expander_text(opening, "head-of-line")
    assert f"{r.user_prompt}-token prompt" in _expander_text(opening, "runs behind")


def test_the_page_names_the_claim_it_corrects_and_the_alternatives(opening, seed):
    """Issue 36: the seed's "mixing uses both resources" is named and answered with the runs'
    own numbers; Sarathi-Serve and disaggregated prefill and decode have their Go deeper."""
    use = _flat("use", seed)
    assert "uses both resources at once" in use and "These runs say otherwise" in use
    assert f"only {seed.chunked_bw_prompt_pct:.0f}% of peak" in use
    sarathi = _expander_text(opening, "Sarathi-Serve")
    assert "stall-free batching" in sarathi and "decodes" in sarathi
    disagg = _expander_text(opening, "disaggregated")
    assert "KV cache" in disagg and "another" in disagg
    bank = lesson("chunked_prefill").bank()
    for qid in ("head_of_line", "hol_memory"):
        q = bank.question(qid)
        assert not any("newest" in c for c in q.choices)
        assert any("admitted or readmitted last" in c for c in q.choices)
    assert bank.question("head_of_line").answer == 1 and bank.question("hol_memory").answer == 0
