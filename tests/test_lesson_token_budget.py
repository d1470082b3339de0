"""Lesson "One token budget": its Readout by field, the page's controls, its opening numbers
(vLLM's recording), the shared budget-fill timeline, the quiz and the exercises.

Why: the lesson claims numbers (chunks of 2,040, 2,040 and 16; decoding from the 4th step) that
vLLM's real scheduler recorded in tests/data/fig82.json, and claims directions (a bigger budget
makes bigger chunks and fewer steps, running requests and draft tokens leave less for the
prompt, a cached prefix leaves less to compute); these tests hold the Readout to both, and the
page to the Readout: every control moves the fields and the chart the way sim says.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from lessons.course import lesson
from lessons.kit import story
from lessons.kit.controls import declared
from lessons.kit.timeline import DECODE, PROMPT, classify
from lessons.token_budget import exercise, figures
from lessons.token_budget.arithmetic import spec_arithmetic
from lessons.token_budget.lesson import (
    LONG_OUTPUT,
    PREFIX,
    USER_PROMPT,
    Params,
    build,
    setting,
    simulate,
)
from sim.hardware import default_batch_limits, get_gpu, gpu_keys
from sim.kv import cdiv
from sim.scenarios import stream_then_cached_prompt, stream_then_prompt
from sim.scheduler import run_steps
from tests.apptest_util import assert_quiz_awards_xp_once, charts, run_page, trace_values, walk
from tests.scenarios import load_recording

PAGE = "views/lesson_token_budget.py"
TEXT = lesson("token_budget").text_path


def _chart(at, title_start: str) -> dict:
    for chart in charts(at):
        if chart["layout"]["title"]["text"].startswith(title_start):
            return chart
    raise AssertionError(f"no chart titled {title_start!r}")


def _has_chart(at, title_start: str) -> bool:
    return any(c["layout"]["title"]["text"].startswith(title_start) for c in charts(at))


def _trace(chart: dict, name_start: str, axis: str = "y") -> list:
    for trace, values in zip(chart["data"], trace_values(chart, axis), strict=True):
        if str(trace.get("name", "")).startswith(name_start):
            return values
    raise AssertionError(f"no trace {name_start!r}")


def _timeline(at) -> tuple[list[str], list[int], list[int], int]:
    """(row labels, decode tokens, prompt tokens, budget) of the page's Fig. 8.2 chart: one row
    per step counted from the prompt's arrival (decode counts are the bars' labels, since the
    bars are drawn wider than scale; prompt chunks are to scale)."""
    chart = _chart(at, "One ")
    decode = next(t for t in chart["data"] if t["name"].startswith("decode tokens"))
    budget = next(t for t in chart["data"] if str(t.get("name", "")).startswith("token budget"))
    return (
        list(chart["layout"]["yaxis"]["ticktext"]),
        [int(t.replace(",", "")) if t else 0 for t in decode["text"]],
        [int(v) for v in _trace(chart, "prompt chunks", "x")],
        int(budget["customdata"][0]),
    )


def _metrics(at) -> list[tuple[str, str]]:
    return [(m.label, m.value) for m in at.metric if m.label != "XP"]


def _shows(at, r) -> None:
    """The page shows Readout `r`: its metric row and its chart's first and last chunks."""
    assert _metrics(at) == story.metrics(TEXT, "metrics", r)
    rows, _, prompt, budget = _timeline(at)
    assert budget == r.budget
    chunks = [v for v in prompt if v]
    assert chunks[0] == r.first_chunk and chunks[-1] == r.last_chunk
    assert len(chunks) == r.num_chunks or "⋯" in rows


_walk = walk  # tests/apptest_util.py


def _order(at) -> list[str]:
    """The page's charts (by title) and quiz questions (by key), in the order drawn."""
    out = []
    for node in _walk(at.main):
        if node.type == "plotly_chart":
            import json

            out.append("chart:" + json.loads(node.proto.spec)["layout"]["title"]["text"])
        elif node.type == "radio" and str(node.key).startswith("quiz-"):
            out.append(str(node.key))
    return out


