"""Lesson "When memory runs out": what the grid, the tables and the text claim, against the engine.

Why: this lesson draws the KV pool block by block and prices every preemption. The grid's cells
must be the engine's block accounting at every frame; the preemptions it marks must be the run's;
each victim must be the one its policy picks; prefix caching must never make a victim compute
more; the what-ifs must be runs of what they say; the predict questions' answers must be the
opening run's; and every control must move the run through the page.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from lessons.course import lesson
from lessons.kit import story
from lessons.kit.controls import declared
from lessons.kit.figures import grid_owners
from lessons.memory import exercise, figures, predict
from lessons.memory import lesson as mem
from lessons.memory.lesson import BLOCK_SIZE, Params, at_step, build, comparison
from sim.blocks import CACHED, FREE, NULL
from sim.kv import cdiv
from sim.models import kv_pool
from sim.scheduler import run_steps
from sim.timed import run_timed
from sim.workload import Workload
from tests.apptest_util import assert_quiz_awards_xp_once, charts, past_predictions, run_page

PAGE = "views/lesson_memory.py"
TEXT = lesson("memory").text_path
VARIANTS = [
    Params(),
    Params(policy="priority"),
    Params(prefix_caching=False, async_scheduling=False),
    Params(pool_from="blocks", num_gpu_blocks=700, rate=8),
]


@pytest.fixture(scope="module")
def default():
    return build(Params())


def _ids(p: Params) -> str:
    return f"{p.policy}-{p.pool_from}-cache{int(p.prefix_caching)}-async{int(p.async_scheduling)}"


# -- the grid against the engine ------------------------------------------------------------------
@pytest.mark.parametrize("p", VARIANTS, ids=_ids)
def test_the_grid_is_the_engines_block_accounting_at_every_frame(p):
    r = build(p)
    setup, run = mem.traced_run(p)
    plain = run_timed(setup.config, setup.workload, setup.deployment)
    np.testing.assert_array_equal(run.num_scheduled_tokens, plain.num_scheduled_tokens)
    np.testing.assert_array_equal(run.kv_blocks_used, plain.kv_blocks_used)
    # the engine's count at the end of each turn (async records step k's at turn k + 1)
    used = np.asarray(plain.kv_blocks_used)
    if p.async_scheduling:
        used = np.concatenate([[run.detail[0].kv_blocks_used_after_schedule], used[:-1]])
    trace, fr = run.blocks, r.frames
    assert fr.owners.shape == (fr.steps.size, setup.config.num_gpu_blocks)
    for i, k in enumerate(fr.steps.tolist()):
        cells = fr.owners[i]
        held = np.count_nonzero(cells >= 0)
        assert held == used[k], f"step {k + 1}"
        assert cells[0] == NULL and np.count_nonzero(cells == NULL) == 1
        assert np.count_nonzero((cells == FREE) | (cells == CACHED)) == r.usable - held
        lens = trace.table_lens[k]
        np.testing.assert_array_equal(lens, cdiv(trace.num_computed_tokens[k], BLOCK_SIZE))
        holders = np.bincount(cells[cells >= 0], minlength=lens.size)
        np.testing.assert_array_equal(holders, lens)  # no prefix is shared in this workload
        usage = float(100.0 * held / r.usable)
        assert at_step(r, k + 1).usage_pct == pytest.approx(usage)
    # the frame's z is the same grid
    anim = figures.pool(r, 1)
    z = grid_owners(anim["frames"][3]["data"][0]["z"]).ravel()
    np.testing.assert_array_equal(z[: r.num_gpu_blocks], fr.owners[3])


@pytest.mark.parametrize("p", VARIANTS, ids=_ids)
def test_preemptions_shown_are_the_runs(p):
    r = build(p)
    _, run = mem.traced_run(p)
    v, fr = r.victims, r.frames
    assert r.preemptions == v.count == run.total_preemptions == int(fr.preemptions[-1])
    steps = sorted({d.step for d in run.detail if d.preempted.size})
    assert set(np.asarray(steps) - 1) <= set(fr.steps.tolist())  # every one is drawn
    anim = figures.pool(r, 1)
    marked = [
        int(fr.steps[i]) + 1
        for i, frame in enumerate(anim["frames"])
        if frame["data"][1]["x"] != [None]
    ]
    assert marked == steps
    last = anim["frames"][-1]["layout"]["annotations"][0]["text"]
    assert f"vllm:num_preemptions {run.total_preemptions}" in last
    for i, k in enumerate(v.step.tolist()):  # the victim's blocks, all of them, freed at once
        r_ = int(v.request[i])
        assert run.blocks.table_lens[k - 1, r_] == 0
        assert v.lost_tokens[i] == run.blocks.num_computed_tokens[k - 2, r_]


@pytest.mark.parametrize("p", VARIANTS, ids=_ids)
def test_victims_follow_the_policys_rule(p):
    _, run = mem.traced_run(p)
    wl, lens = run.workload, run.blocks.table_lens
    for d in run.detail:
        if not d.preempted.size:
            continue
        before = run.detail[d.step - 2]
        alive = [q for q in before.running.tolist() if lens[d.step - 2, q] > 0]
        victims = d.preempted.tolist()
        if p.policy == "fcfs":
            assert victims == alive[::-1][: len(victims)]  # the end of the running list
        else:
            for v in victims:
                # vLLM's max over (priority, arrival_time); requests of one instant are
                # stamped in list order, so the index breaks an equal arrival_s
                key = [(int(wl.priority[q]), float(wl.arrival_s[q]), q) for q in alive]
                assert alive[key.index(max(key))] == v
                alive.remove(v)


@pytest.mark.parametrize("p", VARIANTS, ids=_ids)
def test_prefix_caching_never_makes_a_victim_compute_more(p):
    r, c = build(p), comparison(p)
    v = r.victims
    assert np.all(v.hit_tokens >= 0) and np.all(v.recomputed_tokens <= v.lost_tokens)
    if not p.prefix_caching:
        assert v.hit_tokens.sum() == 0
    assert c.recompute_on <= c.recompute_off
    assert r.recomputed_tokens == int(v.recomputed_tokens.sum())


def test_the_victims_price_comes_from_the_run(default):
    v = default.victims
    assert v.count > 0
    for i in range(v.count):
        assert v.step[i] < v.resume_step[i] <= v.rebuilt_step[i]
        assert v.lost_steps[i] == v.rebuilt_step[i] - v.step[i] and v.lost_ms[i] > 0
    assert default.recomputed_share_pct == pytest.approx(
        100 * v.recomputed_tokens.sum() / v.total_scheduled
    )


def test_paging_against_a_static_reservation(default):
    r = default
    assert r.static_seqs == r.pool_tokens // r.max_model_len
    assert r.paged_seqs == r.usable // cdiv(r.mean_seq_tokens, BLOCK_SIZE)
    assert r.paged_seqs > r.static_seqs
    assert 0 <= r.peak_slack_slots < BLOCK_SIZE * r.peak_requests  # under a block per request
    longer = build(Params(max_model_len=32768))
    assert longer.static_seqs < r.static_seqs and longer.paged_seqs == r.paged_seqs


# -- the comparisons ------------------------------------------------------------------------------
def test_the_fixes_are_runs_of_what_they_say(default):
    c = comparison(Params())
    fixes = {f.key: f for f in c.fixes}
    assert set(fixes) == {
        "as_set",
        "fewer_seqs",
        "more_memory",
        "fp8_kv",
        "tp2",
        "bigger_gpu",
        "watermark",
    }
    assert fixes["as_set"].preemptions == default.preemptions
    assert fixes["as_set"].num_gpu_blocks == default.num_gpu_blocks
    fp8 = kv_pool("L4", "Llama-3.1-8B", kv_dtype="fp8", max_num_batched_tokens=default.budget)
    assert fixes["fp8_kv"].num_gpu_blocks == fp8.num_gpu_blocks
    assert 1.9 < fp8.num_gpu_blocks / default.num_gpu_blocks < 2.1  # half the bytes per token
    assert fixes["fewer_seqs"].max_num_seqs < default.max_num_seqs
    assert fixes["more_memory"].num_gpu_blocks > default.num_gpu_blocks
    assert all(f.preemptions <= default.preemptions for k, f in fixes.items() if k != "as_set")
    blocks = comparison(Params(pool_from="blocks"))
    assert {f.key for f in blocks.fixes} == {"as_set", "fewer_seqs", "watermark"}
    assert blocks.fixes_memory_left_out


def test_the_fixes_table_counts_blocks_as_the_lesson_does(default):
    """The table's pool column is the usable blocks (the null block left out), so the row of
    the run as set shows the figure the metrics and the text give."""
    from lessons.memory import tables
    from lessons.memory.figures import labels

    rows = tables.fixes(comparison(Params()))
    column = labels()["col-pool"]
    assert rows[0][column] == default.usable == default.num_gpu_blocks - 1
    usable = dict(story.metrics(TEXT, "metrics", default))["Usable KV blocks"]
    assert usable == f"{rows[0][column]:,}"


def test_a_table_wider_than_the_page_shows_every_column_and_a_narrow_one_stays_a_grid():
    """At 1280 px the data grid clipped the fixes table's last columns (ITL, throughput) and the
    victims table's last one (time until rebuilt): a table the grid would draw wider than the
    page is drawn plain, its cells wrapping; the opening step's block tables (runs of
    neighbours, written first–last) stay a scrolling grid."""
    from lessons.kit.tables import GRID_WIDTH_PX, grid_px, readable
    from lessons.memory import tables

    at = run_page(PAGE)
    past_predictions(at)
    at.run(timeout=180)
    assert not at.exception
    r, c = build(Params()), comparison(Params())
    wide = {"fixes": tables.fixes(c), "victims": tables.victims(r)}
    for name, rows in wide.items():
        assert grid_px(readable(rows)) > GRID_WIDTH_PX, name
    plain = {tuple(t.value.columns): len(t.value) for t in at.table}
    assert plain == {tuple(rows[0]): len(rows) for rows in wide.values()}
    first = tables.block_tables(at_step(r, 1))
    assert grid_px(readable(first)) <= GRID_WIDTH_PX
    (grid,) = at.dataframe
    assert list(grid.value.columns) == list(first[0]) and len(grid.value) == len(first)


def test_a_block_table_writes_its_runs_of_neighbours_first_to_last():
    from lessons.kit.words import id_runs

    assert id_runs([1, 2, 3, 4, 9, 7, 8]) == "1–4, 9, 7, 8"
    assert id_runs([5, 4, 3]) == "5, 4, 3"  # descending ids are not a run
    assert id_runs([]) == "" and id_runs([6]) == "6"
    r = build(Params())
    for k in (1, r.num_steps // 3):
        held = r.frames.table(k - 1)  # (request, its block ids in token order)
        assert len(held) == len(at_step(r, k).tables) > 0
        for (_, _, n, ids), (_, want) in zip(at_step(r, k).tables, held, strict=True):
            blocks = []
            for part in ids.split(", "):
                lo, _, hi = part.partition("–")
                blocks += range(int(lo), int(hi or lo) + 1)
            assert blocks == want.tolist() and n == len(blocks)


def test_a_panel_of_preemptions_is_drawn_only_where_something_is_preempted():
    """On an H100 nothing is preempted: the class and fixes charts drew an empty preemptions
    panel beside the TTFT p99. They now draw the TTFT p99 alone, and say why in the title and
    the alt text; the opening run, which preempts, keeps both panels."""
    from lessons.memory.figures import labels

    words = labels()
    quiet = comparison(Params(gpu="H100-SXM"))
    assert quiet.victims_none and quiet.fixes_none
    assert all(row.preemptions == 0 for row in quiet.class_rows)
    assert all(f.preemptions == 0 for f in quiet.fixes)
    classes, fixes = figures.classes(quiet), figures.fixes(quiet)
    assert len(classes["data"]) == 2 and "xaxis2" not in classes["layout"]
    assert classes["layout"]["title"]["text"] == words["title-classes-none"]
    assert classes["layout"]["yaxis"]["title"]["text"] == words["ttft-axis"]
    assert [t["y"] for t in classes["data"]] == [
        [row.ttft_p99_ms / 1e3 for row in quiet.class_rows if row.policy == policy]
        for policy in ("FCFS", "PRIORITY")
    ]
    assert len(fixes["data"]) == 1
    assert fixes["layout"]["title"]["text"] == words["title-fixes-none"]

    def alt(name: str, c) -> str:
        return " ".join(story.text(TEXT, name, c).split())

    assert "Neither policy preempts" in alt("alt-classes", quiet)
    assert "None of them preempts" in alt("alt-fixes", quiet)
    busy = comparison(Params())
    assert not busy.victims_none and not busy.fixes_none
    assert len(figures.classes(busy)["data"]) == 4 and len(figures.fixes(busy)["data"]) == 2
    assert "preemptions (interactive" in alt("alt-classes", busy)


def test_the_policy_comparison_is_both_runs():
    c = comparison(Params())
    by = {(row.policy, row.cls): row for row in c.class_rows}
    assert (
        by[("FCFS", "interactive")].preemptions + by[("FCFS", "batch")].preemptions
        == build(Params()).preemptions
    )
    assert (
        by[("PRIORITY", "interactive")].preemptions + by[("PRIORITY", "batch")].preemptions
        == build(Params(policy="priority")).preemptions
    )
    assert c.priority_spares_interactive  # the seed's pattern, on the opening workload
    assert c.priority_batch_preempted > 0 == c.priority_interactive_preempted


def test_the_async_comparison_is_both_modes():
    c = comparison(Params())
    assert c.async_preemptions == build(Params()).preemptions
    assert c.sync_preemptions == build(Params(async_scheduling=False)).preemptions


def test_the_step_readout_tells_a_preemption(default):
    s = at_step(default, default.first_preempt_step)
    assert s.preempted_now and s.preempted_names == default.first_victim
    assert s.queue_head == default.first_victim  # FCFS: the head of the waiting queue
    assert s.preemptions == 1 and s.freed_blocks > 0
    told = story.text(TEXT, "step-preempted", s)
    assert default.first_victim in told and f"all {s.freed_blocks} of them" in told
    back = at_step(default, int(default.victims.resume_step[0]))
    assert back.resumed_now and back.recompute_now == int(default.victims.recomputed_tokens[0])


# -- predictions, exercise, quiz ---------------------------------------------------------------
def test_the_predict_questions_are_answered_by_the_opening_run(default):
    bank = lesson("memory").bank()
    victim = bank.question("predict_victim")
    assert victim.correct_choice == default.first_victim
    assert len(set(victim.choices)) == len(victim.choices) == 4
    assert predict.answers()["step"] == default.first_preempt_step
    assert len(bank.questions) >= 6 and sum(bool(q.computed) for q in bank.questions) >= 2


def test_what_runs_the_pool_dry_is_read_from_the_run(default):
    """Issue 36: the step-number guess ("step 86 / none / 43 / 1") became a question the learner
    can reason out from the grid: what asks for the missing block. Its answer is the opening
    run's: in the step that first preempts, every scheduled request writes one token of its
    answer and none is admitted; its explanation quotes that step."""
    bank = lesson("memory").bank()
    dry = bank.question("predict_dry")
    words = figures.labels()
    facts = predict.answers()
    run = predict.opening_run()
    d = run.detail[facts["step"] - 1]
    assert d.preempted.size and not d.new.size and not d.resumed.size
    assert set(d.scheduled_tokens.tolist()) == {1}
    assert facts["cause"] == predict.dry_cause(run, facts["step"]) == "decode"
    assert dry.correct_choice == words["dry-decode"]
    assert set(dry.choices) == {words[f"dry-{k}"] for k in ("decode", "prefill", "admit", "never")}
    assert f"in step {default.first_preempt_step}: {d.scheduled_req.size} requests" in (
        dry.explanation
    )
    assert "step" not in " ".join(dry.choices).lower()  # no step number to guess
    # a preempting step in which a running request still computes its prompt says "prefill"
    from types import SimpleNamespace as Run

    def step(req, tokens, preempted=()):
        return Run(
            scheduled_req=np.array(req),
            scheduled_tokens=np.array(tokens),
            preempted=np.array(preempted),
        )

    for prompt, cause in ((200, "prefill"), (100, "decode")):
        fake = Run(
            detail=[step([0, 1], [100, 100]), step([0], [16], preempted=[1])],
            workload=Run(prompt_tokens=np.array([prompt, prompt])),
        )
        assert predict.dry_cause(fake, 2) == cause


@pytest.mark.parametrize("seed", range(12))
def test_the_exercise_matches_the_block_arithmetic(seed):
    drawn = exercise.first_preemption(seed)
    n, prompt, usable = (drawn.params[k] for k in ("count", "prompt", "usable"))
    if n * prompt <= exercise.BUDGET and n * cdiv(prompt, BLOCK_SIZE) <= usable:
        # all admitted in step 1; in step t each holds ceil((prompt + t - 1) / 16) blocks
        t = 2
        while n * cdiv(prompt + t - 1, BLOCK_SIZE) <= usable:
            t += 1
        assert drawn.answer == t
    assert f"**{int(drawn.answer)}**" in drawn.solution
    if seed == 0:
        assert drawn.answer == 42


def test_quiz_grades_and_awards_xp_once():
    assert_quiz_awards_xp_once(PAGE, "memory", "swap_v1")


# -- the page ----------------------------------------------------------------------------------
def _pool_chart(at) -> dict:
    return next(c for c in charts(at) if c.get("frames"))


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.main.metric}


def test_the_grid_opens_at_the_steppers_step(default):
    step = default.first_preempt_step
    at = run_page(PAGE, query={"mem-step": str(step)})
    anim = _pool_chart(at)
    frame = mem.frame_of(default, step)
    assert anim["layout"]["sliders"][0]["active"] == frame
    assert anim["data"][0]["z"] == anim["frames"][frame]["data"][0]["z"]
    s = at_step(default, step)
    shown = _metrics(at)
    assert shown["vllm:num_preemptions"] == str(s.preemptions)
    assert shown["Running"] == str(s.running) and shown["Waiting"] == str(s.waiting)
    markdown = "\n".join(m.value for m in at.markdown)
    assert story.text(TEXT, "step-preempted", s) in markdown
    assert at.dataframe[0].value.shape[0] == len(s.tables)  # one block table per holder
    at.button(key="mem-step-next").click().run()
    assert at.slider(key="mem-step").value == step + 1
    assert at.query_params["mem-step"] == str(step + 1)
    bad = run_page(PAGE, query={"mem-step": "99999"})
    assert bad.slider(key="mem-step").value == 1
    assert any("mem-step" in w.value for w in bad.warning)


def _changed(d) -> object:
    """A value other than the default, inside the control's range."""
    spec = d.spec
    for value in (spec.highest(), spec.lowest()):
        if value != d.default:
            return value
    raise AssertionError(d.name)


