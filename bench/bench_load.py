"""A class on one server (issue 37): N sessions (40 unless STEPWISE_LOAD_SESSIONS or
`--sessions` says otherwise) open the four heavy lessons of a freshly started app server and move
each lesson's main slider a few times, one step at a time, with think time between moves.

No browser: 40 Chromium contexts do not fit two cores. Each session is a small client of
Streamlit's own websocket protocol (`/_stcore/stream`, `BackMsg` and `ForwardMsg` from
`streamlit.proto`), doing what the browser does: it opens the page by name with its query string,
reads the slider (label, widget id, options, fragment) from the deltas it receives, sends the
widget's new value in a `rerun_script` (with the fragment's id when the slider sits in an
`st.fragment`, the page's script hash and the address bar's latest query string), and lists the
cacheable messages it holds, as the browser's message cache does. A rerun is timed from the send
to its `script_finished`. Streamlit 1.67 ends a fragment rerun with
FINISHED_FRAGMENT_RUN_SUCCESSFULLY and a whole-page run with FINISHED_SUCCESSFULLY; a run that
calls `st.rerun()` (the fragments of Too many requests and When memory runs out do on some
moves) first sends FINISHED_EARLY_FOR_RERUN, and the move is timed to the end of the whole-page
run that follows.

The server runs as `make run` serves it (warm-up on, ui/warm.py: STEPWISE_LOAD_WARM=0 turns it
off) with a fresh progress database and nothing cached. Sessions arrive within ARRIVE_S of the
server being up (or, with STEPWISE_LOAD_PREWARM_S or `--prewarm`, that long after one visit to
Start, which starts the warm-up); moves still waiting at DEADLINE_S are reported as unfinished,
so the whole bench takes at most about three minutes. `python -m bench.bench_load --sessions 10`
prints the section without writing BENCHMARKS.md; `make bench ONLY=load` writes it.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.Slider_pb2 import Slider as SliderProto
from streamlit.proto.WidgetStates_pb2 import WidgetState

if TYPE_CHECKING:
    import subprocess

    from websockets.asyncio.client import ClientConnection

SESSIONS = int(os.environ.get("STEPWISE_LOAD_SESSIONS", "40"))
MOVES = 3  # slider moves per session
THINK_S = (2.0, 6.0)  # a learner reads this long (uniform) before each move
ARRIVE_S = 5.0  # sessions open within this many seconds of each other
DEADLINE_S = 120.0  # no move starts after this
GRACE_S = 30.0  # then runs still going are cut off and counted as not done
WAIT_S = 120.0  # one run that takes longer is an error
SEED = 37
# 0: the class finds the server just started. The warm-up (ui/warm.py) starts with the first
# page anyone opens, so "started early" means opened once, this many seconds before the class.
PREWARM_S = float(os.environ.get("STEPWISE_LOAD_PREWARM_S", "0"))
# The heavy lessons and the main slider each moves (the field of the lesson's Params).
HEAVY = (
    ("memory", "prompt_tokens"),
    ("policies", "load_pct"),
    ("overload", "load_pct"),
    ("watch", "itl_target_ms"),
)
_DONE = ForwardMsg.FINISHED_SUCCESSFULLY
_FRAGMENT_DONE = ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY
_RESTARTED = ForwardMsg.FINISHED_EARLY_FOR_RERUN


class LoadError(Exception):
    """A session could not do what a learner does (no slider, an exception shown, a timeout)."""


@dataclasses.dataclass
class Slider:
    """A slider as the last run drew it: its widget id, value and the fragment it sits in."""

    id: str
    options: tuple[str, ...]  # a select_slider's options as shown; () for a numeric slider
    value: str | float
    fragment: str
    lo: float = 0.0
    hi: float = 0.0
    step: float = 1.0

    @classmethod
    def of(cls, proto: SliderProto, fragment: str, known: Slider | None) -> Slider:
        """The slider a delta draws. Its value is the one the script set, else the one the
        browser holds (`known`, what it last sent or was given), else the default."""
        options = tuple(proto.options)
        if proto.set_value:
            value: str | float = proto.raw_value[0] if options else proto.value[0]
        elif known is not None and known.id == proto.id:
            value = known.value
        else:
            value = options[int(proto.default[0])] if options else proto.default[0]
        return cls(proto.id, options, value, fragment, proto.min, proto.max, proto.step)

    def moved(self, direction: int) -> tuple[WidgetState, int]:
        """The widget state one step away (turning back at either end) and the direction taken."""
        state = WidgetState(id=self.id)
        if self.options:
            i = self.options.index(str(self.value))
            if not 0 <= i + direction < len(self.options):
                direction = -direction
            state.string_array_value.data.append(self.options[i + direction])
        else:
            v = float(self.value) + direction * self.step
            if not self.lo <= v <= self.hi:
                direction = -direction
                v = float(self.value) + direction * self.step
            state.double_array_value.data.append(v)
        return state, direction


class Session:
    """One learner's tab: a websocket to the server and what the browser would keep from it."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.query = ""
        self.page_hash = ""
        self.sliders: dict[str, Slider] = {}
        self.cache: set[str] = set()  # hashes of cacheable messages received
        self.shown_errors: list[str] = []

    async def run(
        self, page: str = "", fragment: str = "", widgets: Iterable[WidgetState] = ()
    ) -> tuple[float, str]:
        """Send one rerun_script; wait for its script_finished. (seconds, "page"/"fragment")."""
        msg = BackMsg()
        rerun = msg.rerun_script
        rerun.query_string = self.query
        if page:
            rerun.page_name = page
        else:  # the page the last run showed ("" at first: the default page)
            rerun.page_script_hash = self.page_hash
        rerun.fragment_id = fragment
        rerun.widget_states.widgets.extend(widgets)
        rerun.cached_message_hashes.extend(sorted(self.cache))
        started = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        kind = "fragment" if fragment else "page"
        while True:
            raw = await asyncio.wait_for(self.ws.recv(), WAIT_S)
            fwd = ForwardMsg()
            fwd.ParseFromString(raw)
            self._read(fwd)
            if fwd.WhichOneof("type") != "script_finished":
                continue
            if fwd.script_finished == _RESTARTED:
                kind = "fragment, then page" if fragment else "page"
                continue
            if fwd.script_finished not in (_DONE, _FRAGMENT_DONE):
                raise LoadError(f"script finished with status {fwd.script_finished}")
            return time.perf_counter() - started, kind

    def _read(self, fwd: ForwardMsg) -> None:
        what = fwd.WhichOneof("type")
        if fwd.metadata.cacheable and fwd.hash:  # large elements (charts): never a slider
            self.cache.add(fwd.hash)
        if what == "navigation":
            self.page_hash = fwd.navigation.page_script_hash
        elif what == "page_info_changed":
            self.query = fwd.page_info_changed.query_string
        elif what == "delta" and fwd.delta.WhichOneof("type") == "new_element":
            element = fwd.delta.new_element
            if element.WhichOneof("type") == "slider":
                label = element.slider.label
                known = self.sliders.get(label)
                self.sliders[label] = Slider.of(element.slider, fwd.delta.fragment_id, known)
            elif element.WhichOneof("type") == "exception":
                self.shown_errors.append(element.exception.message)

    async def move(self, label: str, direction: int) -> tuple[float, str, int]:
        """Move the slider called `label` one step; (seconds, kind of rerun, direction taken)."""
        if label not in self.sliders:
            raise LoadError(f"no slider {label!r} on the page")
        slider = self.sliders[label]
        state, direction = slider.moved(direction)
        slider.value = (
            state.string_array_value.data[0] if slider.options else state.double_array_value.data[0]
        )
        seconds, kind = await self.run(fragment=slider.fragment, widgets=[state])
        return seconds, kind, direction


