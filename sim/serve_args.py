"""Read a pasted `vllm serve MODEL --flag ...` command into the simulator's configuration.

Why: a learner knows their deployment as the command that starts it. `parse_serve_command`
reads that command (also `python -m vllm.entrypoints.openai.api_server --model X ...`, a
`docker run ... vllm/vllm-openai ...` line, backslash continuations, quotes, `--flag=value`,
`--flag_name` spelled with underscores as vLLM allows), maps the Hugging Face model name to a
catalog key, and reads every flag sim/flags.py declares plus the deployment's
(`--tensor-parallel-size`, `--dtype`, `--quantization`). A flag the simulator does not model is
refused by name; flags that change neither the schedule nor the step times (the HTTP server,
logging, the tokenizer...) are read and reported as unused. `config_from_serve` turns the
result into a Deployment and a SchedulerConfig with `vllm serve`'s defaults for the GPU.
"""

from __future__ import annotations

import argparse
import difflib
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from sim import flags
from sim.errors import SimInputError

MAX_COMMAND_CHARS = 20_000
# Name parts that mark a variant of a base model (chat tuning, FP8 checkpoints, formats).
_VARIANT_WORDS = frozenset(("instruct", "chat", "hf", "it", "base", "meta", "fp8", "dynamic"))
# Name parts of weights the cost model does not price (4- and 8-bit integer, FP4, GGUF...).
_NOT_MODELLED_WEIGHTS = (
    "awq",
    "gptq",
    "int4",
    "int8",
    "w4a16",
    "w8a16",
    "w8a8",
    "bnb",
    "gguf",
    "nvfp4",
    "mxfp4",
)
_SHELL_STOP = frozenset({"&&", "||", "|", ";", "&", ">", ">>", "2>&1"})


@dataclass(frozen=True)
class ServeArgs:
    """What a `vllm serve` command sets, in the simulator's terms.

    model: the catalog key (sim/data/models.csv); hf_name: the name as pasted; dtype: the
    weights ("bf16" or "fp8"); kv_cache_dtype: vLLM's --kv-cache-dtype value; scheduler_kwargs:
    the SchedulerConfig keyword arguments the command sets (others take vLLM serve's defaults
    in config_from_serve); mapped: one plain line per flag read, "--max-num-seqs 64 ->
    max_num_seqs = 64".
    """

    model: str
    hf_name: str
    tp: int = 1
    dtype: str = "bf16"
    kv_cache_dtype: str = "auto"
    gpu_memory_utilization: float = 0.92
    block_size: int = 16
    scheduler_kwargs: dict[str, Any] = field(default_factory=dict, hash=False)
    mapped: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------
# Model names


def _norm(name: str) -> str:
    """A model name's identity: the last path part, lower case, variant words dropped
    (meta-llama/Meta-Llama-3.1-8B-Instruct-FP8 -> llama-3.1-8b)."""
    parts = [p for p in _parts(name) if p not in _VARIANT_WORDS]
    return "-".join(parts)


def _parts(name: str) -> list[str]:
    base = name.strip().rstrip("/").rsplit("/", 1)[-1].lower()
    return [p for p in re.split(r"[-_.]", base) if p]


def resolve_model(name: str) -> str:
    """The catalog key of a model named as `vllm serve` names it (a Hugging Face id or a local
    path), or its catalog key itself; SimInputError naming the close catalog models if none."""
    from sim.models import get_model, model_keys

    keys = model_keys()
    if name in keys:
        return name
    parts = _parts(name)
    odd = [w for w in _NOT_MODELLED_WEIGHTS if w in parts]
    if odd and "fp8" not in parts:
        raise SimInputError(
            f"model {name!r}: {odd[0].upper()} weights are not modelled by this simulator "
            "(16-bit and FP8 weights only)"
        )
    wanted = _norm(name)
    for key in keys:
        if wanted in (_norm(key), _norm(get_model(key).hf_name)):
            return key
    names = {_norm(k): k for k in keys} | {_norm(get_model(k).hf_name): k for k in keys}
    close = difflib.get_close_matches(wanted, list(names), n=3, cutoff=0.7)
    near = sorted({names[c] for c in close}, key=keys.index)
    listing = ", ".join(near) if near else ", ".join(keys)
    label = "closest catalog models" if near else "catalog models"
    raise SimInputError(f"model {name!r} is not in the catalog; {label}: {listing}")


# ---------------------------------------------------------------------------------------------
# The command


