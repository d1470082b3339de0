"""Sentences a walk through the first six lessons found false at some settings, each now said
only where the run's numbers make it true (one test per claim, read against the numbers).

Why: a claim that is true at the opening settings and false at another is the defect learners
find by moving a slider; each test below moves it there."""

from __future__ import annotations

import dataclasses

from lessons.course import lesson
from lessons.kit import story


def _build(lesson_id: str, **change):
    module = __import__(f"lessons.{lesson_id}.lesson", fromlist=["build", "Params"])
    return module.build(dataclasses.replace(module.Params(), **change))


def _says(lesson_id: str, r, name: str) -> str:
    return " ".join(story.text(lesson(lesson_id).text_path, name, r).split())


def test_step_loop_calls_the_cache_tiny_only_where_vllms_would_be_larger():
    r = _build("step_loop")
    assert (
        r.pool_tiny
        and r.real_pool > r.blocks
        and "tiny on purpose" in _says("step_loop", r, "pool-note")
    )
    # On the L4 (24 GB) a 32,768-token budget's activations leave too little for the cache.
    big = dict(gpu="L4", vllm_defaults=False, max_num_batched_tokens=32768, max_num_seqs=2)
    big["blocks"] = 160
    small = _build("step_loop", **big)
    assert small.real_pool - 1 < small.len_blocks == 8192 // 16  # vLLM's start-up check
    note = _says("step_loop", small, "pool-note")
    assert small.pool_real_refused and "tiny" not in note and "refuse to start" in note
    assert f"{small.real_pool:,} blocks" in note


def test_step_loop_says_why_a_smaller_pool_preempts_nothing():
    r = _build("step_loop", blocks=160)
    assert r.preemptions == 0 and r.held_back and r.long_start > 3 + 5
    said = _says("step_loop", r, "summary")
    assert f"waits in the queue until step **{r.long_start}**" in said
    assert _build("step_loop").preemptions == 1  # the opening pool preempts
    roomy = _build("step_loop", blocks=300)
    assert roomy.preemptions == 0 and not roomy.held_back and roomy.not_preempted_free


def test_step_loop_calls_the_learners_limits_its_settings_not_vllms():
    r = _build("step_loop", vllm_defaults=False, max_num_batched_tokens=256, max_num_seqs=1)
    said = _says("step_loop", r, "scenario")
    assert "The settings are vLLM's" not in said and "**1 running request**" in said


def test_chunked_prefill_quotes_what_the_decodes_leave_and_a_wait_that_barely_moves():
    r = _build("chunked_prefill", prompt_tokens=16, users=1)
    said = _says("chunked_prefill", r, "reading-chunked")
    assert r.one_chunk and f"{r.budget - 1:,} tokens of the" in said
    assert "after 1 decode token" in said
    whole = _says("chunked_prefill", r, "reading-whole")
    assert f"**{r.whole_step_ms:,.1f} ms** instead of the usual {r.whole_decode_ms:.1f} ms" in whole
    h = _build("chunked_prefill", gpu="H100-SXM", users=256)
    assert h.gap_barely and not h.gap_shorter and h.gap_ratio < 1.1
    assert "barely changes" in _says("chunked_prefill", h, "reading-gap")
    opening = _build("chunked_prefill")
    assert opening.gap_shorter
    assert "times shorter" in _says("chunked_prefill", opening, "reading-gap")


def test_token_budget_says_the_prompt_takes_the_rest_only_where_it_does():
    r = _build("token_budget", cached_pct=100)
    assert r.one_chunk and r.first_chunk < r.left_after_decodes
    said = _says("token_budget", r, "reading-chunks")
    assert "read in one step" in said and "exactly" not in said
    idle = _build("token_budget", decodes=0, prompt=16)
    assert idle.idle_at_arrival
    assert "No request is decoding" in _says("token_budget", idle, "reading")
    many = _build("token_budget")
    assert many.many_chunks and many.first_chunk == many.left_after_decodes
    spec = _build("token_budget", cached_pct=100, k=4)
    assert spec.spec_no_shrink and spec.spec_chunk == spec.plain_chunk
    assert "shrinks" not in _says("token_budget", spec, "spec-numbers")


