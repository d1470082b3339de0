"""Lesson "The step loop": the Readout against sim, each control moving the Readout and the
charts as sim says, the animation opening at the stepper's step, the story of one step told from
step.md by StepReadout fields, the quiz and the exercises.

Why: every frame of this lesson claims something about vLLM's loop (who waits, who runs, how
many blocks each request holds). The state the figures draw is derived from the run's detail,
so it is checked here against the scheduler's own counters; the run's clock is sim.timed's, so
it is checked against a step replay priced by the cost model; and the controls must move the
picture the way the lesson says (a bigger KV pool means no preemption, a smaller budget more
steps). Async scheduling (the toggle) must reach the scheduler's config, the story of a step must
follow its order (a finish is seen, and frees its blocks, one step later), and the sentence that
compares the two modes must quote both runs.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lessons.course import lesson
from lessons.kit import story
from lessons.kit.controls import declared
from lessons.step_loop import exercise, figures
from lessons.step_loop.lesson import (
    BLOCK_SIZE,
    NAMES,
    POOL_MIN,
    REQUESTS,
    STEP_TEXT,
    Params,
    at_step,
    build,
    config,
    frame_of,
    workload,
)
from lessons.step_loop.readout import StepReadout
from sim.config import SchedulerConfig
from sim.cost import OVERHEAD_MS, Deployment, step_costs
from sim.kv import cdiv
from sim.scheduler import run_steps
from sim.timed import run_timed
from sim.workload import Workload
from tests.apptest_util import (
    assert_quiz_awards_xp_once,
    charts,
    in_order,
    quiz_key,
    run_page,
    trace_values,
)

PAGE = "views/lesson_step_loop.py"
OWN = {"vllm_defaults": False}
ASYNC = {"async_scheduling": True}
TEXT = lesson("step_loop").text_path


def _anim(at) -> dict:
    return next(c for c in charts(at) if c.get("frames"))


def _shown_title(at) -> str:
    """The step line of the frame the page's one animation opens at (the stepper's step)."""
    return _title(_anim(at)["data"])


def _shows_metrics(at, r) -> bool:
    """The page's metric row is the metrics section filled from Readout `r`."""
    shown = {m.label: m.value for m in at.main.metric}
    return {k: shown.get(k) for k in _metric_values(r)} == _metric_values(r)


def _title(data: list[dict]) -> str:
    """The step line a figure prints at its top (a text trace, so frames can change it)."""
    return next(t["text"][0] for t in data if str(t.get("text", [""])[0]).startswith("Step "))


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def _metric_values(r) -> dict[str, str]:
    return dict(story.metrics(lesson("step_loop").text_path, "metrics", r))


@pytest.fixture(scope="module")
def default():
    return build(Params())


@pytest.fixture(scope="module")
def opening():
    return run_page(PAGE)


# -- the Readout against sim --------------------------------------------------------------------
def test_seed_numbers(default):
    r = default
    assert (r.num_steps, r.preemptions, r.first_preempt_step, r.victim) == (58, 1, 6, "R4")
    assert (r.budget, r.max_num_seqs, r.usable, r.pool_tokens) == (2048, 256, 239, 3824)
    assert round(r.total_ms) == 456 and r.max_step == 3
    assert round(r.max_ms, 1) == 43.5 and round(r.min_ms, 1) == 6.4
    assert r.real_pool == 28327 and r.fits and not r.limits_refused
    assert (r.requests, r.last_arrival, r.long_name, r.long_prompt) == (5, 8, "R3", 2500)
    assert r.frames == r.num_steps and not r.sampled
    # R4 comes back in step 20 with 400 + 1 tokens; with prefix caching on, 22 of its 25 full
    # blocks are still cached then (R5's prompt took the other three, tail first).
    assert (r.victim_tokens, r.resume_step, r.hit_blocks, r.cached_left) == (401, 20, 22, 49)
    assert r.cache_compare


def _recomputed(run, q: int, back: int) -> int:
    """Tokens scheduled for request q from its return (step `back`) until it samples again."""
    total = 0
    for d in run.detail[back - 1 :]:
        total += int(d.scheduled_tokens[d.scheduled_req == q].sum())
        if q in d.sampled.tolist():
            return total
    raise AssertionError(f"request {q} never samples after step {back}")


@pytest.mark.parametrize("blocks", [240, 180])
def test_a_preempted_request_recomputes_all_without_prefix_caching_and_less_with_it(blocks):
    """The numbers of the preemption paragraph are the scheduler's: the victim's tokens on its
    return with prefix caching off (this replay), and with it on (the same run otherwise)."""
    r = build(Params(blocks=blocks))
    assert r.cache_compare
    v = NAMES.index(r.victim)
    cfg = config(r.blocks, r.budget, r.max_num_seqs)
    for caching, expected in ((False, r.victim_tokens), (True, r.cached_left)):
        run = run_steps(
            config(r.blocks, r.budget, r.max_num_seqs, caching), workload(), record_detail=True
        )
        assert run.config.enable_prefix_caching is caching and cfg.enable_prefix_caching is False
        back = next(d.step for d in run.detail if v in d.resumed.tolist())
        assert back == r.resume_step
        assert _recomputed(run, v, back) == expected
        if caching:
            assert int(run.num_prefix_hit_tokens[v]) == r.hit_tokens
    assert r.victim_tokens == REQUESTS[v][0] + int(r.replay.streamed[r.first_preempt_step - 1][v])
    assert 0 < r.hit_tokens == r.hit_blocks * BLOCK_SIZE == r.victim_tokens - r.cached_left
    told = " ".join(story.text(lesson("step_loop").text_path, "preemption", r).split())
    assert f"{r.victim}'s prompt and answer so far came to {r.victim_tokens:,} tokens" in told
    assert f"computes all {r.victim_tokens:,} again" in told and f"in step {r.resume_step}." in told
    assert f"({r.hit_tokens:,} tokens)" in told and f"**{r.cached_left:,}**" in told


