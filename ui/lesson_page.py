"""Renders a lesson from its declarations: controls from `Params`, text from `text.md` sections
filled by the `Readout`, charts through the house style, then the quiz, Reset and Next lesson.

Widget state. Every control has a widget key of its own lesson (`w:<url key>`), so no two pages
ever share a widget, and a kept value (`keep:<url key>`) that survives page switches. A control
shared by all lessons (GPU, model, TP, weights) keeps one value under its one URL key; it is
stored when the learner changes it or a link sets it, and until then each lesson opens at its
own default. The URL is written from the values on screen after every run (a value equal to the
lesson's default is left out), so the address bar always reproduces the page. A value from a
link is read only on the first run of the page in a session, checked against its control, and a
bad one is reported as plain text and replaced by the default.

Presenter mode (ui/present.py) draws only the controls a lesson marks `main` (the others keep
their values and their place in the link) and shows each text section's brief.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from lessons.course import SITE_TEXT, Lesson, lesson, lessons
from lessons.kit import anim, limits, story
from lessons.kit.controls import (
    BadValue,
    Choice,
    Declared,
    Integer,
    Steps,
    Text,
    Toggle,
    declared,
    shown,
)
from lessons.kit.present import brief
from lessons.kit.shared import DTYPE
from lessons.kit.tables import GRID_WIDTH_PX, grid_px, markdown_tables, readable, to_csv
from lessons.text import section
from ui import autoplay, present, warm
from ui.charts import show
from ui.links import bad_link, write_url
from ui.quiz import render_lesson_practice, render_question

KEEP = "keep:"
WIDGET = "w:"


def _keep_key(url_key: str) -> str:
    return KEEP + url_key


def _saved(url_key: str) -> None:
    """on_change of a widget: the learner's value becomes the kept one."""
    st.session_state[_keep_key(url_key)] = st.session_state[WIDGET + url_key]