def _tokens(text: str) -> list[str]:
    if not isinstance(text, str) or not text.strip():
        raise SimInputError("paste a `vllm serve MODEL --flag value ...` command")
    if len(text) > MAX_COMMAND_CHARS:
        raise SimInputError(f"the command is longer than {MAX_COMMAND_CHARS:,} characters")
    joined = re.sub(r"\\\r?\n", " ", text)  # line continuations
    joined = re.sub(r"`\r?\n", " ", joined)  # PowerShell's
    try:
        tokens = shlex.split(joined, comments=True)
    except ValueError as exc:
        raise SimInputError(f"cannot read the command: {exc}") from None
    out = []
    for token in tokens:
        if token in _SHELL_STOP:
            break
        out.append(token)
    return out


def _engine_args(tokens: list[str]) -> list[str]:
    """The arguments after `vllm serve`, the api_server module or the vllm-openai image."""
    for i, token in enumerate(tokens):
        if token.rsplit("/", 1)[-1] == "vllm" and i + 1 < len(tokens) and tokens[i + 1] == "serve":
            return tokens[i + 2 :]
        if token == "vllm.entrypoints.openai.api_server" and i > 0 and tokens[i - 1] == "-m":
            return tokens[i + 1 :]
        if re.fullmatch(r"(\S+/)?vllm/vllm-openai(:\S+)?|vllm-openai(:\S+)?", token):
            return tokens[i + 1 :]
    if tokens and tokens[0].startswith("-"):
        return tokens  # flags only, with --model among them
    raise SimInputError(
        "not a vllm serve command: expected `vllm serve MODEL --flag value ...` or "
        "`python -m vllm.entrypoints.openai.api_server --model MODEL ...`"
    )


def _split_flags(args: list[str]) -> tuple[str | None, list[tuple[str, str | None, str]]]:
    """(positional model, [(flag, value or None, spelling as pasted)])."""
    value_flags = _value_flags()
    model = None
    out: list[tuple[str, str | None, str]] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if not token.startswith("-") or re.fullmatch(r"-\d+(\.\d+)?", token):
            if model is None:
                model = token
                continue
            raise SimInputError(f"unexpected value {token!r} (a flag's value must follow it)")
        name, eq, value = token.partition("=")
        if name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")  # vLLM reads --max_num_seqs too
        if eq:
            out.append((name, value, token))
            continue
        takes_value = name in value_flags or (
            name not in _bool_names() and i < len(args) and not _looks_like_flag(args[i])
        )
        if takes_value:
            if i >= len(args):
                raise SimInputError(f"{name} needs a value")
            out.append((name, args[i], f"{token} {args[i]}"))
            i += 1
        else:
            out.append((name, None, token))
    return model, out


def _looks_like_flag(token: str) -> bool:
    return token.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", token)


def _bool_names() -> set[str]:
    return {s for f in flags.FLAGS if f.kind == "bool" for s in f.option_strings}


def _value_flags() -> set[str]:
    out = {s for f in flags.FLAGS if f.kind != "bool" for s in f.option_strings}
    for name, short in flags.DEPLOYMENT_FLAGS.items():
        out.update((name, *short))
    return out


_DEPLOYMENT_NAMES = {
    spelling: name for name, short in flags.DEPLOYMENT_FLAGS.items() for spelling in (name, *short)
}


