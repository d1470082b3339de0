"""The answer log (lessons/quiz/store.py), the same tests on SQLite and on PostgreSQL.

Why: a learner's progress must survive reloads and restarts, and two tabs (or two app servers)
writing for the same learner at once must lose nothing and count nothing twice. The log is
append-only and XP is derived from it, so these tests write from several threads and processes
at once and check every answer arrived exactly once, and that both backends derive the same XP
from the same answers.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from lessons.course import lessons
from lessons.quiz.progress import Answer, derive, grade_question, max_xp
from lessons.quiz.store import (
    DEFAULT_DB,
    Store,
    open_store,
    resolve_url,
    sqlite_url,
    valid_learner,
)

ROOT = Path(__file__).resolve().parents[1]
COURSE = [(lsn.bank(), lsn.exercises()) for lsn in lessons()]
QUESTIONS = [(bank, q) for bank, _ in COURSE for q in bank.questions]


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return sqlite_url(tmp_path / "progress.db")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def store(url):
    s = Store.from_url(url)
    yield s
    s.dispose()


def _learner() -> str:
    return secrets.token_urlsafe(18)


def _answer(i: int, marker: float) -> Answer:
    """The i-th answer of a writer: cycles through every question, right and wrong by turns."""
    bank, q = QUESTIONS[i % len(QUESTIONS)]
    right = (i // len(QUESTIONS) + i) % 2 == 0
    choice = q.correct_choice if right else next(c for c in q.choices if c != q.correct_choice)
    return grade_question(bank, q.id, choice, at=marker)


def test_answers_round_trip_in_log_order(store):
    learner = _learner()
    rows = [
        Answer("q:step_loop:order", True, choice="Ünïcode – “quotes” ✓", at=1.5),
        Answer("ex:step_loop:blocks", False, seed=123_456, value=38.25, at=2.5),
        Answer("ex:step_loop:blocks", False, seed=0, value=None, at=3.5),
        Answer("ex:step_loop:blocks", False, seed=0, value=float("nan"), at=4.5),
    ]
    written = store.append(learner, rows[:2]) + store.append(learner, rows[2:])
    seqs = [a.seq for a in written]
    assert seqs == sorted(seqs) and len(set(seqs)) == 4
    back = store.answers(learner)
    assert [a.seq for a in back] == seqs
    assert [(a.item, a.correct, a.choice, a.seed, a.value, a.at) for a in back] == [
        ("q:step_loop:order", True, "Ünïcode – “quotes” ✓", None, None, 1.5),
        ("ex:step_loop:blocks", False, None, 123_456, 38.25, 2.5),
        ("ex:step_loop:blocks", False, None, 0, None, 3.5),
        ("ex:step_loop:blocks", False, None, 0, None, 4.5),  # NaN is stored as no value
    ]
    assert store.answers(_learner()) == []  # another learner has none


def test_a_batch_keeps_its_order_in_the_log(store):
    """An imported file is one append: its answers must keep the file's order."""
    learner = _learner()
    batch = [_answer(i, float(i)) for i in range(60)]
    written = store.append(learner, batch)
    assert [a.at for a in written] == [float(i) for i in range(60)]
    back = store.answers(learner)
    assert [a.at for a in back] == [float(i) for i in range(60)]
    assert [a.seq for a in back] == [a.seq for a in written] == sorted(a.seq for a in back)


def test_learner_ids_are_checked(store):
    assert valid_learner(_learner())
    for bad in ["", "short", "x" * 65, "has space in it ok", "é" * 20, None, 12345678901234567]:
        assert not valid_learner(bad)
        assert store.answers(bad) == []
        with pytest.raises(ValueError):
            store.append(bad, [Answer("q:a:b", True, choice="a")])


def test_the_table_is_created_if_missing(url, tmp_path):
    if url.startswith("sqlite"):
        fresh = sqlite_url(tmp_path / "sub" / "folder" / "new.db")
    else:
        name = "fresh_" + secrets.token_hex(4)
        admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
        admin.dispose()
        fresh = url.rsplit("/", 1)[0] + "/" + name
    s = Store.from_url(fresh)
    try:
        learner = _learner()
        s.append(learner, [_answer(0, 1.0)])
        again = Store.from_url(fresh)  # a second start finds the table and keeps the rows
        assert len(again.answers(learner)) == 1
        again.dispose()
    finally:
        s.dispose()


