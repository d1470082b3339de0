"""Warms the heavy lessons' caches in the background: their opening runs once per server
process, so a class finds them ready, and the settings a learner is likely to ask for next.

The lessons that run streams of requests (When memory runs out, Who goes first, Too many
requests, What to watch) take seconds to build their opening runs. A server started before class
builds every lesson's opening readout in one background thread (lowest priority it can get):
their runs land in the lessons' own caches (functools caches of their modules), so the first
learner to open a lesson with its opening settings finds the runs made.

Then, moving a main slider to a value nobody has asked for yet runs the simulator afresh (Who
goes first runs five policies over its workload, most of a second on this machine). While the
learner reads, `ahead` has one more low-priority worker run the values next to the current ones
through the page's own cached build (`st.cache_resource`), so the next move is usually a cache
hit. A page that asks for a value being prepared waits for that run (Streamlit's compute lock
per cached value) instead of running it twice. A setting is skipped only while it waits or runs:
once built it may be asked for again, which costs a cache lookup while the page's cache holds it,
and builds it anew after the cache has let it go.

Python runs one thread at a time, and the operating system's low priority does not decide which
thread holds that lock, so a run prepared while a learner's page is running would take half of
its time. A prepared run therefore starts only once no page has run its controls for QUIET_S
(`touch`, called by every lesson page's run, fragment reruns included); one already started runs
on (it cannot be stopped midway).

`STEPWISE_WARM=0` turns both off (the tests and the benchmarks do, to measure cold pages; the
page benchmark also times reruns with `ahead` on).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Hashable, Iterable

from lessons.course import lessons

QUEUE_SIZE = 8  # settings waiting to be prepared; more are dropped (a learner asks for them)
QUIET_S = 0.3  # a prepared run waits until no page has run for this long (see above)

_log = logging.getLogger(__name__)
_jobs: queue.Queue[tuple[Callable, Hashable]] = queue.Queue(maxsize=QUEUE_SIZE)
_pending: set[tuple[Callable, Hashable]] = set()  # (wrapped function, setting) queued or running
_lock = threading.Lock()
_worker: threading.Thread | None = None
_last_run = 0.0  # time.monotonic() of the latest page run (`touch`)


def enabled() -> bool:
    return os.environ.get("STEPWISE_WARM", "1") != "0"


def warm_all() -> list[str]:
    """Build each lesson's opening readout (and its prediction's facts, and whatever else its
    page draws that the lesson lists in WARM_ALSO); the ids done."""
    done = []
    for lesson in lessons():
        module = importlib.import_module(f"lessons.{lesson.id}.lesson")
        try:
            predict = importlib.import_module(f"lessons.{lesson.id}.predict")
        except ModuleNotFoundError:
            predict = None
        if predict is not None:
            predict.answers()  # builds the opening readout through the lesson's caches
        elif hasattr(module, "build"):
            module.build(module.Params())
        for also in getattr(module, "WARM_ALSO", ()):  # more of the opening page's runs
            also(module.Params())
        done.append(lesson.id)
    return done


def _low_priority() -> None:
    with contextlib.suppress(AttributeError, OSError):
        os.nice(10)  # on Linux niceness is per thread: learners' reruns come first


def _run() -> None:
    _low_priority()
    try:
        warm_all()
    except Exception:  # a lesson that fails here fails again, with its message, on its page
        _log.exception("warming the lessons failed")


def start() -> bool:
    """Start the warm-up thread unless STEPWISE_WARM=0; True if started."""
    if not enabled():
        return False
    threading.Thread(target=_run, name="stepwise-warm", daemon=True).start()
    return True


def ahead(build: Callable[[Hashable], object], settings: Iterable[Hashable]) -> int:
    """Queue `build(s)` for each of `settings` not already waiting or being built (unless
    STEPWISE_WARM=0) and return how many were queued. `build` is a cached function: its own
    cache keeps the result."""
    if not enabled():
        return 0
    global _worker
    touch()  # called while a page runs: its prepared runs start once it is done
    queued = 0
    with _lock:
        for s in settings:
            key = _key(build, s)
            if key in _pending:
                continue
            try:
                _jobs.put_nowait((build, s))
            except queue.Full:
                break
            _pending.add(key)
            queued += 1
        if queued and (_worker is None or not _worker.is_alive()):
            _worker = threading.Thread(target=_prepare, name="stepwise-ahead", daemon=True)
            _worker.start()
    return queued


def touch() -> None:
    """A page is running: prepared runs wait until QUIET_S after the latest call."""
    global _last_run
    _last_run = time.monotonic()


def _wait_quiet() -> None:
    while (left := QUIET_S - (time.monotonic() - _last_run)) > 0:
        time.sleep(left)


def _key(build: Callable, s: Hashable) -> tuple[Callable, Hashable]:
    # A page makes its cached function anew on every run: what it wraps is the same function.
    return getattr(build, "__wrapped__", build), s


def _prepare() -> None:
    _low_priority()
    while True:
        build, s = _jobs.get()
        try:
            _wait_quiet()
            build(s)
        except Exception:  # a bad setting is reported by its page when a learner asks for it
            _log.debug("preparing %r failed", s, exc_info=True)
        finally:
            with _lock:
                _pending.discard(_key(build, s))
            _jobs.task_done()


def wait_idle() -> None:
    """Block until every queued setting is prepared (for tests and benchmarks)."""
    _jobs.join()