@dataclasses.dataclass(frozen=True)
class Plan:
    """What the learners do: how many, how many moves each, and when."""

    sessions: int = SESSIONS
    moves: int = MOVES
    think_s: tuple[float, float] = THINK_S
    arrive_s: float = ARRIVE_S
    deadline_s: float = DEADLINE_S
    prewarm_s: float = PREWARM_S  # one visit to Start this long before the class arrives


@dataclasses.dataclass
class Results:
    """Everything one run of the bench measured."""

    plan: Plan
    opens: list[tuple[str, float]] = dataclasses.field(default_factory=list)  # (lesson, s)
    moves: list[tuple[str, float, str]] = dataclasses.field(default_factory=list)  # +kind
    errors: list[str] = dataclasses.field(default_factory=list)
    unfinished: int = 0  # moves planned but not started, or not finished, by the deadline
    wall_s: float = 0.0


def main_control(lesson_id: str, field: str) -> tuple[str, str, str]:
    """The label, the link's key and the default (as the link writes it) of the lesson's control
    of `field` (lessons/<id>/lesson.py)."""
    from lessons.kit.controls import declared

    module = importlib.import_module(f"lessons.{lesson_id}.lesson")
    d = next(d for d in declared(module.Params) if d.name == field)
    return d.spec.label, d.url_key(module.PREFIX), str(d.default)


