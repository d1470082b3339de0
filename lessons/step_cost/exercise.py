"""Lesson 1's exercise: compute the floor of a step (weight bytes over bandwidth) by hand.

Numbers are drawn from the catalogs; the answer uses the catalog's weight bytes and the GPU's
datasheet bandwidth, and the solution compares it with the calibrated cost model.
"""

from __future__ import annotations

import numpy as np

from lessons.course import ROOT
from lessons.quiz.exercise import Drawn, ExerciseSpec
from lessons.text import section
from sim.cost import Deployment, calibration, weight_read_ms
from sim.hardware import get_gpu, gpu_keys
from sim.models import get_model, model_keys, weight_read_bytes

TEXT = ROOT / "step_cost" / "text.md"
DEFAULT = ("H100-SXM", "Llama-3.1-8B", "bf16", 1)


def _choose(seed: int) -> tuple[str, str, str, int]:
    if seed == 0:
        return DEFAULT
    rng = np.random.default_rng(seed)
    gpu = str(rng.choice(gpu_keys()))
    model = str(rng.choice(model_keys()))
    dtype = "fp8" if get_gpu(gpu).fp8_tflops and rng.random() < 0.3 else "bf16"
    tp = int(rng.choice([1, 2, 4, 8]))
    return gpu, model, dtype, tp


def draw_floor(seed: int) -> Drawn:
    """The floor of a step for a drawn GPU, model, dtype and TP."""
    gpu, model, dtype, tp = _choose(seed)
    weight_gb = weight_read_bytes(get_model(model), dtype, tp, tokens=1) / 1e9
    bw_tbps = get_gpu(gpu).bw_tbps
    answer = weight_gb / bw_tbps  # GB / (TB/s) = ms
    model_ms = weight_read_ms(Deployment(gpu=gpu, model=model, tp=tp, dtype=dtype))
    values = {
        "gpu": gpu,
        "model": model,
        "dtype": dtype.upper(),
        "tp": tp,
        "weight_gb": weight_gb,
        "bw_tbps": bw_tbps,
        "answer": answer,
        "model_ms": model_ms,
        "gap_pct": (model_ms / answer - 1) * 100,
    }
    solution = section(TEXT, "exercise-solution", values)
    measured = {r["gpu"]: r for r in calibration()["batch1_bandwidth"]}.get(gpu)
    if measured is not None:  # the GPU has measured profiles: say what they reached
        values["b1_lo_pct"] = measured["min_share"] * 100
        values["b1_hi_pct"] = measured["max_share"] * 100
        solution += "\n\n" + section(TEXT, "exercise-measured", values)
    return Drawn(
        prompt=section(TEXT, "exercise-prompt", values),
        answer=answer,
        unit="ms",
        solution=solution,
        rtol=0.03,
        params=values,
    )


EXERCISES = (ExerciseSpec(id="floor", title="The floor of a step", draw=draw_floor),)
