"""Where a learner's answers are kept: one append-only table, in SQLite or PostgreSQL.

The only write is "append these answers for this learner" (one INSERT in one transaction); the
only read is "this learner's answers in log order". Nothing is ever updated or deleted, so two
tabs, two app servers or two processes writing for the same learner at once cannot lose or
double-count each other's work: every answer is its own row with its own sequence number, and
what the learner earned is derived from the rows (lessons/quiz/progress.py).

Which database (first match wins):
1. a URL given to `open_store` (the app passes STEPWISE_DATABASE_URL, or the url of
   `[connections.sql]` in .streamlit/secrets.toml), e.g.
   `postgresql+psycopg://user:password@host:5432/stepwise` or `sqlite:////abs/path/progress.db`;
2. the env var STEPWISE_DATABASE_URL;
3. an SQLite file at STEPWISE_PROGRESS_DB, default `.stepwise/progress.db` in the app folder
   (created on first use, with a .gitignore of its own so it is never committed).

SQLite runs in WAL mode with a busy timeout, so readers never block the writer and concurrent
writers wait for each other instead of failing. One engine per database per process
(`open_store` caches it); tables are created if missing. This module never imports streamlit.

Faults (what the app relies on, tests/test_store_faults.py):
- a write given `within_s` (the app's: WRITE_WITHIN_S) waits for a lock, or retries after a lost
  connection, at most that long, then raises; a retry first drops the rows an earlier attempt
  may have committed unseen, so nothing is written twice;
- an SQLite file deleted or replaced while the engine is open is noticed before the next read or
  write (its device and inode are not the ones opened): the pool is emptied and the file, its
  folder and every table created here are made again (`Store.generation` counts these reopens,
  so a session can write back what it still holds);
- an SQLite path that cannot be created or opened raises `StorePathError` (path and reason),
  never an OSError.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from lessons.quiz.progress import Answer

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DB = ROOT / ".stepwise" / "progress.db"
ENV_URL = "STEPWISE_DATABASE_URL"
ENV_PATH = "STEPWISE_PROGRESS_DB"
BUSY_TIMEOUT_MS = 10_000
WRITE_WITHIN_S = 3.0  # the longest a learner's Check waits for the database (ui/state.py)
PG_CONNECT_TIMEOUT_S = 3  # a PostgreSQL server that does not answer fails a connect this fast
_log = logging.getLogger(__name__)

LEARNER_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
MAX_ITEM = 200
MAX_CHOICE = 2_000

metadata = sa.MetaData()
answers = sa.Table(
    "stepwise_answers",
    metadata,
    sa.Column(
        "seq",
        sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column("learner", sa.String(64), nullable=False),
    sa.Column("item", sa.String(MAX_ITEM), nullable=False),
    sa.Column("choice", sa.Text(), nullable=True),
    sa.Column("seed", sa.BigInteger(), nullable=True),
    sa.Column("value", sa.Float(precision=53), nullable=True),
    sa.Column("correct", sa.Boolean(), nullable=False),
    sa.Column("answered_at", sa.Float(precision=53), nullable=False),
    sa.Column("source", sa.String(8), nullable=False, server_default="app"),
    sa.Index("ix_stepwise_answers_learner_seq", "learner", "seq"),
    sqlite_autoincrement=True,  # sequence numbers are never reused
)


def valid_learner(learner: object) -> bool:
    """An anonymous learner id: 16-64 characters of A-Z a-z 0-9 _ - (secrets.token_urlsafe)."""
    return isinstance(learner, str) and LEARNER_ID.fullmatch(learner) is not None


def sqlite_url(path: str | Path) -> str:
    return f"sqlite:///{Path(path).expanduser().resolve()}"


def resolve_url(url: str | None = None) -> str:
    """The database URL to use: the one given, STEPWISE_DATABASE_URL, or the SQLite file."""
    if url:
        return url
    env = os.environ.get(ENV_URL, "").strip()
    if env:
        return env
    return sqlite_url(os.environ.get(ENV_PATH, "").strip() or DEFAULT_DB)


def _sqlite_file(url: sa.URL) -> Path | None:
    db = url.database
    if not db or db == ":memory:" or db.startswith("file:"):
        return None
    return Path(db)


class StoreUnavailable(sa.exc.SQLAlchemyError):
    """The database could not be opened a moment ago; not tried again until RETRY_AFTER_S."""


class StorePathError(StoreUnavailable):
    """The SQLite file or its folder cannot be created or opened (a setting to fix, not a wait):
    `path` and `reason` say which and why, for a message the learner reads as plain text."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