def _expander_text(at, topic: str) -> str:
    """The markdown inside the folded section whose label holds `topic`."""
    (box,) = [e for e in at.expander if topic in e.label]
    return " ".join(" ".join(m.value.split()) for m in box.markdown)


def _warnings(at) -> str:
    return " ".join(w.value for w in at.warning)


@pytest.fixture(scope="module")
def opening():
    return run_page(PAGE)


# -- the seed: vLLM's Fig. 8.2 ---------------------------------------------------------------------


def test_the_opening_readout_is_the_recording():
    """Fig. 8.2: chunks 2,040 / 2,040 / 16 in the steps vLLM recorded, decoding from step 6."""
    rec = load_recording("fig82")
    recorded = {s["step"]: s["num_scheduled_tokens"].get("long", 0) for s in rec["steps"]}
    r = build(Params())
    assert (r.gpu, r.budget, r.running, r.prompt) == ("L4", 2048, 8, 4096)
    tokens = r.fill.request_tokens(r.long, PROMPT)
    steps = np.flatnonzero(tokens) + 1
    assert tokens[steps - 1].tolist() == [2040, 2040, 16]
    assert all(tokens[s - 1] == recorded[s] for s in steps)
    assert all(r.fill.decode[s - 1] == 8 for s in steps)
    first_decode = rec["per_request"]["long"]["first_token_step"] + 1
    assert r.first_decode_step == first_decode == 6
    assert (r.first_chunk, r.last_chunk, r.num_chunks) == (2040, 16, 3)
    assert (r.arrival, r.first_chunk_step, r.first_token_step) == (3, 3, 5)
    assert (r.decode_ordinal, r.decode_ordinal_text) == (4, "4th")
    assert r.chunk_list == "2,040, 2,040 and 16"
    assert (r.running_at_arrival, r.left_after_decodes) == (8, 2040)
    assert round(r.ttft_ms) == 770
    assert r.runs and not (r.bad_limits or r.no_weights or r.too_long or r.no_room or r.capped)


def test_the_page_opens_at_the_recording(opening):
    r = build(Params())
    _shows(opening, r)
    rows, decode, prompt, _ = _timeline(opening)
    assert [p for p in prompt if p] == [2040, 2040, 16]
    assert all(d == 8 for d, p in zip(decode, prompt, strict=True) if p)
    assert dict(_metrics(opening))["First chunk"] == "2,040 tokens"
    assert not opening.warning and not opening.exception


def test_the_page_says_it_replays_the_synchronous_scheduler(opening):
    """The recording is vLLM's synchronous Scheduler, and so is every run the page makes."""
    r = build(Params())
    assert r.run.config.async_scheduling is False
    told = " ".join(story.text(TEXT, "mode", r).split())
    assert told.startswith("**Scheduling mode: synchronous**")
    assert "Async scheduling, vLLM's default in deployments, would not change" in told
    page = " ".join(" ".join(m.value for m in opening.markdown).split())
    assert told in page


OWN = {"vllm_defaults": False}


@pytest.mark.parametrize(
    "p",
    [
        Params(),
        Params(decodes=0),
        Params(decodes=64, prompt=16384),
        Params(cached_pct=50),
        Params(gpu="H100-SXM"),
        Params(**OWN, max_num_batched_tokens=256, max_num_seqs=4),
        Params(**OWN, max_num_batched_tokens=512, max_num_seqs=9, prompt=16384, cached_pct=25),
    ],
)
def test_async_scheduling_would_schedule_the_same_tokens_in_every_step(p):
    """What the mode paragraph claims, run: the same scene with vLLM's AsyncScheduler
    schedules the same tokens in every step (the long prompt's chunks included). It only adds
    a last step that processes the last output and schedules nothing, and every step with a
    pass is shorter (the CPU's part hides behind the GPU)."""
    sync = simulate(setting(p))
    asyn = simulate(replace(setting(p), async_scheduling=True))
    assert asyn.run.config.async_scheduling and not sync.run.config.async_scheduling
    n = sync.run.num_steps
    assert asyn.run.num_steps == n + 1 and asyn.run.num_scheduled_tokens[n] == 0
    assert (asyn.run.num_scheduled_tokens[:n] == sync.run.num_scheduled_tokens).all()
    long = sync.scenario.long_index
    chunks = sync.fill.request_tokens(long, PROMPT)
    assert (asyn.fill.request_tokens(long, PROMPT)[:n] == chunks).all()
    assert (asyn.run.step_ms[:n] < sync.run.step_ms).all()
    assert asyn.ttft_ms < sync.ttft_ms