NEEDS = {
    "gpu_memory_utilization": {},
    "num_gpu_blocks": {"pool_from": "blocks"},
    "max_num_batched_tokens": {"vllm_defaults": False},
    "max_num_seqs": {"vllm_defaults": False},
}


@pytest.mark.parametrize("name", [d.name for d in declared(Params)])
def test_every_control_moves_the_run(name):
    """Each control, moved on the page, gives the page the Readout of those Params."""
    d = next(d for d in declared(Params) if d.name == name)
    change = dict(NEEDS.get(name, {}))
    change[name] = _changed(d)
    if name == "gpu":
        change[name] = "A10G"  # as small as the L4: the pool still runs dry
    query = {
        next(x for x in declared(Params) if x.name == k).url_key(mem.PREFIX): (
            next(x for x in declared(Params) if x.name == k).spec.to_url(v)
        )
        for k, v in change.items()
    }
    at = run_page(PAGE, query=query)
    p = dataclasses.replace(Params(), **change)
    r = build(p)
    shown = _metrics(at)
    want = dict(story.metrics(TEXT, "metrics", r))
    assert {k: shown[k] for k in want} == want, name
    assert r.frames.owners.shape[1] == r.num_gpu_blocks
    assert len(_pool_chart(at)["frames"]) == r.frame_count


