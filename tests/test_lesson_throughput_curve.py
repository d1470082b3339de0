"""Lesson 5, "The sequence budget and the throughput curve": page, sliders, quiz and exercises.

Why: the curves must say what the lesson says (more concurrency, more tokens per second in total
and fewer for each user; longer contexts bend the curve sooner), the knee and the ITL pick must
follow their stated definitions on the chart's own data, and every exercise answer must agree
with an independent scheduler (tests/reference_scheduler.py) priced by the cost model.
"""

from __future__ import annotations

import numpy as np
import pytest

from lessons.course import lesson
from lessons.throughput_curve import exercise, figures
from sim.config import SchedulerConfig
from sim.cost import Deployment, step_costs
from sim.models import num_gpu_blocks
from sim.sweep import sweep_values
from sim.workload import Workload
from tests import reference_scheduler
from tests.apptest_util import assert_quiz_awards_xp_once, charts, run_page, trace_values
from tests.scenarios import base_settings

PAGE = "pages/lesson_throughput_curve.py"


def _chart(at, title_word: str) -> dict:
    for chart in charts(at):
        if title_word in chart["layout"]["title"]["text"]:
            return chart
    raise AssertionError(f"no chart titled with {title_word!r}")


def _curves(at) -> dict[str, np.ndarray]:
    """The total and per-user curves as drawn (reachable part and beyond, joined)."""
    chart = _chart(at, "Throughput against concurrency")
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


def _metric(at, start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(start))


def _as_int(text: str) -> int | None:
    return None if text == "none" else int(text.replace(",", ""))


def test_opens_clean_with_both_curves_and_the_knee_by_its_definition():
    at = run_page(PAGE)
    c = _curves(at)
    assert c["total_x"].tolist() == list(range(1, 1025))
    total, user = c["total"], c["user"]
    # More concurrency: more total throughput and less for each user, doubling by doubling.
    for n in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
        assert total[2 * n - 1] > total[n - 1]
        assert user[2 * n - 1] < user[n - 1]
    # Each user gets one token per step: per-user x concurrency = total.
    assert np.allclose(user * c["user_x"], total)
    # The knee, as the lesson defines it: the first N where doubling to 2N adds less than 50%
    # to the total, checked on the drawn data.
    knee = _as_int(_metric(at, "Knee"))
    gain = total[2 * np.arange(1, 513) - 1] / total[:512]
    assert knee == int(np.flatnonzero(gain < 1.5)[0]) + 1
    assert gain[knee - 2] >= 1.5
    text = " ".join(m.value for m in at.markdown)
    assert f"**{knee:,} sequences**" in text
    assert "less than 50% to the total" in text


def test_every_chart_is_a_valid_plotly_figure():
    """ui/charts.show sends the dicts unvalidated, so validate what the page sent here."""
    import plotly.graph_objects as go

    at = run_page(PAGE)
    for chart in charts(at):
        go.Figure(chart)  # raises on any property Plotly does not know


def test_the_itl_target_picks_the_largest_concurrency_that_meets_it():
    at = run_page(PAGE, query={"itl": "15"})
    tight = _as_int(_metric(at, "Largest within"))
    at.slider(key="itl").set_value(25).run()
    loose = _as_int(_metric(at, "Largest within"))
    assert tight is not None and loose is not None and loose > tight
    c = figures.compute(figures.Params(itl_target_ms=25))
    step = c["step_ms"]
    assert step[loose - 1] <= 25
    assert loose == c["kv_cap"] or step[loose] > 25  # the next one misses (or memory is full)


def test_longer_context_bends_the_curve_sooner():
    at = run_page(PAGE, query={"context": "512"})
    short = _curves(at)
    knee_short = _as_int(_metric(at, "Knee"))
    cap_short = _as_int(_metric(at, "KV cache holds"))
    at.select_slider(key="context").set_value(8192).run()
    long = _curves(at)
    knee_long = _as_int(_metric(at, "Knee"))
    assert knee_long < knee_short
    assert _as_int(_metric(at, "KV cache holds")) < cap_short
    assert long["total"][-1] < short["total"][-1]
    assert long["user"][0] < short["user"][0]
    reads = _chart(at, "reads from GPU memory")
    kv = next(
        y for t, y in zip(reads["data"], trace_values(reads), strict=True) if "KV" in t["name"]
    )
    assert kv[1] == pytest.approx(2 * kv[0])  # the KV read grows with every sequence


def test_a_faster_gpu_lifts_the_curve():
    at = run_page(PAGE)
    h100 = _curves(at)
    at.selectbox(key="gpu").set_value("H200").run()
    h200 = _curves(at)
    assert not at.exception
    assert h200["total"][-1] > h100["total"][-1]
    assert _as_int(_metric(at, "KV cache holds")) > 218  # more memory, more sequences
    at.selectbox(key="gpu").set_value("L4").run()
    assert any("2,048" in c.value for c in at.caption)  # vLLM's defaults for the L4


def test_own_limits_move_the_cap_and_vllms_check_is_shown():
    at = run_page(PAGE)
    at.toggle(key="defaults").set_value(False).run()
    at.slider(key="seqs").set_value(64).run()
    text = " ".join(m.value for m in at.markdown)
    assert "`max_num_seqs` = 64" in text and "**64 sequences**" in text
    at.select_slider(key="budget").set_value(256).run()
    at.slider(key="seqs").set_value(512).run()
    assert any("greater than or equal to max_num_seqs" in w.value for w in at.warning)


def test_the_animation_grows_the_concurrency():
    at = run_page(PAGE)
    anim = _chart(at, "a step takes")
    frames = anim["frames"]
    assert 2 <= len(frames) <= 200
    totals = [f["data"][0]["y"][0] for f in frames]
    users = [f["data"][1]["y"][0] for f in frames]
    ns = [f["data"][0]["x"][0] for f in frames]
    assert ns == sorted(ns) and ns[0] == 1 and ns[-1] == 1024
    assert totals[-1] > totals[0] * 10 and users[-1] < users[0] / 5
    steps = [sum(f["data"][2]["y"]) for f in frames]
    assert all(b >= a for a, b in zip(steps, steps[1:], strict=False))  # steps only grow
    assert steps[-1] > 5 * steps[0]


def test_quiz_grades_and_awards_xp_once():
    assert len(lesson("throughput_curve").bank().questions) >= 6
    at = assert_quiz_awards_xp_once(PAGE, "throughput_curve", "lever")
    spec = next(e for e in exercise.EXERCISES if e.id == "pick")
    box = next(n for n in at.number_input if "sequences" in n.label)
    box.set_value(spec.draw(0).answer).run()
    at.button(key="exercise-throughput-curve-pick-check").click().run()
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
    c = figures.compute(figures.Params(context=prompt + output // 2))  # mid-answer context
    for (_, row), k in zip(runs.iterrows(), seqs, strict=True):
        assert row["total_preemptions"] == 0
        assert row["itl_ms_p50"] == pytest.approx(c["step_ms"][k - 1], rel=0.02)
        assert row["output_tokens_per_s"] < c["total"][k - 1]  # prompts cost steps too


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
