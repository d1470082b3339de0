"""vLLM's scheduler and cache flags, declared once: `simulate`, `serve-args` and tests read them.

Why one declaration: the command line speaks `vllm serve`'s language (its flag names, its
defaults on a GPU), and the flags, their help and their defaults must not drift from
`sim.config.SchedulerConfig`. Each `Flag` names vLLM's flag, the SchedulerConfig field (or the
`sim.timed.config_for` / `sim.timed.deployment` argument) it sets, how its value is read, our
help text and the value `vllm serve` uses when it is not given. `add_arguments` turns the
declaration into argparse arguments (booleans as `--x/--no-x` pairs, as vLLM's
BooleanOptionalAction makes them); `settings` reads them back with the defaults filled in.

Defaults are vLLM 0.33's `vllm serve` on a CUDA GPU (the release the course's scheduler follows,
SCHEDULER.md e), plus 0.34's cache-aware admission flags (off by default, so the same runs).
Two defaults moved in 0.34 and are kept at 0.33's here on purpose: `--block-size` (0.34 lets
the attention backend choose, 64 for FlashAttention) and `--gpu-memory-utilization` (0.34
sizes the KV cache from the memory actually free after start-up, at 1.0; the catalog's estimate
models 0.33's profiling instead, sim.models.num_gpu_blocks).

Every other flag of `vllm serve` 0.34 is listed in `VLLM_SERVE_FLAGS`, so a flag we do not
model is refused by name ("vLLM flag --enable-lora is not modelled by this simulator"), never
ignored. `NO_EFFECT_FLAGS` are the ones that change neither what runs in a step nor how long
it takes (the HTTP server, logging, tokenizer, chat templates...): a pasted `vllm serve`
command may carry them (sim/serve_args.py says it read them), `simulate` refuses them.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from sim.errors import SimInputError

# ---------------------------------------------------------------------------------------------
# Reading values as vLLM reads them


_UNITS = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}


def human_readable_int(text: str) -> int:
    """vLLM's notation for token counts: 100, 32k = 32,000, 2.5k = 2,500, 1K = 1,024, 1M = 2**20
    (decimal suffixes take a fraction, binary ones do not)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kmgKMG]?)", text.strip())
    if not match or (match[2].isupper() and "." in match[1]):
        raise argparse.ArgumentTypeError(f"{text!r} is not a count such as 500, 32k or 1M")
    number, unit = match[1], match[2]
    if not unit:
        if "." in number:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
        return int(number)
    value = float(number) * _UNITS[unit]
    if value != int(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of tokens")
    return int(value)


def count_or_auto(text: str) -> int:
    """`--max-model-len`: a count as human_readable_int, or `auto` / -1 (the model's length),
    returned as -1."""
    if text.strip().lower() in ("auto", "-1"):
        return -1
    return human_readable_int(text)


def whole_number(text: str) -> int:
    """A plain integer (vLLM's `int` flags)."""
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def real_number(text: str) -> float:
    """A plain number (vLLM's `float` flags)."""
    try:
        value = float(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def kv_cache_dtype(text: str) -> str:
    """`--kv-cache-dtype`: one of the values vLLM accepts that the simulator models."""
    from sim.models import KV_CACHE_DTYPES

    value = text.strip()
    if value not in KV_CACHE_DTYPES:
        raise argparse.ArgumentTypeError(
            f"kv cache dtype {value!r} is not modelled (modelled: {', '.join(KV_CACHE_DTYPES)})"
        )
    return value


def _name(text: str) -> str:
    return text.strip()


PARSERS = {
    "count": human_readable_int,
    "count_or_auto": count_or_auto,
    "int": whole_number,
    "float": real_number,
    "kv_dtype": kv_cache_dtype,
    "str": _name,
    "bool": None,
}

# ---------------------------------------------------------------------------------------------
# The declaration

TARGETS = ("scheduler", "pool", "deployment")


@dataclass(frozen=True)
class Flag:
    """One of `vllm serve`'s flags the simulator models.

    name: vLLM's flag; dest: the SchedulerConfig field (target "scheduler"), the
    `sim.timed.config_for` argument (target "pool": the KV pool's sizing) or the
    `sim.timed.deployment` argument (target "deployment") it sets; kind: how its text is read
    (a key of PARSERS; "bool" is a `--x/--no-x` pair); default: the value `vllm serve` uses
    when the flag is not given, None where it depends on the GPU or the model (then
    `default_text` says how, and config_for computes it); aliases: older spellings of this
    command line, still read and not shown in the help; negative_alias: an older store-false
    spelling of a boolean (`--no-chunked-prefill`).
    """

    name: str
    dest: str
    target: str
    kind: str
    help: str
    default: Any
    default_text: str = ""
    aliases: tuple[str, ...] = ()
    negative_alias: str | None = None
    metavar: str | None = None
    vllm_aliases: tuple[str, ...] = ()  # vLLM's own other spellings, shown in the help

    @property
    def default_shown(self) -> str:
        """The default as the help states it."""
        if self.default_text:
            return self.default_text
        if self.kind == "bool":
            return "on" if self.default else "off"
        return "off" if self.default is None else str(self.default)

    @property
    def option_strings(self) -> tuple[str, ...]:
        """Every spelling this command line reads (vLLM's first)."""
        out = [self.name, *self.vllm_aliases, *self.aliases]
        if self.kind == "bool":
            out.insert(1, "--no-" + self.name[2:])
            if self.negative_alias:
                out.append(self.negative_alias)
        return tuple(out)

    def parse(self, text: str) -> Any:
        """The value of `--flag text`; argparse.ArgumentTypeError if malformed."""
        return PARSERS[self.kind](text)

    def help_text(self) -> str:
        """Our help, ending with the default `vllm serve` uses."""
        return f"{self.help} (default: {self.default_shown})"


_PER_GPU_TOKENS = (
    "as vllm serve on the GPU: 2048 under 70 GiB and on A100s, 8192 on H100/H200-class GPUs, "
    "16384 from 160 GiB; see `python -m sim defaults`"
)
_PER_GPU_SEQS = "as vllm serve on the GPU: 256 under 70 GiB and on A100s, 1024 above"

FLAGS: tuple[Flag, ...] = (
    Flag(
        "--max-num-batched-tokens",
        "max_num_batched_tokens",
        "scheduler",
        "count",
        "the token budget: query tokens one step may compute, prompt chunks and decodes "
        "together; takes 8k (8,000) or 8K (8,192)",
        None,
        _PER_GPU_TOKENS,
        metavar="N",
    ),
    Flag(
        "--max-num-seqs",
        "max_num_seqs",
        "scheduler",
        "int",
        "the most requests running at once (one step holds at most this many sequences)",
        None,
        _PER_GPU_SEQS,
        metavar="N",
    ),
    Flag(
        "--max-model-len",
        "max_model_len",
        "scheduler",
        "count_or_auto",
        "the longest sequence, prompt plus output, in tokens; auto or -1 is the model's",
        None,
        "the model's context length (max_position_embeddings)",
        metavar="N",
    ),
    Flag(
        "--num-gpu-blocks-override",
        "num_gpu_blocks",
        "scheduler",
        "int",
        "the KV pool in blocks, null block included, instead of the estimate from memory",
        None,
        "estimated from the GPU's memory, the weights and --gpu-memory-utilization",
        aliases=("--num-gpu-blocks",),
        metavar="N",
    ),
    Flag(
        "--gpu-memory-utilization",
        "gpu_memory_utilization",
        "pool",
        "float",
        "the share of the GPU's memory vLLM may use (weights, activations, KV cache), in (0, 1]",
        0.92,
        vllm_aliases=("--device-memory-utilization",),
        metavar="F",
    ),
    Flag(
        "--kv-cache-dtype",
        "kv_cache_dtype",
        "deployment",
        "kv_dtype",
        "how the KV cache stores keys and values: auto (the model's 16-bit type), bfloat16, "
        "float16, or fp8 / fp8_e4m3 / fp8_e5m2 (one byte a value: twice the tokens per GiB)",
        "auto",
        metavar="DTYPE",
    ),
    Flag(
        "--block-size",
        "block_size",
        "pool",
        "int",
        "tokens per KV cache block (vLLM 0.33's CUDA default; 0.34 lets the attention "
        "backend choose, 64 with FlashAttention)",
        16,
        metavar="N",
    ),
    Flag(
        "--enable-prefix-caching",
        "enable_prefix_caching",
        "scheduler",
        "bool",
        "reuse the KV blocks of a prompt prefix computed before (hashed full blocks)",
        True,
    ),
    Flag(
        "--enable-chunked-prefill",
        "enable_chunked_prefill",
        "scheduler",
        "bool",
        "split a long prompt over several steps to fit the token budget",
        True,
        negative_alias="--no-chunked-prefill",
    ),
    Flag(
        "--async-scheduling",
        "async_scheduling",
        "scheduler",
        "bool",
        "vLLM's AsyncScheduler: step k is scheduled before step k-1's output is processed",
        True,
    ),
    Flag(
        "--long-prefill-token-threshold",
        "long_prefill_token_threshold",
        "scheduler",
        "int",
        "with chunked prefill, the most prompt tokens one request computes in a step while "
        "others wait or run; 0 means no cap",
        0,
        metavar="N",
    ),
    Flag(
        "--scheduling-policy",
        "policy",
        "scheduler",
        "str",
        "the waiting queue's order: vLLM's fcfs or priority (lower value first, then "
        "arrival); sjf, fair-share and prefix-aware are teaching policies vLLM does not have",
        "fcfs",
        aliases=("--policy",),
        metavar="POLICY",
    ),
    Flag(
        "--watermark",
        "watermark",
        "scheduler",
        "float",
        "share of the KV blocks kept free when admitting a waiting or preempted request, in [0, 1)",
        0.0,
        metavar="F",
    ),
    Flag(
        "--scheduler-reserve-full-isl",
        "scheduler_reserve_full_isl",
        "scheduler",
        "bool",
        "admit a new request only if its whole prompt fits the free KV blocks, not just its "
        "first chunk",
        True,
    ),
    Flag(
        "--max-num-queued-reqs",
        "max_num_queued_reqs",
        "scheduler",
        "count",
        "admission limit: a request arriving when this many are unfinished (waiting and "
        "running) is refused (HTTP 503)",
        None,
        metavar="N",
    ),
    Flag(
        "--max-num-queued-tokens",
        "max_num_queued_tokens",
        "scheduler",
        "count",
        "admission limit: a request arriving when the prompts without a first token hold "
        "this many tokens is refused (HTTP 503); takes 32k (32,000) or 32K (32,768)",
        None,
        metavar="N",
    ),
    Flag(
        "--cache-aware-admission-window",
        "cache_aware_admission_window",
        "scheduler",
        "int",
        "vLLM 0.34: with prefix caching and fcfs, the first N plain waiting requests are "
        "admitted most-cached prompt first once KV cache usage reaches the threshold; 0 is off",
        0,
        metavar="N",
    ),
    Flag(
        "--cache-aware-admission-threshold",
        "cache_aware_admission_threshold",
        "scheduler",
        "float",
        "vLLM 0.34: the KV cache usage, in [0, 1], from which the admission window reorders",
        0.5,
        metavar="F",
    ),
)

# SchedulerConfig fields that are not a flag, and why (tests/test_flags.py holds the list).
NOT_FLAGS: dict[str, str] = {
    "gateway_timeout_s": "a teaching model of a gateway's queue timeout (sim/engine/kernel.py "
    "`_expire`), not a setting of vLLM",
    "vllm_version": "the release whose rules the scheduler follows: vllm serve is always its "
    "own release (0.34 here); a replay reads it from the recording",
}

# The deployment: `vllm serve MODEL --tensor-parallel-size N --dtype D --quantization fp8`.
# `simulate` adds them by hand (its --model is a catalog key); serve-args reads them too.
DEPLOYMENT_FLAGS: dict[str, tuple[str, ...]] = {
    "--model": (),
    "--tensor-parallel-size": ("-tp",),
    "--dtype": (),
    "--quantization": ("-q",),
    "--pipeline-parallel-size": ("-pp",),  # 1 only
    "--data-parallel-size": ("-dp",),  # 1 only
}
WEIGHT_DTYPES_16 = ("auto", "bfloat16", "float16", "half", "bf16", "fp16")
FP8_QUANTIZATIONS = ("fp8", "fbgemm_fp8", "ptpc_fp8")


def by_name() -> dict[str, Flag]:
    """Every spelling (vLLM's, `--no-` forms, old aliases) -> its Flag."""
    return _by_name()


@cache
def _by_name() -> dict[str, Flag]:
    return {spelling: f for f in FLAGS for spelling in f.option_strings}


def defaults() -> dict[str, Any]:
    """Every flag's `vllm serve` default by dest (None: per GPU or model, config_for decides)."""
    return {f.dest: f.default for f in FLAGS}


def weights_dtype(dtype: str | None, quantization: str | None, model_name: str = "") -> str:
    """The simulator's weights dtype ("bf16" or "fp8") for vLLM's --dtype and --quantization.

    16-bit types (auto, bfloat16, float16/half) cost the same in the cost model and are all
    "bf16"; `--quantization fp8` (or fbgemm_fp8, ptpc_fp8), a checkpoint whose name says FP8,
    and this command line's old `--dtype fp8` give "fp8". 32-bit weights and other
    quantizations (AWQ, GPTQ, bitsandbytes...) are not modelled: SimInputError.
    """
    fp8_name = "fp8" in re.split(r"[-_./]", model_name.lower())
    if dtype is not None and dtype not in (*WEIGHT_DTYPES_16, "fp8"):
        raise SimInputError(
            f"--dtype {dtype} is not modelled (modelled: auto, bfloat16, float16, half; "
            "FP8 weights: --quantization fp8)"
        )
    if quantization is not None:
        q = quantization.lower()
        if q in FP8_QUANTIZATIONS or (q in ("compressed-tensors", "modelopt") and fp8_name):
            return "fp8"
        raise SimInputError(
            f"--quantization {quantization} is not modelled by this simulator (modelled: fp8)"
        )
    if dtype == "fp8" or fp8_name:
        return "fp8"
    return "bf16"


# ---------------------------------------------------------------------------------------------
# argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add every flag of the declaration to `parser` (argparse default None: unset)."""
    group = parser.add_argument_group(
        "vLLM's scheduler and cache flags (vllm serve's names and defaults)"
    )
    for f in FLAGS:
        shown = (f.name, *f.vllm_aliases)
        if f.kind == "bool":
            group.add_argument(
                *shown,
                dest=f.dest,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=_escape(f.help_text()),
            )
            if f.negative_alias:
                group.add_argument(
                    f.negative_alias,
                    dest=f.dest,
                    action="store_false",
                    default=argparse.SUPPRESS,
                    help=argparse.SUPPRESS,
                )
            continue
        group.add_argument(
            *shown,
            dest=f.dest,
            type=f.parse,
            default=None,
            metavar=f.metavar,
            help=_escape(f.help_text()),
        )
        for alias in f.aliases:
            group.add_argument(
                alias, dest=f.dest, type=f.parse, default=argparse.SUPPRESS, help=argparse.SUPPRESS
            )


def _escape(text: str) -> str:
    return text.replace("%", "%%")


def settings(namespace: argparse.Namespace | Mapping[str, Any]) -> dict[str, Any]:
    """Every flag's value by dest: the one given, else vLLM serve's default."""
    given = vars(namespace) if isinstance(namespace, argparse.Namespace) else dict(namespace)
    out = defaults()
    for f in FLAGS:
        value = given.get(f.dest)
        if value is not None:
            out[f.dest] = value
    if out["max_model_len"] == -1:  # auto: the model's
        out["max_model_len"] = None
    return out


def split(values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(SchedulerConfig keyword arguments, config_for's pool arguments, deployment arguments)."""
    parts: dict[str, dict[str, Any]] = {t: {} for t in TARGETS}
    for f in FLAGS:
        if f.dest in values:
            parts[f.target][f.dest] = values[f.dest]
    return parts["scheduler"], parts["pool"], parts["deployment"]


def unmodelled(args: Iterable[str], known: Iterable[str]) -> str | None:
    """The first vLLM flag in `args` that `known` (a parser's option strings) does not read."""
    known = set(known)
    for token in args:
        if token == "--":
            break
        name = token.split("=", 1)[0]
        if not name.startswith("-") or name in known:
            continue
        if is_vllm_flag(name):
            return name
    return None


def is_vllm_flag(name: str) -> bool:
    """Whether `name` is a flag of `vllm serve` 0.34 (with `--no-` forms and `-O` levels)."""
    if name in VLLM_SERVE_FLAGS or name in LEGACY_FLAGS:
        return True
    if name.startswith("--no-") and "--" + name[5:] in VLLM_SERVE_FLAGS:
        return True
    return re.fullmatch(r"-O\d?", name) is not None or name.startswith("-O.")


def _words(text: str) -> list[str]:
    return text.split()


# Every flag of `vllm serve` 0.34.0: EngineArgs.add_cli_args (engine/arg_utils.py), FrontendArgs
# and make_arg_parser (entrypoints/common/cli_args.py), read from the 0.34.0 wheel. A boolean
# flag's `--no-` form is implied.
VLLM_SERVE_FLAGS: frozenset[str] = frozenset(
    _words(
        """
    --additional-config --aggregate-engine-logging --all2all-backend --allow-credentials
    --allow-deprecated-quantization --allowed-headers --allowed-local-media-path
    --allowed-media-domains --allowed-methods --allowed-origins
    --anthropic-disabled-thinking-effort --api-key --api-server-count --async-scheduling
    --attention-backend --attention-config --aux-output-config --block-size
    --cache-aware-admission-threshold --cache-aware-admission-window --chat-template
    --chat-template-content-format --checkpoint-prepare-on-startup --code-revision --cohere-format
    --cohere-is-reasoning-model --collect-detailed-traces --compilation-config --config
    --config-format --convert --cp-kv-cache-interleave-size --cpu-distributed-timeout-seconds
    --cpu-offload-gb --cpu-offload-params --cudagraph-capture-sizes --cudagraph-metrics
    --custom-histogram-buckets --data-parallel-address --data-parallel-backend
    --data-parallel-external-lb --data-parallel-hybrid-lb --data-parallel-multi-port-external-lb
    --data-parallel-rank --data-parallel-rpc-port --data-parallel-size --data-parallel-size-local
    --data-parallel-start-rank --data-parallel-supervisor-port --dbo-decode-token-threshold
    --dbo-prefill-token-threshold --dcp-comm-backend --dcp-kv-cache-interleave-size
    --dcp-q-replicate --decode-context-parallel-size --default-chat-template-kwargs
    --default-mm-loras --device-ids --device-memory-utilization --diffusion-config
    --disable-access-log-for-endpoints --disable-cascade-attn --disable-chunked-mm-input
    --disable-custom-all-reduce --disable-fastapi-docs --disable-hybrid-kv-cache-manager
    --disable-log-stats --disable-nccl-for-dp-synchronization --disable-sliding-window
    --disable-uvicorn-access-log --distributed-executor-backend --distributed-timeout-seconds
    --download-dir --dp-supervisor-probe-failure-threshold --dp-supervisor-probe-interval-s
    --dp-supervisor-probe-timeout-s --dp-sync-interval --dtype --ec-manager-config
    --ec-transfer-config --elastic-ep-max-dp-size --enable-auto-tool-choice
    --enable-batch-sharded-sampling --enable-chunked-prefill --enable-cumem-allocator --enable-dbo
    --enable-elastic-ep --enable-ep-weight-filter --enable-eplb --enable-expert-parallel
    --enable-extensible-kv-cache --enable-fault-tolerance --enable-flash-late-interaction
    --enable-flashinfer-autotune --enable-force-include-usage --enable-hc-sp
    --enable-layerwise-nvtx-tracing --enable-log-deltas --enable-log-outputs --enable-log-requests
    --enable-logging-iteration-details --enable-lora --enable-mamba-cache-stochastic-rounding
    --enable-mamba-shared-prefix-checkpoint --enable-mfu-metrics --enable-mixed-moe-lora-format
    --enable-mm-embeds --enable-moe-shared-loras --enable-nccl-comm-suspend --enable-offline-docs
    --enable-per-request-metrics --enable-prefix-caching --enable-prompt-embeds
    --enable-prompt-tokens-details --enable-request-id-headers --enable-return-routed-experts
    --enable-scale-out --enable-server-load-tracking --enable-shm-tensor-arena --enable-sleep-mode
    --enable-ssl-refresh --enable-tokenizer-info-endpoint --enable-tower-connector-lora
    --enable-trace-replay --enforce-eager --engram-config --eplb-config
    --exclude-tools-when-tool-choice-none --expert-placement-strategy --fail-on-environ-validation
    --fault-tolerance-config --fingerprint-mode --fingerprint-value --fully-sharded-loras
    --gdn-prefill-backend --generation-config --gpu-memory-utilization --grpc --grpc-port
    --h11-max-header-count --h11-max-incomplete-event-size --headless
    --headless-client-handshake-address --hf-config-path --hf-overrides --hf-token --host
    --ignore-patterns --interleave-mm-strings --io-processor-plugin --ir-op-priority
    --jit-monitor-mode --jit-monitor-verbose --kda-decode-backend --kda-prefill-backend
    --kernel-config --kv-cache-dtype --kv-cache-dtype-skip-layers --kv-cache-memory-bytes
    --kv-cache-metrics --kv-cache-metrics-sample --kv-events-config --kv-offloading-backend
    --kv-offloading-size --kv-sharing-fast-prefill --kv-transfer-config --language-model-only
    --limit-mm-per-prompt --linear-backend --load-format --log-config-file --log-error-stack
    --log-level --logging-config --logits-processors --logprobs-mode
    --long-prefill-token-threshold --long-prefill-token-threshold-adaptive --lora-dtype
    --lora-modules --lora-target-modules --mamba-backend --mamba-block-size --mamba-cache-dtype
    --mamba-cache-mode --mamba-cache-philox-rounds --mamba-ssm-cache-dtype --mamba-ssu-algorithm
    --master-addr --master-port --max-cpu-loras --max-cudagraph-capture-size --max-log-len
    --max-logprobs --max-lora-cls-labels --max-lora-rank --max-loras --max-model-len
    --max-num-active-seqs --max-num-batched-tokens --max-num-inflight-kv-loads
    --max-num-queued-reqs --max-num-queued-tokens --max-num-scheduled-tokens --max-num-seqs
    --max-parallel-loading-workers --media-io-kwargs --middleware --mm-device-do-normalize
    --mm-encoder-attn-backend --mm-encoder-attn-dtype --mm-encoder-fp8-scale-path
    --mm-encoder-fp8-scale-save-margin --mm-encoder-fp8-scale-save-path --mm-encoder-only
    --mm-encoder-tp-mode --mm-hasher-algorithm --mm-ipc-gpu-memory-gb --mm-processor-cache-gb
    --mm-processor-cache-type --mm-processor-device --mm-processor-kwargs
    --mm-shm-cache-max-object-size-mb --mm-tensor-ipc --model --model-class-overrides --model-impl
    --model-loader-extra-config --moe-backend --monokernel --nnodes --node-rank
    --num-gpu-blocks-override --numa-bind --numa-bind-cpus --numa-bind-nodes --offload-backend
    --offload-group-size --offload-num-in-group --offload-params --offload-prefetch-step
    --optimization-level --otlp-traces-endpoint --override-generation-config
    --per-request-spec-decode-metrics --performance-mode --pipeline-parallel-size --pooler-config
    --port --prefill-context-parallel-size --prefill-schedule-interval
    --prefix-cache-retention-interval --prefix-caching-hash-algo --prefix-match-unit
    --profiler-config --pt-load-map-location --quantization --quantization-config
    --ray-workers-use-nsight --reasoning-config --reasoning-effort-map --reasoning-parser
    --reasoning-parser-plugin --renderer-num-workers --replayssm-buffer-len --response-role
    --return-sampling-mask --return-tokens-as-token-ids --revision --root-path --runner
    --safetensors-load-strategy --safetensors-prefetch-block-size
    --safetensors-prefetch-num-threads --scheduler-cls --scheduler-reserve-full-isl
    --scheduling-policy --seed --served-model-name --show-hidden-metrics-for-version
    --shuffle-safetensors-files --shutdown-timeout --skip-mm-profiling --skip-tokenizer-init
    --sleep-mode-backend --sleep-mode-offload-cudagraph --sleep-preserve-parameter-names
    --sparse-indexer-topk-backend --spec-method --spec-model --spec-tokens
    --specialize-active-lora --speculative-config --sse-keep-alive-interval --ssl-ca-certs
    --ssl-cert-reqs --ssl-certfile --ssl-ciphers --ssl-keyfile --stream-interval
    --structured-outputs-config --swa-bounded-replay --tensor-parallel-size --tokenizer
    --tokenizer-mode --tokenizer-revision --tokens-only --tool-call-parser --tool-parser-plugin
    --tool-server --tool-strict-level --trust-remote-code --trust-request-chat-template
    --trust-request-mm-kwargs --ubatch-size --uds --use-fp64-gumbel --use-replayssm
    --use-tqdm-on-load --uvicorn-log-level --video-pruning-method --video-pruning-rate
    --watchdog-config --watermark --watermark-config --weight-transfer-config --worker-cls
    --worker-extension-cls -ac -asc -cc -dc -dcp -dp -dpa -dpb -dpe -dph -dpl -dpm -dpn -dpp -dpr
    -ep -n -pcp -pp -q -r -sc -tp
    """
    )
)

# Spellings of older vLLM releases still seen in pasted commands (0.34 no longer has them).
LEGACY_FLAGS: frozenset[str] = frozenset(
    _words(
        """
    --disable-log-requests --swap-space --num-scheduler-steps --use-v2-block-manager
    --preemption-mode --max-seq-len-to-capture --num-lookahead-slots
    """
    )
)

# Flags that change neither what a step runs nor how long it takes: the HTTP server, TLS,
# logging and metrics, the tokenizer and chat template, tool and reasoning parsers, where and
# how the weights are downloaded. A pasted command may carry them (serve-args reports them).
NO_EFFECT_FLAGS: frozenset[str] = frozenset(
    _words(
        """
    --host --port --uds --api-key --allow-credentials --allowed-headers --allowed-methods
    --allowed-origins --root-path --middleware --ssl-ca-certs --ssl-cert-reqs --ssl-certfile
    --ssl-ciphers --ssl-keyfile --enable-ssl-refresh --h11-max-header-count
    --h11-max-incomplete-event-size --disable-fastapi-docs --enable-offline-docs
    --disable-uvicorn-access-log --uvicorn-log-level --disable-access-log-for-endpoints
    --served-model-name --trust-remote-code --download-dir --revision --code-revision
    --tokenizer --tokenizer-mode --tokenizer-revision --hf-token --hf-config-path --config-format
    --seed --chat-template --chat-template-content-format --default-chat-template-kwargs
    --trust-request-chat-template --response-role --enable-auto-tool-choice --tool-call-parser
    --tool-parser-plugin --tool-server --tool-strict-level --exclude-tools-when-tool-choice-none
    --reasoning-parser --reasoning-parser-plugin --enable-log-requests --enable-log-outputs
    --enable-log-deltas --max-log-len --disable-log-stats --log-level --log-config-file
    --logging-config --log-error-stack --aggregate-engine-logging --enable-prompt-tokens-details
    --enable-force-include-usage --enable-server-load-tracking --enable-request-id-headers
    --enable-tokenizer-info-endpoint --return-tokens-as-token-ids --max-logprobs
    --otlp-traces-endpoint --collect-detailed-traces --show-hidden-metrics-for-version
    --kv-cache-metrics --kv-cache-metrics-sample --cudagraph-metrics --enable-mfu-metrics
    --enable-per-request-metrics --custom-histogram-buckets --enable-logging-iteration-details
    --load-format --safetensors-load-strategy --max-parallel-loading-workers --ignore-patterns
    --use-tqdm-on-load --pt-load-map-location --model-loader-extra-config --shutdown-timeout
    --sse-keep-alive-interval --prefix-caching-hash-algo --distributed-executor-backend
    --disable-log-requests
    """
    )
)