def test_the_opening_limits_are_vllms_for_the_l4(opening):
    assert opening.toggle(key="w:tb-defaults").value is True
    limits = default_batch_limits("L4")
    r = build(Params())
    assert (r.budget, r.max_num_seqs) == (limits["max_num_batched_tokens"], limits["max_num_seqs"])
    assert _timeline(opening)[3] == limits["max_num_batched_tokens"] == 2048
    note = " ".join(c.value for c in opening.caption)
    assert "**2,048**" in note and "**256**" in note


def test_fig_82_counts_steps_from_the_arrival_and_widens_the_decodes(opening):
    """Issue 36: as the seed draws Fig. 8.2, steps 1, 2, 3 from the prompt's arrival (not the
    engine's 3 to 5), the decode tokens widened (with a note), the chunks and "decode starts in
    step 4" on the chart, all from the replay."""
    r = build(Params())
    rows, decode, prompt, _ = _timeline(opening)
    ordinals = range(1, r.decode_ordinal + 1)
    assert rows == [f"step {n}" for n in ordinals] == ["step 1", "step 2", "step 3", "step 4"]
    assert prompt == [2040, 2040, 16, 0] and decode == [8, 8, 8, 9]
    chart = _chart(opening, "One ")
    bars = next(t for t in chart["data"] if t["name"].startswith("decode tokens"))
    widths = trace_values({"data": [bars]}, "x")[0]
    assert all(w > d for w, d in zip(widths, decode, strict=True))  # drawn wider than scale
    assert "wider than scale" in chart["layout"]["xaxis"]["title"]["text"]
    texts = next(t for t in chart["data"] if t["name"] == "prompt chunks")["text"]
    assert texts[0] == "2,040 prompt tokens of the new request"
    assert texts[2] == f"the last 16 prompt tokens, decode starts in step {r.decode_ordinal}"
    assert (r.first_token_ordinal, r.decode_ordinal) == (3, 4)
    said = " ".join(story.text(TEXT, "reading-chunks", r).split())
    assert "Step 3 reads the last" in said and "from step **4**" in said
    slider = chart["layout"]["sliders"][0]  # Play walks the rows, each row always in view
    assert [step["label"] for step in slider["steps"]] == rows and slider["active"] == 0
    assert all(len(f["data"]) == 1 for f in chart["frames"])  # only the outline moves
    wide = build(Params(decodes=200))  # 200 decode tokens show at scale: no note
    fig = figures.timeline(wide)
    assert "to scale" in fig["layout"]["xaxis"]["title"]["text"]
    assert "wider" not in fig["layout"]["xaxis"]["title"]["text"]


def test_the_cast_line_says_why_the_lesson_opens_on_the_l4(opening):
    """One cast (issue 36): the lesson opens on the L4, not the course's H100-SXM, and says why
    in one line, from the defaults it quotes (the H100's budget would not chunk this prompt)."""
    r = build(Params())
    assert (r.cast_gpu, r.course_gpu) == ("L4", "H100-SXM") == (Params().gpu, "H100-SXM")
    assert r.cast_budget == default_batch_limits("L4")["max_num_batched_tokens"] == r.budget
    assert r.course_budget == default_batch_limits("H100-SXM")["max_num_batched_tokens"]
    assert r.course_budget >= r.prompt + r.running > r.cast_budget  # whole there, chunked here
    line = story.text(TEXT, "cast", r)
    assert len(line.split(". ")) == 1 and "synchronous" in line
    assert line in [c.value for c in opening.caption]


