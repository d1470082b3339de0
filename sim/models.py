"""Model catalog (sim/data/models.csv) and what follows from a model's shapes.

Why here: weight bytes, KV bytes per token, FLOPs per token and the KV pool size are the numbers
the cost model and the scheduler both need, derived once from the HF config shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from sim.errors import SimInputError
from sim.hardware import DATA_DIR, get_gpu

GIB = 2**30
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1}
# vLLM's --kv-cache-dtype values the simulator models -> the DTYPE_BYTES key they store with.
# "auto" is the model's 16-bit type, also under FP8 weights (vLLM keeps activations 16-bit);
# bf16/fp16 are this project's short spellings. fp8_e4m3 and fp8_e5m2 both take one byte.
KV_CACHE_DTYPES = {
    "auto": "bf16",
    "bfloat16": "bf16",
    "float16": "fp16",
    "bf16": "bf16",
    "fp16": "fp16",
    "fp8": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
}
TP_SIZES = (1, 2, 4, 8)
# Assumptions of the KV-pool estimate (documented in num_gpu_blocks).
NON_TORCH_GIB = 0.5  # CUDA context leftovers, allocator slack (one GPU)
NON_TORCH_TP_EXTRA_GIB = 0.5  # NCCL buffers when tp > 1
SAMPLER_ROWS = 256  # logits rows of the profiling dummy sampler run


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer's shapes (HF config.json). MoE: intermediate_size per expert."""

    key: str
    hf_name: str
    params_b: float  # total parameters, billions (as in models.csv)
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    num_experts: int = 1
    experts_per_token: int = 1
    qkv_bias: bool = False
    source: str = ""

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def attn_params_per_layer(self) -> int:
        h, hd = self.hidden_size, self.head_dim
        q, kv = self.num_attention_heads * hd, self.num_kv_heads * hd
        bias = (q + 2 * kv) if self.qkv_bias else 0
        return h * (q + 2 * kv) + q * h + bias

    @property
    def expert_params(self) -> int:
        """One expert's (or the dense MLP's) SwiGLU weights: gate, up and down."""
        return 3 * self.hidden_size * self.intermediate_size

    def _params(self, experts: int) -> float:
        h = self.hidden_size
        router = h * self.num_experts if self.is_moe else 0
        per_layer = self.attn_params_per_layer + experts * self.expert_params + router + 2 * h
        return self.num_layers * per_layer + 2 * self.vocab_size * h + h

    @property
    def total_params_b(self) -> float:
        """Total parameters from the shapes (embedding and untied lm_head included), billions."""
        return self._params(self.num_experts) / 1e9

    @property
    def active_params_b(self) -> float:
        """Parameters one token uses (MoE: experts_per_token of num_experts), billions."""
        return self._params(self.experts_per_token) / 1e9


@cache
def _catalog() -> dict[str, Model]:
    df = pd.read_csv(DATA_DIR / "models.csv")
    out: dict[str, Model] = {}
    for r in df.itertuples(index=False):
        out[str(r.key)] = Model(
            key=str(r.key),
            hf_name=str(r.hf_name),
            params_b=float(r.params_b),
            num_layers=int(r.num_layers),
            hidden_size=int(r.hidden_size),
            num_attention_heads=int(r.num_attention_heads),
            num_kv_heads=int(r.num_kv_heads),
            head_dim=int(r.head_dim),
            intermediate_size=int(r.intermediate_size),
            vocab_size=int(r.vocab_size),
            max_position_embeddings=int(r.max_position_embeddings),
            num_experts=int(r.num_experts),
            experts_per_token=int(r.experts_per_token),
            qkv_bias=bool(r.qkv_bias),
            source=str(r.source),
        )
    return out


def model_keys() -> tuple[str, ...]:
    """All model keys, in catalog order."""
    return tuple(_catalog())


def get_model(key: str) -> Model:
    """The model with this key; SimInputError naming the valid keys if unknown."""
    cat = _catalog()
    if key not in cat:
        raise SimInputError(f"unknown model {key!r}; valid: {', '.join(cat)}")
    return cat[key]


def check_tp(tp: int) -> int:
    if isinstance(tp, bool) or not isinstance(tp, (int, np.integer)) or int(tp) not in TP_SIZES:
        raise SimInputError(f"tp must be one of {TP_SIZES}, got {tp!r}")
    return int(tp)


