"""The engine bench's helpers (bench/bench_engine.py) find what they claim to measure: each heavy
lesson's controls and caches, a moved value the page would compute, and a cache clear that makes
the next build run the engine again (counted, never timed)."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from bench import bench_engine as bench
from sim import scheduler


def test_every_control_of_each_heavy_lesson_is_found_in_field_order():
    names = {lesson: [d.name for d in bench.controls(lesson)] for lesson in bench.HEAVY}
    assert names["policies"] == [
        "gpu",
        "model",
        "dtype",
        "tp",
        "policy",
        "load_pct",
        "interactive_pct",
        "heavy_pct",
        "prefix_caching",
    ]
    assert names["watch"] == ["gpu", "model", "dtype", "tp", "preset", "fixed", "itl_target_ms"]
    assert names["overload"] == ["gpu", "model", "dtype", "tp", "load_pct", "ttft_target_s"]
    assert len(names["memory"]) == 18
    assert {"prompt_tokens", "max_model_len", "num_gpu_blocks", "watermark"} <= set(names["memory"])


@pytest.mark.parametrize("lesson", bench.HEAVY)
def test_each_control_moves_to_another_value_its_control_accepts(lesson):
    params = importlib.import_module(f"lessons.{lesson}.lesson").Params
    for d in bench.controls(lesson):
        p, change = bench.moved(lesson, d)
        assert getattr(p, d.name) != d.default, d.name
        assert d.spec.accepts(getattr(p, d.name)), (d.name, getattr(p, d.name))
        assert p == dataclasses.replace(params(), **change)


def test_a_hidden_control_moves_with_the_control_that_shows_it():
    d = {d.name: d for d in bench.controls("memory")}
    _, change = bench.moved("memory", d["num_gpu_blocks"])
    assert change == {"num_gpu_blocks": 800, "pool_from": "blocks"}
    _, change = bench.moved("memory", d["max_num_seqs"])
    assert change == {"max_num_seqs": 128, "vllm_defaults": False}
    _, change = bench.moved("memory", d["max_model_len"])
    assert change == {"max_model_len": 1024}  # below some requests: a run of its own
    _, change = bench.moved("memory", d["model"])
    assert change == {"model": "Mistral-7B-v0.3"}


def test_the_caches_of_each_lesson_package_are_found():
    names = {lesson: {f.__name__ for f in bench.caches(lesson)} for lesson in bench.HEAVY}
    assert {"_traced_run", "_comparison", "workload", "_pool", "opening_run"} <= names["memory"]
    assert {"runs_for", "_capacity", "answers"} <= names["policies"]
    assert {"setup", "run_for", "_sized", "answers"} <= names["watch"]
    assert {"probe", "run_at", "sweep", "signals_at", "gateway", "answers"} <= names["overload"]


def test_clearing_the_caches_makes_the_next_build_run_the_engine_again():
    from lessons.watch import lesson

    bench.clear("watch")
    with bench.counting_runs() as first:
        lesson.build(lesson.Params())
    with bench.counting_runs() as again:
        lesson.build(lesson.Params())
    assert first[0] >= 2 and again[0] == 0  # the run and its fix, then both from the cache
    assert bench.clear("watch") == len(bench.caches("watch"))
    with bench.counting_runs() as cleared:
        lesson.build(lesson.Params())
    assert cleared[0] == first[0]


def test_a_rerun_computes_only_what_the_opening_did_not():
    # the fix's run is already made by the opening: applying it runs nothing new
    d = {d.name: d for d in bench.controls("watch")}
    p, _ = bench.moved("watch", d["fixed"])
    _, made = bench.rerun("watch", bench.before("watch", d["fixed"]), p, 1)
    assert made == 0
    p, _ = bench.moved("watch", d["itl_target_ms"])
    _, made = bench.rerun("watch", bench.before("watch", d["itl_target_ms"]), p, 1)
    assert made > 0


def test_a_hidden_control_is_moved_from_a_page_that_shows_it():
    d = {d.name: d for d in bench.controls("memory")}
    assert bench.needs("memory", d["max_num_batched_tokens"]) == {"vllm_defaults": False}
    start = bench.before("memory", d["max_num_batched_tokens"])
    assert start.vllm_defaults is False and start.max_num_batched_tokens == 2048
    assert bench.needs("memory", d["prompt_tokens"]) == {}
    assert bench.before("memory", d["prompt_tokens"]) == bench._params("memory")


def test_the_engine_switch_and_the_counter_are_undone_on_leaving():
    run = scheduler.Engine.run
    compiled = getattr(scheduler, "COMPILED", None)
    with bench.python_engine() as python, bench.counting_runs():
        assert python is hasattr(scheduler, "COMPILED")  # no switch once the tree drops it
        assert getattr(scheduler, "COMPILED", None) is (False if python else None)
        assert scheduler.Engine.run is not run
    assert scheduler.Engine.run is run
    assert getattr(scheduler, "COMPILED", None) is compiled


def test_the_bars_are_judged_on_both_limits():
    assert bench._met(100, 1000) == "both"
    assert bench._met(100, 200) == "150 ms only"  # 0.4 x 200 = 80 ms
    assert bench._met(200, 1000) == "0.4x only"
    assert bench._met(200, 400) == "no"
