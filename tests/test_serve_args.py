"""sim/serve_args.py: a pasted `vllm serve` command read into the configuration (issue 39, 2)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from sim.cli_sched import simulate_config
from sim.config import SchedulerConfig
from sim.errors import SimInputError
from sim.models import kv_pool, num_gpu_blocks
from sim.serve_args import ServeArgs, config_from_serve, parse_serve_command, resolve_model
from sim.timed import config_for, deployment
from tests.test_cli_sched import _assert_one_line_error, _sim

SEVENTY_FP8 = """
vllm serve RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8 \\
    --tensor-parallel-size 4 \\
    --kv-cache-dtype fp8 \\
    --max-num-seqs=64 --max-model-len 32k \\
    --port 8000 --served-model-name "llama 70b" \\
    --no-enable-prefix-caching --gpu_memory_utilization 0.95
"""


def test_a_pasted_command_maps_each_flag():
    args = parse_serve_command(SEVENTY_FP8)
    assert (args.model, args.hf_name) == (
        "Llama-3.1-70B",
        "RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8",
    )
    assert (args.tp, args.dtype, args.kv_cache_dtype) == (4, "fp8", "fp8")
    assert args.gpu_memory_utilization == 0.95 and args.block_size == 16
    assert args.scheduler_kwargs == {
        "max_num_seqs": 64,
        "max_model_len": 32000,
        "enable_prefix_caching": False,
    }
    assert args.mapped == (
        "RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8 -> model = Llama-3.1-70B",
        "--tensor-parallel-size 4 -> tp = 4",
        "--kv-cache-dtype fp8 -> kv_cache_dtype = fp8",
        "--max-num-seqs=64 -> max_num_seqs = 64",
        "--max-model-len 32k -> max_model_len = 32000",
        "--no-enable-prefix-caching -> enable_prefix_caching = false",
        "--gpu_memory_utilization 0.95 -> gpu_memory_utilization = 0.95",
        "FP8 in the model's name -> dtype = fp8 (FP8 weights)",
        "--port 8000 -> not used (changes neither the schedule nor step times)",
        "--served-model-name llama 70b -> not used (changes neither the schedule nor step times)",
    )
    hash(args)  # frozen and hashable, so a page can cache on it


def test_the_configuration_is_vllm_serves_for_the_gpu():
    args = parse_serve_command(SEVENTY_FP8)
    dep, config = config_from_serve(args, "H100-SXM")
    assert (dep.gpu, dep.model, dep.tp, dep.dtype, dep.kv_cache_dtype) == (
        "H100-SXM",
        "Llama-3.1-70B",
        4,
        "fp8",
        "fp8",
    )
    assert config.max_num_seqs == 64 and config.max_model_len == 32000
    assert config.max_num_batched_tokens == 8192  # vllm serve's on an H100
    assert not config.enable_prefix_caching and config.async_scheduling  # async: serve's default
    assert config.num_gpu_blocks == num_gpu_blocks(
        "H100-SXM",
        "Llama-3.1-70B",
        tp=4,
        dtype="fp8",
        kv_dtype="fp8",
        gpu_memory_utilization=0.95,
        max_num_batched_tokens=8192,
    )


def test_an_fp8_kv_cache_doubles_the_pool_of_a_70b_fp8_deployment():
    """The issue's case: a 16-bit KV cache holds half the sequences of an FP8 one."""
    base = "vllm serve RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8 -tp 4"
    _, bf16 = config_from_serve(parse_serve_command(base), "H100-SXM")
    _, fp8 = config_from_serve(parse_serve_command(base + " --kv-cache-dtype fp8"), "H100-SXM")
    pool = kv_pool("H100-SXM", "Llama-3.1-70B", tp=4, dtype="fp8", gpu_memory_utilization=0.92)
    assert bf16.num_gpu_blocks == pool.num_gpu_blocks
    assert fp8.num_gpu_blocks == int(pool.kv_pool_gib * 2**30 // (pool.block_bytes // 2))
    assert 1.99 < fp8.num_gpu_blocks / bf16.num_gpu_blocks < 2.01


def test_the_kv_dtype_reaches_the_cost_model():
    from sim.cost import step_costs

    def attention_ms(kv_cache_dtype: str) -> float:
        dep = deployment("H100-SXM", "Llama-3.1-8B", kv_cache_dtype=kv_cache_dtype)
        c = step_costs(dep, query_tokens=[64], num_seqs=[64], kv_read_tokens=[64 * 8000])
        return float(c.attention_ms[0])

    assert attention_ms("fp8") < 0.6 * attention_ms("auto")
    assert attention_ms("bfloat16") == attention_ms("auto")


def test_a_command_without_flags_is_what_simulate_runs_without_flags():
    args = parse_serve_command("vllm serve meta-llama/Llama-3.1-8B-Instruct")
    assert args.scheduler_kwargs == {} and args.dtype == "bf16" and args.tp == 1
    got = config_from_serve(args, "L4")
    dep = deployment("L4", "Llama-3.1-8B")
    expected = config_for(
        dep, gpu_memory_utilization=0.92, enable_prefix_caching=True, async_scheduling=True
    )
    assert got == (dep, expected)
    cli = build_simulate(["--gpu", "L4", "--model", "meta-llama/Llama-3.1-8B-Instruct"])
    assert cli == got
    assert (expected.max_num_batched_tokens, expected.max_num_seqs) == (2048, 256)


def build_simulate(argv: list[str]):
    from sim.__main__ import build_parser

    return simulate_config(build_parser().parse_args(["simulate", *argv, "--workload", "x.csv"]))


def test_the_same_flags_give_the_same_configuration_on_both_paths():
    flags_text = (
        "--max-num-batched-tokens 4k --max-num-seqs 48 --scheduling-policy priority "
        "--watermark 0.02 --no-async-scheduling --long-prefill-token-threshold 256 "
        "--cache-aware-admission-window 4 --block-size 32 --max-num-queued-tokens 20K"
    )
    serve = parse_serve_command(f"vllm serve Qwen/Qwen2.5-7B-Instruct {flags_text}")
    cli = build_simulate(["--gpu", "A100-80GB", "--model", "Qwen2.5-7B", *flags_text.split()])
    assert config_from_serve(serve, "A100-80GB") == cli


@pytest.mark.parametrize(
    ("name", "key", "dtype"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B", "bf16"),
        ("meta-llama/Meta-Llama-3.1-8B", "Llama-3.1-8B", "bf16"),
        ("nvidia/Llama-3.1-8B-Instruct-FP8", "Llama-3.1-8B", "fp8"),
        ("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic", "Llama-3.1-70B", "fp8"),
        ("/models/llama-3.1-70b-instruct/", "Llama-3.1-70B", "bf16"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "Mistral-7B-v0.3", "bf16"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "Mixtral-8x7B", "bf16"),
        ("Qwen/Qwen2.5-72B-Instruct", "Qwen2.5-72B", "bf16"),
        ("meta-llama/Llama-2-7b-chat-hf", "Llama-2-7B", "bf16"),
        ("Llama-2-70B", "Llama-2-70B", "bf16"),
    ],
)
def test_hugging_face_names_map_to_the_catalog(name, key, dtype):
    assert resolve_model(name) == key
    args = parse_serve_command(f"vllm serve {name}")
    assert (args.model, args.dtype) == (key, dtype)


@pytest.mark.parametrize(
    ("command", "needle"),
    [
        ("", "paste a `vllm serve MODEL"),
        ("ls -la /models", "not a vllm serve command"),
        ("vllm serve", "no model"),
        (
            "vllm serve meta-llama/Llama-3.3-70B-Instruct",
            "'meta-llama/Llama-3.3-70B-Instruct' is not in the catalog; closest catalog models: "
            "Llama-3.1-8B, Llama-3.1-70B",
        ),
        ("vllm serve google/gemma-2-9b-it", "catalog models: Llama-3.1-8B, Llama-3.1-70B,"),
        ("vllm serve TheBloke/Llama-2-7B-AWQ", "AWQ weights are not modelled"),
        ("vllm serve meta-llama/Llama-3.1-8B --enable-lora", "vLLM flag --enable-lora is not"),
        ("vllm serve meta-llama/Llama-3.1-8B --speculative-config '{\"n\": 3}'", "--speculative"),
        ("vllm serve meta-llama/Llama-3.1-8B --enforce-eager", "vLLM flag --enforce-eager"),
        ("vllm serve meta-llama/Llama-3.1-8B -pp 2", "vLLM flag --pipeline-parallel-size 2"),
        ("vllm serve meta-llama/Llama-3.1-8B -tp 3", "must be one of 1, 2, 4, 8"),
        ("vllm serve meta-llama/Llama-3.1-8B --frobnicate 1", "unknown flag --frobnicate"),
        ("vllm serve meta-llama/Llama-3.1-8B --max-num-seqs lots", "--max-num-seqs: 'lots'"),
        ("vllm serve meta-llama/Llama-3.1-8B --max-num-seqs", "--max-num-seqs needs a value"),
        ("vllm serve meta-llama/Llama-3.1-8B --quantization gptq", "--quantization gptq is not"),
        ("vllm serve meta-llama/Llama-3.1-8B --dtype float32", "--dtype float32 is not modelled"),
        ("vllm serve meta-llama/Llama-3.1-8B --kv-cache-dtype nvfp4", "'nvfp4' is not modelled"),
        ("vllm serve meta-llama/Llama-3.1-8B --model meta-llama/Llama-3.1-8B", "given twice"),
        ("vllm serve 'meta-llama/Llama-3.1-8B", "cannot read the command"),
        ("vllm serve meta-llama/Llama-3.1-8B --enable-prefix-caching=1", "takes no value"),
    ],
)
def test_what_cannot_be_read_is_said_in_one_line(command, needle):
    with pytest.raises(SimInputError) as err:
        parse_serve_command(command)
    message = str(err.value)
    assert needle in message and "\n" not in message


def test_the_command_may_come_in_other_shapes():
    api = parse_serve_command(
        "CUDA_VISIBLE_DEVICES=0,1 python3 -m vllm.entrypoints.openai.api_server "
        "--model mistralai/Mistral-7B-Instruct-v0.3 -tp 2 --dtype half --max_num_seqs 16 "
        "--host 0.0.0.0 2>&1 | tee log.txt"
    )
    assert (api.model, api.tp, api.dtype, api.scheduler_kwargs) == (
        "Mistral-7B-v0.3",
        2,
        "bf16",
        {"max_num_seqs": 16},
    )
    assert "-tp 2 -> tp = 2" in api.mapped
    assert "--dtype half -> dtype = bf16 (16-bit weights, one cost for all)" in api.mapped
    docker = parse_serve_command(
        "docker run --runtime nvidia --gpus all -p 8000:8000 --ipc=host "
        "vllm/vllm-openai:latest --model Qwen/Qwen2.5-7B-Instruct --async-scheduling "
        "--no-chunked-prefill --max-model-len=auto # a comment"
    )
    assert docker.model == "Qwen2.5-7B"
    assert docker.scheduler_kwargs == {
        "async_scheduling": True,
        "enable_chunked_prefill": False,
        "max_model_len": None,
    }
    assert "--max-model-len=auto -> max_model_len = the model's" in docker.mapped
    q = parse_serve_command("vllm serve meta-llama/Llama-3.1-70B-Instruct -q fp8 -tp 8")
    assert (q.dtype, q.tp) == ("fp8", 8)


def test_config_from_serve_says_what_vllm_would_refuse():
    args = parse_serve_command(
        "vllm serve meta-llama/Llama-3.1-8B --max-num-batched-tokens 16 --max-num-seqs 64"
    )
    with pytest.raises(SimInputError, match="must be greater than or equal to max_num_seqs"):
        config_from_serve(args, "H100-SXM")
    fp8 = parse_serve_command("vllm serve nvidia/Llama-3.1-8B-Instruct-FP8")
    with pytest.raises(SimInputError, match="no FP8 tensor cores"):
        config_from_serve(fp8, "A100-80GB")
    with pytest.raises(SimInputError, match="unknown GPU"):
        config_from_serve(fp8, "H101")


def test_serve_args_fields():
    names = [f.name for f in dataclasses.fields(ServeArgs)]
    assert names[:7] == [
        "model",
        "hf_name",
        "tp",
        "dtype",
        "kv_cache_dtype",
        "gpu_memory_utilization",
        "block_size",
    ]
    assert {"scheduler_kwargs", "mapped"} <= set(names)
    fields = {f.name for f in dataclasses.fields(SchedulerConfig)}
    args = parse_serve_command(SEVENTY_FP8)
    assert set(args.scheduler_kwargs) <= fields


def test_the_command_line_prints_the_configuration():
    proc = _sim("serve-args", SEVENTY_FP8, "--gpu", "H100-SXM")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert {"model", "tp", "dtype", "kv_cache_dtype", "scheduler_config", "mapped"} <= set(out)
    assert (out["model"], out["tp"], out["dtype"], out["kv_cache_dtype"]) == (
        "Llama-3.1-70B",
        4,
        "fp8",
        "fp8",
    )
    assert set(out["scheduler_config"]) == {f.name for f in dataclasses.fields(SchedulerConfig)}
    assert out["scheduler_config"]["max_num_seqs"] == 64
    assert out["scheduler_config"]["async_scheduling"] is True
    assert out["mapped"][0] == "RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8 -> model = Llama-3.1-70B"
    _assert_one_line_error(
        _sim("serve-args", "vllm serve meta-llama/Llama-3.1-8B --enable-lora", "--gpu", "L4"),
        "vLLM flag --enable-lora is not modelled by this simulator",
    )
    _assert_one_line_error(
        _sim("serve-args", "vllm serve foo/Bar-13B", "--gpu", "L4"), "is not in the catalog"
    )
