"""Catalogs: GPU and model facts, KV bytes, weight bytes, KV pool sizes, vLLM's defaults."""

import pytest

from sim.errors import SimInputError
from sim.hardware import default_batch_limits, get_gpu, gpu_keys
from sim.models import (
    get_model,
    kv_bytes_per_token,
    kv_pool,
    model_keys,
    num_gpu_blocks,
    weight_bytes,
    weight_read_bytes,
)

KIB = 1024
# The data README's table (bf16, tp=1).
KV_KIB = {
    "Llama-3.1-8B": 128,
    "Llama-3.1-70B": 320,
    "Qwen2.5-72B": 320,
    "Llama-2-70B": 320,
    "Mistral-7B-v0.3": 128,
    "Mixtral-8x7B": 128,
    "Qwen2.5-7B": 56,
    "Llama-2-7B": 512,
}
REQUIRED_GPUS = {
    "L4",
    "A10G",
    "L40S",
    "A100-40GB",
    "A100-80GB",
    "H100-SXM",
    "H100-PCIe",
    "H200",
    "B200",
    "MI300X",
}


def test_catalogs_complete_with_sources():
    assert set(gpu_keys()) >= REQUIRED_GPUS
    assert set(KV_KIB) <= set(model_keys())
    for k in gpu_keys():
        g = get_gpu(k)
        assert g.source and 0 < g.cuda_memory_gib < g.memory_gib * 1.0001
        assert g.memory_gib - g.cuda_memory_gib < 0.1 * g.memory_gib
    assert get_gpu("A100-80GB").fp8_tflops is None and get_gpu("H100-SXM").fp8_tflops == 1979


@pytest.mark.parametrize("key", sorted(KV_KIB))
def test_kv_bytes_per_token(key):
    m = get_model(key)
    assert kv_bytes_per_token(m) == KV_KIB[key] * KIB
    assert kv_bytes_per_token(m, "fp8") == KV_KIB[key] * KIB // 2
    tp = min(m.num_kv_heads, 8)
    assert kv_bytes_per_token(m, tp=tp) * tp == KV_KIB[key] * KIB
    # replicated once tp exceeds the KV heads: never below one head per GPU
    assert kv_bytes_per_token(m, tp=8) == 2 * m.num_layers * max(m.num_kv_heads // 8, 1) * 128 * 2


def test_llama_8b_exact_and_params_match_csv():
    assert kv_bytes_per_token(get_model("Llama-3.1-8B")) == 131072
    for k in model_keys():
        m = get_model(k)
        assert m.total_params_b == pytest.approx(m.params_b, abs=0.01)
    mix = get_model("Mixtral-8x7B")
    assert mix.active_params_b == pytest.approx(12.88, abs=0.01)
    assert weight_read_bytes(mix, tokens=1) / 1e9 == pytest.approx(25.5, abs=0.5)
    assert weight_read_bytes(mix, tokens=10_000) == pytest.approx(
        weight_bytes(mix) - 0.26e9, rel=0.01
    )


def test_weight_bytes():
    m = get_model("Llama-3.1-8B")
    assert weight_bytes(m) / 1e9 == pytest.approx(16.06, abs=0.01)
    assert weight_read_bytes(m) / 1e9 == pytest.approx(15.0, abs=0.05)
    assert weight_bytes(m, "fp8") == pytest.approx(weight_bytes(m) / 2)
    assert weight_bytes(m, tp=4) == pytest.approx(weight_bytes(m) / 4, rel=0.01)


def test_pool_sizes_sane_and_monotone():
    blocks = num_gpu_blocks("H100-SXM", "Llama-3.1-8B")
    # 0.9 x 79.2 GiB - 15 GiB weights - ~1-2 GiB activations and overhead, in 2 MiB blocks
    assert 26_000 < blocks < 29_000
    assert num_gpu_blocks("H100-SXM", "Llama-3.1-8B", gpu_memory_utilization=0.92) > blocks
    assert num_gpu_blocks("H200", "Llama-3.1-8B") > blocks > num_gpu_blocks("L40S", "Llama-3.1-8B")
    assert num_gpu_blocks("H100-SXM", "Llama-3.1-8B", kv_dtype="fp8") >= 2 * blocks - 1
    assert num_gpu_blocks("H100-SXM", "Llama-3.1-8B", block_size=32) == blocks // 2
    prev = -1
    for u in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95):
        b = num_gpu_blocks("A100-80GB", "Llama-3.1-8B", gpu_memory_utilization=u)
        assert b > prev
        prev = b
    big = kv_pool("H100-SXM", "Llama-3.1-70B")
    assert not big.fits and big.num_gpu_blocks == 0
    tp4 = kv_pool("H100-SXM", "Llama-3.1-70B", tp=4)
    assert tp4.fits and tp4.num_gpu_blocks > 0
    assert num_gpu_blocks("L4", "Llama-2-70B") == 0


def test_pool_bad_input():
    with pytest.raises(SimInputError, match="gpu_memory_utilization"):
        num_gpu_blocks("H100-SXM", "Llama-3.1-8B", gpu_memory_utilization=1.5)
    with pytest.raises(SimInputError, match="tp"):
        num_gpu_blocks("H100-SXM", "Llama-3.1-8B", tp=3)


# vLLM 0.33 (SCHEDULER.md (e)): (serve tokens, serve seqs, LLM tokens, LLM seqs)
DEFAULTS = {
    "L4": (2048, 256, 8192, 256),
    "A10G": (2048, 256, 8192, 256),
    "L40S": (2048, 256, 8192, 256),
    "A100-40GB": (2048, 256, 8192, 256),
    "A100-80GB": (2048, 256, 8192, 256),
    "H100-SXM": (8192, 1024, 16384, 1024),
    "H100-PCIe": (8192, 1024, 16384, 1024),
    "H200": (8192, 1024, 16384, 1024),
    "B200": (16384, 1024, 16384, 1024),
    "MI300X": (16384, 1024, 16384, 1024),
}


@pytest.mark.parametrize("key", sorted(DEFAULTS))
def test_defaults_every_gpu(key):
    st, ss, lt, ls = DEFAULTS[key]
    assert default_batch_limits(key) == {"max_num_batched_tokens": st, "max_num_seqs": ss}
    assert default_batch_limits(key, "llm") == {"max_num_batched_tokens": lt, "max_num_seqs": ls}


def test_defaults_post_processing():
    # step 4: budget <= max_num_seqs * max_model_len; step 5: seqs <= budget
    assert default_batch_limits("H100-SXM", max_model_len=4) == {
        "max_num_batched_tokens": 4096,
        "max_num_seqs": 1024,
    }
    # step 3: without chunked prefill the budget is at least max_model_len
    assert (
        default_batch_limits("L4", max_model_len=32768, enable_chunked_prefill=False)[
            "max_num_batched_tokens"
        ]
        == 32768
    )
    assert default_batch_limits("L4", max_model_len=32768)["max_num_batched_tokens"] == 2048
    with pytest.raises(SimInputError, match="usage"):
        default_batch_limits("L4", "offline")


def test_unknown_keys_list_valid_ones():
    with pytest.raises(SimInputError, match="unknown GPU 'V100'.*H100-SXM"):
        get_gpu("V100")
    with pytest.raises(SimInputError, match="unknown model 'GPT-5'.*Llama-3.1-8B"):
        get_model("GPT-5")