def test_without_a_preemption_the_paragraph_quotes_no_numbers():
    r = build(Params(blocks=600))
    assert not r.preempted and not r.cache_compare
    told = story.text(lesson("step_loop").text_path, "preemption", r)
    assert "came to" not in told and "prefix caching" in told


PARAMS = [
    Params(),
    Params(gpu="L4", vllm_defaults=True),  # the L4's own defaults: 2,048 tokens, 256 sequences
    Params(blocks=POOL_MIN),
    Params(**OWN, max_num_batched_tokens=512, max_num_seqs=2, blocks=200),
    Params(gpu="H100-SXM", **OWN, max_num_batched_tokens=8192, max_num_seqs=1024, blocks=900),
    Params(model="Mistral-7B-v0.3", **OWN, max_num_batched_tokens=256, max_num_seqs=3),
    Params(**ASYNC),
    Params(**ASYNC, blocks=180),
    Params(**ASYNC, blocks=600),
    # one seat: a finished request holds it one step more, so some steps schedule nothing
    Params(**ASYNC, **OWN, max_num_batched_tokens=512, max_num_seqs=1, blocks=200),
]


def _reference(p: Params, r) -> object:
    """run_steps on the lesson's settings, in the mode the Params ask for."""
    cfg = config(p.blocks, r.budget, r.max_num_seqs, async_scheduling=p.async_scheduling)
    return run_steps(cfg, workload(), record_detail=True)


@pytest.mark.parametrize("p", PARAMS)
def test_the_timed_run_takes_the_step_replays_decisions_at_the_cost_models_price(p):
    """sim.timed's run, arrivals placed at their step's start, is run_steps' replay, priced;
    under async each step hides the CPU's part (OVERHEAD_MS) behind the GPU, and a step that
    schedules nothing (it only processes an output) costs nothing."""
    r = build(p)
    ref = _reference(p, r)
    assert ref.config.async_scheduling is p.async_scheduling is r.async_scheduling
    rep = r.replay
    assert r.num_steps == ref.num_steps
    assert (rep.used == ref.num_scheduled_tokens).all()
    assert [list(a) for a in rep.arrived] == [d.arrived.tolist() for d in ref.detail]
    assert [list(a) for a in rep.preempted] == [d.preempted.tolist() for d in ref.detail]
    costs = step_costs(
        Deployment(gpu=p.gpu, model=p.model, tp=p.tp, dtype=p.dtype),
        query_tokens=ref.num_scheduled_tokens,
        num_seqs=ref.num_scheduled_seqs,
        kv_read_tokens=ref.kv_read_tokens,
        attn_pairs=ref.attn_pairs,
    ).step_ms
    if p.async_scheduling:
        busy = ref.num_scheduled_tokens > 0
        costs = np.where(busy, np.maximum(costs - OVERHEAD_MS, OVERHEAD_MS), 0.0)
    assert np.allclose(rep.step_ms, costs)
    assert np.allclose(rep.clock_ms, np.cumsum(costs))
    assert r.total_ms == pytest.approx(rep.clock_ms[-1])


@pytest.mark.parametrize("p", PARAMS)
def test_frames_show_the_schedulers_own_state(p):
    """Each frame is the state at the end of a turn of the loop: under async a finish recorded
    for step k is seen (and frees its blocks) in turn k + 1, which the run measures for step k."""
    r = build(p)
    ref = _reference(p, r)
    rep = r.replay
    lag = int(p.async_scheduling)
    for k, d in enumerate(ref.detail):
        assert rep.held[k].sum() == d.kv_blocks_used_after_schedule == rep.blocks_used[k]
        assert rep.tokens[k].sum() == ref.num_scheduled_tokens[k]
        assert len(rep.running[k]) + len(rep.finished[k]) == d.running.shape[0]
        rows = (rep.waiting[k], rep.running[k], rep.done[k])
        assert sum(len(row) for row in rows) == len(set().union(*rows)), k  # one row each
        if k >= lag:
            seen = ref.detail[k - lag]
            assert list(rep.finished[k]) == seen.finished.tolist()
            assert rep.blocks_after[k] == seen.kv_blocks_used
    assert (rep.streamed[-1] == ref.num_output_tokens).all()
    assert rep.step_ms.shape == (r.num_steps,) and ((rep.step_ms > 0) == (rep.used > 0)).all()
    assert r.preemptions == ref.total_preemptions


