"""A throwaway PostgreSQL cluster for tests and benchmarks: a temp folder, a free loopback port.

Debian's `postgresql` package (scripts/ensure_postgres.sh installs it) brings the binaries;
this makes a cluster of our own with `initdb` (which refuses to run as root, so as root it runs
as the `postgres` user), trusts connections from 127.0.0.1 only, and listens nowhere else. The
cluster and its folder are removed by `stop()`. Nothing here touches a system cluster.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.browser.server import free_port

USER = "stepwise"


class ClusterError(RuntimeError):
    """The cluster could not be started; the message says why in one line."""


def bin_dir() -> Path | None:
    """The folder with initdb and pg_ctl (the newest Debian version, or PATH)."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@dataclass
class Cluster:
    folder: Path
    port: int
    bindir: Path
    as_postgres: bool
    settings: str = ""

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://{USER}@127.0.0.1:{self.port}/postgres"

    def halt(self) -> None:
        """Stop the server, keeping its data and its port (what a restart does first); every
        connection to it is cut. `resume()` starts it again."""
        pg_ctl = [str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data")]
        _run(self, [*pg_ctl, "-m", "fast", "-w", "stop"])

    def resume(self) -> None:
        """Start a halted server again, on the same port with the same data."""
        proc = _start_server(self)
        if proc.returncode != 0:
            raise ClusterError(f"pg_ctl start failed: {_last_log_line(self)}")

    def stop(self) -> None:
        _run(
            self,
            [str(self.bindir / "pg_ctl"), "-D", str(self.folder / "data"), "-m", "fast", "-w"]
            + ["stop"],
            check=False,
        )
        shutil.rmtree(self.folder, ignore_errors=True)


def _run(cluster: Cluster, argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
    program = Path(argv[0]).name
    if cluster.as_postgres:
        argv = ["runuser", "-u", "postgres", "--", *argv]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd="/")
    if check and proc.returncode != 0:
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ClusterError(f"{program} failed: {last[0]}")
    return proc


def _start_server(cluster: Cluster) -> subprocess.CompletedProcess:
    """pg_ctl start on the cluster's port, with its settings, waiting until it accepts."""
    return _run(
        cluster,
        [str(cluster.bindir / "pg_ctl"), "-D", str(cluster.folder / "data")]
        + ["-l", str(cluster.folder / "log"), "-w", "-t", "30"]
        + ["-o", f"-p {cluster.port} -k {cluster.folder} {cluster.settings}", "start"],
        check=False,
    )


def _last_log_line(cluster: Cluster) -> str:
    log = cluster.folder / "log"
    lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    return lines[-1] if lines else "?"


def start(*, durable: bool = False) -> Cluster:
    """Start a cluster; `durable=False` turns fsync off (tests), True keeps the defaults
    (benchmarks: a commit waits for the disk as it would in a class's database)."""
    bindir = bin_dir()
    if bindir is None:
        raise ClusterError("PostgreSQL is not installed (apt-get install postgresql)")
    as_postgres = os.geteuid() == 0
    if as_postgres and shutil.which("runuser") is None:
        raise ClusterError("running as root without runuser to become postgres")
    folder = Path(tempfile.mkdtemp(prefix="stepwise-pg-"))
    if as_postgres:
        try:
            shutil.chown(folder, user="postgres")
        except (LookupError, PermissionError) as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise ClusterError(f"no postgres user to run initdb as ({exc})") from None
    cluster = Cluster(folder=folder, port=0, bindir=bindir, as_postgres=as_postgres)
    data = folder / "data"
    try:
        _run(
            cluster,
            [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", USER, "-E", "UTF8"]
            + ["--no-sync", "--locale=C"],
        )
        settings = "-c listen_addresses=127.0.0.1 -c max_connections=100"
        if not durable:
            settings += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        cluster.settings = settings
        for _attempt in range(3):
            cluster.port = free_port()
            if _start_server(cluster).returncode == 0:
                return cluster
            time.sleep(0.2)  # the port was taken between free_port() and the bind: try another
        raise ClusterError(f"pg_ctl start failed: {_last_log_line(cluster)}")
    except (ClusterError, OSError, subprocess.TimeoutExpired) as exc:
        cluster.stop()
        if isinstance(exc, ClusterError):
            raise
        raise ClusterError(f"could not start PostgreSQL: {exc}") from None