def test_the_predictions_reveal_the_step():
    at = run_page(PAGE)
    r = build(Params())
    summary = story.text(TEXT, "summary", r)
    markdown = "\n".join(m.value for m in at.markdown)
    # while the learner predicts, the text under the grid does not give the answers away
    assert summary not in markdown and story.text(TEXT, "summary-wait") in markdown
    bank = lesson("memory").bank()
    for qid in ("predict_victim", "predict_dry"):
        key = f"predict-memory-{qid}".replace("_", "-")
        at.radio(key=key).set_value(bank.question(qid).correct_choice)
        at.button(key=f"{key}-check").click().run()
        assert not at.exception
    step = predict.answers()["step"]
    assert at.slider(key="mem-step").value == step
    assert _pool_chart(at)["layout"]["sliders"][0]["active"] == mem.frame_of(build(Params()), step)
    markdown = "\n".join(m.value for m in at.markdown)
    assert f"**step {step}**" in markdown
    assert summary in markdown and story.text(TEXT, "summary-wait") not in markdown


def test_the_exercise_is_graded_on_the_page():
    at = run_page(PAGE)
    drawn = exercise.first_preemption(0)
    at.number_input(key="answer-memory-first-preemption-0").set_value(drawn.answer + 1)
    at.button(key="exercise-memory-first-preemption-check").click().run()
    assert not at.exception and at.error
    at.number_input(key="answer-memory-first-preemption-0").set_value(drawn.answer)
    at.button(key="exercise-memory-first-preemption-check").click().run()
    assert not at.exception and at.success