def test_block_arithmetic_uses_the_configs_block_size(default):
    assert SchedulerConfig(1, 1, 1, 2).block_size == BLOCK_SIZE
    assert cdiv(max(p + o for p, o, _ in REQUESTS), BLOCK_SIZE) + 2 == POOL_MIN
    spec = {d.name: d.spec for d in declared(Params)}["blocks"]
    assert f"blocks of {BLOCK_SIZE} tokens" in spec.label
    assert default.block_size == BLOCK_SIZE and default.pool_tokens == default.usable * BLOCK_SIZE


def test_budget_below_max_num_seqs_is_explained_not_raised():
    p = Params(**OWN, max_num_batched_tokens=256, max_num_seqs=1024)
    r = build(p)
    assert r.limits_refused and (r.asked_seqs, r.max_num_seqs, r.budget) == (1024, 256, 256)
    assert not build(Params(**OWN, max_num_batched_tokens=256, max_num_seqs=256)).limits_refused
    at = run_page(PAGE, query={"sl-defaults": "0", "sl-budget": "256", "sl-seqs": "1024"})
    shown = [w.value for w in at.warning]
    assert story.text(lesson("step_loop").text_path, "bad-limits", r) in shown
    assert _shows_metrics(at, r)


def test_long_runs_are_sampled_and_say_so():
    p = Params(**OWN, max_num_batched_tokens=256, max_num_seqs=1, blocks=POOL_MIN)
    r = build(p)
    assert r.num_steps > 200 and r.frames == 200 and r.sampled
    fig = figures.animation(r, 1)
    assert len(fig["frames"]) == 200
    assert f"200 of {r.num_steps} steps, evenly sampled" in fig["layout"]["title"]["text"]
    # A step between two sampled frames opens the animation at the one before it.
    gap = next(s for s in range(1, r.num_steps + 1) if s not in set(r.frame_steps.tolist()))
    start = frame_of(r, gap)
    assert r.frame_steps[start] < gap < r.frame_steps[start + 1]
    assert figures.animation(r, gap)["layout"]["sliders"][0]["active"] == start


# -- synchronous or async scheduling --------------------------------------------------------------
def _admitted(d) -> set[int]:
    return set(d.new.tolist()) | set(d.resumed.tolist())


def _names_of(text: str) -> set[str]:
    """The request names in a joined list ("R4 and R5", "R1, R2 and R3")."""
    return set(text.replace(" and ", ", ").split(", ")) - {""}


def test_async_scheduling_reaches_the_schedulers_config(default):
    """The toggle runs vLLM's AsyncScheduler: the Readout is a direct async run of sim (more
    steps than the synchronous default: R4 and R5 wait one step more for R3's blocks, and the
    last step only processes an output), and the prefix-caching replay is async too."""
    r = build(Params(**ASYNC))
    cfg = SchedulerConfig(
        max_num_batched_tokens=r.budget,
        max_num_seqs=r.max_num_seqs,
        max_model_len=8192,
        num_gpu_blocks=r.blocks,
        async_scheduling=True,
    )
    direct = run_steps(cfg, workload(), record_detail=True)
    assert r.async_scheduling and not default.async_scheduling
    assert r.num_steps == direct.num_steps == default.num_steps + 2
    assert r.replay.used.tolist() == direct.num_scheduled_tokens.tolist()
    assert r.preemptions == direct.total_preemptions
    assert r.first_preempt_step == next(d.step for d in direct.detail if d.preempted.size)
    v = NAMES.index(r.victim)
    assert r.resume_step == next(d.step for d in direct.detail if v in d.resumed.tolist())
    assert r.resume_step == default.resume_step + 1
    on = run_steps(dataclasses.replace(cfg, enable_prefix_caching=True), workload())
    assert r.cache_compare and r.hit_tokens == int(on.num_prefix_hit_tokens[v])
    # The clock is sim.timed's async one: the same requests, timed, end where the Readout does.
    arrival = np.array(
        [r.replay.clock_ms[a - 2] / 1e3 - 1e-9 if a > 1 else 0.0 for *_, a in REQUESTS]
    )
    dep = Deployment(gpu=r.gpu, model=r.model, tp=r.tp, dtype="bf16")
    timed = run_timed(cfg, workload(arrival), dep)
    assert timed.num_steps == r.num_steps
    assert float(timed.step_start_s[-1] + timed.step_ms[-1] / 1e3) * 1e3 == pytest.approx(
        r.total_ms
    )