def _make_folder(path: Path) -> None:
    """Create the folder of an SQLite file if missing (StorePathError if it cannot be)."""
    folder = path.parent
    if folder.is_dir():
        return
    above = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if above is not None and not above.is_dir():
        raise StorePathError(path, f"{above} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if folder == DEFAULT_DB.parent:
            (folder / ".gitignore").write_text("*\n", encoding="utf-8")
    except OSError as exc:
        raise StorePathError(path, exc.strerror or str(exc)) from None


def create_engine(url: str) -> Engine:
    """A new engine for `url` (SQLite: WAL, busy timeout, its folder created; PostgreSQL:
    connections checked before use, a connect timeout)."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = _sqlite_file(parsed)
        if path is not None:
            _make_folder(path)
        engine = sa.create_engine(
            parsed, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000, "check_same_thread": False}
        )

        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection, _record) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            # FULL: each commit is on disk before the learner sees "Correct!" (NORMAL would save
            # about half a millisecond a write here and could lose the last answers on a power cut)
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.close()

        return engine
    if parsed.get_backend_name() == "postgresql":
        connect_args = {"connect_timeout": PG_CONNECT_TIMEOUT_S}
        return sa.create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)
    return sa.create_engine(parsed, pool_pre_ping=True)


_created: weakref.WeakKeyDictionary[Engine, list[sa.MetaData]] = weakref.WeakKeyDictionary()


def create_tables(engine: Engine, tables: sa.MetaData | None = None) -> None:
    """Create the tables of `tables` (the answer log by default) if missing. Two processes doing
    so at the same moment can collide on PostgreSQL (CREATE TABLE is not atomic with the check);
    the loser tries again. The engine remembers them, so a reopened SQLite file gets them all."""
    tables = tables or metadata
    known = _created.setdefault(engine, [])
    if not any(t is tables for t in known):
        known.append(tables)
    for attempt in range(3):
        try:
            tables.create_all(engine, checkfirst=True)
            return
        except sa.exc.DBAPIError:
            if attempt == 2:
                raise
            time.sleep(0.1 * (attempt + 1))


def _checked(learner: str, answer: Answer, source: str) -> dict:
    if not valid_learner(learner):
        raise ValueError("not a learner id")
    if not isinstance(answer.item, str) or not 0 < len(answer.item) <= MAX_ITEM:
        raise ValueError("an answer needs an item key of at most 200 characters")
    if answer.choice is not None and len(answer.choice) > MAX_CHOICE:
        raise ValueError("an answer's choice is too long")
    value = answer.value
    if value is not None and not math.isfinite(value):
        value = None  # an answer box cannot hold it; it was graded wrong
    return {
        "learner": learner,
        "item": answer.item,
        "choice": answer.choice,
        "seed": answer.seed,
        "value": value,
        "correct": bool(answer.correct),
        "answered_at": float(answer.at) if math.isfinite(answer.at) else 0.0,
        "source": source,
    }


def log_key(answer: Answer) -> tuple:
    """What tells one answer from another in a learner's log, as the store keeps it (its sequence
    number aside): the same answer written twice has the same key. Keys are what a retry, or a
    session writing back what it holds, checks against the log so as not to write twice."""
    value = answer.value if answer.value is None or math.isfinite(answer.value) else None
    at = float(answer.at) if math.isfinite(answer.at) else 0.0
    return (answer.item, answer.choice, answer.seed, value, bool(answer.correct), at)


def _row_key(row: dict) -> tuple:
    keys = ("item", "choice", "seed", "value", "correct", "answered_at")
    return tuple(row[k] for k in keys)


def _transient(exc: sa.exc.DBAPIError) -> bool:
    """A failure worth trying again: a lock that did not clear, a connection lost or refused."""
    if exc.connection_invalidated:
        return True
    return isinstance(exc, (sa.exc.OperationalError, sa.exc.InterfaceError))


def _identity(path: Path) -> tuple[int, int] | None:
    """The device and inode of the file at `path` (None: no file there)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