def test_a_step_replay_of_the_same_rule_preempts_the_newest():
    """The rule the lesson teaches, on the smallest case: two requests, one block short."""
    from sim.config import SchedulerConfig

    cfg = SchedulerConfig(
        max_num_batched_tokens=256, max_num_seqs=4, max_model_len=1024, num_gpu_blocks=7
    )
    run = run_steps(
        cfg, Workload.build([32, 32], [40, 40], arrival_step=[1, 2]), record_detail=True
    )
    first = next(d for d in run.detail if d.preempted.size)
    assert first.preempted.tolist() == [1]  # the newer of the two


@pytest.mark.parametrize(("prompt", "mml"), [(4096, 1024), (2048, 1024), (4096, 2048)])
def test_every_prompt_refused_says_so_instead_of_crashing(prompt, mml):
    # prompts within +-50% of 2,048 or more are all at least 1,024 tokens: none reaches the
    # scheduler, so the page explains that and keeps its quiz and links
    p = dataclasses.replace(Params(), prompt_tokens=prompt, max_model_len=mml)
    refusal = mem.all_refused(p)
    assert refusal is not None and refusal.shortest_prompt >= mml
    at = run_page(PAGE, query={"mem-prompt": str(prompt), "mem-mml": str(mml)})
    assert not at.exception
    assert [w.value for w in at.warning if "refuses each of them" in w.value]
    assert at.button(key=f"{mem.PREFIX}-reset") is not None


