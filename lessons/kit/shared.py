"""The settings that follow a learner from lesson to lesson, declared once.

GPU, model, tensor parallelism and the weights' number format have one URL key, one type and one
range on every page. A lesson picks its own opening value (`gpu("L4")`); once the learner changes
one of these, or opens a link that sets it, the value follows them to every other lesson.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lessons.kit.controls import Choice, Toggle, control
from sim.hardware import gpu_keys
from sim.models import model_keys

GPU = Choice("GPU", key="gpu", shared=True, main=True, options=tuple(gpu_keys()))
MODEL = Choice("Model", key="model", shared=True, main=True, options=tuple(model_keys()))
TP = Choice("GPUs (tensor parallel)", key="tp", shared=True, options=(1, 2, 4, 8))
DTYPE = Choice("Weights", key="dtype", shared=True, options=("bf16", "fp8"), format=str.upper)
# Presenter mode (ui/present.py) follows the instructor from page to page, like the GPU.
PRESENT = Toggle("Presenter mode", key="present", shared=True)


def gpu(default: str = "H100-SXM") -> Any:
    return control(default, GPU)


def model(default: str = "Llama-3.1-8B") -> Any:
    return control(default, MODEL)


def tp(default: int = 1) -> Any:
    return control(default, TP)


def dtype(default: str = "bf16") -> Any:
    return control(default, DTYPE)


@dataclass(frozen=True)
class Deployment:
    """The four shared settings as fields, for a lesson's Params to inherit: `class
    Params(Deployment)`. A lesson that opens on another GPU re-declares `gpu = gpu("L4")`."""

    gpu: str = gpu()
    model: str = model()
    dtype: str = dtype()
    tp: int = tp()
