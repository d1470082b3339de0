"""`make bench`: run every bench/bench_*.py module and write BENCHMARKS.md.

Each module has `run() -> str`, a Markdown section with its own tables. Timings are medians of
several runs on this machine (shared and noisy: compare ratios measured in one run, not absolute
times across machines). Tests never assert times; this file is where speeds are recorded.
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ["STEPWISE_WARM"] = "0"  # pages are timed cold: no background warm-up (ui/warm.py)


def main(argv: list[str]) -> int:
    only = set(argv)
    names = sorted(p.stem for p in (ROOT / "bench").glob("bench_*.py"))
    sections = []
    for name in names:
        if only and name not in only and name.removeprefix("bench_") not in only:
            continue
        print(f"bench: {name} ...", flush=True)
        started = time.perf_counter()
        module = importlib.import_module(f"bench.{name}")
        sections.append(module.run().strip())
        print(f"bench: {name} done in {time.perf_counter() - started:.1f} s", flush=True)
    load = os.getloadavg()
    header = (
        "# Benchmarks\n\n"
        "Written by `make bench` (bench/__main__.py); do not edit by hand.\n\n"
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load average at the end "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}. "
        f"Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n"
    )
    out = ROOT / "BENCHMARKS.md"
    if only and out.exists():
        print("bench: partial run; BENCHMARKS.md sections printed below, file not rewritten")
        print("\n\n".join(sections))
        return 0
    out.write_text(header + "\n" + "\n\n".join(sections) + "\n", encoding="utf-8")
    print(f"bench: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