def dtype_bytes(dtype: str) -> int:
    if dtype not in DTYPE_BYTES:
        raise SimInputError(f"unknown dtype {dtype!r}; valid: {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


def kv_dtype_key(kv_cache_dtype: str | None) -> str:
    """The DTYPE_BYTES key of a vLLM --kv-cache-dtype value (None is "auto")."""
    name = "auto" if kv_cache_dtype is None else kv_cache_dtype
    if name in DTYPE_BYTES:
        return name
    if name not in KV_CACHE_DTYPES:
        raise SimInputError(
            f"kv cache dtype {name!r} is not modelled (modelled: {', '.join(KV_CACHE_DTYPES)})"
        )
    return KV_CACHE_DTYPES[name]


def kv_heads_per_gpu(model: Model, tp: int = 1) -> int:
    """KV heads each GPU holds: split over TP, replicated once tp exceeds num_kv_heads."""
    return max(model.num_kv_heads // check_tp(tp), 1)


def kv_bytes_per_token(model: Model, kv_dtype: str = "bf16", tp: int = 1) -> int:
    """KV-cache bytes one token takes on one GPU: 2 (K, V) x layers x kv heads x head_dim x bytes.

    Llama-3.1-8B in bf16 at tp=1: 2 x 32 x 8 x 128 x 2 = 131072 (128 KiB).
    """
    heads = kv_heads_per_gpu(model, tp)
    return 2 * model.num_layers * heads * model.head_dim * dtype_bytes(kv_dtype)


def linear_shapes(model: Model, tp: int = 1) -> dict[str, tuple[int, int]]:
    """(N out, K in) of each per-layer linear layer on one GPU of the TP group (one expert)."""
    tp = check_tp(tp)
    hd, h = model.head_dim, model.hidden_size
    q_heads = model.num_attention_heads // tp
    return {
        "qkv": ((q_heads + 2 * kv_heads_per_gpu(model, tp)) * hd, h),
        "o": (h, q_heads * hd),
        "gate_up": (2 * model.intermediate_size // tp, h),
        "down": (h, model.intermediate_size // tp),
    }


def _params_per_gpu(model: Model, tp: int, experts: float, embedding: bool) -> float:
    s = linear_shapes(model, tp)
    h = model.hidden_size
    bias = s["qkv"][0] if model.qkv_bias else 0  # one bias per QKV output
    attn = s["qkv"][0] * s["qkv"][1] + s["o"][0] * s["o"][1] + bias
    mlp = s["gate_up"][0] * s["gate_up"][1] + s["down"][0] * s["down"][1]
    router = h * model.num_experts if model.is_moe else 0
    per_layer = attn + experts * mlp + router + 2 * h
    vocab_rows = model.vocab_size / tp  # vocab-parallel embedding and lm_head
    return model.num_layers * per_layer + vocab_rows * h * (2 if embedding else 1) + h


def weight_bytes(model: Model, dtype: str = "bf16", tp: int = 1) -> float:
    """Bytes of weights one GPU of the TP group holds (all experts, embedding and lm_head)."""
    return _params_per_gpu(model, check_tp(tp), model.num_experts, True) * dtype_bytes(dtype)


def expected_experts(model: Model, tokens: ArrayLike) -> np.ndarray:
    """Expected distinct experts `tokens` tokens touch with uniform top-k routing.

    E * (1 - (1 - k/E)**T); 1 for a dense model. Vectorized over `tokens`.
    """
    t = np.asarray(tokens, dtype=np.float64)
    if not model.is_moe:
        return np.ones_like(t)
    e, k = model.num_experts, model.experts_per_token
    return e * (1.0 - (1.0 - k / e) ** t)


def weight_read_bytes(model: Model, dtype: str = "bf16", tp: int = 1, tokens: int = 1) -> float:
    """Weight bytes one step of `tokens` tokens reads on one GPU.

    The lm_head is read in full; the input embedding table is not (only gathered rows). MoE:
    only the experts the tokens touch (expected count, uniform routing). Llama-3.1-8B bf16:
    16.06 GB stored, about 15.0 GB read per step.
    """
    tp = check_tp(tp)
    experts = float(expected_experts(model, tokens)) if model.is_moe else 1.0
    return _params_per_gpu(model, tp, experts, False) * dtype_bytes(dtype)


def flops_per_token(model: Model, tp: int = 1) -> float:
    """Matmul FLOPs per token through all linear layers and the lm_head, one GPU: 2 x params."""
    tp = check_tp(tp)
    return 2.0 * _params_per_gpu(model, tp, model.experts_per_token, False)


@dataclass(frozen=True)
class KVPool:
    """vLLM's KV-pool sizing for one GPU of a deployment (all sizes in GiB)."""

    num_gpu_blocks: int
    fits: bool  # False: the weights (plus reserves) exceed the requested memory
    requested_gib: float
    weights_gib: float
    activation_gib: float
    non_torch_gib: float
    kv_pool_gib: float
    block_bytes: int


def activation_peak_bytes(model: Model, tp: int, max_num_batched_tokens: int) -> float:
    """Rough peak activation memory of vLLM's profiling run (a dummy batch of that many tokens).

    Assumption: hidden states and residual (4 x hidden), the QKV output, and the MLP's gate/up
    output plus the SiLU product (3 x intermediate per active expert) live at once in 16 bits,
    plus the dummy sampler's fp32 logits for min(tokens, 256) rows (twice: logits and probs).
    """
    s = linear_shapes(model, tp)
    per_token = (
        4 * model.hidden_size + s["qkv"][0] + 1.5 * s["gate_up"][0] * model.experts_per_token
    )
    rows = min(max_num_batched_tokens, SAMPLER_ROWS)
    logits = rows * (model.vocab_size / tp) * 4 * 2
    return max_num_batched_tokens * per_token * 2 + logits


def kv_pool(
    gpu_key: str,
    model_key: str,
    *,
    tp: int = 1,
    dtype: str = "bf16",
    kv_dtype: str | None = None,
    gpu_memory_utilization: float = 0.9,
    block_size: int = 16,
    max_num_batched_tokens: int = 8192,
) -> KVPool:
    """The V1 engine's KV sizing, with its parts; see num_gpu_blocks."""
    gpu, model = get_gpu(gpu_key), get_model(model_key)
    tp = check_tp(tp)
    if not 0.0 < gpu_memory_utilization <= 1.0:
        raise SimInputError(
            f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization!r}"
        )
    if not isinstance(block_size, int) or block_size < 1:
        raise SimInputError(f"block_size must be a positive integer, got {block_size!r}")
    if not isinstance(max_num_batched_tokens, int) or max_num_batched_tokens < 1:
        raise SimInputError(
            f"max_num_batched_tokens must be a positive integer, got {max_num_batched_tokens!r}"
        )
    kv_dtype = kv_dtype_key(kv_dtype)
    requested = gpu.cuda_memory_gib * GIB * gpu_memory_utilization
    weights = weight_bytes(model, dtype, tp)
    act = activation_peak_bytes(model, tp, max_num_batched_tokens)
    non_torch = (NON_TORCH_GIB + (NON_TORCH_TP_EXTRA_GIB if tp > 1 else 0.0)) * GIB
    pool = requested - weights - act - non_torch
    block_bytes = block_size * kv_bytes_per_token(model, kv_dtype, tp)
    blocks = int(pool // block_bytes) if pool > 0 else 0
    return KVPool(
        num_gpu_blocks=blocks,
        fits=pool > 0,
        requested_gib=requested / GIB,
        weights_gib=weights / GIB,
        activation_gib=act / GIB,
        non_torch_gib=non_torch / GIB,
        kv_pool_gib=max(pool, 0.0) / GIB,
        block_bytes=block_bytes,
    )


def num_gpu_blocks(
    gpu_key: str,
    model_key: str,
    *,
    tp: int = 1,
    dtype: str = "bf16",
    kv_dtype: str | None = None,
    gpu_memory_utilization: float = 0.9,
    block_size: int = 16,
    max_num_batched_tokens: int = 8192,
) -> int:
    """KV blocks per GPU as vLLM's V1 worker sizes them (Worker.determine_available_memory).

    cuda memory x gpu_memory_utilization - weights - activation peak of a dummy
    max_num_batched_tokens batch - non-torch memory, floor-divided by the block bytes
    (block_size x KV bytes per token on one GPU). gpu_memory_utilization defaults to 0.9, the
    release the seeds describe; vLLM 0.33 defaults to 0.92. kv_dtype takes vLLM's --kv-cache-dtype
    names (KV_CACHE_DTYPES) or bf16/fp16/fp8; None means vLLM's "auto": 16-bit KV even with fp8
    weights. The activation and non-torch terms are estimates
    (activation_peak_bytes; 0.5 GiB non-torch, +0.5 GiB NCCL at tp > 1); newer vLLM also
    subtracts a CUDA-graph estimate, not modelled. Weights that do not fit give 0 blocks; see
    kv_pool(...).fits.
    """
    return kv_pool(
        gpu_key,
        model_key,
        tp=tp,
        dtype=dtype,
        kv_dtype=kv_dtype,
        gpu_memory_utilization=gpu_memory_utilization,
        block_size=block_size,
        max_num_batched_tokens=max_num_batched_tokens,
    ).num_gpu_blocks