@pytest.mark.parametrize("blocks", [240, 180, 600])
def test_the_comparison_quotes_both_runs(blocks):
    """The compare paragraphs: where the two modes part (the first step whose admissions
    differ), who finished the step before, the preemptions, the steps and the time of each run,
    all read from a synchronous and an async run of sim, the same whichever mode is shown."""
    sync_r, async_r = build(Params(blocks=blocks)), build(Params(blocks=blocks, **ASYNC))
    cfg = config(blocks, sync_r.budget, sync_r.max_num_seqs)
    sync = run_steps(cfg, workload(), record_detail=True)
    asyn = run_steps(
        dataclasses.replace(cfg, async_scheduling=True), workload(), record_detail=True
    )
    pairs = zip(sync.detail, asyn.detail, strict=False)
    split = next((a.step for a, b in pairs if _admitted(a) != _admitted(b)), 0)
    for r in (sync_r, async_r):
        told = " ".join(story.text(TEXT, "compare", r).split())
        assert (r.sync_steps, r.async_steps) == (sync.num_steps, asyn.num_steps)
        assert r.sync_ms == pytest.approx(sync_r.total_ms)
        assert r.async_ms == pytest.approx(async_r.total_ms)
        assert f"{r.sync_steps} steps and {r.sync_ms:,.0f} ms with the synchronous" in told
        assert f"{r.async_steps} steps and {r.async_ms:,.0f} ms with async scheduling" in told
        assert (r.sync_preemptions, r.async_preemptions) == (
            sync.total_preemptions,
            asyn.total_preemptions,
        )
        assert r.split_step == split and r.modes_part == bool(split)
        if not split:
            assert "Both schedulers let every request in at the same step" in told
            continue
        names = _admitted(sync.detail[split - 1])
        assert _names_of(r.split_names) == {NAMES[q] for q in names}
        later = next(d.step for d in asyn.detail[split - 1 :] if _admitted(d) & names)
        assert r.split_async_step == later > split
        freer = {NAMES[q] for q in range(len(NAMES)) if sync.finish_step[q] == split - 1}
        assert r.split_freed and _names_of(r.split_freer) == freer
        assert f"part in step **{split}**" in told and f"only in step **{later}**" in told
        assert f"{r.split_freer} finished in step {split - 1}" in told
    both = ("split", "sync_", "async_", "modes_part")
    fields = [f.name for f in dataclasses.fields(sync_r) if f.name.startswith(both)]
    fields.remove("async_scheduling")
    assert all(getattr(sync_r, f) == getattr(async_r, f) for f in fields)


def test_the_preemption_sentence_follows_the_two_runs(default):
    """The lesson's requests preempt alike in both modes (the same step, as often); the other
    sentences fill from their fields when that changes."""
    told = " ".join(story.text(TEXT, "compare", default).split())
    assert default.same_preemptions_dry and default.sync_preemptions == default.async_preemptions
    assert f"in the same step in both, step {default.first_preempt_step}" in told
    assert "Neither preempts" in " ".join(
        story.text(TEXT, "compare", build(Params(blocks=600))).split()
    )
    other = dataclasses.replace(
        default, same_preemptions_dry=False, preemptions_differ=True, async_preemptions=3
    )
    told = " ".join(story.text(TEXT, "compare", other).split())
    assert "The preemptions differ: 1 with the synchronous scheduler, 3 with async" in told


@pytest.mark.parametrize("on", [False, True])
def test_the_text_and_the_chart_say_which_mode_they_show(on):
    r = build(Params(async_scheduling=on))
    told = story.text(TEXT, "mode", r)
    assert ("Scheduling mode: async" in told) is on
    assert ("Scheduling mode: synchronous" in told) is not on
    title = figures.still(r, 1)["layout"]["title"]["text"]
    assert title.endswith("(async scheduler)" if on else "(synchronous scheduler)")


def test_the_async_story_frees_a_finished_requests_blocks_one_step_later(default):
    """R3 samples its last token in step f. Synchronous: it gives its blocks back in step f.
    Async: it keeps its place and its blocks, is skipped in step f + 1 and frees them then, as
    the run measures; the last step runs no pass."""
    r = build(Params(**ASYNC))
    cfg = config(r.blocks, r.budget, r.max_num_seqs, async_scheduling=True)
    run = run_steps(cfg, workload(), record_detail=True)
    q = NAMES.index("R3")
    f = int(run.finish_step[q])
    assert f == int(
        run_steps(dataclasses.replace(cfg, async_scheduling=False), workload()).finish_step[q]
    )
    sync_end = at_step(default, f)
    assert sync_end.freed_now and sync_end.finished_names == "R3" and not sync_end.last_in_flight
    end, after = at_step(r, f), at_step(r, f + 1)
    assert end.last_in_flight and end.ending_names == "R3" and not end.finished
    assert q in r.replay.running[f - 1] and q not in r.replay.done[f - 1]
    assert after.skipped_too and after.skipped_names == "R3" and "R3" not in after.decode_names
    assert after.freed_late and after.finished_names == "R3" and after.prev_step == f
    assert after.blocks_used == run.detail[f].kv_blocks_used_after_schedule
    assert after.blocks_after == run.detail[f - 1].kv_blocks_used < after.blocks_used
    assert q in r.replay.done[f] and q not in r.replay.running[f]
    kv = " ".join(story.text(STEP_TEXT, "ev-kv", after).split())
    assert f"{after.blocks_used:,} of {r.usable:,} blocks are in use in this step" in kv
    assert f"last token of its answer in step {f}" in kv and f"leaving {after.blocks_after:,}" in kv
    told = " ".join(story.text(STEP_TEXT, "ev-kv", end).split())
    assert f"after it has scheduled step {f + 1}" in told
    last = at_step(r, r.num_steps)
    assert last.output_only and last.tokens == 0 and last.serve_skipped_only
    assert "No forward pass" in story.text(STEP_TEXT, "ev-pass", last)
    assert not any(at_step(default, k).output_only for k in range(1, default.num_steps + 1))


