"""Workload generators, the spec grammar (sim/generators.py) and CSV traces (sim/trace.py)."""

from __future__ import annotations

import io

import numpy as np
import pytest

from sim.errors import SimInputError
from sim.generators import (
    SPEC_HELP,
    arrivals,
    burst_workload,
    constant_workload,
    from_spec,
    lengths,
    parse_spec,
    poisson_workload,
)
from sim.load import load_workload
from sim.trace import read_trace_csv, write_trace_csv
from sim.workload import Workload

SPEC = "poisson:rate=8,n=1000,prompt=lognormal:1024:0.8,output=uniform:16:512,seed=0"
FIELDS = ("prompt_tokens", "output_tokens", "arrival_s", "priority", "tenant", "prefix_id")


def same(a: Workload, b: Workload) -> bool:
    arrays = all(np.array_equal(getattr(a, f), getattr(b, f)) for f in FIELDS)
    return arrays and np.array_equal(a.prefix_tokens, b.prefix_tokens)


# --- generators ------------------------------------------------------------------------------


def test_same_seed_same_workload_and_other_seed_differs():
    a, b = from_spec(SPEC), from_spec(SPEC)
    assert same(a, b)
    c = from_spec(SPEC.replace("seed=0", "seed=1"))
    assert not np.array_equal(a.arrival_s, c.arrival_s)
    assert not np.array_equal(a.prompt_tokens, c.prompt_tokens)


def test_python_constructor_matches_the_spec():
    w = poisson_workload(1000, 8, prompt="lognormal:1024:0.8", output="uniform:16:512", seed=0)
    assert same(w, from_spec(SPEC))
    assert w.request_ids[:3] == ("0", "1", "2")
    spaced = from_spec(
        " Poisson: rate = 8 , n=1000, prompt=lognormal:1024:0.8,output=uniform:16:512"
    )
    assert same(w, spaced)


def test_python_constructors_check_types():
    with pytest.raises(SimInputError, match="n must be a whole number, got 2.5"):
        burst_workload(2.5)
    with pytest.raises(SimInputError, match="rate=0 must be > 0"):
        poisson_workload(3, 0.0)


def test_options_do_not_change_the_other_draws():
    base = from_spec(SPEC)
    more = from_spec(SPEC + ",tenants=3,interactive=0.5")
    assert np.array_equal(base.arrival_s, more.arrival_s)
    assert np.array_equal(base.prompt_tokens, more.prompt_tokens)


def test_poisson_rate_and_first_arrival():
    w = poisson_workload(20_000, 8.0, seed=3)
    gaps = np.diff(w.arrival_s)
    assert w.arrival_s[0] == 0.0
    assert np.all(gaps >= 0)
    assert (w.num_requests - 1) / w.arrival_s[-1] == pytest.approx(8.0, rel=0.03)
    # exponential gaps: standard deviation equals the mean
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.05)


def test_constant_and_burst_arrivals():
    assert np.allclose(constant_workload(5, 4.0).arrival_s, [0, 0.25, 0.5, 0.75, 1.0])
    assert np.array_equal(burst_workload(4).arrival_s, np.zeros(4))
    rng = np.random.default_rng(0)
    assert arrivals("constant", 3, 2.0, rng).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(SimInputError, match="rate > 0"):
        arrivals("poisson", 3, 0.0, rng)


def test_length_distributions():
    rng = np.random.default_rng(0)
    n = 20_000
    assert np.array_equal(lengths("fixed", [7], 3, rng, max_tokens=100), [7, 7, 7])
    uni = lengths("uniform", [16, 20], n, rng, max_tokens=100)
    assert set(np.unique(uni).tolist()) == {16, 17, 18, 19, 20}
    logn = lengths("lognormal", [1024, 0.8], n, rng, max_tokens=1_000_000)
    assert np.median(logn) == pytest.approx(1024, rel=0.05)
    assert np.log(logn).std() == pytest.approx(0.8, rel=0.05)
    tail = lengths("longtail", [500], n, rng, max_tokens=100_000)
    assert np.median(tail) == pytest.approx(500, rel=0.05)
    # Pareto(1.5): p99 / p50 = 50 ** (1 / 1.5) ~ 13.6, a lognormal of sigma 0.8 gives ~6.4
    assert np.percentile(tail, 99) / np.median(tail) > 10
    clipped = lengths("longtail", [500, 1.0], n, rng, max_tokens=4000)
    assert clipped.max() == 4000
    assert clipped.min() >= 1
    assert clipped.dtype == np.int64