def test_some_prompts_short_enough_still_run():
    p = dataclasses.replace(Params(), prompt_tokens=1536, max_model_len=1024)
    assert mem.all_refused(p) is None
    r = build(p)
    assert r.any_refused and r.requests == mem.BATCH + mem.INTERACTIVE - r.refused


def _widget_keys(at) -> set[str]:
    return {w.key for w in [*at.slider, *at.select_slider, *at.toggle, *at.selectbox]}


@pytest.mark.parametrize(
    ("query", "shown", "hidden"),
    [
        ({}, {"w:mem-util", "w:mem-defaults"}, {"w:mem-blocks", "w:mem-budget", "w:mem-seqs"}),
        (
            {"mem-pool": "blocks", "mem-defaults": "0"},
            {"w:mem-blocks", "w:mem-budget", "w:mem-seqs"},
            {"w:mem-util"},
        ),
    ],
)
def test_each_setting_shows_the_controls_it_uses_from_the_same_row(query, shown, hidden):
    """A control hidden by a rule (show_if) follows the control to its left in the same row:
    the pool's utilization slider or block count follows "sized from", and the limit sliders
    show only with vLLM's defaults off (a slider the run ignores is never on screen)."""
    at = run_page(PAGE, query=query)
    keys = _widget_keys(at)
    assert shown <= keys and not hidden & keys, keys
    if "w:mem-util" in shown:  # the slider drives the run: the pool follows it
        before = build(Params()).usable
        at.slider(key="w:mem-util").set_value(80).run()
        assert not at.exception
        after = build(dataclasses.replace(Params(), gpu_memory_utilization=80)).usable
        assert after < before and f"**{after:,} usable blocks**" in " ".join(
            m.value for m in at.markdown
        )


def test_a_step_without_its_tables_is_the_same_step():
    """The grid's frame words ask for each frame's readouts without the block tables (writing
    every table out for every frame was most of the figure's cost): all else is the same."""
    r = build(Params())
    for step in (1, r.first_preempt_step, r.num_steps):
        full, bare = at_step(r, step), at_step(r, step, tables=False)
        assert bare.tables == () and (full.tables or step == r.num_steps)  # the end: all freed
        assert bare == dataclasses.replace(full, tables=())


def test_a_run_without_preemptions_says_so_instead_of_counting_zeros():
    """Short requests in a large pool: no policy and no mode preempts. The page must not say
    that PRIORITY "does not spare" anyone (0 against 0) or name "step 0" as the first preemption."""
    from lessons.course import lesson as course_lesson

    text = course_lesson("memory").text_path
    quiet = dataclasses.replace(Params(), max_model_len=131072, prompt_tokens=128, output_tokens=32)
    c = comparison(quiet)
    assert c.victims_none and c.modes_none and not c.victims_no_spare and not c.modes_same_some
    said = story.text(text, "victim-result", c) + story.text(text, "async", c)
    assert "Neither policy preempts" in said and "neither mode preempts" in said
    assert "step 0" not in said and "0 times" not in said
    assert c.cache_none_twice and not c.cache_saves_some and not c.cache_same_some
    caching = " ".join(story.text(text, "caching", c).split())
    assert "neither the run with it on nor the run with it off" in caching
    assert "0 tokens" not in caching
    busy = comparison(Params())  # the opening run preempts: the counting sentences come back
    assert busy.cache_saves_some + busy.cache_same_some + busy.cache_none_twice == 1
    modes = (busy.modes_same_some, busy.modes_differ, busy.modes_differ_count)
    assert not busy.victims_none and sum(modes) == 1
    assert "Neither policy" not in story.text(text, "victim-result", busy)
    # the opening run: both modes first preempt in step 43, 6 times against 7. The page said
    # "the first time in step 43, and 7 times ... the first time in step 43"
    said = " ".join(story.text(text, "async", busy).split())
    assert busy.sync_first_preempt == busy.async_first_preempt
    assert busy.modes_differ_count and said.count(f"step {busy.sync_first_preempt}") == 1


