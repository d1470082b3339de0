"""Controls bound to the URL, with a clear message when a link carries a bad value.

Every control is `bind="query-params"`, so an instructor's link reopens a page in exactly the
state they showed. Streamlit silently falls back to the default for an out-of-range URL value;
these wrappers check the value first and say what was ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from lessons.course import SITE_TEXT
from lessons.text import section


def _check_link(key: str, ok: Callable[[str], bool], expected: str, default: object) -> None:
    """Warn (once per run) when the URL sets `key` to a value `ok` rejects."""
    value = st.query_params.get(key)
    if value is not None and not ok(value):
        st.warning(
            section(
                SITE_TEXT,
                "bad-link",
                {"key": key, "value": value, "expected": expected, "default": default},
            ),
            icon=":material/link_off:",
        )


def check_whole_number(key: str, lo: int, hi: int, default: int, step: int = 1) -> None:
    """Warn when the URL sets `key` to anything but a whole number lo..hi on the step grid."""

    def ok(v: str) -> bool:
        try:
            n = int(v)
        except ValueError:
            return False
        return lo <= n <= hi and (n - lo) % step == 0

    _check_link(key, ok, f"a whole number from {lo:,} to {hi:,}", default)


def choice(
    label: str, options: Sequence, *, key: str, default: object, help: str | None = None, **kw: Any
) -> Any:
    """A selectbox bound to the URL. The URL carries the label as shown (`format_func`)."""
    fmt = kw.get("format_func", str)
    names = [fmt(o) for o in options]
    _check_link(key, lambda v: v in names, "one of " + ", ".join(names), fmt(default))
    return st.selectbox(
        label,
        options,
        index=list(options).index(default),
        key=key,
        help=help,
        bind="query-params",
        **kw,
    )


def weights(gpu: str, *, key: str = "dtype", default: str = "bf16") -> str:
    """The weights' number format, bound to the URL: "bf16" or "fp8".

    The options stay the same on every GPU, so the widget and the URL never disagree; FP8 on a
    GPU without FP8 support (from a link, or left over from another GPU) falls back to BF16 with
    a note.
    """
    from sim.hardware import get_gpu

    has_fp8 = bool(get_gpu(gpu).fp8_tflops)
    fell_back = not has_fp8 and st.session_state.get(key) == "fp8"
    if fell_back:
        st.session_state[key] = "bf16"  # before the widget exists: allowed, and the URL follows
    dtype = choice("Weights", ["bf16", "fp8"], key=key, default=default, format_func=str.upper)
    if dtype == "fp8" and not has_fp8:
        fell_back, dtype = True, "bf16"
    if fell_back:
        st.caption(section(SITE_TEXT, "no-fp8", {"gpu": gpu}))
    return dtype


def steps(
    label: str, options: Sequence[int], *, key: str, default: int, help: str | None = None
) -> int:
    """A slider over a fixed list of values (e.g. powers of two), bound to the URL."""
    names = [str(o) for o in options]
    expected = f"one of {names[0]}, {names[1]}, ..., {names[-1]}"
    _check_link(key, lambda v: v in names, expected, default)
    return st.select_slider(
        label, options=list(options), value=default, key=key, help=help, bind="query-params"
    )


def integer(
    label: str, lo: int, hi: int, *, key: str, default: int, step: int = 1, help: str | None = None
) -> int:
    """An integer slider bound to the URL."""

    check_whole_number(key, lo, hi, default, step)
    return st.slider(label, lo, hi, default, step=step, key=key, help=help, bind="query-params")


BUDGETS = [256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768]


def scheduler_limits(gpu: str, *, key_prefix: str = "") -> dict[str, int]:
    """The token budget and max_num_seqs: vLLM's defaults for `gpu`, or the learner's own.

    Returns {"max_num_batched_tokens": N, "max_num_seqs": N}.
    """
    from sim.hardware import default_batch_limits

    defaults = default_batch_limits(gpu, usage="server")
    use_defaults = st.toggle(
        "Use vLLM's defaults for this GPU",
        value=True,
        key=f"{key_prefix}defaults",
        help=section(SITE_TEXT, "defaults-help"),
        bind="query-params",
    )
    if use_defaults:
        st.caption(section(SITE_TEXT, "defaults-on", {"gpu": gpu, **defaults}))
        return dict(defaults)
    left, right = st.columns(2)
    with left:
        budget = steps(
            "Token budget (max_num_batched_tokens)",
            BUDGETS,
            key=f"{key_prefix}budget",
            default=defaults["max_num_batched_tokens"]
            if defaults["max_num_batched_tokens"] in BUDGETS
            else 2048,
        )
    with right:
        seqs = integer(
            "Sequence budget (max_num_seqs)",
            1,
            1024,
            key=f"{key_prefix}seqs",
            default=min(defaults["max_num_seqs"], 1024),
        )
    return {"max_num_batched_tokens": int(budget), "max_num_seqs": int(seqs)}