class LessonPage:
    """One lesson's page: `controls()` -> Params, `say()` text, `chart()`, `footer()`."""

    def __init__(
        self, lesson_id: str | None, params_cls: type, prefix: str, text_path: Path | None = None
    ) -> None:
        """A course lesson by id, or (lesson_id None) a tool page with its own text.md."""
        self.lesson: Lesson | None = None if lesson_id is None else lesson(lesson_id)
        self.params_cls = params_cls
        self.prefix = prefix
        self.text_path = text_path if self.lesson is None else self.lesson.text_path
        self.declared = {d.name: d for d in declared(params_cls)}
        self._link_notes: Any = None  # while controls() draws: where a bad link is reported
        self.play = autoplay.token(prefix)  # ?play=1: the first animation plays once
        self.predicted = False  # ui/predict.py asked the computed questions above the runs
        self.asked: set[str] = set()  # questions drawn next to their charts (`ask`)

    # -- controls ------------------------------------------------------------------------------
    def _initial(self, d: Declared, url_key: str, report: bool = True) -> Any:
        """The value a control opens at: kept, else from the link (checked), else the default.
        `report=False` leaves a bad link value for the control to report when it is drawn."""
        keep = _keep_key(url_key)
        if keep in st.session_state:
            return st.session_state[keep]
        raw = st.query_params.get(url_key)
        if raw is not None:
            try:
                value = d.spec.parse(raw)
            except BadValue as exc:
                if not report:
                    return d.default
                with self._link_notes or contextlib.nullcontext():  # full width, not a column's
                    bad_link(url_key, raw, str(exc), d.spec.to_url(d.default))
            else:
                st.session_state[keep] = value
                return value
        if not d.spec.shared:
            st.session_state[keep] = d.default
        return d.default

    def _widget(self, d: Declared, value: Any, on_change: Callable | None) -> Any:
        url_key = d.url_key(self.prefix)
        wkey = WIDGET + url_key
        st.session_state[wkey] = value

        def changed() -> None:
            _saved(url_key)
            if on_change is not None:
                on_change()

        spec = d.spec
        common = {"key": wkey, "help": spec.help, "on_change": changed}
        if isinstance(spec, Choice):
            return st.selectbox(spec.label, spec.options, format_func=spec.format, **common)
        if isinstance(spec, Steps):
            return st.select_slider(spec.label, options=list(spec.options), **common)
        if isinstance(spec, Integer):
            return st.slider(spec.label, spec.lo, spec.hi, step=spec.step, **common)
        if isinstance(spec, Toggle):
            return st.toggle(spec.label, **common)
        if isinstance(spec, Text):
            return st.text_input(spec.label, max_chars=spec.max_chars, **common)
        raise TypeError(f"no widget for {type(spec).__name__}")

    def _render(
        self,
        d: Declared,
        on_change: Callable | None,
        chosen: dict[str, Any],
        drawn: bool = True,
        linked: bool = False,
    ) -> Any:
        url_key = d.url_key(self.prefix)
        value = self._initial(d, url_key)
        value, note = self._fallback(d, value, chosen)
        if note is not None and _keep_key(url_key) in st.session_state:
            st.session_state[_keep_key(url_key)] = value
        if not drawn:  # hidden (show_if, presenting): keeps its value, and its link if `linked`
            url = d.spec.to_url(value) if linked and value != d.default else None
            write_url(url_key, url)
            if note is not None:
                st.caption(section(SITE_TEXT, "fp8-fallback", {"gpu": note}))
            return value
        result = self._widget(d, value, on_change)
        if note is not None:
            st.caption(section(SITE_TEXT, "fp8-fallback", {"gpu": note}))
        write_url(url_key, None if result == d.default else d.spec.to_url(result))
        return result

    def _fallback(self, d: Declared, value: Any, chosen: dict[str, Any]) -> tuple[Any, Any]:
        """Every fallback of a control's value, applied whether the control is drawn or not
        (presenting hides the weights: an FP8 link on an A100 reached the simulator and put its
        error on the projector). Today one: FP8 weights on a GPU without FP8 tensor cores are
        BF16. Returns the value and the GPU to name in the note (None: no fallback)."""
        if d.spec is not DTYPE or value != "fp8":
            return value, None
        gpu = chosen.get("gpu")
        if gpu is None and "gpu" in self.declared:  # set before the GPU is drawn (a hidden
            gpu = self.upcoming("gpu")  # control, a page that reads it first): the GPU to be
        return (value, None) if _has_fp8(gpu) else ("bf16", gpu)

    def controls(
        self,
        rows: Sequence[Sequence[str]] | None = None,
        *,
        columns: Sequence[Sequence[str]] = (),
        on_change: dict[str, Callable[[], None]] | None = None,
        fixed: dict[str, Any] | None = None,
        show_if: dict[str, Callable[[dict[str, Any]], bool]] | None = None,
    ) -> Any:
        """Draw the lesson's controls in rows of columns (field names; default: all in one row),
        then any `columns` (each a list of names drawn one under the other), and return the
        Params they set. `fixed` gives fields not drawn (computed by the page).
        `show_if[name](values so far)` False hides a control (it keeps its value)."""
        warm.touch()  # a learner's run: prepared runs wait (ui/warm.py)
        names = list(self.declared)
        rows = rows if rows is not None else ([] if columns else [names])
        laid_out = {n for group in (*rows, *columns) for n in group}
        missing = set(names) - laid_out - set(fixed or {})
        if missing:
            raise ValueError(f"controls not laid out: {sorted(missing)}")
        chosen: dict[str, Any] = {}
        self._link_notes = st.container()  # a bad link value's note, above the controls
        # The limit sliders hide while vLLM's defaults are on, on every lesson that has them.
        rules = {n: r for n, r in limits.SHOW_IF.items() if n in self.declared} | (show_if or {})
        presenting = present.on()
        off_screen: list[str] = []  # drawn on the full page, not while presenting

        def visible(group: Sequence[str]) -> list[str]:
            """The names of `group` drawn now; the others keep their value (and their link,
            when only presenting hides them)."""
            seen, drawn = dict(chosen), []
            for n in group:  # a rule sees the values to its left in its row too
                if rules.get(n, _always)(seen):
                    drawn.append(n)
                seen[n] = self.upcoming(n)
            shown = [n for n in drawn if not presenting or self.declared[n].spec.main]
            off_screen.extend(n for n in drawn if n not in shown)
            for name in group:
                if name not in shown:
                    d = self.declared[name]
                    chosen[name] = self._render(d, None, chosen, False, linked=name in drawn)
            return shown

        def draw(name: str) -> None:
            hook = (on_change or {}).get(name)
            chosen[name] = self._render(self.declared[name], hook, chosen)

        for row in rows:
            drawn = visible(row)
            for col, name in zip(st.columns(len(drawn)) if drawn else [], drawn, strict=True):
                with col:
                    draw(name)
        if columns:
            for col, group in zip(st.columns(len(columns)), columns, strict=True):
                with col:
                    for name in group:  # in order: a show_if rule sees the values above it
                        if name in visible([name]):
                            draw(name)
        self._link_notes = None
        self._off_screen_note(off_screen, chosen)
        return self.params_cls(**chosen, **(fixed or {}))

    def controls_here(self, rows: Sequence[Sequence[str]], p: Any = None, **kw: Any) -> Any:
        """Draw only `rows` here, for a page whose chart sits above some of its controls: every
        other control keeps the value it will open at when drawn further down (`upcoming`, its
        fallbacks applied) or, given the Params `p`, its value there. Returns the Params."""
        here = {n for row in rows for n in row}
        fixed = {
            n: getattr(p, n) if p is not None else self.upcoming(n)
            for n in self.declared
            if n not in here
        }
        return self.controls(rows, fixed=fixed, **kw)

    def _off_screen_note(self, names: list[str], chosen: dict[str, Any]) -> None:
        """While presenting: a caption naming the off-screen controls that are not at their
        defaults (a link may set them), so the class knows what the run uses."""
        changed = [n for n in names if chosen[n] != self.declared[n].default]
        if not changed:
            return
        parts = [
            f"{shown(self.declared[n].spec.label, 200)}: {_said(self.declared[n].spec, chosen[n])}"
            for n in changed
        ]
        st.caption(section(SITE_TEXT, "present-off-screen", {"settings": "; ".join(parts)}))

    def defaults_note(self, readout: Any) -> None:
        """The caption under the limits when the run uses vLLM's defaults (the Readout's
        `vllm_defaults`, `gpu`, `budget` and `max_num_seqs`)."""
        if not readout.vllm_defaults:
            return
        values = {
            "gpu": readout.gpu,
            "max_num_batched_tokens": readout.budget,
            "max_num_seqs": readout.max_num_seqs,
        }
        note = section(SITE_TEXT, "defaults-on", values)
        toggle = self.declared.get("vllm_defaults")
        if toggle is not None and (toggle.spec.main or not present.on()):  # on screen
            note += " " + section(SITE_TEXT, "defaults-own")
        st.caption(note)

    def own_limits(self) -> None:
        """on_change of the vLLM-defaults switch: switched off, the budget and max_num_seqs
        sliders start at the defaults they replace (not at their own opening values)."""
        if not self.value("vllm_defaults"):
            budget, seqs = limits.effective(self.value("gpu"), True, 0, 0)
            self.set("max_num_batched_tokens", budget)
            self.set("max_num_seqs", seqs)

    def set(self, name: str, value: Any) -> None:
        """Set a control's value from a callback (e.g. a GPU change picks that GPU's default)."""
        url_key = self.declared[name].url_key(self.prefix)
        st.session_state[_keep_key(url_key)] = value

    def value(self, name: str) -> Any:
        """A control's current value (kept, or its default) without drawing it."""
        d = self.declared[name]
        return st.session_state.get(_keep_key(d.url_key(self.prefix)), d.default)

    def ahead(self, build: Callable[[Any], Any], params: Any, *names: str) -> None:
        """Have `build` (a cached function of the Params) run in the background for the values
        next to the current one on each named slider (ui/warm.py `ahead`), so that moving one
        of them a step finds its runs made."""
        nearby = []
        for name in names:
            spec, value = self.declared[name].spec, getattr(params, name)
            if isinstance(spec, Steps):
                i = spec.options.index(value)
                near = spec.options[max(i - 1, 0) : i + 2]
            elif isinstance(spec, Integer):
                near = (max(value - spec.step, spec.lo), min(value + spec.step, spec.hi))
            else:
                raise TypeError(f"{name}: only a slider has values next to its value")
            nearby += [dataclasses.replace(params, **{name: v}) for v in near if v != value]
        warm.ahead(build, nearby)

    def upcoming(self, name: str) -> Any:
        """The value the control will open at when drawn later in this run: kept, else the
        link's (if it parses; the control reports a bad one), else its default. For what is
        drawn above the controls, such as the prediction."""
        d = self.declared[name]
        value = self._initial(d, d.url_key(self.prefix), report=False)
        return self._fallback(d, value, {})[0]

    def reset(self) -> None:
        """on_click of Reset: forget this lesson's own values (shared settings stay)."""
        own = f"{self.prefix}-"
        for key in list(st.session_state):
            name = str(key)
            for start in (KEEP, WIDGET, "linkframe:", ""):
                if name.startswith(start + own):
                    del st.session_state[key]
                    break
        for key in list(st.query_params):
            if key.startswith(own):
                del st.query_params[key]

    # -- text and charts -----------------------------------------------------------------------
    def text(self, name: str, readout: Any = None, **extra: Any) -> str:
        """Section `name` filled from the Readout (empty if its condition does not hold); when
        presenting, its brief (headings and one line)."""
        body = story.text(self.text_path, name, readout, **extra)
        return brief(body) if present.on() else body

    def say(self, readout: Any, *names: str, **extra: Any) -> None:
        """The named sections of text.md whose condition holds, filled from the Readout."""
        for name in names:
            full = story.text(self.text_path, name, readout, **extra)
            if full:
                st.markdown(brief(full) if present.on() else full)
                self._table_csv(name, full)

    def _table_csv(self, name: str, body: str) -> None:
        """A CSV download under each Markdown table of a section (lessons/kit/tables.py)."""
        for i, rows in enumerate(markdown_tables(body)):
            st.download_button(
                section(SITE_TEXT, "export-table"),
                to_csv(rows),
                file_name=f"{self.prefix}{name}-{i + 1}.csv",
                mime="text/csv",
                key=f"{self.prefix}csv-{name}-{i}",
                help=section(SITE_TEXT, "export-table-help"),
            )

    def caption(self, readout: Any, *names: str) -> None:
        """The named sections whose condition holds, each as a caption (small print)."""
        for name in names:
            body = self.text(name, readout)
            if body:
                st.caption(body)

    def metrics(self, readout: Any, name: str = "metrics") -> None:
        """A row of st.metric from a metrics section (`- label :: value` lines)."""
        items = story.metrics(self.text_path, name, readout)
        for col, (label, value) in zip(st.columns(len(items)), items, strict=True):
            col.metric(label, value)

    def table(self, frame: Any) -> None:
        """A table of the lesson: a scrolling data grid, or a plain table whose every column
        shows (its cells and headers wrap) when presenting or when the grid would be wider than
        the page at 1280 px: the grid draws its cells at a fixed width on a canvas, and a wide
        one clipped its last columns (lessons/kit/tables.py `grid_px`)."""
        shown = readable(frame)  # thousands separators (lessons/kit/tables.py)
        if present.on() or grid_px(shown) > GRID_WIDTH_PX:
            st.table(shown, hide_index=True)
        else:
            st.dataframe(shown, hide_index=True, width="stretch")

    def chart(self, figure: dict, readout: Any, key: str, *, stepper: int | None = None) -> None:
        """A chart; its alt text is the text.md section `alt-<key>`, filled from the Readout.
        An animation opens at the frame a link names (`<prefix>-<key>-frame`), as long as the
        controls still make the same animation. `stepper`: the step of the stepper under an
        animation that opens at that step; the ← and → keys are left to the stepper (its
        buttons' shortcuts), and each step redraws the chart, also where two steps share a
        frame that the learner has played away from."""
        alt = story.text(self.text_path, f"alt-{key}", readout)
        full = f"{self.prefix}-{key}"
        if figure.get("frames"):
            start = anim.opened_at(figure)
            meta = {"start": start} if stepper is None else {"start": start, "stepper": stepper}
            if self.play is not None:
                meta["play"] = self.play
            layout = {**figure["layout"], "meta": meta}
            figure = {**figure, "layout": layout}
            frame = self._link_frame(full, figure)
            if frame is not None:
                figure = anim.reopen(figure, frame)
            self._animated = True
        show(figure, alt=alt, key=full)

    def _link_frame(self, full_key: str, figure: dict) -> int | None:
        """The frame a link asked for, checked once; kept while the animation is unchanged."""
        state = f"linkframe:{full_key}"
        sig = anim.signature(figure)
        if state not in st.session_state:
            url_key = f"{full_key}-frame"
            raw = st.query_params.get(url_key)
            st.session_state[state] = None
            if raw is not None:
                last = len(figure["frames"]) - 1
                spec = Integer("frame", lo=0, hi=last)
                try:
                    st.session_state[state] = (sig, spec.parse(raw))
                except BadValue as exc:
                    bad_link(url_key, raw, str(exc), str(anim.opened_at(figure)))
        kept = st.session_state[state]
        if kept is None or kept[0] != sig:
            st.session_state[state] = None
            return None
        return kept[1]

    @contextlib.contextmanager
    def deeper(self, key: str) -> Iterator[None]:
        """A folded "Go deeper" aside (an expert's detail, never lost, never in the main flow):
        what is drawn inside the `with` block. Its topic is the line `- key :: topic` of the
        lesson's `deeper` section."""
        topic = story.labels(self.text_path, "deeper")[key]
        label = section(SITE_TEXT, "go-deeper", {"topic": topic})
        with st.expander(label, icon=":material/school:"):
            yield

    def ask(self, *question_ids: str, folded: bool = False) -> None:
        """Questions of the lesson's bank drawn next to the chart that answers them, numbered
        as in the bank; the practice at the end of the page leaves them out. `folded`: inside
        an expander that names how many there are."""
        if self.lesson is None:
            raise ValueError("a tool page has no quiz")
        bank = self.lesson.bank()
        number = {q.id: i for i, q in enumerate(bank.questions, start=1)}
        self.asked.update(question_ids)
        box: Any = contextlib.nullcontext()
        if folded:
            box = st.expander(section(SITE_TEXT, "ask-here", {"n": len(question_ids)}))
        with box:
            for qid in question_ids:
                render_question(self.lesson, bank.question(qid), number[qid])

    def warn(self, readout: Any, *names: str, icon: str = ":material/warning:") -> None:
        """One warning box with the named sections whose condition on the Readout holds."""
        body = "\n\n".join(filter(None, (self.text(name, readout) for name in names)))
        if body:
            st.warning(body, icon=icon)

    # -- the end of every lesson ---------------------------------------------------------------
    def footer(self) -> None:
        """Quiz and exercises, then Reset this lesson and the link to the next lesson."""
        if self.lesson is None:
            raise ValueError("a tool page has no quiz")
        self.say(None, "quiz")
        st.page_link(
            "views/classroom.py",
            label=section(SITE_TEXT, "class-room-link"),
            icon=":material/groups:",
            query_params={"lesson": self.lesson.id},
        )
        render_lesson_practice(
            self.lesson, asked_above=self.predicted, asked_here=self.asked, folded=True
        )
        left, right = st.columns(2, vertical_alignment="center")
        left.button(
            section(SITE_TEXT, "reset-lesson"),
            key=f"{self.prefix}-reset",
            on_click=self.reset,
            help=section(SITE_TEXT, "reset-lesson-help"),
            icon=":material/restart_alt:",
        )
        following = _next(self.lesson)
        if following is not None:
            with right:
                st.page_link(
                    following.page,
                    label=section(SITE_TEXT, "next-lesson", {"title": following.title}),
                    icon=":material/arrow_forward:",
                )


def _said(spec: Any, value: Any) -> str:
    """A control's value as its widget shows it, as plain text."""
    if isinstance(spec, Choice):
        return shown(spec.format(value))
    if isinstance(spec, Toggle):
        return section(SITE_TEXT, "present-on" if value else "present-off")
    if isinstance(value, int):
        return f"{value:,}"
    return shown(value)


def _always(_: dict[str, Any]) -> bool:
    return True


def _next(current: Lesson) -> Lesson | None:
    order = list(lessons())
    i = order.index(current)
    return order[i + 1] if i + 1 < len(order) else None


def _has_fp8(gpu: str | None) -> bool:
    from sim.hardware import get_gpu

    return gpu is None or bool(get_gpu(gpu).fp8_tflops)
