"""sim/flags.py: the one declaration of vLLM's scheduler and cache flags, held to SchedulerConfig,
to vLLM's names and defaults, to `simulate --help` and to docs/cli.md (issue 39, item 1)."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sim import flags
from sim.__main__ import build_parser
from sim.cli_sched import simulate_config
from sim.config import SchedulerConfig
from sim.errors import SimInputError
from sim.timed import config_for, deployment

ROOT = Path(__file__).parent.parent
FIELDS = {f.name: f for f in dataclasses.fields(SchedulerConfig)}

# What `vllm serve` uses when a flag is not given, read at the source (vLLM 0.33.0 / 0.34.0
# wheels: config/scheduler.py, config/cache.py, engine/arg_utils.py); None: per GPU or model.
VLLM_SERVE_DEFAULTS = {
    "max_num_batched_tokens": None,  # get_batch_defaults(world_size), SCHEDULER.md e
    "max_num_seqs": None,  # idem
    "max_model_len": None,  # the model's max_position_embeddings
    "num_gpu_blocks": None,  # CacheConfig.num_gpu_blocks_override = None: profiled
    "gpu_memory_utilization": 0.92,  # CacheConfig (0.33: Field(default=0.92))
    "kv_cache_dtype": "auto",  # CacheConfig.cache_dtype
    "block_size": 16,  # CacheConfig.DEFAULT_BLOCK_SIZE in 0.33
    "enable_prefix_caching": True,  # CacheConfig.enable_prefix_caching
    "enable_chunked_prefill": True,  # generate models support it
    "async_scheduling": True,  # None, resolved to True unless incompatible
    "long_prefill_token_threshold": 0,
    "policy": "fcfs",
    "watermark": 0.0,
    "scheduler_reserve_full_isl": True,
    "max_num_queued_reqs": None,
    "max_num_queued_tokens": None,
    "cache_aware_admission_window": 0,  # 0.34
    "cache_aware_admission_threshold": 0.5,  # 0.34
}
# The issue's list: `simulate --help` must show at least these, under vLLM's names.
ISSUE_FLAGS = (
    "--max-num-batched-tokens",
    "--max-num-seqs",
    "--max-model-len",
    "--gpu-memory-utilization",
    "--kv-cache-dtype",
    "--block-size",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--async-scheduling",
    "--no-async-scheduling",
    "--long-prefill-token-threshold",
    "--scheduling-policy",
    "--max-num-queued-reqs",
    "--max-num-queued-tokens",
    "--watermark",
    "--cache-aware-admission-window",
    "--cache-aware-admission-threshold",
)


def _simulate_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["simulate"]


def _help() -> str:
    return " ".join(_simulate_parser().format_help().split())


def _parse(*extra: str) -> argparse.Namespace:
    base = ["simulate", "--gpu", "H100-SXM", "--model", "Llama-3.1-8B", "--workload", "x.csv"]
    return build_parser().parse_args([*base, *extra])


def test_every_scheduler_setting_is_a_flag_or_says_why_not():
    dests = {f.dest for f in flags.FLAGS}
    missing = set(FIELDS) - dests - set(flags.NOT_FLAGS)
    assert not missing, f"SchedulerConfig fields with neither a flag nor a reason: {missing}"
    assert not dests & set(flags.NOT_FLAGS)
    assert all(len(reason) > 20 for reason in flags.NOT_FLAGS.values())
    assert set(flags.NOT_FLAGS) <= set(FIELDS)


def test_every_flag_names_a_field_or_an_argument_that_exists():
    pool = set(inspect.signature(config_for).parameters)
    dep = set(inspect.signature(deployment).parameters)
    for f in flags.FLAGS:
        assert f.target in flags.TARGETS
        if f.target == "scheduler":
            assert f.dest in FIELDS, f.name
        elif f.target == "pool":
            assert f.dest in pool, f.name
        else:
            assert f.dest in dep, f.name
        assert f.kind in flags.PARSERS


def test_names_are_vllms_and_the_old_spellings_are_not():
    for f in flags.FLAGS:
        assert f.name in flags.VLLM_SERVE_FLAGS, f.name
        assert f.name == "--" + f.dest.replace("_", "-") or f.dest in {
            "num_gpu_blocks",
            "policy",
        }, f.name
        for alias in f.aliases:
            assert alias not in flags.VLLM_SERVE_FLAGS
    old = {"--no-chunked-prefill", "--policy", "--num-gpu-blocks"}
    spellings = set(flags.by_name())
    assert old <= spellings


def test_defaults_are_vllm_serves_and_differ_from_the_class_only_where_said():
    assert flags.defaults() == VLLM_SERVE_DEFAULTS
    differ = {
        f.dest
        for f in flags.FLAGS
        if f.target == "scheduler" and f.default is not None and f.default != FIELDS[f.dest].default
    }
    # SchedulerConfig keeps both off so the synchronous recordings keep their meaning.
    assert differ == {"enable_prefix_caching", "async_scheduling"}
    assert FIELDS["block_size"].default == flags.defaults()["block_size"]


def test_help_lists_every_flag_with_its_default_and_hides_old_spellings():
    text = _help()
    for f in flags.FLAGS:
        assert f.name in text
        assert f"(default: {f.default_shown})" in " ".join(f.help_text().split())
        # argparse wraps lines, also at a hyphen: compare without whitespace
        assert "".join(f.help_text().split()) in "".join(text.split()), f.name
        if f.kind == "bool":
            assert "--no-" + f.name[2:] in text
    for old in ("--no-chunked-prefill", "--policy ", "--num-gpu-blocks ", "--tp "):
        assert old not in text
    assert "(default: on)" in text and "(default: 0.92)" in text and "(default: 0.5)" in text


def test_simulate_help_as_a_process_lists_the_issues_flags():
    proc = subprocess.run(
        [sys.executable, "-m", "sim", "simulate", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stderr == ""
    for name in ISSUE_FLAGS:
        assert re.search(rf"{re.escape(name)}\b", proc.stdout), name
    assert "default: 2048 under 70 GiB" not in proc.stdout  # a said rule, not a value


def test_no_flag_means_vllm_serves_configuration():
    dep, config = simulate_config(_parse())
    expected = config_for(
        deployment("H100-SXM", "Llama-3.1-8B"),
        gpu_memory_utilization=0.92,
        enable_prefix_caching=True,
        async_scheduling=True,
    )
    assert config == expected
    assert config.enable_prefix_caching and config.async_scheduling
    assert (config.max_num_batched_tokens, config.max_num_seqs) == (8192, 1024)
    assert config.max_model_len == 131072 and config.block_size == 16
    assert dep.kv_cache_dtype == "auto"


def test_old_spellings_give_the_same_configuration_as_vllms():
    old = _parse(
        "--policy",
        "priority",
        "--no-chunked-prefill",
        "--num-gpu-blocks",
        "3000",
        "--tp",
        "2",
        "--dtype",
        "fp8",
        "--max-model-len",
        "8192",
    )
    new = _parse(
        "--scheduling-policy",
        "priority",
        "--no-enable-chunked-prefill",
        "--num-gpu-blocks-override",
        "3000",
        "-tp",
        "2",
        "--quantization",
        "fp8",
        "--max-model-len",
        "8K",
    )
    a, b = simulate_config(old), simulate_config(new)
    assert a == b
    dep, config = a
    assert (dep.tp, dep.dtype, config.policy, config.num_gpu_blocks) == (2, "fp8", "priority", 3000)
    assert not config.enable_chunked_prefill and config.max_model_len == 8192
    assert config.max_num_batched_tokens == 8192  # without chunking: at least max_model_len


def test_each_flag_reaches_the_configuration():
    dep, config = simulate_config(
        _parse(
            "--max-num-batched-tokens",
            "4k",
            "--max-num-seqs",
            "32",
            "--gpu-memory-utilization",
            "0.8",
            "--block-size",
            "32",
            "--kv-cache-dtype",
            "fp8_e4m3",
            "--no-enable-prefix-caching",
            "--no-async-scheduling",
            "--long-prefill-token-threshold",
            "512",
            "--watermark",
            "0.05",
            "--no-scheduler-reserve-full-isl",
            "--max-num-queued-reqs",
            "100",
            "--max-num-queued-tokens",
            "32K",
            "--cache-aware-admission-window",
            "8",
            "--cache-aware-admission-threshold",
            "0.25",
        )
    )
    from sim.models import num_gpu_blocks

    assert dep.kv_cache_dtype == "fp8_e4m3" and dep.kv_dtype == "fp8"
    assert config.num_gpu_blocks == num_gpu_blocks(
        "H100-SXM",
        "Llama-3.1-8B",
        kv_dtype="fp8",
        gpu_memory_utilization=0.8,
        block_size=32,
        max_num_batched_tokens=4000,
    )
    assert (config.max_num_batched_tokens, config.max_num_seqs, config.block_size) == (4000, 32, 32)
    assert not config.enable_prefix_caching and not config.async_scheduling
    assert not config.scheduler_reserve_full_isl
    assert (config.long_prefill_token_threshold, config.watermark) == (512, 0.05)
    assert (config.max_num_queued_reqs, config.max_num_queued_tokens) == (100, 32768)
    assert config.cache_aware_admission_window == 8
    assert config.cache_aware_admission_threshold == 0.25


def test_an_fp8_kv_cache_holds_twice_the_tokens():
    _, bf16 = simulate_config(_parse())
    _, fp8 = simulate_config(_parse("--kv-cache-dtype", "fp8"))
    assert 1.99 < fp8.num_gpu_blocks / bf16.num_gpu_blocks < 2.01


def test_every_unmodelled_vllm_flag_is_refused_by_name(capsys):
    parser = _simulate_parser()
    known = set(parser._option_string_actions)
    base = ["--gpu", "L4", "--model", "Llama-3.1-8B", "--workload", "x.csv"]
    refused = sorted(flags.VLLM_SERVE_FLAGS - known)
    assert {"--enable-lora", "--speculative-config", "--kv-transfer-config", "--port"} <= set(
        refused
    )
    assert "--tensor-parallel-size" not in refused and "--quantization" not in refused
    for name in refused:
        with pytest.raises(SystemExit) as stop:
            parser.parse_args([*base, name, "1"])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err == f"vLLM flag {name} is not modelled by this simulator\n", name
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "--no-enable-lora"])
    assert "--no-enable-lora is not modelled" in capsys.readouterr().err


def test_the_refusal_skips_values_and_stops_at_a_double_dash():
    assert flags.unmodelled(["--model", "x", "--enable-lora=true"], {"--model"}) == "--enable-lora"
    assert flags.unmodelled(["--model", "x", "--", "--enable-lora"], {"--model"}) is None
    assert flags.unmodelled(["--frobnicate"], set()) is None  # not vLLM's: argparse says so
    assert flags.unmodelled(["-O3"], set()) == "-O3"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"cache_aware_admission_window": -1}, "cache_aware_admission_window"),
        ({"cache_aware_admission_window": True}, "cache_aware_admission_window"),
        ({"cache_aware_admission_window": 2.5}, "cache_aware_admission_window"),
        ({"cache_aware_admission_threshold": -0.1}, "cache_aware_admission_threshold"),
        ({"cache_aware_admission_threshold": 1.01}, "cache_aware_admission_threshold"),
        ({"cache_aware_admission_threshold": "half"}, "cache_aware_admission_threshold"),
    ],
)
def test_cache_aware_admission_is_validated_as_vllm_does(kwargs, needle):
    base = dict(max_num_batched_tokens=512, max_num_seqs=8, max_model_len=1024, num_gpu_blocks=64)
    with pytest.raises(SimInputError, match=needle):
        SchedulerConfig(**base, **kwargs)
    ok = SchedulerConfig(**base, cache_aware_admission_window=0, cache_aware_admission_threshold=1)
    assert ok.cache_aware_admission_threshold == 1.0
    assert isinstance(ok.cache_aware_admission_threshold, float)
    assert SchedulerConfig(**base).cache_aware_admission_window == 0


def test_weights_dtype_reads_vllms_dtype_and_quantization():
    assert flags.weights_dtype(None, None, "meta-llama/Llama-3.1-8B") == "bf16"
    assert flags.weights_dtype("half", None) == "bf16"
    assert flags.weights_dtype("auto", "fp8") == "fp8"
    assert flags.weights_dtype(None, None, "RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8") == "fp8"
    assert flags.weights_dtype("fp8", None) == "fp8"  # this command line's old spelling
    with pytest.raises(SimInputError, match="--dtype float32 is not modelled"):
        flags.weights_dtype("float32", None)
    with pytest.raises(SimInputError, match="--quantization awq is not modelled"):
        flags.weights_dtype(None, "awq")


def test_docs_list_every_flag():
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for f in flags.FLAGS:
        assert f"`{f.name}`" in text, f.name
    assert "serve-args" in text
