"""Extract Vidur's linear-layer profiles into sim/data/vidur_linear_ops.csv (a one-off tool).

Usage: python scripts/extract_vidur.py PATH_TO_VIDUR_CHECKOUT. Reads
data/profiling/compute/{a100,h100}/<org>/<model>/mlp.csv of microsoft/vidur (MIT, Copyright (c)
Microsoft Corporation) and keeps, per (gpu, model, tp, num_tokens <= 8192), the medians of the
four linear operators and the model's dimensions. Duplicate rows of one key are merged by their
median. Not used at run time: the app and the tests read only the extract.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

GPUS = {"a100": "A100-80GB", "h100": "H100-SXM"}
MODELS = {
    "Llama-2-7b-hf": "Llama-2-7B",
    "Llama-2-70b-hf": "Llama-2-70B",
    "Meta-Llama-3-8B": "Llama-3-8B",
    "Meta-Llama-3-70B": "Llama-3-70B",
    "Qwen-72B": "Qwen-72B",
    "CodeLlama-34b-Instruct-hf": "CodeLlama-34B",
    "internlm-20b": "InternLM-20B",
    "phi-2": "Phi-2",
}
OPS = {
    "attn_pre_proj": "qkv_ms",
    "attn_post_proj": "o_ms",
    "mlp_up_proj": "gate_up_ms",
    "mlp_down_proj": "down_ms",
}
DIMS = {
    "n_head": "num_attention_heads",
    "n_kv_head": "num_kv_heads",
    "n_embd": "hidden_size",
    "n_expanded_embd": "intermediate_size",
    "use_gated_mlp": "gated_mlp",
}
MAX_TOKENS = 8192
OUT = Path(__file__).resolve().parent.parent / "sim" / "data" / "vidur_linear_ops.csv"


def extract(root: Path) -> pd.DataFrame:
    """One row per (gpu, model, tp, num_tokens): per-layer medians (ms) and model dims."""
    parts = []
    for gpu_dir, gpu in GPUS.items():
        for path in sorted((root / "data/profiling/compute" / gpu_dir).glob("*/*/mlp.csv")):
            model = MODELS.get(path.parent.name)
            if model is None:
                continue
            d = pd.read_csv(path)
            d = d[d["num_tokens"] <= MAX_TOKENS]
            agg = {f"time_stats.{op}.median": "median" for op in OPS} | dict.fromkeys(DIMS, "first")
            a = d.groupby(["num_tensor_parallel_workers", "num_tokens"]).agg(agg).reset_index()
            a = a.rename(columns={f"time_stats.{op}.median": c for op, c in OPS.items()})
            a = a.rename(columns={"num_tensor_parallel_workers": "tp", **DIMS})
            a.insert(0, "model", model)
            a.insert(0, "gpu", gpu)
            parts.append(a)
    df = pd.concat(parts, ignore_index=True)
    cols = ["gpu", "model", "tp", "num_tokens", *DIMS.values(), *OPS.values()]
    return df[cols].sort_values(["gpu", "model", "tp", "num_tokens"], kind="stable")


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0], "data/profiling/compute").is_dir():
        sys.stderr.write("usage: python scripts/extract_vidur.py PATH_TO_VIDUR_CHECKOUT\n")
        return 2
    df = extract(Path(argv[0]))
    df.to_csv(OUT, index=False)
    sys.stdout.write(f"wrote {len(df)} rows to {OUT}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
