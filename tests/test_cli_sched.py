"""`python -m sim replay` and `python -m sim simulate`, run as the processes other checks run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent


def _sim(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sim", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2
    assert proc.stdout == ""
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    for needle in needles:
        assert needle in err


def test_replay_prints_the_recordings_schema():
    recording = json.loads((DATA / "preempt_priority.json").read_text())
    proc = _sim("replay", str(DATA / "preempt_priority.json"))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"steps", "per_request"}
    assert out["steps"] == recording["steps"]
    assert out["per_request"] == recording["per_request"]


def test_replay_summary_keys():
    proc = _sim("replay", str(DATA / "mixed_public.json"), "--summary")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"num_steps", "total_preemptions", "scheduler_seconds"}
    assert out["num_steps"] == 1632 and out["total_preemptions"] == 21
    assert out["scheduler_seconds"] > 0


def test_rejected_configuration_exits_2_with_vllms_reason():
    proc = _sim("replay", str(DATA / "no_chunk.json"))
    _assert_one_line_error(
        proc, "max_num_batched_tokens (2048) is smaller than max_model_len (8192)"
    )


def test_replay_of_an_async_recording():
    recording = json.loads((DATA / "preempt_fcfs_async.json").read_text())
    assert recording["settings"]["async_scheduling"] is True
    proc = _sim("replay", str(DATA / "preempt_fcfs_async.json"))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["steps"] == recording["steps"]
    assert out["per_request"] == recording["per_request"]


def test_unmodelled_setting_and_bad_files_exit_2(tmp_path):
    scenario = json.loads((DATA / "fig82.json").read_text())
    scenario["settings"]["num_speculative_tokens"] = 3
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(scenario))
    _assert_one_line_error(_sim("replay", str(path)), "num_speculative_tokens")
    scenario["settings"] = dict(scenario["settings"], num_speculative_tokens=0)
    scenario["settings"]["async_scheduling"] = "on"
    path.write_text(json.dumps(scenario))
    _assert_one_line_error(_sim("replay", str(path)), "async_scheduling must be true or false")
    _assert_one_line_error(_sim("replay", str(tmp_path / "missing.json")), "no such file")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    _assert_one_line_error(_sim("replay", str(broken)), "not valid JSON")
    scenario = json.loads((DATA / "fig82.json").read_text())
    scenario["requests"][0]["prompt_len"] = 9000  # >= max_model_len 8192
    path.write_text(json.dumps(scenario))
    _assert_one_line_error(_sim("replay", str(path)), "max_model_len")


def test_simulate_prints_metrics(tmp_path):
    trace = tmp_path / "trace.csv"
    rows = ["arrival_s,prompt_tokens,output_tokens"]
    rows += [f"{i * 0.05:.2f},{200 + 10 * i},{20 + i}" for i in range(40)]
    trace.write_text("\n".join(rows) + "\n")
    proc = _sim(
        "simulate",
        "--gpu",
        "H100-SXM",
        "--model",
        "Llama-3.1-8B",
        "--workload",
        str(trace),
        "--ttft-slo-ms",
        "200",
        # the defaults before issue 39, pinned so the numbers keep their meaning
        "--no-enable-prefix-caching",
        "--no-async-scheduling",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["num_finished"] == out["num_requests"] == 40
    assert out["num_output_tokens"] == sum(20 + i for i in range(40))
    assert out["timed"] and out["ttft_ms"]["p50"] > 0 and out["num_good"] <= 40


def test_simulate_with_async_scheduling():
    """--async-scheduling: the same requests all finish with their tokens; a finish is seen one
    output later, so the run has its extra step (and the JSON keeps its keys). Both runs say
    which scheduler they want: async is the default since issue 39, as in vllm serve."""
    args = ["--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--no-enable-prefix-caching"]
    args += ["--workload", "poisson:rate=20,n=60,prompt=uniform:64:512,output=uniform:8:64"]
    sync = _sim("simulate", *args, "--no-async-scheduling")
    asyn = _sim("simulate", *args, "--async-scheduling")
    assert sync.returncode == 0 and asyn.returncode == 0, sync.stderr + asyn.stderr
    a, b = json.loads(asyn.stdout), json.loads(sync.stdout)
    assert set(a) == set(b)
    assert a["num_finished"] == b["num_finished"] == 60
    assert a["num_output_tokens"] == b["num_output_tokens"]
    assert a["num_steps"] > b["num_steps"]


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--workload", "poisson:rate=5"], "n="),
        (["--workload", "missing_trace.csv"], "missing_trace.csv"),
        (
            [
                "--workload",
                "poisson:rate=5,n=10",
                "--max-num-batched-tokens",
                "8",
                "--max-num-seqs",
                "64",
            ],
            "must be greater than or equal to max_num_seqs",
        ),
        (["--workload", "poisson:rate=5,n=10", "--policy", "lottery"], "unknown policy"),
        (["--workload", "poisson:rate=5,n=10", "--scheduling-policy", "x"], "unknown policy"),
        (["--workload", "poisson:rate=5,n=10", "--watermark", "1"], "watermark must be in"),
        (["--workload", "poisson:rate=5,n=10", "-tp", "3"], "tp must be one of"),
        (["--workload", "poisson:rate=5,n=10", "--quantization", "awq"], "awq is not modelled"),
        (["--workload", "poisson:rate=5,n=10", "--model", "foo/Bar-13B"], "not in the catalog"),
        (
            ["--workload", "poisson:rate=5,n=10", "--cache-aware-admission-window", "-1"],
            "cache_aware_admission_window must be an integer >= 0",
        ),
    ],
)
def test_simulate_bad_input_exits_2(args, needle):
    proc = _sim("simulate", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", *args)
    _assert_one_line_error(proc, needle)


def test_a_closed_pipe_ends_quietly(tmp_path):
    """`python -m sim replay big.json | head` must not print a traceback."""
    from bench.bench_scheduler import trace_scenario

    scenario = tmp_path / "big.json"
    scenario.write_text(json.dumps(trace_scenario(n=300)), encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sim", "replay", str(scenario)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.read(100)  # the first bytes arrive, then the reader leaves
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err
    assert proc.returncode == 1


@pytest.mark.parametrize("args", [["defaults", "--gpu", "H100-SXM"], ["defaults", "--help"]])
def test_a_reader_gone_before_a_small_output_ends_quietly(args):
    """Small outputs sit in stdout's buffer until exit: the flush must not print a traceback
    either (PYTHONUNBUFFERED would hide this, so it is removed)."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sim", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader is gone before any output
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert err == ""
    assert proc.returncode == 1


