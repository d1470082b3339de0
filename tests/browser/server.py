"""Start the real app (`streamlit run app.py`) on a free loopback port, for browser tests and the
browser benchmark alike."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(log_path: Path | None = None, timeout_s: float = 60) -> tuple[subprocess.Popen, str]:
    """Launch the server and wait for /_stcore/health; returns (process, base URL).

    Raises RuntimeError (after stopping the process) if it does not become healthy in time.
    """
    port = free_port()
    out = subprocess.DEVNULL if log_path is None else log_path.open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "app.py",
            "--server.headless=true",
            "--server.address=127.0.0.1",
            f"--server.port={port}",
            "--browser.gatherUsageStats=false",
            "--server.fileWatcherType=none",
        ],
        cwd=ROOT,
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=1) as resp:
                if resp.read() == b"ok":
                    return proc, url
        except OSError:
            time.sleep(0.2)
    stop(proc)
    raise RuntimeError(f"streamlit did not become healthy within {timeout_s:.0f} s")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