def took(query: str, key: str, value: str, default: str) -> bool:
    """Whether the address bar's `query` shows the slider's `value` (a default is left out)."""
    pairs = dict(p.partition("=")[::2] for p in query.split("&") if p)
    return pairs.get(key, default) == value


def _ws_url(url: str) -> str:
    return url.replace("http://", "ws://", 1) + "/_stcore/stream"


async def _learner(url: str, i: int, plan: Plan, deadline: float, out: Results) -> None:
    """Session `i`: arrive, open its lesson, move its slider `plan.moves` times."""
    import websockets

    rng = random.Random(SEED + i)
    lesson_id, field = HEAVY[i % len(HEAVY)]
    label, key, default = main_control(lesson_id, field)
    url_path = importlib.import_module("lessons.course").lesson(lesson_id).url
    await asyncio.sleep(rng.uniform(0, plan.arrive_s))
    done, s = 0, None
    try:
        async with websockets.connect(_ws_url(url), max_size=None, open_timeout=WAIT_S) as ws:
            s = Session(ws)
            seconds, _ = await s.run(page=url_path)
            out.opens.append((lesson_id, seconds))
            direction = rng.choice((-1, 1))
            for _ in range(plan.moves):
                await asyncio.sleep(rng.uniform(*plan.think_s))
                if time.monotonic() > deadline:
                    break
                seconds, kind, direction = await s.move(label, direction)
                if not took(s.query, key, str(s.sliders[label].value), default):
                    raise LoadError(f"the link reads {s.query!r} after a move of {key}")
                out.moves.append((lesson_id, seconds, kind))
                done += 1
    except Exception as exc:  # a timeout, a closed websocket, a LoadError: counted, never hidden
        out.errors.append(f"{lesson_id}: {type(exc).__name__}: {exc}".splitlines()[0])
    finally:
        out.unfinished += plan.moves - done
        shown = s.shown_errors if s is not None else []
        out.errors.extend(f"{lesson_id}: {m.splitlines()[0]}" for m in shown)


async def prewarm(url: str, seconds: float) -> None:
    """Open the Start page once (which starts the warm-up), then wait `seconds`."""
    import websockets

    async with websockets.connect(_ws_url(url), max_size=None, open_timeout=WAIT_S) as ws:
        await Session(ws).run()
    await asyncio.sleep(seconds)


async def drive(url: str, plan: Plan) -> Results:
    """Run `plan.sessions` learners against the server at `url`; what they measured."""
    out = Results(plan)
    started = time.monotonic()
    deadline = started + plan.deadline_s
    tasks = [_learner(url, i, plan, deadline, out) for i in range(plan.sessions)]
    try:
        await asyncio.wait_for(asyncio.gather(*tasks), plan.deadline_s + GRACE_S)
    except TimeoutError:
        out.errors.append(f"runs cut off {GRACE_S:.0f} s after the last move could start")
    out.wall_s = time.monotonic() - started
    return out


def pct(values: Sequence[float], q: float) -> float:
    """The q-th percentile by nearest rank (the value a sample actually took)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def _row(what: str, values: Sequence[float]) -> str:
    if not values:
        return f"| {what} | 0 | | | |"
    return (
        f"| {what} | {len(values)} | {statistics.median(values):.2f} | "
        f"{pct(values, 95):.2f} | {max(values):.2f} |"
    )


def _server_use(pid: int) -> tuple[float, float]:
    """The server process's CPU seconds so far and its resident memory (MB), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        cpu = (int(fields[11]) + int(fields[12])) / ticks
        rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except (OSError, IndexError, ValueError):
        return float("nan"), float("nan")
    return cpu, rss