def parse_serve_command(text: str) -> ServeArgs:
    """Read a pasted `vllm serve MODEL --flag value ...` command (see the module docstring).

    SimInputError, one line, for anything it cannot read: not a vllm command, no model, a model
    not in the catalog, a malformed value, or a flag the simulator does not model (by name).
    """
    model_name, pairs = _split_flags(_engine_args(_tokens(text)))
    by_name = flags.by_name()
    mapped: list[str] = []
    values: dict[str, Any] = {}
    deployment: dict[str, str] = {}
    pasted_as: dict[str, str] = {}
    unused: list[str] = []
    for name, value, pasted in pairs:
        if name in _DEPLOYMENT_NAMES:
            canonical = _DEPLOYMENT_NAMES[name]
            if value is None:
                raise SimInputError(f"{name} needs a value")
            deployment[canonical] = value
            pasted_as[canonical] = pasted
            continue
        flag = by_name.get(name)
        if flag is not None:
            values[flag.dest] = _value_of(flag, name, value)
            mapped.append(f"{pasted} -> {flag.dest} = {_show(values[flag.dest])}")
            continue
        if name in flags.NO_EFFECT_FLAGS:
            unused.append(f"{pasted} -> not used (changes neither the schedule nor step times)")
            continue
        if flags.is_vllm_flag(name):
            raise SimInputError(f"vLLM flag {name} is not modelled by this simulator")
        raise SimInputError(f"unknown flag {name}: not a flag of vllm serve 0.34")

    if "--model" in deployment:
        if model_name is not None:
            raise SimInputError("the model is given twice (as MODEL and as --model)")
        model_name = deployment["--model"]
    if model_name is None:
        raise SimInputError("no model: expected `vllm serve MODEL ...` or `--model MODEL`")
    key = resolve_model(model_name)
    mapped.insert(0, f"{model_name} -> model = {key}")

    tp = _parallel(deployment, "--tensor-parallel-size", allowed=(1, 2, 4, 8))
    for other, meaning in (
        ("--pipeline-parallel-size", "no pipeline stages"),
        ("--data-parallel-size", "one engine"),
    ):
        _parallel(deployment, other, allowed=(1,))  # refuses more than 1
        if other in deployment:
            mapped.append(f"{pasted_as[other]} -> {meaning} (vLLM's default)")
    if "--tensor-parallel-size" in deployment:
        mapped.insert(1, f"{pasted_as['--tensor-parallel-size']} -> tp = {tp}")
    dtype = flags.weights_dtype(
        deployment.get("--dtype"), deployment.get("--quantization"), model_name
    )
    why = [pasted_as[n] for n in ("--dtype", "--quantization") if n in deployment]
    if dtype == "fp8" and not why:
        why = ["FP8 in the model's name"]
    if why:
        what = "FP8 weights" if dtype == "fp8" else "16-bit weights, one cost for all"
        mapped.append(f"{', '.join(why)} -> dtype = {dtype} ({what})")

    settings = flags.settings(values)
    sched, pool, dep = flags.split(settings)
    return ServeArgs(
        model=key,
        hf_name=model_name,
        tp=tp,
        dtype=dtype,
        kv_cache_dtype=dep["kv_cache_dtype"],
        gpu_memory_utilization=float(pool["gpu_memory_utilization"]),
        block_size=int(pool["block_size"]),
        scheduler_kwargs={k: v for k, v in sched.items() if k in values},
        mapped=tuple(mapped + unused),
    )


def _value_of(flag: flags.Flag, spelling: str, value: str | None) -> Any:
    if flag.kind == "bool":
        if value is not None:
            raise SimInputError(f"{spelling} takes no value (use {flag.name} or --no-...)")
        negative = spelling.startswith("--no-") or spelling == flag.negative_alias
        return not negative
    if value is None:
        raise SimInputError(f"{spelling} needs a value")
    try:
        parsed = flag.parse(value)
    except argparse.ArgumentTypeError as exc:
        raise SimInputError(f"{spelling}: {exc}") from None
    if flag.dest == "max_model_len" and parsed == -1:
        return None
    return parsed


def _show(value: Any) -> str:
    if value is None:
        return "the model's"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parallel(deployment: dict[str, str], name: str, *, allowed: tuple[int, ...]) -> int:
    if name not in deployment:
        return 1
    text = deployment[name]
    try:
        size = int(text)
    except ValueError:
        raise SimInputError(f"{name} must be a whole number, got {text!r}") from None
    if size not in allowed:
        if allowed == (1,):
            raise SimInputError(f"vLLM flag {name} {size} is not modelled by this simulator")
        raise SimInputError(f"{name} must be one of {', '.join(map(str, allowed))}, got {size}")
    return size


# ---------------------------------------------------------------------------------------------
# The configuration


def config_from_serve(args: ServeArgs, gpu: str) -> tuple[Any, Any]:
    """(sim.cost.Deployment, SchedulerConfig) for `args` on `gpu`: what the command sets, and
    `vllm serve`'s defaults for that GPU for everything else (sim/flags.py)."""
    from sim.timed import config_for, deployment

    dep = deployment(
        gpu, args.model, tp=args.tp, dtype=args.dtype, kv_cache_dtype=args.kv_cache_dtype
    )
    sched, _, _ = flags.split(flags.settings(args.scheduler_kwargs))
    config = config_for(
        dep,
        gpu_memory_utilization=args.gpu_memory_utilization,
        block_size=args.block_size,
        **sched,
    )
    return dep, config
