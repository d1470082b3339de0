"""The app server's settings (.streamlit/config.toml) that speed and the offline rule rely on."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit import config

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def project_config(monkeypatch):
    """Streamlit's options as it reads them when the app is started from the project root."""
    monkeypatch.chdir(ROOT)
    config.get_config_options(force_reparse=True)
    yield config
    monkeypatch.undo()
    config.get_config_options(force_reparse=True)


def test_no_forced_collection_after_each_run(project_config):
    # Streamlit's default collects all garbage after every script and fragment run: about 80 ms
    # with the lessons loaded, paid by every slider move and every class-quiz poll.
    assert project_config.get_option("runner.postScriptGC") is False


def test_no_usage_statistics_sent_out(project_config):
    # a classroom is often offline, and the app makes no request to another host
    assert project_config.get_option("browser.gatherUsageStats") is False