def _says(r, name: str) -> str:
    return " ".join(story.text(TEXT, name, r).split())


def test_weights_that_do_not_fit_are_told_once_and_the_run_says_which_pool_it_uses():
    # 70B on four L4s: the note named "one L4", a pool of "0 blocks" and "what vLLM would give"
    r = build(Params(model="Llama-3.1-70B", tp=4))
    assert r.no_fit_memory and not r.pool_raised and r.pool_floor and not r.pool_vllm
    note = _says(r, "no-fit")
    assert "tensor parallel 4" in note and "one " not in note
    assert _says(r, "pool-raised") == ""
    run = _says(r, "scenario")
    assert "the smallest this workload can run in" in run and "would give" not in run
    assert r.num_gpu_blocks == mem.smallest_pool(
        mem.setup(Params(model="Llama-3.1-70B", tp=4)).workload, 8192
    )
    hand = build(Params(model="Llama-3.1-70B", tp=4, pool_from="blocks"))
    assert hand.no_fit_blocks and hand.pool_by_hand and "the pool you set" in _says(hand, "no-fit")


def test_a_pool_too_small_from_the_utilization_names_the_slider():
    r = build(Params(gpu_memory_utilization=70))
    assert r.no_fit_memory and r.util_helps
    assert "Raising `gpu_memory_utilization` (the slider above)" in _says(r, "no-fit")
    big = build(Params(model="Llama-3.1-70B", tp=4))  # 35 GB of weights per 24 GB GPU
    assert big.no_fit_memory and not big.util_helps and "Raising" not in _says(big, "no-fit")


def test_a_max_model_len_the_pool_cannot_hold_is_what_vllm_refuses_at_start():
    # vLLM 0.33 checks the usable blocks (the null block kept back), also for a pool set in
    # blocks (--num-gpu-blocks-override): v1/core/kv_cache_planning.py get_kv_cache_configs
    r = build(Params(max_model_len=131_072))
    assert r.len_refused and r.len_blocks == 131_072 // BLOCK_SIZE > r.catalog_blocks - 1
    assert r.len_pool_usable == r.catalog_blocks - 1
    note = _says(r, "len-refused")
    assert f"{r.len_blocks:,} blocks" in note and f"{r.len_pool_tokens:,} tokens" in note
    assert not build(Params()).len_refused  # 8,192 tokens: 512 blocks of 1,970
    by_hand = dict(pool_from="blocks", max_model_len=8192)
    edge = build(Params(**by_hand, num_gpu_blocks=512))  # 511 usable: one block short
    assert edge.len_refused and edge.len_pool_usable == 511 and edge.len_blocks == 512
    assert not build(Params(**by_hand, num_gpu_blocks=513)).len_refused
    assert "--num-gpu-blocks-override" in _says(edge, "len-refused")
    at = run_page(PAGE, query={"mem-mml": "131072"})
    assert not at.exception
    assert any("vLLM would refuse to start" in w.value for w in at.warning)


def test_the_pool_set_by_hand_compares_usable_blocks_with_usable_blocks():
    r = build(Params(pool_from="blocks"))
    assert f"would give it {r.catalog_usable:,} usable blocks" in _says(r, "scenario")
    assert r.catalog_usable == r.catalog_blocks - 1