def test_choosing_the_budget_does_not_claim_a_larger_budget_it_never_tried():
    r = _build("choosing_budget", decodes=1, prompt=16, itl_target_ms=10)
    assert r.pick == r.budget_max and r.pick_top
    why = _says("choosing_budget", r, "pick-why")
    assert "largest budget this lab tries" in why and "break the target" not in why
    opening = _build("choosing_budget")
    assert opening.pick_trade and "any smaller one" in _says("choosing_budget", opening, "pick-why")


def test_throughput_says_the_chunks_are_short_only_when_their_steps_meet_the_target():
    r = _build("throughput_curve", context=131072, itl_target_ms=200)
    assert r.cmp_itl_ms <= 200 < r.cmp_mixed_ms and r.cmp_mean_within
    said = _says("throughput_curve", r, "surge-fix")
    assert "short enough" not in said and "only on average" in said
    assert r.cache_outweighs_one and "Near" not in _says("throughput_curve", r, "bend")
    quiet = _build("throughput_curve", context=16, itl_target_ms=5)
    assert quiet.cmp_surge_small and quiet.cmp_itl_ratio < 1.1
    assert "barely show" in _says("throughput_curve", quiet, "surge-why")


def test_step_cost_warns_of_a_kv_cache_larger_than_the_gpu_and_of_no_kv_read():
    r = _build("step_cost", tokens=16384, decodes=1024, context_tokens=131072)
    assert r.kv_too_big and r.kv_gb > r.kv_room_gb
    said = _says("step_cost", r, "kv-too-big")
    assert f"{r.kv_fit_seqs:,} request" in said and f"{r.kv_room_gb:,.1f} GB" in said
    assert f"**{r.kv_gb:,.2f} GB**" in _says("step_cost", r, "kv")  # with its separators
    assert not _build("step_cost").kv_too_big
    none = _build("step_cost", decodes=0)
    assert none.no_decodes and "no such read" in _says("step_cost", none, "kv")


def test_throughput_says_when_the_cache_runs_out_before_the_knee():
    r = _build("throughput_curve", gpu="L4")
    assert r.kv_cap < r.knee and r.knee_past_cache
    said = _says("throughput_curve", r, "knee-past-cache")
    assert f"at {r.knee:,} sequences, lies past that line" in said
    assert f"at {r.kv_cap:,} sequences, not at the knee" in said
    opening = _build("throughput_curve")
    assert opening.kv_cap >= opening.knee and not opening.knee_past_cache


def test_choosing_the_budget_says_slide_only_where_the_curves_move():
    flat = _build("choosing_budget", prompt=16)
    assert flat.trade_flat and not flat.trade_moves
    assert "nearly flat" in _says("choosing_budget", flat, "trade-slide")
    opening = _build("choosing_budget")
    assert opening.trade_moves and "Slide the budget down" in _says(
        "choosing_budget", opening, "trade-slide"
    )


def test_the_budget_chart_labels_point_away_from_each_other():
    """'your budget: 4,096' ran right across the vLLM default's line at 8,192: the two labels
    now point away from each other (the one left of the other line labels on its left)."""
    from lessons.choosing_budget import figures

    def sides(r) -> dict[str, str]:
        notes = figures.trade(r)["layout"]["annotations"]
        return {n["text"].split(":")[0]: n["xanchor"] for n in notes}

    r = _build("choosing_budget", gpu="H100-SXM")  # 4,096 against the default 8,192
    assert r.budget < r.default_budget
    assert sides(r) == {"your budget": "right", "vLLM default": "left"}
    above = _build("choosing_budget", gpu="L4", budget=12288)  # the default 2,048 is left
    assert above.default_budget < above.budget
    assert sides(above) == {"your budget": "left", "vLLM default": "right"}


def test_memory_at_the_top_rate_does_not_say_from_it_up():
    top = _build("memory", rate=32)
    assert top.rate_changes_nothing and top.rate_same_at_top and not top.rate_same_below_top
    said = _says("memory", top, "rate-same")
    assert "a faster stream would change nothing" in said and "from 32" not in said


def test_priority_victims_are_said_as_the_rule_gives_them():
    r = _build("policies", gpu="A10G", interactive_pct=90, heavy_pct=34)
    said = _says("policies", r, "preempted")
    assert "only when no batch request is left running" in said
    assert f"interactive **{r.prio_int_preempted}**, batch **{r.prio_batch_preempted}**" in said