def test_with_one_seat_an_async_step_can_schedule_nothing():
    """max_num_seqs = 1: the request whose last token is in flight keeps the seat, so the next
    one waits a step in which nothing runs (the story says so, not "the last turn")."""
    r = build(Params(**ASYNC, **OWN, max_num_batched_tokens=512, max_num_seqs=1, blocks=200))
    empty = [k + 1 for k in range(r.num_steps - 1) if r.replay.used[k] == 0]
    assert empty
    s = at_step(r, empty[0])
    assert s.output_only and s.serve_skipped_only and s.blocked_seqs
    assert "No forward pass" in story.text(STEP_TEXT, "ev-pass", s)
    assert r.min_ms > 0  # the summary's cheapest step is one with a pass


def test_the_async_toggle_round_trips_through_the_link():
    at = run_page(PAGE, query={"sl-async": "1"})
    assert at.toggle(key="w:sl-async").value is True
    r = build(Params(**ASYNC))
    assert _shows_metrics(at, r) and "Scheduling mode: async" in _markdown(at)
    assert " ".join(story.text(TEXT, "compare", r).split()) in " ".join(_markdown(at).split())
    at.toggle(key="w:sl-async").set_value(False).run()
    assert "sl-async" not in at.query_params  # off is the default: the link leaves it out
    assert _shows_metrics(at, build(Params())) and "Scheduling mode: synchronous" in _markdown(at)
    at.toggle(key="w:sl-async").set_value(True).run()
    assert at.query_params["sl-async"] == "1"
    bad = run_page(PAGE, query={"sl-async": "maybe"})
    assert bad.toggle(key="w:sl-async").value is False
    assert any("sl-async" in w.value and "maybe" in w.value for w in bad.warning)


# -- the story of one step ------------------------------------------------------------------------
STEP_FIELDS = {f.name for f in dataclasses.fields(StepReadout)}
STEP_SECTIONS = story.parse(STEP_TEXT)
STORY = ("ev-lists", "ev-pick", "ev-pass", "ev-sample", "ev-kv")


def test_step_md_names_only_step_readout_fields():
    assert {s.name for s in STEP_SECTIONS} == set(STORY)
    for section in STEP_SECTIONS:
        assert story.placeholders(section.body) <= STEP_FIELDS, section.name
        if section.when is not None:
            assert section.when in STEP_FIELDS, section.name


@pytest.mark.parametrize("p", PARAMS)
def test_every_step_tells_one_variant_of_each_part(p):
    r = build(p)
    for step in range(1, r.num_steps + 1):
        s = at_step(r, step)
        for name in ("ev-lists", "ev-pass", "ev-sample"):
            assert len(story.pick(STEP_TEXT, name, s)) == 1, (step, name)
        kv = [x for x in story.pick(STEP_TEXT, "ev-kv", s) if x.when != "last_in_flight"]
        assert len(kv) == 1, step
        serve = (
            s.serve_decode_and_chunk,
            s.serve_decode,
            s.serve_chunk,
            s.serve_skipped_only,
            s.serve_none,
        )
        blocked = (s.blocked_budget, s.blocked_seqs, s.blocked_blocks, s.blocked_none)
        assert sum(serve) == 1 and sum(blocked) == (0 if s.preempted else 1), step
        late = (s.skipped_too, s.serve_skipped_only, s.freed_late, s.last_in_flight)
        assert p.async_scheduling or not any(late), step  # the synchronous story is unchanged
        for name in STORY:
            story.text(STEP_TEXT, name, s)  # every placeholder fills


def test_the_preemption_step_is_told_by_its_fields(default):
    s = at_step(default, 6)
    assert s.preempted and s.preempted_names == "R4" and s.waiting_names == "R4"
    assert not (s.admitted_new or s.admitted_again)
    assert not any((s.blocked_budget, s.blocked_seqs, s.blocked_blocks, s.blocked_none))
    assert s.decode_names == "R1, R2 and R3" and s.tokens == 3 == s.seqs
    assert s.clock_ms == pytest.approx(default.replay.clock_ms[5])
    first = at_step(default, 1)
    assert first.arrivals_none_running and first.arrived_names == "R1 and R2"
    assert first.admitted_new and first.new_sizes == "600 and 300"
    long = at_step(default, 3)  # R3's 2,500 tokens do not fit in one step's budget
    assert long.new_names == "R3" and long.mid_only is False and "R3" in long.mid_names
    assert at_step(default, 0).step == 1 and at_step(default, 999).step == default.num_steps


# -- the page -------------------------------------------------------------------------------------
def test_page_runs_and_animates_every_step(opening, default):
    anim = _anim(opening)
    assert len(anim["frames"]) == default.num_steps <= 200
    labels = [s["label"] for s in anim["layout"]["sliders"][0]["steps"]]
    assert labels == [str(k) for k in range(1, default.num_steps + 1)]
    assert _shows_metrics(opening, default)
    # The step time in each frame is the cost model's price of that step.
    frame6 = _title(anim["frames"][5]["data"])
    assert frame6.startswith("Step 6 of") and f"{default.replay.step_ms[5]:.1f} ms" in frame6
    told = [story.text(STEP_TEXT, name, at_step(default, 1)) for name in STORY]
    assert all(t in _markdown(opening) for t in told)