def report(r: Results, load: tuple[float, float], cpu_s: float, rss_mb: float) -> str:
    """The Markdown section for BENCHMARKS.md; `load` is the 1-minute load average before the
    server started and at the end."""
    plan = r.plan
    titles = {x.id: x.short for x in importlib.import_module("lessons.course").lessons()}
    moves = [s for _, s, _ in r.moves]
    warm = os.environ.get("STEPWISE_LOAD_WARM", "1") != "0"
    started = (
        f"an app server started and opened once {plan.prewarm_s:.0f} s earlier (one process"
        if plan.prewarm_s > 0
        else "a freshly started app server (one process, nothing cached beforehand"
    )
    rows = [_row("first open", [s for _, s in r.opens]), _row("slider move", moves)]
    for kind in sorted({k for _, _, k in r.moves}):
        rows.append(_row(f"slider move, {kind} rerun", [s for _, s, k in r.moves if k == kind]))
    for x, _ in HEAVY:
        rows.append(_row(f"{titles[x]}: first open", [s for y, s in r.opens if y == x]))
        rows.append(_row(f"{titles[x]}: slider move", [s for y, s, _ in r.moves if y == x]))
    errors = "; ".join(sorted(set(r.errors))[:5]) or "none"
    return "\n".join(
        [
            f"## Load: {plan.sessions} sessions on one server (bench/bench_load.py)",
            "",
            f"{plan.sessions} sessions, each a websocket client of Streamlit's protocol (no "
            "browser: what a tab sends and waits for), spread evenly over the four heavy "
            f"lessons, open {started}, warm-up "
            f"{'on, as `make run` starts it' if warm else 'off'}) within {plan.arrive_s:.0f} s "
            f"of each other; each then moves its lesson's main slider up to {plan.moves} "
            f"times, one step each, after {plan.think_s[0]:.0f}-{plan.think_s[1]:.0f} s of "
            "think time. A time runs from the request to the run's `script_finished` (what a "
            "browser waits for before drawing; its drawing comes on top). Median, p95 and max "
            "over the opens and moves of this one run; the bench's client shares the machine "
            "with the server.",
            "",
            "| what | count | median (s) | p95 (s) | max (s) |",
            "|---|---:|---:|---:|---:|",
            *rows,
            "",
            f"Sessions {plan.sessions}, moves done {len(moves)}, moves not done (past the "
            f"{plan.deadline_s:.0f} s bound, or after an error) {r.unfinished}, "
            f"errors {len(r.errors)} ({errors}); "
            f"wall {r.wall_s:.0f} s. The server used {cpu_s:.0f} CPU seconds in that time "
            f"({cpu_s / max(r.wall_s, 1e-9):.2f} of a core on average; one Python process runs "
            f"one thread at a time) and held {rss_mb:,.0f} MB at the end. Load average "
            f"(1 min) before the server started {load[0]:.2f}, at the end {load[1]:.2f}.",
        ]
    )


def start_server(tmp: Path) -> tuple[subprocess.Popen, str]:
    """A fresh app server (tests/browser/server.py) with its own empty progress database;
    warm-up as `make run` has it unless STEPWISE_LOAD_WARM=0. (process, URL)."""
    from tests.browser import server

    saved = dict(os.environ)
    os.environ["STEPWISE_PROGRESS_DB"] = str(tmp / "progress.db")
    os.environ.pop("STEPWISE_DATABASE_URL", None)
    os.environ["STEPWISE_WARM"] = os.environ.get("STEPWISE_LOAD_WARM", "1")
    try:
        return server.start(tmp / "server.log")
    finally:
        os.environ.clear()
        os.environ.update(saved)


def measure(plan: Plan) -> tuple[Results, str]:
    """Start a fresh server, drive the plan's learners against it, stop it: (results, section)."""
    from tests.browser import server

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(Path(tmp))
        try:
            if plan.prewarm_s > 0:
                asyncio.run(prewarm(url, plan.prewarm_s))
            cpu_before, _ = _server_use(proc.pid)
            results = asyncio.run(drive(url, plan))
            cpu_s, rss_mb = _server_use(proc.pid)
            cpu_s -= cpu_before
        finally:
            server.stop(proc)
    return results, report(results, (load_before, os.getloadavg()[0]), cpu_s, rss_mb)


WARMED_S = 30.0  # the second run: the server opened once this long before the class arrives


def run() -> str:
    """`make bench ONLY=load`: the section for BENCHMARKS.md: the class on a freshly started
    server, then the same class on a server opened once WARMED_S before it (README's advice)."""
    cold = measure(Plan())[1]
    warmed = measure(Plan(prewarm_s=WARMED_S))[1].partition("\n")[2]
    title = f"### The same class on a server opened once {WARMED_S:.0f} s before it arrives"
    return f"{cold}\n\n{title}\n{warmed}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_load", description=__doc__)
    parser.add_argument("--sessions", type=int, default=SESSIONS, help="learners (default 40)")
    parser.add_argument("--moves", type=int, default=MOVES, help="slider moves per learner")
    parser.add_argument(
        "--prewarm", type=float, default=PREWARM_S, help="open Start this many s before the class"
    )
    args = parser.parse_args(argv)
    print(measure(Plan(sessions=args.sessions, moves=args.moves, prewarm_s=args.prewarm))[1])
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    raise SystemExit(main(sys.argv[1:]))