def test_the_grid_between_two_sampled_frames_draws_the_steppers_step():
    # the grid showed the frame before the stepper's step, its title naming another step
    r = build(Params(prompt_tokens=512, output_tokens=512, rate=1))
    assert r.sampled
    drawn = set(r.frames.steps.tolist())
    step = next(s for s in range(r.num_steps // 2, r.num_steps) if s - 1 not in drawn)
    chart = figures.pool(r, step)
    owners = grid_owners(chart["data"][0]["z"]).ravel()[: r.grid_blocks]
    np.testing.assert_array_equal(owners, r.frames.trace.owners(step - 1)[: r.grid_blocks])
    assert chart["layout"]["title"]["text"].startswith(f"Step {step} ")
    at = chart["layout"]["sliders"][0]["active"]
    assert r.frames.steps[at] + 1 < step < r.frames.steps[at + 1] + 1  # the frame before it
    # the slider's label would name the frame before it: hidden, the title names the step
    assert chart["layout"]["sliders"][0]["currentvalue"]["visible"] is False
    framed = int(r.frames.steps[at]) + 1
    on_frame = figures.pool(r, framed)["layout"]
    assert on_frame["title"]["text"].startswith(f"Step {framed} ")
    assert on_frame["sliders"][0]["currentvalue"]["visible"] is True


def test_no_line_of_a_note_starts_as_a_markdown_list_item():
    # "tensor parallel\n1) has no room" rendered as a numbered list, losing the "1)"
    import re

    for params in (Params(gpu_memory_utilization=50), Params(model="Llama-3.1-70B", tp=4)):
        r = build(params)
        for name in ("no-fit", "victim-result", "scenario"):
            text = story.text(TEXT, name, r if name != "victim-result" else comparison(params))
            assert not re.search(r"^\s*\d+[.)]\s", text, re.MULTILINE), (name, text)


@pytest.mark.parametrize(
    "params",
    [
        Params(),  # from memory, the weights fit: vLLM's pool
        Params(pool_from="blocks"),  # the learner's block count
        Params(pool_from="blocks", num_gpu_blocks=64),  # too few: raised to the floor
        Params(model="Llama-3.1-70B", tp=4),  # from memory, the weights do not fit: the floor
        Params(model="Llama-3.1-70B", tp=4, pool_from="blocks"),
        Params(gpu_memory_utilization=70),  # from memory, too small: raised
    ],
)
def test_the_run_names_exactly_one_pool(params):
    """The scenario's three pool variants are chosen by three fields that must never hold
    together, or the text would say two pools (or none)."""
    r = build(params)
    assert r.pool_vllm + r.pool_by_hand + r.pool_floor == 1
    variants = [s for s in story.parse(TEXT) if s.name == "scenario" and s.shows(r)]
    assert len(variants) == 1


@pytest.mark.parametrize(("blocks", "columns"), [(100, 16), (300, 32), (1200, 64)])
def test_a_small_pool_is_drawn_in_enough_rows_to_read(blocks, columns):
    """100 blocks drawn 64 to a row were two thin rows with ticks at 0.5 and the x-axis title
    under the Play button: a small pool now gets shorter rows, whole-row ticks and a plot tall
    enough for the controls below it, and its cells are still the pool's blocks."""
    r = build(Params(pool_from="blocks", num_gpu_blocks=blocks, rate=4))
    n = r.grid_blocks  # the pool (100 is raised to the fewest this workload runs in)
    assert r.grid_columns == columns and blocks <= n < 2 * blocks
    chart = figures.pool(r, 1)
    z = chart["data"][0]["z"]
    rows = -(-n // columns)
    assert grid_owners(z).shape == (rows, columns)
    owners = grid_owners(z).ravel()[:n]
    np.testing.assert_array_equal(owners, r.frames.trace.owners(0)[:n])
    layout = chart["layout"]
    plot_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    assert plot_px >= figures.GRID_MIN_PX
    assert layout["yaxis"].get("dtick", 1) == 1 or rows >= 8
    assert layout["yaxis"]["range"] == [rows - 0.5, -0.5]


def _decisions(p):
    _, run = mem.traced_run(p)
    return (run.num_scheduled_tokens, run.token_req, run.token_step, run.num_preemptions)


def _same(p, q) -> bool:
    """The two runs take the same decisions: tokens per step, who sampled when, preemptions."""
    return all(np.array_equal(a, b) for a, b in zip(_decisions(p), _decisions(q), strict=True))


def test_a_faster_stream_is_said_to_change_nothing_only_where_it_does():
    """From 4 to 32 arrivals per second the grid played the same run, and nothing said why: the
    note says so exactly where every faster rate on the slider gives the same decisions."""
    rates = mem.RATES
    shown = []
    for i, rate in enumerate(rates[:-1]):
        p = Params(rate=rate)
        r = build(p)
        same = all(_same(p, Params(rate=q)) for q in rates[i + 1 :])
        if r.rate_changes_nothing:
            assert same, rate
            assert f"from {rate:g} per second up the rate changes nothing" in _says(r, "rate-same")
            assert not _same(p, Params(rate=rate, policy="priority"))  # "and so does PRIORITY"
            shown.append(rate)
        else:
            assert _says(r, "rate-same") == ""
    assert shown and min(shown) > rates[0]  # it shows, and not at every rate
    slow = rates[rates.index(min(shown)) - 1]
    assert not _same(Params(rate=slow), Params(rate=min(shown)))
    # PRIORITY lets interactive requests ahead of the batch job: never said there
    assert not build(Params(rate=min(shown), policy="priority")).rate_changes_nothing


@pytest.mark.parametrize("p", VARIANTS, ids=_ids)
def test_limits_longer_than_every_request_share_one_run(p):
    """A max_model_len longer than every request changes no decision, so such limits share
    one run (lesson.runs_as): the shared run must be the run made at the limit itself, step for
    step, and a limit a request reaches must get a run of its own."""
    longest = mem.longest_sequence(p)
    longer = [m for m in mem.MAX_MODEL_LENS if m > longest]
    assert len(longer) >= 2
    for limit in longer[:2]:
        q = dataclasses.replace(p, max_model_len=limit)
        assert mem.runs_as(q).max_model_len == mem.MAX_MODEL_LENS[-1]
        _, shared = mem.traced_run(q)
        s, own = mem._traced_run.__wrapped__(q)  # made at the limit itself, not cached
        assert s.config.max_model_len == limit != shared.config.max_model_len
        for name in ("num_scheduled_tokens", "kv_blocks_used", "num_preempted", "step_ms"):
            np.testing.assert_array_equal(getattr(shared, name), getattr(own, name), name)
        np.testing.assert_array_equal(shared.first_token_s, own.first_token_s)
        r = build(q)
        assert r.max_model_len == limit and r.len_changes_nothing
        said = " ".join(story.text(TEXT, "paging", r).split())
        assert f"The longest request in this run is {longest:,} tokens" in said
    reached = [m for m in mem.MAX_MODEL_LENS if m <= longest]
    for limit in reached:
        q = dataclasses.replace(p, max_model_len=limit)
        assert mem.runs_as(q) == q
        if mem.all_refused(q) is None:
            r = build(q)
            assert not r.len_changes_nothing
            assert "The longest request" not in story.text(TEXT, "paging", r)


# -- issue 36: diagram first ----------------------------------------------------------------------
def _texts(at) -> list[str]:
    return [m.value for m in at.markdown]


def _index(texts: list[str], part: str) -> int:
    return next(i for i, t in enumerate(texts) if part in t)


def test_the_page_opens_on_its_key_sentence_the_pool_slider_and_the_grid():
    """Issue 36: the title, one key sentence and the cast line, the pool's size beside them,
    then the grid; the predictions right under the grid's stepper, the other controls below."""
    at = run_page(PAGE)
    texts = _texts(at)
    intro, cast = story.text(TEXT, "intro"), story.text(TEXT, "cast")
    assert intro.count(". ") == 0 and intro.strip().endswith(".")  # one sentence
    assert any(c.value == cast for c in at.caption) and "L4" in cast and "H100" in cast
    columns = list(at.main.columns)
    i = next(i for i, c in enumerate(columns) if intro in [m.value for m in c.markdown])
    assert "w:mem-util" in {s.key for s in columns[i + 1].slider}  # beside the key sentence
    assert _index(texts, intro) < _index(texts, "One cell per block")
    predict_at = _index(texts, "Predict, then press Play")
    assert _index(texts, "One cell per block") < predict_at < _index(texts, "Change the run")


def test_questions_sit_under_the_chart_that_answers_them():
    at = run_page(PAGE)
    texts = _texts(at)
    bank = lesson("memory").bank()
    number = {q.id: i for i, q in enumerate(bank.questions, start=1)}
    lead, wait = _index(texts, "### Why paging"), _index(texts, "The victims, their price")
    for qid in ("fragmentation", "reservation", "max_model_len_cap"):
        assert lead < _index(texts, f"**{number[qid]}.** ") < wait, qid
    past_predictions(at)
    texts = _texts(at)
    classes, price = _index(texts, "### The victim"), _index(texts, "### The price")
    fixes = _index(texts, "### The fixes")
    assert classes < _index(texts, f"**{number['priority_admit']}.** ") < price
    for qid in ("caching_recompute", "swap_v1"):
        assert price < _index(texts, f"**{number[qid]}.** ") < fixes, qid
    keys = [r.key for r in at.radio if r.key]
    for q in bank.questions:  # each asked once: the predictions above, the rest by their charts
        where = "predict" if q.computed else "quiz"
        assert keys.count(f"{where}-memory-{q.id}".replace("_", "-")) == 1, q.id


def test_go_deeper_holds_the_asides_and_says_them_truly(default):
    """The asides moved into "Go deeper" are drawn (AppTest sees folded content), and the
    issue-36 truth fixes read as they should."""
    at = run_page(PAGE, query={"mem-skip": "1"})
    shown = "\n".join(_texts(at))
    labels = [e.label for e in at.expander]
    for key, topic in story.labels(TEXT, "deeper").items():
        if key != "rate" or default.rate_changes_nothing:
            assert any(topic in label for label in labels), key
    c = comparison(Params())
    for name, r in (("swap", default), ("counting", default), ("async", c), ("paging", default)):
        assert story.text(TEXT, name, r) in shown, name
    swap = " ".join(story.text(TEXT, "swap", default).split())
    assert "By default the v1 engine recomputes" in swap and "--kv-offloading-size" in swap
    assert "only recomputes" not in swap
    counting = " ".join(story.text(TEXT, "counting", default).split())
    assert "once the step's output is processed" in counting
    fixes = " ".join(story.text(TEXT, "fixes-after", c).split())
    assert "new or readmitted after a preemption" in fixes and "with nothing running" in fixes
    victim = " ".join(story.text(TEXT, "victim", c).split())
    assert "admitted or readmitted last" in victim and "newest" not in victim
    swap_q = lesson("memory").bank().question("swap_v1")
    assert "By default" in swap_q.explanation and "--kv-offloading-size" in swap_q.explanation


@pytest.mark.parametrize("p", VARIANTS[:3], ids=_ids)
def test_running_is_counted_once_the_steps_output_is_processed(p):
    """vLLM's running count is made after the step's output is processed: a request that
    finished in the step no longer runs. In a synchronous run that is the running list
    schedule() left less the step's finishes."""
    r = build(p)
    _, run = mem.traced_run(p)
    fr = r.frames
    for k, d in enumerate(run.detail):
        gone = set(fr.finished[k])
        assert fr.running[k] == len([q for q in d.running.tolist() if q not in gone])
    if not p.async_scheduling:
        np.testing.assert_array_equal(fr.running, run.num_running - run.num_finished)
    assert (fr.running <= np.asarray(run.num_running)).all()
    assert (fr.running < np.asarray(run.num_running)).any()  # some step finishes a request