def test_the_schema_needs_a_run_with_detail():
    from sim.errors import SimInputError
    from sim.replay import replay_run, to_schema

    scenario = json.loads((DATA / "fig82.json").read_text())
    with pytest.raises(SimInputError, match="per-step detail"):
        to_schema(replay_run(scenario, detail=False))


@pytest.mark.parametrize(
    ("text", "needle"),
    [  # issue 37, fault 6: a _csv.Error traceback (exit 1), and a run of shifted columns
        ("arrival_s,prompt\rx_tokens,output_tokens\n0,1,1\n", "holds a line break"),
        ("arrival_s,prompt_tokens,output_tokens\n0,100,10,5,6\n", "more fields than the header"),
    ],
)
def test_a_malformed_trace_exits_2_with_one_line(tmp_path, text, needle):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    proc = _sim("simulate", "--gpu", "L4", "--model", "Llama-3.1-8B", "--workload", str(path))
    _assert_one_line_error(proc, needle)


_SHARED = "poisson:rate=30,n=80,prompt=uniform:64:256,output=uniform:8:32,prefix=1024,seed=3"
_DEP = ("--gpu", "L4", "--model", "Llama-3.1-8B")


def test_simulate_runs_vllm_serves_defaults():
    """Issue 39: prefix caching and async scheduling are on unless turned off, as in vllm serve;
    the run without flags is the run that names vllm serve's defaults."""
    default = _sim("simulate", *_DEP, "--workload", _SHARED)
    named = _sim(
        "simulate",
        *_DEP,
        "--workload",
        _SHARED,
        "--enable-prefix-caching",
        "--async-scheduling",
        "--gpu-memory-utilization",
        "0.92",
        "--block-size",
        "16",
        "--kv-cache-dtype",
        "auto",
        "--scheduling-policy",
        "fcfs",
        "--max-num-batched-tokens",
        "2048",
        "--max-num-seqs",
        "256",
    )
    off = _sim("simulate", *_DEP, "--workload", _SHARED, "--no-enable-prefix-caching")
    assert default.returncode == named.returncode == off.returncode == 0, default.stderr
    d, n, o = (json.loads(p.stdout) for p in (default, named, off))
    assert d == n
    assert d["num_finished"] == o["num_finished"] == 80
    # the shared 1,024-token prefix is computed once with caching, for every request without
    assert d["ttft_ms"]["p50"] < 0.5 * o["ttft_ms"]["p50"]


def test_an_fp8_kv_cache_halves_the_share_of_the_pool_a_run_uses():
    spec = "burst:n=40,prompt=fixed:2000,output=fixed:16,seed=1"
    runs = [
        json.loads(_sim("simulate", *_DEP, "--workload", spec, "--kv-cache-dtype", kv).stdout)
        for kv in ("auto", "fp8")
    ]
    assert 0.45 < runs[1]["peak_kv_usage"] / runs[0]["peak_kv_usage"] < 0.55


@pytest.mark.parametrize(
    "flag", ["--enable-lora", "--speculative-config", "--kv-transfer-config", "--port"]
)
def test_a_vllm_flag_not_modelled_is_refused_by_name(flag):
    proc = _sim("simulate", *_DEP, "--workload", "burst:n=2", flag, "1")
    _assert_one_line_error(proc)
    assert proc.stderr == f"vLLM flag {flag} is not modelled by this simulator\n"