def test_the_animation_opens_at_the_steppers_step(default):
    at = run_page(PAGE, query={"sl-step": "6"})
    assert at.slider(key="sl-step").value == 6
    anim = _anim(at)
    assert anim["layout"]["sliders"][0]["active"] == 5
    assert anim["layout"]["meta"]["stepper"] == 6  # the arrows are the stepper's
    assert _title(anim["data"]) == _title(anim["frames"][5]["data"])
    batch = [*default.replay.tokens[5].tolist(), default.budget - int(default.replay.used[5])]
    assert list(trace_values(anim, "x")[3]) == batch  # the batch bars of step 6
    told = story.text(STEP_TEXT, "ev-pick", at_step(default, 6))
    assert told in _markdown(at)
    at.button(key="sl-step-next").click().run()
    assert _anim(at)["layout"]["sliders"][0]["active"] == 6
    assert _shown_title(at).startswith("Step 7 of")


def test_next_and_previous_move_one_step():
    at = run_page(PAGE)
    assert at.slider(key="sl-step").value == 1
    at.button(key="sl-step-next").click().run()
    assert at.slider(key="sl-step").value == 2
    assert _shown_title(at).startswith("Step 2 of")
    at.button(key="sl-step-prev").click().run()
    at.button(key="sl-step-prev").click().run()
    assert at.slider(key="sl-step").value == 1


def test_reset_forgets_the_step_and_the_pool():
    at = run_page(PAGE, query={"sl-step": "6", "sl-blocks": "600"})
    assert at.slider(key="sl-step").value == 6 and at.slider(key="w:sl-blocks").value == 600
    at.button(key="sl-reset").click().run()
    assert not at.exception
    assert at.slider(key="sl-step").value == 1
    assert at.slider(key="w:sl-blocks").value == Params().blocks
    assert _shows_metrics(at, build(Params()))


def test_the_pool_slider_moves_the_run():
    at = run_page(PAGE)
    at.slider(key="w:sl-blocks").set_value(600).run()
    big = build(Params(blocks=600))
    assert big.preemptions == 0 and _shows_metrics(at, big)
    assert _anim(at)["layout"]["xaxis3"]["range"][1] == pytest.approx(big.usable * 1.3)
    at.slider(key="w:sl-blocks").set_value(170).run()
    small = build(Params(blocks=170))
    assert small.num_steps > big.num_steps  # R3 waits for room for its whole prompt
    assert _shows_metrics(at, small)


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [("gpu", "B200", "gpu"), ("model", "Mistral-7B-v0.3", "model"), ("tp", 2, "tp")],
)
def test_the_deployment_prices_the_steps(key, value, field, default):
    at = run_page(PAGE)
    at.selectbox(key=f"w:{key}").set_value(value).run()
    r = build(Params(**{field: value}))
    assert r.max_ms < default.max_ms  # a faster GPU, a smaller model, two GPUs
    assert r.num_steps == default.num_steps  # the same decisions: the limits are the lesson's
    assert _shows_metrics(at, r)
    assert f"{r.replay.step_ms[0]:.1f} ms" in _shown_title(at)


def test_fp8_weights_price_the_steps_on_a_gpu_with_fp8(default):
    at = run_page(PAGE)
    at.selectbox(key="w:dtype").set_value("fp8").run()
    r = build(Params(dtype="fp8"))
    assert r.dtype == "FP8" and r.max_ms < default.max_ms
    assert _shows_metrics(at, r)


def test_own_limits_move_the_run(default):
    at = run_page(PAGE)
    at.toggle(key="w:sl-defaults").set_value(False).run()
    at.select_slider(key="w:sl-budget").set_value(512).run()
    small = build(Params(**OWN, max_num_batched_tokens=512))
    assert small.num_steps > default.num_steps and _shows_metrics(at, small)
    at.slider(key="w:sl-seqs").set_value(1).run()
    one = build(Params(**OWN, max_num_batched_tokens=512, max_num_seqs=1))
    assert one.num_steps > small.num_steps and _shows_metrics(at, one)
    # With one seat the running list never holds more than one request.
    assert max(len(running) for running in one.replay.running) == 1
    frames = _anim(at)["frames"]
    assert all(list(f["data"][2]["y"]).count("running list") <= 1 for f in frames)


def _widget(at, d):
    from lessons.kit.controls import Choice, Integer, Steps, Toggle

    key = "w:" + d.url_key("sl")
    kind = {Choice: at.selectbox, Steps: at.select_slider, Integer: at.slider, Toggle: at.toggle}
    return kind[type(d.spec)](key=key)