_READ = (
    sa.select(
        answers.c.seq,
        answers.c.item,
        answers.c.choice,
        answers.c.seed,
        answers.c.value,
        answers.c.correct,
        answers.c.answered_at,
    )
    .where(answers.c.learner == sa.bindparam("learner"))
    .order_by(answers.c.seq)
)


class Store:
    """The answer log of every learner in one database."""

    def __init__(self, engine: Engine, *, create: bool = True) -> None:
        self.engine = engine
        self.generation = 0  # how many times the SQLite file was found gone and made again
        self._file = _sqlite_file(engine.url) if engine.dialect.name == "sqlite" else None
        self._reopen_lock = threading.Lock()
        if create:
            create_tables(engine)
        self._identity = None if self._file is None else _identity(self._file)

    @classmethod
    def from_url(cls, url: str | None = None) -> Store:
        """A store with an engine of its own (tests, benchmarks); the app uses `open_store`."""
        resolved = resolve_url(url)
        try:
            return cls(create_engine(resolved))
        except (sa.exc.SQLAlchemyError, OSError) as exc:
            raise _unavailable(resolved, exc) from exc

    @property
    def backend(self) -> str:
        return self.engine.dialect.name

    def describe(self) -> str:
        """The database, password hidden (for logs and the README's examples)."""
        return self.engine.url.render_as_string(hide_password=True)

    def check_file(self) -> bool:
        """SQLite: if the file at the path is not the one the engine opened (deleted, or replaced
        by another), empty the pool and make the file and its tables again. True if it did.

        Without this, pooled connections keep reading and writing the deleted file, and every
        answer is gone at the next restart."""
        if self._file is None or _identity(self._file) == self._identity:
            return False
        with self._reopen_lock:
            if _identity(self._file) == self._identity:
                return False  # another thread reopened it meanwhile
            self._reopen()
            return True

    def _reopen(self) -> None:
        """Close every pooled connection to the old file, then create the new one and its tables.
        A write-ahead log left next to a deleted file is removed first: SQLite would otherwise
        replay the old file's pages into the new one."""
        assert self._file is not None
        gone = not self._file.exists()
        how = "deleted" if gone else "replaced"
        _log.warning("progress database %s was %s while open: opening it again", self._file, how)
        self.engine.dispose()
        if gone:
            for suffix in ("-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    Path(f"{self._file}{suffix}").unlink()
        _make_folder(self._file)
        for tables in list(_created.get(self.engine, [metadata])):
            create_tables(self.engine, tables)
        self._identity = _identity(self._file)
        self.generation += 1

    def append(
        self,
        learner: str,
        new: Sequence[Answer],
        *,
        source: str = "app",
        within_s: float | None = None,
    ) -> list[Answer]:
        """Add answers to the end of a learner's log, in one transaction; returns them with
        their sequence numbers.

        `within_s`: wait for a lock, or try again after a lost connection, at most this long in
        all, then raise (None: one attempt, waiting as long as the busy timeout). A retry first
        reads the log and leaves out the rows an attempt that failed had written after all."""
        if not new:
            return []
        rows = [_checked(learner, a, source) for a in new]
        if within_s is None:
            self.check_file()
            return self._insert(rows, None)
        deadline = time.monotonic() + within_s
        attempt = 0
        while True:
            try:
                self.check_file()
                if attempt == 0:
                    return self._insert(rows, within_s)
                return self._insert_missing(learner, rows, deadline - time.monotonic())
            except sa.exc.DBAPIError as exc:
                left = deadline - time.monotonic()
                if not _transient(exc) or left <= 0:
                    raise
            attempt += 1
            time.sleep(min(0.05 * 2**attempt, left))

    def _insert_missing(self, learner: str, rows: list[dict], wait_s: float) -> list[Answer]:
        """Insert the rows the log does not hold yet; returns every row, as logged."""
        logged = {log_key(a): a for a in self.answers(learner)}
        missing = [r for r in rows if _row_key(r) not in logged]
        written = iter(self._insert(missing, wait_s) if missing else [])
        return [logged.get(_row_key(r)) or next(written) for r in rows]

    def _insert(self, rows: list[dict], wait_s: float | None) -> list[Answer]:
        """One INSERT transaction, waiting at most `wait_s` for a lock (None: the defaults)."""
        with self.engine.begin() as conn:
            self._wait_at_most(conn, wait_s)
            try:
                if len(rows) == 1:
                    seqs = [conn.execute(answers.insert(), rows[0]).inserted_primary_key[0]]
                else:  # one multi-row INSERT: sequence numbers follow the rows' order
                    insert = answers.insert().returning(answers.c.seq, sort_by_parameter_order=True)
                    seqs = list(conn.execute(insert, rows).scalars())
            finally:
                if wait_s is not None and self.backend == "sqlite":
                    with contextlib.suppress(sa.exc.DBAPIError):  # back to the pool's default
                        conn.exec_driver_sql(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        return [
            Answer(
                item=row["item"],
                correct=row["correct"],
                choice=row["choice"],
                seed=row["seed"],
                value=row["value"],
                at=row["answered_at"],
                seq=int(seq),
            )
            for row, seq in zip(rows, seqs, strict=True)
        ]

    def _wait_at_most(self, conn: sa.Connection, wait_s: float | None) -> None:
        """Bound how long this transaction waits for another's lock (SQLite: the busy timeout
        of this connection; PostgreSQL: lock_timeout, for this transaction only)."""
        if wait_s is None:
            return
        ms = max(1, int(wait_s * 1000))
        if self.backend == "sqlite":
            conn.exec_driver_sql(f"PRAGMA busy_timeout={ms}")
        elif self.backend == "postgresql":
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = {ms}")

    def answers(self, learner: str) -> list[Answer]:
        """A learner's answers in log order (an unknown or malformed id has none)."""
        if not valid_learner(learner):
            return []
        self.check_file()
        with self.engine.connect() as conn:
            rows = conn.execute(_READ, {"learner": learner}).fetchall()
        return [
            Answer(item, bool(correct), choice, seed, value, at, seq)
            for seq, item, choice, seed, value, correct, at in rows
        ]

    def count(self, learner: str | None = None) -> int:
        query = sa.select(sa.func.count()).select_from(answers)
        if learner is not None:
            query = query.where(answers.c.learner == learner)
        self.check_file()
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def dispose(self) -> None:
        self.engine.dispose()


RETRY_AFTER_S = 5.0
_stores: dict[str, Store] = {}
_failed: dict[str, tuple[float, StoreUnavailable]] = {}
_lock = threading.Lock()


def _locked(exc: sa.exc.DBAPIError) -> bool:
    text = str(exc.orig).lower()
    return "locked" in text or "busy" in text


def _unavailable(url: str, exc: Exception) -> StoreUnavailable:
    """What opening `url` failed with, as the app reports it: StorePathError when an SQLite
    file or its folder cannot be made or opened, StoreUnavailable otherwise."""
    if isinstance(exc, StoreUnavailable):
        return exc
    parsed = sa.make_url(url)
    path = _sqlite_file(parsed) if parsed.get_backend_name() == "sqlite" else None
    if path is not None and isinstance(exc, OSError):
        return StorePathError(path, exc.strerror or str(exc))
    if path is not None and isinstance(exc, sa.exc.DBAPIError) and not _locked(exc):
        return StorePathError(path, str(exc.orig).splitlines()[0] if str(exc.orig) else "")
    text = str(exc)
    return StoreUnavailable(text.splitlines()[0] if text else type(exc).__name__)


def _again(failure: StoreUnavailable) -> StoreUnavailable:
    """A fresh exception saying the same as a remembered failure."""
    if isinstance(failure, StorePathError):
        return StorePathError(failure.path, failure.reason)
    return StoreUnavailable(str(failure))


def open_store(url: str | None = None) -> Store:
    """The process's store for `url` (see the module docstring): created once, then reused.

    A database that cannot be opened raises StoreUnavailable (StorePathError for an SQLite path
    that cannot be created) and is not tried again for a few seconds, so that every session's
    rerun does not wait for it."""
    resolved = resolve_url(url)
    store = _stores.get(resolved)
    if store is not None:
        return store
    with _lock:
        store = _stores.get(resolved)
        if store is not None:
            return store
        failed = _failed.get(resolved)
        if failed is not None and time.monotonic() - failed[0] < RETRY_AFTER_S:
            raise _again(failed[1])
        try:
            store = Store(create_engine(resolved))
        except (sa.exc.SQLAlchemyError, OSError) as exc:
            failure = _unavailable(resolved, exc)
            _failed[resolved] = (time.monotonic(), failure)
            raise _again(failure) from exc
        _failed.pop(resolved, None)
        _stores[resolved] = store
        return store
