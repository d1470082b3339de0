"""The scheduler's two limits as controls, declared once for every lesson that shows them.

A lesson's Params take `vllm_defaults`, `max_num_batched_tokens` and `max_num_seqs` from here
(URL keys `<prefix>-defaults`, `<prefix>-budget`, `<prefix>-seqs`). With the toggle on (the
opening state) the run uses vLLM's defaults for the chosen GPU and the two sliders are hidden;
`effective()` resolves what the run uses, and the Readout quotes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lessons.kit.controls import Integer, Steps, Toggle, control
from sim.hardware import default_batch_limits

BUDGETS = (256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768)

DEFAULTS = Toggle(
    "Use vLLM's defaults for this GPU",
    key="defaults",
    help="vLLM picks these from the GPU's memory: 16,384 tokens from 160 GiB, 8,192 from 70 GiB "
    "(A100s excepted), 2,048 below.",
)
BUDGET = Steps("Token budget (max_num_batched_tokens)", key="budget", options=BUDGETS, main=True)
SEQS = Integer("Sequence budget (max_num_seqs)", key="seqs", lo=1, hi=1024)


def vllm_defaults(default: bool = True) -> Any:
    return control(default, DEFAULTS)


def max_num_batched_tokens(default: int = 2048) -> Any:
    return control(default, BUDGET)


def max_num_seqs(default: int = 256) -> Any:
    return control(default, SEQS)


def hidden_when_defaults(chosen: dict[str, Any]) -> bool:
    """`show_if` rule for the two sliders: drawn only when the defaults toggle is off."""
    return not chosen.get("vllm_defaults", False)


SHOW_IF = {"max_num_batched_tokens": hidden_when_defaults, "max_num_seqs": hidden_when_defaults}


def effective(gpu: str, use_defaults: bool, budget: int, seqs: int) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) the run uses."""
    if use_defaults:
        d = default_batch_limits(gpu, usage="server")
        return int(d["max_num_batched_tokens"]), int(d["max_num_seqs"])
    return int(budget), int(seqs)


def effective_for(p: Any) -> tuple[int, int]:
    """`effective` for a Params with the limit controls (`Limits`) and a GPU."""
    return effective(p.gpu, p.vllm_defaults, p.max_num_batched_tokens, p.max_num_seqs)


@dataclass(frozen=True)
class Limits:
    """The three limit controls as fields, for a lesson's Params to inherit (with Deployment:
    `class Params(Limits, Deployment)`); re-declare a field to open at other values."""

    vllm_defaults: bool = vllm_defaults()
    max_num_batched_tokens: int = max_num_batched_tokens()
    max_num_seqs: int = max_num_seqs()