def test_questions_sit_next_to_their_charts(opening):
    """The first-token question right under Fig. 8.2, the others folded by the chart that
    answers them; none is left for the practice at the end of the page."""
    order = _order(opening)
    fig = next(i for i, o in enumerate(order) if o.startswith("chart:One "))
    spec = next(i for i, o in enumerate(order) if o.startswith("chart:Budget arithmetic"))
    defaults = next(i for i, o in enumerate(order) if o.startswith("chart:vLLM's default"))
    key = {q: f"quiz-token-budget-{q.replace('_', '-')}" for q in ("first_token", "spec")}
    assert order[fig + 1] == key["first_token"]
    assert order.index(key["spec"]) == spec + 1
    for q in ("default-l4", "seq-cap"):
        assert order.index(f"quiz-token-budget-{q}") > defaults
    bank = {q.id for q in lesson("token_budget").bank().questions}
    asked = {o.removeprefix("quiz-token-budget-") for o in order if o.startswith("quiz-")}
    assert asked == {q.replace("_", "-") for q in bank}


def test_go_deeper_holds_what_left_the_main_flow(opening):
    r = build(Params())
    counting = _expander_text(opening, "what the scheduler counts")
    assert "two counters per request" in counting
    assert "**Scheduling mode: synchronous**" in _expander_text(opening, "async scheduling")
    assert "never covers the prompt's very last token" in _expander_text(opening, "prefix cache")
    rule = _expander_text(opening, "default budget")
    assert f"**{r.tier_mid_budget:,} tokens**" in rule and r.tier_mid_gpus in rule


def test_speculative_decoding_names_the_methods_that_change_only_the_count(opening):
    """Issue 36, 3: "one number" holds for EAGLE, MTP and n-gram; draft models take budget
    slots, lookahead slots fill blocks faster, rejected drafts spend budget."""
    r = build(Params())
    said = " ".join(story.text(TEXT, "spec", r).split())
    assert "With EAGLE, MTP or n-gram drafts that changes one number" in said
    deeper = _expander_text(opening, "speculative methods")
    for claim in ("separate draft model", "Lookahead KV slots", "Rejected drafts"):
        assert claim in deeper
    (seq_cap,) = [q for q in lesson("token_budget").bank().questions if q.id == "seq_cap"]
    assert not any("newest" in c for c in seq_cap.choices)
    assert "admitted or readmitted last" in seq_cap.choices[2] and seq_cap.answer == 1


# -- the clock and the scenario come from sim ------------------------------------------------------


@pytest.mark.parametrize(
    "p",
    [
        Params(),
        Params(decodes=48, prompt=16384, cached_pct=50),
        Params(vllm_defaults=False, max_num_batched_tokens=512, decodes=100, prompt=3072),
    ],
)
def test_the_timed_run_schedules_like_the_step_replay(p):
    """The clock does not change the schedule: the timed run (sim.timed) and a step replay of the
    same scenario (sim.scenarios) schedule the same tokens; TTFT is sim.metrics' (the steps from
    the arrival to the first token)."""
    s = setting(p)
    replay = simulate(s)
    sc = replay.scenario
    steps = run_steps(replay.run.config, sc.workload())
    assert np.array_equal(steps.num_scheduled_tokens, replay.run.num_scheduled_tokens)
    first = int(replay.run.first_token_step[sc.long_index])
    window = replay.run.step_ms[sc.arrival() - 1 : first]
    assert replay.ttft_ms == pytest.approx(float(window.sum()), abs=1e-3)