def test_every_control_moved_to_its_extremes_runs():
    at = run_page(PAGE)
    at.toggle(key="w:sl-defaults").set_value(False).run()
    for d in declared(Params):
        if d.name == "vllm_defaults":
            continue
        for value in (d.spec.lowest(), d.spec.highest()):
            _widget(at, d).set_value(value).run()
            assert not at.exception, (d.name, value, [e.value for e in at.exception])
            assert len(_anim(at)["frames"]) <= 200
            stepper = at.slider(key="sl-step")
            assert 1 <= stepper.value <= stepper.max  # kept, clamped to a shorter run
        at.slider(key="sl-step").set_value(at.slider(key="sl-step").max).run()
        assert not at.exception, d.name
    at.toggle(key="w:sl-defaults").set_value(True).run()
    assert not at.exception


def test_the_step_stays_in_the_link_and_a_bad_one_is_reported(default):
    at = run_page(PAGE)
    at.button(key="sl-step-next").click().run()
    at.button(key="sl-step-next").click().run()
    assert at.query_params["sl-step"] == "3"
    at.button(key="sl-step-prev").click().run()
    at.button(key="sl-step-prev").click().run()
    assert "sl-step" not in at.query_params  # step 1 is the default: the link leaves it out
    bad = run_page(PAGE, query={"sl-step": "999"})
    assert bad.slider(key="sl-step").value == 1
    assert any("sl-step" in w.value and "999" in w.value for w in bad.warning)
    # A run made shorter clamps the step to its end, and the link follows.
    at = run_page(PAGE, query={"sl-step": str(default.num_steps)})
    at.slider(key="w:sl-blocks").set_value(1000).run()
    shorter = build(Params(blocks=1000))
    assert shorter.num_steps < default.num_steps
    assert at.slider(key="sl-step").value == shorter.num_steps
    assert at.query_params["sl-step"] == str(shorter.num_steps)


# -- quiz and exercises ---------------------------------------------------------------------------
def test_quiz_grades_and_awards_xp_once():
    assert len(lesson("step_loop").bank().questions) >= 6
    assert_quiz_awards_xp_once(PAGE, "step_loop", "blocks_run_out")


def test_the_recompute_questions_numbers_are_the_schedulers():
    """The "recompute" question: a 400-token prompt preempted after 40 streamed tokens (here
    B, admitted first, needs a block and the pool is empty). With prefix caching off it computes
    400 + 40 = 440 tokens on its return; with it on, its 27 full blocks are still cached (B
    finishes before taking any), so it computes 8. The explanation quotes both."""
    cfg = SchedulerConfig(
        max_num_batched_tokens=2048, max_num_seqs=8, max_model_len=4096, num_gpu_blocks=40
    )
    wl = Workload.build([136, 400], [48, 60], arrival_step=[1, 2])
    off = run_steps(cfg, wl, record_detail=True)
    on = run_steps(dataclasses.replace(cfg, enable_prefix_caching=True), wl, record_detail=True)
    got = {}
    for name, run in (("off", off), ("on", on)):
        assert run.num_preemptions.tolist() == [0, 1]
        cut = next(d.step for d in run.detail if d.preempted.size)
        assert int(((run.token_req == 1) & (run.token_step < cut)).sum()) == 40
        back = next(d.step for d in run.detail if 1 in d.resumed.tolist())
        got[name] = _recomputed(run, 1, back)
    hits = int(on.num_prefix_hit_tokens[1])
    assert got == {"off": 440, "on": 440 - hits}
    q = lesson("step_loop").bank().question("recompute")
    assert q.prompt.startswith("Prefix caching is off.")
    assert q.correct_choice.startswith(f"{got['off']}:")
    assert f"its {hits // BLOCK_SIZE} full blocks ({hits} tokens)" in q.explanation
    assert f"compute only the last {got['on']} tokens" in q.explanation


@pytest.mark.parametrize("seed", range(20))
def test_exercises_match_closed_forms(seed):
    blocks = exercise.blocks_after_steps(seed)
    p = blocks.params
    assert blocks.answer == cdiv(p["prompt"] + p["step"] - 1, BLOCK_SIZE)
    wait = exercise.seq_budget_wait(seed)
    q = wait.params
    assert wait.answer == (cdiv(q["count"], q["seqs"]) - 1) * q["output"] + 1
    assert f"**{int(wait.answer)}**" in wait.solution
    assert f"**{int(blocks.answer)}**" in blocks.solution
    if seed == 0:
        assert (blocks.answer, wait.answer) == (39, 25)


def test_exercise_is_graded_on_the_page():
    at = run_page(PAGE)
    drawn = exercise.blocks_after_steps(0)
    at.number_input(key="answer-step-loop-blocks-0").set_value(drawn.answer + 1)
    at.button(key="exercise-step-loop-blocks-check").click().run()
    assert not at.exception and at.error
    at.number_input(key="answer-step-loop-blocks-0").set_value(drawn.answer)
    at.button(key="exercise-step-loop-blocks-check").click().run()
    assert not at.exception and at.success
    assert drawn.solution in _markdown(at)


def test_names_are_the_scenarios(default):
    assert default.replay.names == NAMES and len(NAMES) == len(REQUESTS) == 5


# -- diagram first (issue 36) ---------------------------------------------------------------------
_in_order = in_order  # tests/apptest_util.py