def test_classes_tenants_and_shared_prefix():
    w = from_spec(
        "burst:n=20000,prompt=fixed:100,output=fixed:10,interactive=0.3,batch_prompt=fixed:900,"
        "batch_output=uniform:50:60,tenants=4,prefix=64,prefixes=2,seed=5"
    )
    batch = w.priority == 1
    assert set(np.unique(w.priority).tolist()) == {0, 1}
    assert batch.mean() == pytest.approx(0.7, abs=0.02)
    assert np.all(w.prompt_tokens[batch] == 964)
    assert np.all(w.prompt_tokens[~batch] == 164)
    assert np.all(w.output_tokens[~batch] == 10)
    assert w.output_tokens[batch].min() >= 50
    assert w.output_tokens[batch].max() <= 60
    assert set(np.unique(w.tenant).tolist()) == {0, 1, 2, 3}
    assert set(np.unique(w.prefix_id).tolist()) == {0, 1}
    assert np.all(w.prefix_tokens == 64)
    plain = from_spec("burst:n=3")
    assert np.all(plain.prefix_id == -1)
    assert np.all(plain.prefix_tokens == 0)
    assert np.all(plain.prompt_tokens == 512)


def test_max_model_len_keeps_prompts_below_it():
    w = from_spec("burst:n=5000,prompt=longtail:2000:1.0,prefix=100", max_model_len=4096)
    assert w.prompt_tokens.max() == 4095
    assert w.prompt_tokens.min() >= 101


def test_to_spec_round_trip():
    spec = parse_spec(SPEC + ",interactive=0.25,tenants=3,prefix=32,output_max=300")
    again = parse_spec(spec.to_spec())
    assert again == spec
    assert same(spec.build(), again.build())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty workload spec"),
        ("poison:rate=1,n=3", "must start with poisson:, constant:, burst: or concurrency:"),
        ("poisson:n=3", "poisson arrivals need rate=R"),
        ("poisson:rate=-2,n=3", "rate=-2 must be > 0"),
        ("constant:rate=fast,n=3", "rate: 'fast' is not a number"),
        ("constant:rate=inf,n=3", "not a finite number"),
        ("burst:n=1000001", "must be between 1 and 1,000,000"),
        ("burst:n=0", "must be between 1 and 1,000,000"),
        ("burst:n=2.5", "'2.5' is not a whole number"),
        ("burst:n=3,rate=1", "burst arrivals take no rate"),
        ("burst:n=3,rat=1", "unknown key 'rat' (did you mean 'rate'?)"),
        ("burst:n=3,n=4", "n is given twice"),
        ("burst:n=3,seed", "expected KEY=VALUE, got 'seed'"),
        ("burst:rate=1", "needs n=N"),
        ("burst:n=3,prompt=gauss:5", "unknown length kind 'gauss'"),
        ("burst:n=3,prompt=uniform:9", "the form is uniform:LO:HI"),
        ("burst:n=3,prompt=uniform:9:3", "HI below LO"),
        ("burst:n=3,prompt=fixed:0", "at least 1 token"),
        ("burst:n=3,output=fixed:2.5", "whole numbers"),
        ("burst:n=3,prompt=lognormal:100:9", "SIGMA between 0 and 5"),
        ("burst:n=3,interactive=1.5", "fraction in 0..1"),
        ("burst:n=3,batch_prompt=fixed:9", "need interactive=F"),
        ("burst:n=3,prompt=fixed:5000", "above the maximum of 4095 tokens"),
        ("burst:n=3,prefix=4095", "leaves no room"),
        ("burst:n=3,prompt_max=4096", "must be below max_model_len=4096"),
        ("burst:n=3,seed=-1", "seed=-1 must be >= 0"),
    ],
)
def test_bad_specs_name_the_problem(spec, message):
    with pytest.raises(SimInputError) as info:
        from_spec(spec, max_model_len=4096)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_spec_help_documents_every_key():
    for key in ("poisson", "constant", "burst", "n ", "rate", "prompt", "output", "seed"):
        assert key in SPEC_HELP
    for key in ("interactive", "batch_prompt", "tenants", "prefix", "prefixes", "prompt_max"):
        assert key in SPEC_HELP


