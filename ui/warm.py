"""Warms the heavy lessons once per server process, so a class finds them ready.

The lessons that run streams of requests (When memory runs out, Who goes first, Too many
requests, What to watch) take seconds to build their opening runs. A server started before class
builds every lesson's opening readout in one background thread (lowest priority it can get):
their runs land in the lessons' own caches (functools caches of their modules), so the first
learner to open a lesson with its opening settings finds the runs made. `STEPWISE_WARM=0` turns
it off (the tests and the benchmarks do, to measure cold pages).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import threading

from lessons.course import lessons


def enabled() -> bool:
    return os.environ.get("STEPWISE_WARM", "1") != "0"


def warm_all() -> list[str]:
    """Build each lesson's opening readout (and its prediction's facts); the ids done."""
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
        done.append(lesson.id)
    return done


def _run() -> None:
    with contextlib.suppress(AttributeError, OSError):
        os.nice(10)  # on Linux niceness is per thread: learners' reruns come first
    try:
        warm_all()
    except Exception:  # a lesson that fails here fails again, with its message, on its page
        logging.getLogger(__name__).exception("warming the lessons failed")


def start() -> bool:
    """Start the warm-up thread unless STEPWISE_WARM=0; True if started."""
    if not enabled():
        return False
    threading.Thread(target=_run, name="stepwise-warm", daemon=True).start()
    return True
