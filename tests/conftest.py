"""Session-wide test set-up: progress goes to a throwaway database, PostgreSQL when available.

Tests must never write to a learner's real progress: before any test runs, STEPWISE_PROGRESS_DB
and STEPWISE_DATABASE_URL point at an SQLite file in a temp folder (the URL too, so that a
`[connections.sql]` in a developer's .streamlit/secrets.toml cannot reach the tests either).
Servers that browser tests start inherit the same environment, hence the same file.

`pg_url` starts one throwaway PostgreSQL cluster (tests/pg_cluster.py) the first time a test asks
for it and removes it at the end. If it cannot start, those tests are skipped and the terminal
summary says so in one loud line.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests import pg_cluster

_TMP = Path(tempfile.mkdtemp(prefix="stepwise-tests-"))
TEST_DB = _TMP / "progress.db"
os.environ["STEPWISE_PROGRESS_DB"] = str(TEST_DB)
os.environ["STEPWISE_DATABASE_URL"] = f"sqlite:///{TEST_DB}"
os.environ["STEPWISE_WARM"] = "0"  # no background warm-up (ui/warm.py) competing with tests

_PG: dict = {"error": None, "asked": False}

# The slowest files first, slowest at the top (measured with --durations): pytest-xdist hands
# whole files to the two workers in collection order, so a long file that started last would
# leave the other worker idle at the end of the run. Every other file follows in its own order.
SLOW_FIRST = (
    "browser/test_pages.py",
    "browser/test_safety.py",
    "test_cross_page_b.py",
    "test_cross_page.py",
    "test_differential.py",
    "browser/test_memory.py",
    "browser/test_anim_link.py",
    "browser/test_progress_browser.py",
    "test_lesson_throughput_curve.py",
    "test_lesson_choosing_budget.py",
    "browser/test_present.py",
    "test_lesson_memory.py",
    "test_sweep.py",
    "browser/test_classroom.py",
    "test_lesson_watch.py",
)


def pytest_collection_modifyitems(config, items):
    missing = [name for name in SLOW_FIRST if not (Path(__file__).parent / name).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py SLOW_FIRST names no such file: {missing}")
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}

    def order(item) -> int:
        return rank.get(item.nodeid.split("::")[0].removeprefix("tests/"), len(SLOW_FIRST))

    items.sort(key=order)  # a stable sort: each file keeps its tests' order


def pytest_sessionstart(session):
    """Empty test-output/screenshots/ once per run: in the controller of a run with workers (or
    a run without), never in a worker, which would delete screenshots the other one took."""
    if not hasattr(session.config, "workerinput"):
        shutil.rmtree(Path(__file__).resolve().parents[1] / "test-output" / "screenshots", True)


def pytest_unconfigure(config):
    shutil.rmtree(_TMP, ignore_errors=True)


def pytest_terminal_summary(terminalreporter):
    if _PG["asked"] and _PG["error"] is not None:
        terminalreporter.write_line(
            f"!!! POSTGRESQL TESTS SKIPPED: {_PG['error']}; run scripts/ensure_postgres.sh !!!",
            red=True,
            bold=True,
        )


@pytest.fixture(scope="session")
def pg_url():
    """The URL of a throwaway PostgreSQL cluster, removed at the end (skips if none starts)."""
    _PG["asked"] = True
    try:
        cluster = pg_cluster.start()
    except pg_cluster.ClusterError as exc:
        _PG["error"] = str(exc)
        pytest.skip(f"POSTGRESQL TESTS SKIPPED: {exc}")
    yield cluster.url
    cluster.stop()
