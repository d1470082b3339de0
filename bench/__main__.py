"""`make bench`: run every bench/bench_*.py module and write BENCHMARKS.md.

Each module has `run() -> str`, a Markdown section with its own tables, headed by one "## "
line. Timings are medians of several runs on this machine (shared and noisy: compare ratios
measured in one run, not absolute times across machines). Tests never assert times; this file
is where speeds are recorded.

`python -m bench trace scheduler` (or `make bench ONLY="trace scheduler"`) runs only those
modules and replaces their sections in BENCHMARKS.md, keeping the others and saying which
sections the partial run wrote. A module that fails gets a section saying so; the others are
still written.
"""

from __future__ import annotations

import importlib
import os
import platform
import re
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "BENCHMARKS.md"
os.environ["STEPWISE_WARM"] = "0"  # pages are timed cold: no background warm-up (ui/warm.py)


def _section(name: str) -> str:
    print(f"bench: {name} ...", flush=True)
    started = time.perf_counter()
    try:
        text = importlib.import_module(f"bench.{name}").run().strip()
    except Exception as exc:  # a failed module must not lose the others' figures
        traceback.print_exc()
        first = (str(exc) or repr(exc)).splitlines()[0]
        text = f"## {name}: not measured\n\nThe run failed: {first}"
    print(f"bench: {name} done in {time.perf_counter() - started:.1f} s", flush=True)
    return text


def _key(section: str) -> str:
    """A section's identity: its heading up to the first colon or parenthesis."""
    return re.split(r"[:(]", section.split("\n", 1)[0], maxsplit=1)[0].strip()


def _machine() -> str:
    load = os.getloadavg()
    return (
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load average at the end "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}."
    )


def _merge(old: str, new: dict[str, str], names: list[str]) -> str:
    """BENCHMARKS.md with the sections of `new` (by key) replaced or appended."""
    head, *sections = re.split(r"\n(?=## )", old.strip())
    kept = [new.pop(_key(s), s).strip() for s in sections]  # no blank lines piling up
    head = re.sub(r"\n\nPartial run .*", "", head.rstrip(), flags=re.S)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    head += f"\n\nPartial run {stamp} ({', '.join(names)}): {_machine()}"
    return "\n\n".join([head, *kept, *new.values()]) + "\n"


def main(argv: list[str]) -> int:
    only = {a.removeprefix("bench_") for a in argv}
    names = sorted(p.stem for p in (ROOT / "bench").glob("bench_*.py"))
    unknown = only - {n.removeprefix("bench_") for n in names}
    if unknown:
        print(f"bench: no such benchmark: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    chosen = [n for n in names if not only or n.removeprefix("bench_") in only]
    sections = [_section(name) for name in chosen]
    if only and OUT.exists():
        text = _merge(OUT.read_text(encoding="utf-8"), {_key(s): s for s in sections}, chosen)
    else:
        text = (
            "# Benchmarks\n\n"
            "Written by `make bench` (bench/__main__.py); do not edit by hand.\n\n"
            f"{_machine()} Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n\n"
            + "\n\n".join(sections)
            + "\n"
        )
    OUT.write_text(text, encoding="utf-8")
    print(f"bench: wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