def test_two_threads_writing_at_once_lose_nothing_and_count_nothing_twice(store):
    learner, writers, per_writer = _learner(), 4, 120
    barrier = threading.Barrier(writers)
    errors = []

    def write(w: int) -> None:
        try:
            for i in range(per_writer):
                if i in (0, 1, per_writer // 2):  # meet the others, so the writes interleave
                    barrier.wait(timeout=60)  # even when a loaded machine runs one at a time
                store.append(learner, [_answer(i, w * 100_000 + i)])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    _check_every_answer_once(store, learner, writers, per_writer)


_WRITER = """
import dataclasses
import json
import sys
import time
from lessons.quiz.progress import Answer
from lessons.quiz.store import Store
url, learner, nw = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = Store.from_url(url)
store.count()  # connected
print("ready", flush=True)
answers = [Answer(**row) for row in json.loads(sys.stdin.readline())]  # go
n = len(answers)
for i, answer in enumerate(answers):
    if i in (1, n // 2):  # meet the others twice, so the writes interleave even under load
        deadline = time.monotonic() + 60
        while store.count(learner) < nw * i and time.monotonic() < deadline:
            time.sleep(0.005)
    store.append(learner, [answer])
"""


def test_processes_writing_at_once_lose_nothing_and_count_nothing_twice(store, url):
    """Separate processes: what several app servers (or `streamlit run` twice) would do. Each
    writer is handed its graded answers (grading needs the quiz banks, which are computed and
    slow to build), so it only imports the store."""
    learner, writers, per_writer = _learner(), 3, 60
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, url, learner, str(writers)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(writers)
    ]
    for p in procs:  # every writer connected; then all go at once
        assert p.stdout.readline().strip() == "ready", p.communicate(timeout=60)[1]
    for w, p in enumerate(procs):
        rows = [dataclasses.asdict(_answer(i, w * 100_000 + i)) for i in range(per_writer)]
        p.stdin.write(json.dumps(rows) + "\n")
        p.stdin.flush()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    _check_every_answer_once(store, learner, writers, per_writer)


def _check_every_answer_once(store: Store, learner: str, writers: int, per_writer: int) -> None:
    log = store.answers(learner)
    writer = [int(a.at // 100_000) for a in log]
    switches = sum(a != b for a, b in zip(writer, writer[1:], strict=False))
    assert switches >= writers, "the writers did not overlap; the test proved nothing"
    markers = sorted(a.at for a in log)
    assert markers == sorted(w * 100_000 + i for w in range(writers) for i in range(per_writer))
    assert len({a.seq for a in log}) == len(log)
    prog = derive(log, COURSE)
    # Each question counted once, from its first answer in log order, whichever writer gave it.
    first = {}
    for a in log:
        first.setdefault(a.item, a.correct)
    expected = sum(q.xp for bank, q in QUESTIONS if first.get(f"q:{bank.lesson}:{q.id}"))
    assert sum(q.xp for bank, q in QUESTIONS if f"q:{bank.lesson}:{q.id}" in prog.awarded) == (
        expected
    )
    assert prog.xp <= max_xp(COURSE)


def test_both_backends_derive_the_same_progress_from_the_same_log(tmp_path, pg_url):
    log = [_answer(i, 1_000 + i) for i in range(3 * len(QUESTIONS))]
    results = []
    for url in (sqlite_url(tmp_path / "same.db"), pg_url):
        s = Store.from_url(url)
        learner = _learner()
        for start in range(0, len(log), 7):
            s.append(learner, log[start : start + 7])
        back = s.answers(learner)
        s.dispose()
        prog = derive(back, COURSE)
        results.append((prog.xp, prog.awarded, dict(prog.first), prog.lessons))
    assert results[0] == results[1]
    assert results[0][0] == derive(log, COURSE).xp > 0


def test_the_first_answer_in_the_log_decides_on_both_backends(store):
    """Two tabs answer the same question at once, one right, one wrong: whichever the log holds
    first decides; the other is recorded and earns nothing."""
    bank, q = QUESTIONS[0]
    wrong = next(c for c in q.choices if c != q.correct_choice)
    learner = _learner()
    store.append(learner, [grade_question(bank, q.id, wrong)])
    store.append(learner, [grade_question(bank, q.id, q.correct_choice)])
    prog = derive(store.answers(learner), COURSE)
    assert prog.xp == 0 and len(prog.log) == 2
    other = _learner()
    store.append(other, [grade_question(bank, q.id, q.correct_choice)])
    store.append(other, [grade_question(bank, q.id, wrong)])
    assert derive(store.answers(other), COURSE).xp == q.xp


def test_open_store_keeps_one_engine_per_database(tmp_path):
    url = sqlite_url(tmp_path / "cached.db")
    assert open_store(url) is open_store(url)
    open_store(url).dispose()


def test_which_database(monkeypatch, tmp_path):
    monkeypatch.delenv("STEPWISE_DATABASE_URL", raising=False)
    monkeypatch.delenv("STEPWISE_PROGRESS_DB", raising=False)
    assert resolve_url() == sqlite_url(DEFAULT_DB)
    assert DEFAULT_DB.parent == ROOT / ".stepwise"
    monkeypatch.setenv("STEPWISE_PROGRESS_DB", str(tmp_path / "mine.db"))
    assert resolve_url() == sqlite_url(tmp_path / "mine.db")
    monkeypatch.setenv("STEPWISE_DATABASE_URL", "postgresql+psycopg://u@h/db")
    assert resolve_url() == "postgresql+psycopg://u@h/db"
    assert resolve_url("sqlite:////x.db") == "sqlite:////x.db"


def test_tests_write_to_a_temp_database():
    """tests/conftest.py points the app at a temp file: nothing lands in .stepwise/."""
    assert resolve_url() != sqlite_url(DEFAULT_DB)
    assert "stepwise-tests-" in resolve_url()


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(tmp_path):
    s = Store.from_url(sqlite_url(tmp_path / "wal.db"))
    try:
        with s.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000
    finally:
        s.dispose()


def test_the_quiz_engine_does_not_import_streamlit():
    code = (
        "import sys\n"
        "import lessons.quiz.progress, lessons.quiz.saved, lessons.quiz.store\n"
        "assert 'streamlit' not in sys.modules, 'lessons/quiz imports streamlit'\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
