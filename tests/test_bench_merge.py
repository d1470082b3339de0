"""A partial benchmark run replaces only its own sections of BENCHMARKS.md (bench/__main__.py)."""

from __future__ import annotations

from bench.__main__ import _key, _merge

OLD = """# Benchmarks

Written by `make bench`.

Machine: x. Written 2026-01-01.

Partial run 2026-01-02 (bench_a): Machine: y.

## Alpha: 1 thing (a.py)

old alpha

## Beta (b.py)

old beta
"""


def test_a_partial_run_replaces_its_sections_and_keeps_the_rest():
    new = "## Beta (b.py)\n\nnew beta"
    gamma = "## Gamma: new\n\ngamma"
    out = _merge(OLD, {_key(new): new, _key(gamma): gamma}, ["bench_beta", "bench_gamma"])
    assert "old alpha" in out and "new beta" in out and "old beta" not in out
    assert out.index("## Alpha") < out.index("## Beta") < out.index("## Gamma")
    assert out.count("Partial run") == 1 and "(bench_beta, bench_gamma)" in out
    assert "Written 2026-01-01." in out  # the full run's stamp stays for the kept sections


def test_a_section_is_known_by_its_heading_before_any_figure():
    assert (
        _key("## Class quiz: 30 students\n\n...")
        == _key("## Class quiz: 10 students")
        == ("## Class quiz")
    )
    assert _key("## Scheduler (sim/scheduler.py)\n") == "## Scheduler"