def test_the_page_opens_on_the_title_the_key_sentence_and_the_one_picture(opening):
    """Title, one sentence, the stepper and the animation, nothing else before it; the replay is
    drawn once (one chart, driven by the stepper)."""
    assert len(charts(opening)) == 1 and _anim(opening)["layout"]["meta"]["stepper"] == 1
    seen = [e for e in _in_order(opening.main) if e[0] not in ("Block", "Column", "SpecialBlock")]
    chart = next(i for i, e in enumerate(seen) if e[1] == "sl-anim")
    said = [e[2] for e in seen[:chart] if e[0] == "Markdown"]
    assert said == [story.text(TEXT, "title"), story.text(TEXT, "intro")]
    assert story.text(TEXT, "intro").count(". ") == 0  # one sentence
    assert [e[1] for e in seen[:chart] if e[0] in ("Button", "Slider")] == [
        "sl-step-prev",
        "sl-step",
        "sl-step-next",
    ]


def test_questions_sit_next_to_the_picture_that_answers_them(opening):
    """ "order" and "mid_prompt" are asked open right under the step's story (the picture shows
    who is served first and R3's prompt read over two steps); the others are folded under the
    paragraph they test; the practice at the end asks none of them again."""
    seen = _in_order(opening.main)
    where = {key: (i, box) for i, (kind, key, _, box) in enumerate(seen) if kind == "Radio"}
    chart = next(i for i, e in enumerate(seen) if e[1] == "sl-anim")
    run = next(i for i, e in enumerate(seen) if e[2].startswith("### The run"))
    for qid in ("order", "mid_prompt"):
        at, box = where[quiz_key("step_loop", qid)]
        assert chart < at < run and box == ""
    folded = {
        "three_limits": "### Three limits",
        "shared_wait": "### Three limits",
        "blocks_run_out": "### When the cache runs dry",
        "recompute": "### When the cache runs dry",
        "no_admission": "### When the cache runs dry",
        "max_model_len": "### When the cache runs dry",
    }
    for qid, heading in folded.items():
        at, box = where[quiz_key("step_loop", qid)]
        above = next(e[2] for e in reversed(seen[:at]) if e[2].startswith("### "))
        assert above.startswith(heading) and box.startswith("Check yourself on this chart"), qid
    assert len(where) == len(lesson("step_loop").bank().questions)  # each asked once


def test_go_deeper_holds_async_the_loop_and_what_comes_back(opening, default):
    """The asides left the main flow but not the page: each folded section says its text."""
    inside: dict[str, list[str]] = {}
    for kind, _, text, box in _in_order(opening.main):
        if kind == "Markdown" and box.startswith("Go deeper"):
            inside.setdefault(box, []).append(text)
    topics = story.labels(TEXT, "deeper")
    expected = {
        "async": [story.text(TEXT, "mode", default), story.text(TEXT, "compare", default)],
        "recompute": [story.text(TEXT, "recompute", default)],
        "loop": [story.text(TEXT, "loop", default)],
    }
    for key, texts in expected.items():
        assert inside[f"Go deeper: {topics[key]}"] == texts, key
    seen = _in_order(opening.main)
    main = " ".join(t for kind, _, t, box in seen if kind == "Markdown" and not box)
    assert "Scheduling mode" not in main and "--kv-offloading-size" not in main


def test_the_run_is_the_courses_cast_and_says_why_it_differs(opening, default):
    """H100-SXM and Llama-3.1-8B as every lesson; the budget below vLLM's default on this GPU
    and the synchronous scheduler are the lesson's own, each said with its reason."""
    assert (default.gpu, default.model) == ("H100-SXM", "Llama-3.1-8B")
    assert not default.async_scheduling and default.budget < default.vllm_budget
    said = " ".join(_markdown(opening).split())
    assert "The **synchronous** scheduler, not vLLM's default async one" in said
    assert f"below vLLM's default here ({default.vllm_budget:,})" in said
    assert at_step(default, 3).mid_names == default.long_name  # read in slices, as said
    on = build(Params(**ASYNC))
    assert "The **async** scheduler, vLLM's default" in story.text(TEXT, "cast", on)
    vllms = build(Params(vllm_defaults=True))
    assert not vllms.budget_below_default
    assert "below vLLM's default" not in story.text(TEXT, "scenario", vllms)


def test_what_is_taught_about_preemption_stays_true(default):
    """Issue 36: by default a victim is recomputed (CPU KV offloading can bring blocks back),
    and the victim is the request admitted or readmitted last, not "the newest"."""
    bank = lesson("step_loop").bank()
    quiz = " ".join(" ".join([q.prompt, *q.choices, q.explanation]) for q in bank.questions)
    for text in (quiz, TEXT.read_text(), STEP_TEXT.read_text()):
        assert "only recomputes" not in text and "never copies" not in text
        assert "newest" not in text and "always recomputes" not in text
    for qid in ("blocks_run_out", "recompute"):
        assert "--kv-offloading-size" in bank.question(qid).explanation
    assert "admitted or readmitted last" in bank.question("blocks_run_out").correct_choice
    said = " ".join(story.text(TEXT, "preemption", default).split())
    assert "the one admitted or readmitted last" in said and "By default" in said
    assert "`--kv-offloading-size`" in story.text(TEXT, "recompute", default)