def test_without_a_cached_prefix_the_workload_is_stream_then_prompt():
    a = stream_then_cached_prompt(8, USER_PROMPT, 4096, 2048, long_output_tokens=LONG_OUTPUT)
    b = stream_then_prompt(8, USER_PROMPT, 4096, 2048, long_output_tokens=LONG_OUTPUT)
    wa, wb = a.workload(), b.workload()
    for name in ("prompt_tokens", "output_tokens", "arrival_step", "prefix_id", "prefix_tokens"):
        assert np.array_equal(getattr(wa, name), getattr(wb, name)), name
    assert a.long_index == b.long_index == 8


def test_block_counts_follow_the_config():
    r = build(Params(prompt=16384, cached_pct=75))
    assert r.block_size == r.run.config.block_size
    assert r.hit_tokens % r.block_size == 0 and 0 < r.hit_tokens <= r.cached
    assert r.pool_blocks == r.run.config.kv_blocks_usable


# -- each control moves the Readout and the chart --------------------------------------------------


def test_the_gpu_picks_its_defaults_and_moves_the_highlight():
    at = run_page(PAGE)
    at.selectbox(key="w:gpu").set_value("H100-SXM").run()
    assert not at.exception
    r = build(Params(gpu="H100-SXM"))
    assert r.budget == default_batch_limits("H100-SXM")["max_num_batched_tokens"] == 8192
    _shows(at, r)
    assert r.num_chunks == 1 and r.first_chunk == 4096  # the whole prompt fits next to 8 decodes
    bars = _chart(at, "vLLM's default token budget")["data"][0]["marker"]["color"]
    keys = list(r.defaults_keys)
    assert len(set(bars)) == 2 and bars.count(bars[keys.index("H100-SXM")]) == 1


def test_a_model_that_does_not_fit_says_so():
    at = run_page(PAGE)
    at.selectbox(key="w:model").set_value("Llama-3.1-70B").run()
    assert not at.exception
    r = build(Params(model="Llama-3.1-70B"))
    assert r.no_weights and not r.runs
    assert story.text(TEXT, "problem-no-weights", r) in _warnings(at)
    assert not _has_chart(at, "One ") and not _metrics(at)
    assert _has_chart(at, "vLLM's default token budget")  # the GPU's defaults still show


def test_fp8_and_tensor_parallel_shorten_the_wait():
    base = build(Params())
    fp8, tp2 = build(Params(dtype="fp8")), build(Params(tp=2))
    assert fp8.ttft_ms < base.ttft_ms and tp2.ttft_ms < base.ttft_ms
    assert fp8.pool_blocks > base.pool_blocks and tp2.pool_blocks > base.pool_blocks
    assert fp8.num_chunks == tp2.num_chunks == base.num_chunks  # the budget, not the GPU, cuts
    at = run_page(PAGE)
    at.selectbox(key="w:dtype").set_value("fp8").run()
    assert dict(_metrics(at))["Time to first token"] == f"{fp8.ttft_ms:,.0f} ms"
    at.selectbox(key="w:tp").set_value(2).run()
    assert not at.exception
    assert (
        dict(_metrics(at))["Time to first token"]
        == f"{build(Params(dtype='fp8', tp=2)).ttft_ms:,.0f} ms"
    )


def test_fp8_on_a_gpu_without_it_falls_back_to_bf16():
    r = build(Params(gpu="A10G", dtype="fp8"))
    assert r.dtype == "BF16" and r.ttft_ms == build(Params(gpu="A10G")).ttft_ms


def test_a_bigger_budget_gives_bigger_chunks_and_fewer_steps():
    at = run_page(PAGE, query={"tb-defaults": "0", "tb-budget": "1024"})
    assert at.select_slider(key="w:tb-budget").value == 1024
    small = build(Params(vllm_defaults=False, max_num_batched_tokens=1024))
    _shows(at, small)
    at.select_slider(key="w:tb-budget").set_value(4096).run()
    assert not at.exception
    big = build(Params(vllm_defaults=False, max_num_batched_tokens=4096))
    _shows(at, big)
    assert big.first_chunk > small.first_chunk and big.num_chunks < small.num_chunks
    assert small.first_chunk == 1024 - 8 and small.num_chunks == cdiv(4096, 1016)


