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
"""

from __future__ import annotations

import math
import os
import re
import threading
import time
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


def create_engine(url: str) -> Engine:
    """A new engine for `url` (SQLite: WAL, busy timeout, its folder created)."""
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = _sqlite_file(parsed)
        if path is not None:
            folder = path.parent
            if not folder.exists():
                folder.mkdir(parents=True, exist_ok=True)
                if folder == DEFAULT_DB.parent:
                    (folder / ".gitignore").write_text("*\n", encoding="utf-8")
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
    return sa.create_engine(parsed, pool_pre_ping=True)


def create_tables(engine: Engine, tables: sa.MetaData | None = None) -> None:
    """Create the tables of `tables` (the answer log by default) if missing. Two processes doing
    so at the same moment can collide on PostgreSQL (CREATE TABLE is not atomic with the check);
    the loser tries again."""
    for attempt in range(3):
        try:
            (tables or metadata).create_all(engine, checkfirst=True)
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
        if create:
            create_tables(engine)

    @classmethod
    def from_url(cls, url: str | None = None) -> Store:
        """A store with an engine of its own (tests, benchmarks); the app uses `open_store`."""
        return cls(create_engine(resolve_url(url)))

    @property
    def backend(self) -> str:
        return self.engine.dialect.name

    def describe(self) -> str:
        """The database, password hidden (for logs and the README's examples)."""
        return self.engine.url.render_as_string(hide_password=True)

    def append(self, learner: str, new: Sequence[Answer], *, source: str = "app") -> list[Answer]:
        """Add answers to the end of a learner's log, in one transaction; returns them with
        their sequence numbers."""
        if not new:
            return []
        rows = [_checked(learner, a, source) for a in new]
        with self.engine.begin() as conn:
            if len(rows) == 1:
                seqs = [conn.execute(answers.insert(), rows[0]).inserted_primary_key[0]]
            else:  # one multi-row INSERT: sequence numbers follow the rows' order
                insert = answers.insert().returning(answers.c.seq, sort_by_parameter_order=True)
                seqs = list(conn.execute(insert, rows).scalars())
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

    def answers(self, learner: str) -> list[Answer]:
        """A learner's answers in log order (an unknown or malformed id has none)."""
        if not valid_learner(learner):
            return []
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
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def dispose(self) -> None:
        self.engine.dispose()


RETRY_AFTER_S = 5.0
_stores: dict[str, Store] = {}
_failed: dict[str, tuple[float, Exception]] = {}
_lock = threading.Lock()


class StoreUnavailable(sa.exc.SQLAlchemyError):
    """The database could not be opened a moment ago; not tried again until RETRY_AFTER_S."""


def open_store(url: str | None = None) -> Store:
    """The process's store for `url` (see the module docstring): created once, then reused.

    A database that cannot be opened is not tried again for a few seconds, so that every
    session's rerun does not wait for it."""
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
            raise StoreUnavailable(str(failed[1]).splitlines()[0] if str(failed[1]) else "")
        try:
            store = Store(create_engine(resolved))
        except sa.exc.SQLAlchemyError as exc:
            _failed[resolved] = (time.monotonic(), exc)
            raise
        _failed.pop(resolved, None)
        _stores[resolved] = store
        return store
