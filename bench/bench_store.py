"""Progress writes: one answer appended to the log, then the learner's XP derived from the log.

That pair is what a Check click costs on top of grading (ui/state.py `record`). Target (issue
8): under 20 ms, with SQLite (the default file, WAL) and with PostgreSQL (a throwaway local
cluster with the durable defaults: fsync on, synchronous_commit on). The learner starts with
100 answers in the log, about a whole course's worth. Also timed with four writers at once (four
tabs or four learners on one server), each write measured on its own.
"""

from __future__ import annotations

import secrets
import statistics
import tempfile
import threading
import time
from pathlib import Path

from lessons.course import lessons
from lessons.quiz.progress import derive, grade_question
from lessons.quiz.store import Store, sqlite_url

WRITES = 300
PRELOAD = 100
THREADS = 4
TARGET_MS = 20.0


def _questions():
    course = [(lsn.bank(), lsn.exercises()) for lsn in lessons()]
    return course, [(bank, q) for bank, _ in course for q in bank.questions]


def _answer(questions, i: int):
    bank, q = questions[i % len(questions)]
    return grade_question(bank, q.id, q.shown_choices[i % len(q.choices)])


def _timed_writes(store: Store, course, questions, n: int) -> tuple[list[float], list[float]]:
    learner = secrets.token_urlsafe(18)
    store.append(learner, [_answer(questions, i) for i in range(PRELOAD)])
    write_ms, total_ms = [], []
    for i in range(n):
        t0 = time.perf_counter()
        store.append(learner, [_answer(questions, i)])
        t1 = time.perf_counter()
        derive(store.answers(learner), course)
        t2 = time.perf_counter()
        write_ms.append((t1 - t0) * 1000)
        total_ms.append((t2 - t0) * 1000)
    return write_ms, total_ms


def _concurrent(store: Store, course, questions) -> list[float]:
    out: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(THREADS)

    def work():
        barrier.wait()
        _, total = _timed_writes(store, course, questions, WRITES // THREADS)
        with lock:
            out.extend(total)

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1]


def _measure(url: str) -> dict:
    store = Store.from_url(url)
    try:
        course, questions = _questions()
        _timed_writes(store, course, questions, 20)  # warm: connections, caches
        write, total = _timed_writes(store, course, questions, WRITES)
        together = _concurrent(store, course, questions)
    finally:
        store.dispose()
    return {"write": write, "total": total, "together": together}


def run() -> str:
    from tests import pg_cluster

    rows = []
    with tempfile.TemporaryDirectory(prefix="stepwise-bench-") as tmp:
        results = {"SQLite (WAL file)": _measure(sqlite_url(Path(tmp) / "progress.db"))}
    note = ""
    try:
        cluster = pg_cluster.start(durable=True)
    except pg_cluster.ClusterError as exc:
        note = f"\n\nPostgreSQL not measured: {exc}."
    else:
        try:
            results["PostgreSQL 15 (local, fsync on)"] = _measure(cluster.url)
        finally:
            cluster.stop()
    for name, r in results.items():
        met = "met" if statistics.median(r["total"]) < TARGET_MS else "NOT met"
        rows.append(
            f"| {name} | {statistics.median(r['write']):.2f} | {statistics.median(r['total']):.2f} "
            f"| {_p(r['total'], 90):.2f} | {max(r['total']):.2f} "
            f"| {statistics.median(r['together']):.2f} | {met} |"
        )
    return (
        "## Progress writes (lessons/quiz/store.py)\n\n"
        f"One answer appended to a learner's log, then the learner's XP derived from the whole "
        f"log (what a Check click adds), {WRITES} times on a log that starts with {PRELOAD} "
        f"answers; and the same with {THREADS} writers at once. Target: under "
        f"{TARGET_MS:.0f} ms.\n\n"
        "| backend | write median (ms) | write + XP median (ms) | p90 (ms) | max (ms) "
        f"| {THREADS} writers at once, median (ms) | target |\n"
        "|---|---:|---:|---:|---:|---:|---|\n" + "\n".join(rows) + note
    )


if __name__ == "__main__":
    print(run())