def test_the_sliders_hide_with_the_defaults():
    at = run_page(PAGE)
    assert not [s for s in at.select_slider if s.key == "w:tb-budget"]
    at.toggle(key="w:tb-defaults").set_value(False).run()
    assert at.select_slider(key="w:tb-budget").value == 2048
    assert at.slider(key="w:tb-seqs").value == 256
    assert "Switch off" not in " ".join(c.value for c in at.caption)


def test_max_num_seqs_caps_the_running_requests():
    at = run_page(PAGE, query={"tb-defaults": "0"})
    at.slider(key="w:tb-seqs").set_value(4).run()
    r = build(Params(vllm_defaults=False, max_num_seqs=4))
    assert r.capped and r.running == 3 and r.first_chunk == 2048 - 3
    _shows(at, r)
    assert story.text(TEXT, "capped", r) in _warnings(at)


def test_a_budget_below_max_num_seqs_is_refused_without_a_traceback():
    at = run_page(PAGE, query={"tb-defaults": "0", "tb-budget": "256"})
    at.slider(key="w:tb-seqs").set_value(1024).run()
    assert not at.exception
    r = build(Params(vllm_defaults=False, max_num_batched_tokens=256, max_num_seqs=1024))
    assert r.bad_limits and not r.runs
    assert story.text(TEXT, "bad-limits", r) in _warnings(at)
    assert not _has_chart(at, "One ") and not _has_chart(at, "Budget arithmetic")


def test_more_running_requests_leave_less_for_the_prompt():
    at = run_page(PAGE, query={"tb-decodes": "48"})
    assert at.slider(key="w:tb-decodes").value == 48
    _shows(at, build(Params(decodes=48)))
    assert build(Params(decodes=48)).first_chunk == 2000
    at.slider(key="w:tb-decodes").set_value(200).run()
    r = build(Params(decodes=200))
    _shows(at, r)
    assert r.first_chunk == 1848 and r.running_at_arrival == 200
    assert at.query_params["tb-decodes"] == "200"  # the link reproduces the page


def test_a_longer_prompt_needs_more_steps_and_a_cached_prefix_fewer():
    at = run_page(PAGE, query={"tb-prompt": "16384"})
    long = build(Params(prompt=16384))
    _shows(at, long)
    assert long.num_chunks == cdiv(16384, 2040) and long.cached_none
    at.select_slider(key="w:tb-cached").set_value(75).run()
    cached = build(Params(prompt=16384, cached_pct=75))
    _shows(at, cached)
    assert cached.cached_some and cached.hit_tokens == 12288  # 75 % of the prompt, in blocks
    assert cached.needed == 16384 - 12288 and cached.num_chunks < long.num_chunks
    assert cached.run.config.enable_prefix_caching and not long.run.config.enable_prefix_caching


def test_prompts_that_cannot_run_say_why():
    for prompt, flag in ((131072, "too_long"), (65536, "no_room")):
        at = run_page(PAGE, query={"tb-prompt": str(prompt)})
        r = build(Params(prompt=prompt))
        assert getattr(r, flag) and not r.runs
        assert story.text(TEXT, f"problem-{flag.replace('_', '-')}", r) in _warnings(at)
        assert not _has_chart(at, "One ")
    r = build(Params(prompt=65536))
    assert cdiv(65536 + LONG_OUTPUT, r.block_size) > r.pool_blocks