# --- traces ----------------------------------------------------------------------------------


def write(tmp_path, text: str | bytes, name: str = "trace.csv"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_trace_sorted_stably_by_arrival_with_row_ids(tmp_path):
    path = write(
        tmp_path,
        "arrival_s,prompt_tokens,output_tokens,priority,tenant,prefix_id,prefix_tokens,note\n"
        "0.5,10,3,1,alice,0,4,x\n"
        "0.1,20,2,0,bob,-1,0,y\n"
        "0.1,30,4,0,alice,0,4,z\n",
    )
    w = read_trace_csv(path, max_model_len=31)
    assert w.request_ids == ("2", "3", "1")
    assert w.arrival_s.tolist() == [0.1, 0.1, 0.5]
    assert w.prompt_tokens.tolist() == [20, 30, 10]
    assert w.output_tokens.tolist() == [2, 4, 3]
    assert w.priority.tolist() == [0, 0, 1]
    assert w.tenant.tolist() == [1, 0, 0]  # alice = 0, bob = 1: order of first appearance
    assert w.prefix_id.tolist() == [-1, 0, 0]
    assert w.prefix_tokens.tolist() == [0, 4, 4]
    assert w.arrival_step is None


def test_trace_accepts_buffers_and_header_spacing():
    text = " Arrival_s , prompt_tokens,output_tokens\n0, 5,2\n"
    w = read_trace_csv(io.BytesIO(text.encode("utf-8-sig")))
    assert (w.prompt_tokens.tolist(), w.output_tokens.tolist()) == ([5], [2])
    assert read_trace_csv(io.StringIO(text)).request_ids == ("1",)


def test_trace_round_trip(tmp_path):
    w = from_spec(SPEC + ",interactive=0.3,tenants=4,prefix=128,prefixes=3")
    path = tmp_path / "out.csv"
    write_trace_csv(w, path)
    back = read_trace_csv(path)
    assert same(w, back)
    assert back.request_ids == w.request_ids
    steps = Workload.build([5], [1], arrival_step=[1])
    with pytest.raises(SimInputError, match="only a timed workload"):
        write_trace_csv(steps, tmp_path / "x.csv")


HEADER = "arrival_s,prompt_tokens,output_tokens\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("arrival_s,prompt_tokens\n0,5\n", "missing column output_tokens"),
        ("time,prompt,output\n0,5,1\n", "missing column arrival_s, prompt_tokens, output_tokens"),
        (
            HEADER + "0,5,1\n0.5,five,1\n1,6,1\n2,x,1\n",
            "prompt_tokens is not a number in 2 rows: rows 3, 5 (row 1 is the header)",
        ),
        (HEADER + "0,5,1\n-1,5,1\n", "arrival_s is negative in 1 row: row 3 (row 1 is the header)"),
        (HEADER + "0,5,-4\n", "output_tokens is below 1 in 1 row: row 2"),
        (HEADER + "0,5.5,1\n", "prompt_tokens is not a whole number in 1 row: row 2"),
        (HEADER + "0,5,1\n1,,1\n", "prompt_tokens is empty in 1 row: row 3"),
        (HEADER + "0,5,1\n\n1,5,1\n", "arrival_s is empty in 1 row: row 3"),
        (HEADER + "0,5,1\nnan,5,1\n", "arrival_s is not a number in 1 row: row 3"),
        (HEADER + "inf,5,1\n", "arrival_s is not a finite number in 1 row: row 2"),
        (HEADER + "0,5,1e30\n", "output_tokens is above 100,000,000 in 1 row: row 2"),
        (
            HEADER + "0,4096,1\n0,4095,1\n0,9000,1\n",
            "prompt_tokens >= max_model_len=4096 (vLLM rejects such prompts) in 2 rows: rows 2, 4",
        ),
        (HEADER + "".join("x,1,1\n" for _ in range(9)), "in 9 rows: rows 2, 3, 4, 5, 6 and 4 more"),
        ("", "is empty; a trace needs a header and rows"),
        (HEADER, "has a header but no requests"),
        (
            HEADER.strip() + ",priorty\n0,5,1,1\n",
            "unknown column 'priorty' (did you mean 'priority'?)",
        ),
        (HEADER.strip() + ",prefix_id\n0,5,1,1\n", "give prefix_id and prefix_tokens together"),
        (
            HEADER.strip() + ",prefix_id,prefix_tokens\n0,5,1,0,6\n",
            "prefix_tokens is above prompt_tokens in 1 row: row 2",
        ),
        (HEADER.strip() + ",request_id\n0,5,1,a\n1,5,1,a\n", "request_id is repeated in 2 rows"),
        (HEADER.strip() + ",tenant\n0,5,1,-2\n", "tenant is negative in 1 row: row 2"),
        (
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
            "is not a CSV text file (it contains binary data)",
        ),
        (HEADER.encode() + b"0,\xff\xfe,1\n", "is not a CSV text file (it is not UTF-8 text)"),
        (HEADER + '0,5,1\n"1,2,3\n', "is not a valid CSV file"),
        # issue 37, fault 6: a bare carriage return in the header was a _csv.Error traceback,
        ("arrival_s,prompt\rx_tokens,output_tokens\n0,1,1\n", "its header (row 1) holds a line"),
        # and a first row wider than the header ran shifted (prompt 5, output 6)
        (
            HEADER + "0,100,10,5,6\n1,5,5\n2,100,10,5,6\n",
            "more fields than the header's 3 (up to 5) in 2 rows: rows 2, 4 (row 1 is the header)",
        ),
        (HEADER + "0,5,1\n0,100,10,5,6\n", "row 3 has 5 fields, the header has 3"),
    ],
)
def test_bad_traces_get_one_line_naming_the_rows(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(SimInputError) as info:
        read_trace_csv(path, max_model_len=4096)
    assert message in str(info.value)
    assert str(info.value).startswith("trace.csv")
    assert "\n" not in str(info.value)


def test_missing_trace_file(tmp_path):
    with pytest.raises(SimInputError, match="trace file not found"):
        read_trace_csv(tmp_path / "nope.csv")


def test_over_a_million_rows_is_refused(tmp_path):
    path = write(tmp_path, HEADER + "0,1,1\n" * 1_000_001, "big.csv")
    with pytest.raises(SimInputError, match=r"big.csv has more than 1,000,000 rows"):
        read_trace_csv(path)


def test_load_workload_dispatches_on_csv_or_spec(tmp_path):
    path = write(tmp_path, HEADER + "0,5,1\n")
    assert load_workload(str(path)).prompt_tokens.tolist() == [5]
    assert load_workload("burst:n=2,prompt=fixed:7").prompt_tokens.tolist() == [7, 7]
    with pytest.raises(SimInputError, match="trace file not found"):
        load_workload(str(tmp_path / "missing.csv"))


def test_take_keeps_the_chosen_requests_and_refuses_a_mask_or_repeats():
    wl = Workload.build(
        [10, 20, 30, 40], [1, 2, 3, 4], arrival_s=[0.0, 0.1, 0.2, 0.3], prefix_id=[0, 1, 0, 1]
    )
    part = wl.take(np.array([3, 1]))
    assert part.prompt_tokens.tolist() == [40, 20] and part.request_ids == ("3", "1")
    assert part.arrival_s.tolist() == [0.3, 0.1] and part.prefix_id.tolist() == [1, 1]
    for bad in (np.array([True, False, True, False]), np.array([1, 1]), np.array([4])):
        with pytest.raises(SimInputError, match="take"):
            wl.take(bad)


def test_a_trace_with_several_bad_columns_names_each_once():
    text = "arrival_s,prompt_tokens,output_tokens\n0,10,5\n-1,-3,-2\n2,x,4\n"
    with pytest.raises(SimInputError) as err:
        read_trace_csv(io.StringIO(text))
    message = str(err.value)
    assert message == (
        "trace: arrival_s is negative in 1 row: row 3; prompt_tokens is not a number in 1 row: "
        "row 4; output_tokens is below 1 in 1 row: row 3 (row 1 is the header)"
    )
