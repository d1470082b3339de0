"""The calculator's controls (Params) and build(p) -> Readout: one cost-model call for every
token count the learner lists, with its parts, as `python -m sim step-time` prints them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lessons.kit import shared
from lessons.kit.controls import BadValue, Integer, Text, control
from lessons.kit.figures import COST_PARTS, axis, bars
from sim.cost import Deployment, mixed_batch, parse_token_list, step_costs
from sim.errors import SimInputError

PREFIX = "calc"
TEXT = Path(__file__).resolve().parent / "text.md"
MAX_VALUES = 64


def _check_tokens(raw: str) -> list[int]:
    try:
        return parse_token_list(raw, what="Prompt tokens", max_values=MAX_VALUES)
    except SimInputError as exc:
        raise BadValue(str(exc)) from None


@dataclass(frozen=True)
class Params(shared.Deployment):
    tokens: str = control(
        "1, 64, 512, 2048, 8192",
        Text(
            "Prompt tokens in the step",
            help="Whole numbers separated by commas, for example 1, 512, 2048. Up to 64 values.",
            check=_check_tokens,
            expects=f"whole numbers separated by commas, at most {MAX_VALUES} of them",
            extremes=("0", ", ".join(["16384"] * MAX_VALUES)),
        ),
    )
    decodes: int = control(0, Integer("Running decodes", lo=0, hi=1024))
    context_tokens: int = control(
        0, Integer("KV context per decode (tokens)", key="context", lo=0, hi=131_072, step=128)
    )


@dataclass(frozen=True, eq=False)
class Readout:
    ok: bool
    error: str  # why the token list was refused (plain text; shown escaped)
    gpu: str
    model: str
    dtype: str
    tp: int
    tokens: tuple[int, ...]
    step_ms: np.ndarray
    parts_ms: dict[str, np.ndarray]
    memory_bound: np.ndarray
    min_ms: float
    max_ms: float
    count: int


def build(p: Params) -> Readout:
    """Price the listed steps; a bad list gives ok=False and the reason, never an exception."""
    empty = np.zeros(0)
    base = {"gpu": p.gpu, "model": p.model, "dtype": p.dtype.upper(), "tp": p.tp}
    try:
        tokens = tuple(_check_tokens(p.tokens))
        if p.decodes == 0 and 0 in tokens:
            raise BadValue("a step of 0 prompt tokens and no decodes is empty")
    except BadValue as exc:
        return Readout(False, str(exc), **base, tokens=(), step_ms=empty, parts_ms={},
                       memory_bound=empty, min_ms=0.0, max_ms=0.0, count=0)  # fmt: skip
    dep = Deployment(gpu=p.gpu, model=p.model, tp=p.tp, dtype=p.dtype)
    costs = step_costs(dep, **mixed_batch(np.array(tokens), p.decodes, p.context_tokens))
    step_ms = np.asarray(costs.step_ms)
    return Readout(
        ok=True,
        error="",
        **base,
        tokens=tokens,
        step_ms=step_ms,
        parts_ms={name: np.asarray(getattr(costs, name)) for name, _, _ in COST_PARTS},
        memory_bound=np.asarray(costs.memory_bound),
        min_ms=float(step_ms.min()),
        max_ms=float(step_ms.max()),
        count=len(tokens),
    )


def table(r: Readout) -> dict[str, list]:
    """The calculator's table: one row per token count, a column per part."""
    rows: dict[str, list] = {"prompt tokens": list(r.tokens), "step (ms)": r.step_ms.tolist()}
    for name, label, _ in COST_PARTS:
        rows[f"{label} (ms)"] = r.parts_ms[name].tolist()
    rows["bound"] = ["memory" if m else "compute" for m in r.memory_bound]
    return rows


def figure(r: Readout) -> dict:
    """Stacked bars of step time by part, one bar per token count."""
    labels = [f"{n:,}" for n in r.tokens]
    data = [
        bars(
            labels,
            r.parts_ms[name].tolist(),
            label,
            role,
            hovertemplate="%{y:.2f} ms<extra>" + label + "</extra>",
        )  # fmt: skip
        for name, label, role in COST_PARTS
    ]
    layout = {
        "title": {"text": f"Step time by part on {r.gpu}, {r.model} ({r.dtype}, TP {r.tp})"},
        "barmode": "stack",
        "height": 420,
        "xaxis": axis("prompt tokens in the step (tokens)", type="category"),
        "yaxis": axis("time (ms)"),
    }
    return {"data": data, "layout": layout}