def test_draft_tokens_shrink_the_chunk():
    at = run_page(PAGE)
    chunks = _trace(_chart(at, "Budget arithmetic"), "left for the prompt")
    assert chunks[0] == build(Params()).first_chunk == 2040  # k = 0: the replay's own chunk
    assert all(a > b for a, b in zip(chunks, chunks[1:], strict=False))
    at.slider(key="w:tb-k").set_value(4).run()
    r = build(Params(k=4))
    assert (r.spec_decode, r.spec_chunk) == (40, 2008)  # 8 requests x 5 tokens; 2,048 - 40
    assert r.spec_same_steps and not (r.spec_k0 or r.spec_more_steps)
    assert story.text(TEXT, "spec-numbers", r) in " ".join(m.value for m in at.markdown)
    assert at.query_params["tb-k"] == "4"
    widths = _chart(at, "Budget arithmetic")["data"][0]["marker"]["line"]["width"]
    assert widths.index(max(widths)) == 4
    assert build(Params(k=0)).spec_k0
    assert build(Params(decodes=200, k=5)).spec_more_steps


def test_reset_forgets_the_lessons_values():
    at = run_page(PAGE, query={"tb-decodes": "48"})
    at.slider(key="w:tb-k").set_value(5).run()
    at.button(key="tb-reset").click().run()
    assert not at.exception
    assert at.slider(key="w:tb-decodes").value == Params().decodes
    assert at.slider(key="w:tb-k").value == Params().k
    assert not [k for k in at.query_params if str(k).startswith(f"{PREFIX}-")]


def test_every_control_at_its_extremes_runs_clean():
    """Each control to its minimum and its maximum and back, one after the other, in one
    session (with the limits' sliders shown)."""
    at = run_page(PAGE, query={"tb-defaults": "0"})
    for d in declared(Params):
        key = f"w:{d.url_key(PREFIX)}"
        back = False if d.name == "vllm_defaults" else d.default
        for value in (d.spec.lowest(), d.spec.highest(), back):
            widgets = [w for w in getattr(at, _kind(d.spec)) if w.key == key]
            assert widgets, d.name
            widgets[0].set_value(value).run()
            assert not at.exception, (d.name, value, [e.value for e in at.exception])


def _kind(spec) -> str:
    from lessons.kit.controls import Choice, Integer, Steps, Toggle

    kinds = {Choice: "selectbox", Steps: "select_slider", Integer: "slider", Toggle: "toggle"}
    return kinds[type(spec)]


# -- the defaults by GPU ---------------------------------------------------------------------------


def test_the_defaults_chart_follows_the_rule_for_every_gpu(opening):
    chart = _chart(opening, "vLLM's default token budget")
    keys = _trace(chart, "default max_num_batched_tokens", "x")
    budgets = _trace(chart, "default max_num_batched_tokens")
    assert sorted(keys) == sorted(gpu_keys())
    for key, budget in zip(keys, budgets, strict=True):
        mem = get_gpu(key).cuda_memory_gib
        expected = 16384 if mem >= 160 else 8192 if mem >= 70 and "A100" not in key else 2048
        assert budget == expected, key
    r = build(Params())
    assert (r.tier_small_budget, r.tier_mid_budget, r.tier_large_budget) == (2048, 8192, 16384)
    assert "L4" in r.tier_small_gpus and "H100-SXM" in r.tier_mid_gpus


# -- quiz and exercises ----------------------------------------------------------------------------


def test_quiz_grades_and_awards_xp_once():
    assert len(lesson("token_budget").bank().questions) >= 6
    at = assert_quiz_awards_xp_once(PAGE, "token_budget", "running_chunk_first")
    assert not at.exception


