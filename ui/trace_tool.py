"""The *Your own trace* page's two interactive parts that need Streamlit beyond the lesson kit:
the pasted `vllm serve` box (lessons/trace_lab/tool: the command sets the deployment of both
sides, what it read shows as plain text) and the two sides' runs with a progress bar each."""

from __future__ import annotations

import dataclasses

import streamlit as st

from lessons.kit.controls import BadValue, shown
from lessons.trace_lab import tool
from sim.errors import SimInputError
from ui.lesson_page import WIDGET, LessonPage
from ui.links import bad_link, write_url


def serve_box(page: LessonPage) -> str:
    """The `vllm serve` box: a text area (a command is often pasted over several lines), with
    the page's keys (`w:trc-a-serve`, kept across pages, in the link as `trc-a-serve`). A link
    value the box does not take (too long) is reported as plain text, and the box left empty."""
    d = page.declared["a_serve"]
    url_key = d.url_key(tool.PREFIX)
    value = page.upcoming("a_serve")
    raw = st.query_params.get(url_key)
    if raw is not None and raw != value:
        try:
            d.spec.parse(raw)
        except BadValue as exc:
            bad_link(url_key, raw, str(exc), page.text("serve-empty"))
    wkey = WIDGET + url_key
    st.session_state[wkey] = value
    text = st.text_area(
        page.text("serve-label"),
        key=wkey,
        max_chars=tool.SERVE_CHARS,
        placeholder=page.text("serve-placeholder"),
        help=page.text("serve-help"),
        height=120,
        on_change=lambda: page.set("a_serve", st.session_state[wkey]),
    )
    write_url(url_key, text or None)
    return text


def serve_and_sides(page: LessonPage, p, rows: list, columns: list, rules) -> tool.Params:
    """The box, then side A's controls and side B's (or, with a command that runs, what it set
    beside B's controls); the Params the page runs."""
    serve_box(page)
    args, problem = None, None
    try:
        args = tool.serving(p)
    except SimInputError as exc:
        problem = str(exc)  # the parser's one line; it may quote the command: plain text below
        st.error(
            page.text("serve-bad", None, error=shown(problem, limit=400)), icon=":material/error:"
        )
    drawn = {name: getattr(p, name) for name in (*sum(rows, []), "a_serve")}
    if args is None:  # an empty box (or one that cannot run): A's controls | B's
        p = page.controls([], columns=columns, fixed=drawn, show_if=rules)
    else:  # what the command set, as plain text (it quotes the command) | B's controls
        left, right = st.columns(2)
        with left:
            st.caption(page.text("serve-mapped"))
            st.code("\n".join(args.mapped), language=None, wrap_lines=True)
        with right:
            kept = drawn | {name: getattr(p, name) for name in columns[0]}
            p = page.controls([], columns=columns[1:], fixed=kept, show_if=rules)
    if problem is not None:  # as a bad link value: said, and the page runs without it
        p = dataclasses.replace(p, a_serve="")
    return p


def run_sides(page: LessonPage, p, trace) -> dict:
    """Both sides' runs, each with a progress bar while it is not cached."""
    sides = {}
    for side in ("a", "b"):
        bar = None if tool.is_cached(p, side, trace) else st.progress(0.0)

        def report(done: int, total: int, bar=bar, side=side) -> None:
            words = page.text("running", None, side=side.upper(), done=done, total=total)
            bar.progress(done / total, text=words)

        sides[side] = tool.run_side(p, side, trace, progress=report if bar else None)
        if bar is not None:
            bar.empty()
    return sides