@pytest.mark.parametrize("seed", range(20))
def test_exercises_match_the_budget_rule_and_the_prefix_cache(seed):
    chunk = exercise.first_chunk(seed)
    p = chunk.params
    assert chunk.answer == p["budget"] - p["decodes"]
    assert f"**{int(chunk.answer):,} token" in chunk.solution
    cached = exercise.cached_prefix(seed)
    q = cached.params
    # Whole 16-token blocks of the shared part, never the prompt's last token (SCHEDULER.md b5).
    hit = min(q["cached"] // 16, (q["prompt"] - 1) // 16) * 16
    r = build(exercise.cached_params(seed))
    assert cached.answer == q["prompt"] - hit == r.needed == r.prompt - r.hit_tokens
    assert r.block_size == 16 and r.cached == q["cached"] > 0
    assert f"**{int(cached.answer):,} token" in cached.solution
    assert f"{hit // 16:,} blocks or {hit:,} tokens" in cached.solution
    assert not cached.is_correct(cached.answer + 1) and not cached.is_correct(q["prompt"])
    if seed == 0:
        assert (chunk.answer, cached.answer) == (2040, 16)


def test_the_text_says_prefix_caching_is_vllms_default():
    r = build(Params())
    assert r.cached_none
    plain = " ".join(story.text(TEXT, "cached-none", r).split())
    assert "Prefix caching is on by default in vLLM" in plain
    some = build(Params(cached_pct=50))
    told = " ".join(story.text(TEXT, "cached-some", some).split())
    assert "as it is by default in vLLM" in told and f"**{some.hit_tokens:,}**" in told


# -- the speculative arithmetic and the timeline ---------------------------------------------------


@pytest.mark.parametrize(
    "p",
    [
        Params(),
        Params(decodes=48, prompt=16384),
        Params(vllm_defaults=False, max_num_batched_tokens=512, decodes=100, prompt=3072),
        Params(
            gpu="H100-SXM",
            vllm_defaults=False,
            max_num_batched_tokens=8192,
            max_num_seqs=1024,
            decodes=200,
        ),
        Params(decodes=48, cached_pct=50),
        Params(prompt=16384, cached_pct=75),
    ],
)
def test_spec_arithmetic_at_k0_is_the_replay(p):
    r = build(replace(p, k=0))
    assert (r.plain_chunk, r.plain_steps) == (r.first_chunk, r.num_chunks)
    a = spec_arithmetic(r.budget, r.running, r.needed)
    assert a["chunk"][0] == r.first_chunk and a["steps"][0] == r.num_chunks


def test_the_timeline_classifies_every_scheduled_token():
    r = build(Params(cached_pct=50, decodes=20))
    fill = classify(r.run)
    assert (fill.used == r.run.num_scheduled_tokens).all()
    # The long request is prompt until it samples, then decode.
    kinds = [kd for items in fill.items for q, _, kd in items if q == r.long]
    first_decode = kinds.index(DECODE)
    assert set(kinds[:first_decode]) == {PROMPT} and set(kinds[first_decode:]) == {DECODE}


def test_long_prompts_skip_the_middle_rows_and_say_so():
    """A prompt of hundreds of chunks draws its first two steps, a skip row and its last three
    (the last chunk and the first decode), numbered from the arrival."""
    p = Params(gpu="H100-SXM", vllm_defaults=False, max_num_batched_tokens=256, prompt=65536)
    r = build(p)
    assert r.num_chunks == cdiv(65536, 256 - 8)
    fig = figures.timeline(r)
    ticks = fig["layout"]["yaxis"]["ticktext"]
    n = r.decode_ordinal
    assert ticks == ["step 1", "step 2", "⋯", f"step {n - 2}", f"step {n - 1}", f"step {n}"]
    chunks = trace_values(fig, "x")[1]
    assert chunks[0] == r.first_chunk and chunks[-2] == r.last_chunk and chunks[-1] == 0
    assert len(fig["frames"]) == len(ticks) - 1  # Play walks the drawn steps, not the skip


def test_the_chart_above_the_controls_shows_what_they_show():
    """Fig. 8.2 is drawn above the deployment controls, from the values they open at; an FP8
    link on a GPU without FP8 (the control falls back to BF16) still draws the BF16 run."""
    at = run_page(PAGE, query={"gpu": "A10G", "dtype": "fp8", "tb-decodes": "48"})
    assert not at.exception
    assert at.selectbox(key="w:dtype").value == "bf16"
    _shows(at, build(Params(gpu="A10G", decodes=48)))
