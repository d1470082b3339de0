"""Fit the cost model's efficiency factors to Vidur's measured profiles; write the results.

`python -m sim.calibrate` regenerates sim/data/calibration.json and docs/calibration.md from
sim/data/vidur_linear_ops.csv and sim/data/vidur_all_reduce.csv (extracts of microsoft/vidur,
MIT). Why a script: the factors and the error table are computed, never typed, and a test
checks the committed JSON still matches what this code computes.

Per GPU generation four parameters are fitted (bandwidth and FLOP efficiency, a per-kernel
latency, the smooth-max exponent) by Nelder-Mead on the squared log error of the summed
linear-layer time (QKV + O + gate/up + down per layer) over every token count and TP size.
Generalization is shown by leaving out a whole model, or one model/TP combination, refitting
and measuring the error on what was left out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from sim.cost import ARCH_FAMILY, GemmFactors, gemm_ms, pad_tokens
from sim.hardware import DATA_DIR, get_gpu

TILE_TOKENS = 64  # GEMM row tile (cuBLAS/CUTLASS kernels step in 64/128-row tiles)
EFF_CAP = 0.95  # no kernel reaches more than 95% of a datasheet peak
NM_ITERS = 800
# The loss adds TAIL_WEIGHT x the squared log error beyond TAIL_FROM, so that a few kernel
# outliers do not decide the worst case alone.
TAIL_FROM = 0.2
TAIL_WEIGHT = 100.0
CAL_PATH = DATA_DIR / "calibration.json"
DOC_PATH = Path(__file__).resolve().parent.parent / "docs" / "calibration.md"
OPS = ("qkv_ms", "o_ms", "gate_up_ms", "down_ms")


def load_linear_profiles() -> pd.DataFrame:
    """Vidur's per-layer linear-op medians (ms), one row per GPU/model/TP/token count."""
    df = pd.read_csv(DATA_DIR / "vidur_linear_ops.csv")
    df["family"] = [ARCH_FAMILY[get_gpu(g).arch] for g in df["gpu"]]
    df["measured_ms"] = df[list(OPS)].sum(axis=1)
    return df


def _shapes(df: pd.DataFrame) -> list[tuple[np.ndarray, np.ndarray]]:
    tp = df["tp"].to_numpy()
    h = df["hidden_size"].to_numpy()
    heads = df["num_attention_heads"].to_numpy()
    hd = h // heads
    q = heads // tp * hd
    kv = np.maximum(df["num_kv_heads"].to_numpy() // tp, 1) * hd
    inter = df["intermediate_size"].to_numpy() // tp
    return [(q + 2 * kv, h), (h, q), (2 * inter, h), (h, inter)]


def _theta_to_factors(theta: np.ndarray) -> GemmFactors:
    sig = 1.0 / (1.0 + np.exp(-theta[:2]))
    return GemmFactors(
        bw_efficiency=float(EFF_CAP * sig[0]),
        flops_efficiency=float(EFF_CAP * sig[1]),
        kernel_latency_us=float(np.exp(theta[2])),
        smooth_p=float(1.0 + np.exp(theta[3])),
        tile_tokens=TILE_TOKENS,
    )


def _arrays(df: pd.DataFrame) -> dict:
    return {
        "m": df["num_tokens"].to_numpy(dtype=np.float64),
        "bw": np.array([get_gpu(g).bw_tbps * 1e12 for g in df["gpu"]]),
        # the profiles are FP16 kernels: same tensor-core peak as BF16
        "fl": np.array([get_gpu(g).bf16_tflops * 1e12 for g in df["gpu"]]),
        "shapes": _shapes(df),
    }


def _predict(a: dict, f: GemmFactors) -> np.ndarray:
    total = np.zeros_like(a["m"])
    for n, k in a["shapes"]:
        t, _, _ = gemm_ms(a["m"], n, k, bw_bps=a["bw"], flops=a["fl"], f=f)  # elementwise
        total += t
    return total


def _peak_times(a: dict) -> tuple[np.ndarray, np.ndarray]:
    """Per GEMM (rows) and profile point (columns): read and padded GEMM time at 100% of peak.

    The fit's fast path; equal to gemm_ms at efficiencies 1 (a test checks the predictions).
    """
    one = GemmFactors(1.0, 1.0, 0.0, 1.0, TILE_TOKENS)
    mem, comp = [], []
    for n, k in a["shapes"]:
        _, tm, _ = gemm_ms(a["m"], n, k, bw_bps=a["bw"], flops=a["fl"], f=one)
        mem.append(tm)
        comp.append(pad_tokens(a["m"], TILE_TOKENS) * 2.0 * n * k / a["fl"] * 1e3)
    return np.array(mem), np.array(comp)


def predict_linear_ms(df: pd.DataFrame, f: GemmFactors) -> np.ndarray:
    """Predicted per-layer linear time (ms) for each profile row with factors f."""
    return _predict(_arrays(df), f)


def _nelder_mead(fun, x0: np.ndarray, iters: int = NM_ITERS, step: float = 0.3) -> np.ndarray:
    """A deterministic Nelder-Mead minimizer (NumPy only; SciPy is not a dependency)."""
    n = len(x0)
    simplex = [np.asarray(x0, dtype=np.float64)]
    for i in range(n):
        x = simplex[0].copy()
        x[i] += step
        simplex.append(x)
    vals = [fun(x) for x in simplex]
    for _ in range(iters):
        order = np.argsort(vals, kind="stable")
        simplex = [simplex[i] for i in order]
        vals = [vals[i] for i in order]
        if vals[-1] - vals[0] < 1e-12 and np.ptp(np.array(simplex), axis=0).max() < 1e-7:
            break  # converged
        centroid = np.mean(simplex[:-1], axis=0)
        xr = centroid + (centroid - simplex[-1])
        fr = fun(xr)
        if fr < vals[0]:
            xe = centroid + 2.0 * (centroid - simplex[-1])
            fe = fun(xe)
            simplex[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            simplex[-1], vals[-1] = xr, fr
        else:
            xc = centroid + 0.5 * (simplex[-1] - centroid)
            fc = fun(xc)
            if fc < vals[-1]:
                simplex[-1], vals[-1] = xc, fc
            else:
                best = simplex[0]
                simplex = [best] + [best + 0.5 * (x - best) for x in simplex[1:]]
                vals = [vals[0]] + [fun(x) for x in simplex[1:]]
    return simplex[int(np.argmin(vals))]


def fit_loss(pred: np.ndarray, measured: np.ndarray) -> float:
    """Mean squared log error plus TAIL_WEIGHT x the squared excess beyond TAIL_FROM."""
    err = np.log(pred / measured)
    tail = np.maximum(np.abs(err) - TAIL_FROM, 0.0)
    return float(np.mean(err**2) + TAIL_WEIGHT * np.mean(tail**2))


def fit_factors(df: pd.DataFrame) -> GemmFactors:
    """Least squared log error fit of the four GEMM factors to the rows of df."""
    measured = df["measured_ms"].to_numpy()
    mem_peak, comp_peak = _peak_times(_arrays(df))

    def loss(theta: np.ndarray) -> float:
        f = _theta_to_factors(theta)
        mem = mem_peak / f.bw_efficiency
        comp = comp_peak / f.flops_efficiency
        p = f.smooth_p
        t = f.kernel_latency_us * 1e-3 + (mem**p + comp**p) ** (1.0 / p)
        return fit_loss(t.sum(axis=0), measured)

    # start: 80% of both peaks, 5 us latency, p = 2
    x0 = np.array([np.log(0.8 / 0.15), np.log(0.8 / 0.15), np.log(5.0), 0.0])
    theta = _nelder_mead(loss, x0)
    theta = _nelder_mead(loss, theta, step=0.1)  # restart from the best point
    return _theta_to_factors(theta)


def _err_row(df: pd.DataFrame, pred: np.ndarray, **extra) -> dict:
    rel = np.abs(pred / df["measured_ms"].to_numpy() - 1.0)
    return {
        **extra,
        "tokens": f"{int(df['num_tokens'].min())}-{int(df['num_tokens'].max())}",
        "points": len(df),
        "median_rel_err": round(float(np.median(rel)), 4),
        "worst_rel_err": round(float(rel.max()), 4),
    }


def fit_all_reduce() -> dict:
    """alpha (us) and beta (GB/s) of t = alpha + size/beta per family and TP size.

    Weighted least squares on relative error over Vidur's intra-node NCCL all-reduce medians.
    """
    net = pd.read_csv(DATA_DIR / "vidur_all_reduce.csv")
    out: dict = {}
    for (gpu, workers), g in net.groupby(["gpu", "num_workers"], sort=True):
        fam = ARCH_FAMILY[get_gpu(gpu).arch]
        size = g["size_bytes"].to_numpy(dtype=np.float64)
        t = g["all_reduce_ms"].to_numpy(dtype=np.float64)
        a = np.stack([np.ones_like(size), size], axis=1) / t[:, None]
        coef, *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
        pred = coef[0] + coef[1] * size
        rel = np.abs(pred / t - 1.0)
        out.setdefault(fam, {})[str(int(workers))] = {
            "alpha_us": round(float(coef[0]) * 1e3, 3),
            "beta_gbps": round(1.0 / float(coef[1]) / 1e9 * 1e3, 2),
            "fitted_on": str(gpu),
            "median_rel_err": round(float(np.median(rel)), 4),
        }
    return out


def _factors_dict(f: GemmFactors, fitted_on: list[str]) -> dict:
    return {
        "bw_efficiency": round(f.bw_efficiency, 6),
        "flops_efficiency": round(f.flops_efficiency, 6),
        "kernel_latency_us": round(f.kernel_latency_us, 6),
        "smooth_p": round(f.smooth_p, 6),
        "fitted_on": fitted_on,
    }


def _rounded(f: dict) -> GemmFactors:
    return GemmFactors(
        f["bw_efficiency"],
        f["flops_efficiency"],
        f["kernel_latency_us"],
        f["smooth_p"],
        TILE_TOKENS,
    )


def compute(leave_one_out: bool = True) -> dict:
    """The whole calibration (what calibration.json holds)."""
    df = load_linear_profiles()
    gemm: dict = {}
    in_sample: list[dict] = []
    loo: list[dict] = []
    for fam, fd in df.groupby("family", sort=True):
        fd = fd.reset_index(drop=True)
        gemm[fam] = _factors_dict(fit_factors(fd), sorted(fd["gpu"].unique()))
        f = _rounded(gemm[fam])
        pred = predict_linear_ms(fd, f)
        for (gpu, model, tp), idx in fd.groupby(["gpu", "model", "tp"], sort=True).groups.items():
            sub = fd.loc[idx]
            in_sample.append(_err_row(sub, pred[np.asarray(idx)], gpu=gpu, model=model, tp=int(tp)))
        if not leave_one_out:
            continue
        models = sorted(fd["model"].unique())
        units = [("model", m, fd["model"] == m) for m in models] if len(models) > 1 else []
        for (_gpu, model, tp), _ in fd.groupby(["gpu", "model", "tp"], sort=True):
            mask = (fd["model"] == model) & (fd["tp"] == tp)
            units.append(("combo", f"{model} TP{tp}", mask))
        for kind, label, mask in units:
            held = fd[mask]
            fo = _rounded(_factors_dict(fit_factors(fd[~mask].reset_index(drop=True)), []))
            p = predict_linear_ms(held, fo)
            for tp, idx in held.groupby("tp", sort=True).groups.items():
                sel = held.index.get_indexer(idx)
                loo.append(
                    _err_row(
                        held.loc[idx],
                        p[sel],
                        family=fam,
                        left_out=f"{kind}: {label}",
                        gpu=str(held["gpu"].iloc[0]),
                        model=str(held.loc[idx, "model"].iloc[0]),
                        tp=int(tp),
                    )
                )
    return {
        "source": "python -m sim.calibrate from sim/data/vidur_linear_ops.csv and "
        "sim/data/vidur_all_reduce.csv (microsoft/vidur@7d47513, MIT)",
        "tile_tokens": TILE_TOKENS,
        "efficiency_cap": EFF_CAP,
        "arch_family": ARCH_FAMILY,
        "gemm": gemm,
        "all_reduce": fit_all_reduce(),
        "errors": {"in_sample": in_sample, "leave_one_out": loo},
    }


def _table(rows: list[dict], cols: list[str]) -> str:
    head = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    body = ""
    for r in rows:
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"{100 * v:.1f}%" if c.endswith("rel_err") else str(v))
        body += "| " + " | ".join(cells) + " |\n"
    return head + body


def _misses(rows: list[dict]) -> str:
    bad = [r for r in rows if r["median_rel_err"] > 0.10 or r["worst_rel_err"] > 0.30]
    if not bad:
        return (
            "Every row, in sample and left out, is within the bar"
            " (median <= 10%, worst <= 30%).\n\n"
        )
    names = "; ".join(
        f"{r.get('left_out', 'in sample')} ({r['gpu']} {r['model']} TP{r['tp']}: median "
        f"{100 * r['median_rel_err']:.1f}%, worst {100 * r['worst_rel_err']:.1f}%)"
        for r in bad
    )
    return f"Rows outside the bar (median <= 10%, worst <= 30%): {names}.\n\n"


def render_markdown(cal: dict) -> str:
    """docs/calibration.md, entirely from the calibration dict."""
    fam_rows = [{"family": k, **{kk: vv for kk, vv in v.items()}} for k, v in cal["gemm"].items()]
    for r in fam_rows:
        r["fitted_on"] = ", ".join(r["fitted_on"])
    rule = ", ".join(f"{a} -> {f}" for a, f in cal["arch_family"].items())
    ar_rows = [
        {"family": fam, "tp": tp, **v}
        for fam, d in cal["all_reduce"].items()
        for tp, v in sorted(d.items(), key=lambda kv: int(kv[0]))
    ]
    ins, loo = cal["errors"]["in_sample"], cal["errors"]["leave_one_out"]

    def summary(rows: list[dict]) -> str:
        med = max(r["median_rel_err"] for r in rows)
        worst = max(r["worst_rel_err"] for r in rows)
        return f"largest per-row median {100 * med:.1f}%, largest worst case {100 * worst:.1f}%"

    return (
        "# Cost-model calibration\n\n"
        "Generated by `python -m sim.calibrate`; do not edit by hand. Data: Vidur's measured\n"
        "per-operator profiles (microsoft/vidur@7d47513, MIT, Copyright (c) Microsoft\n"
        "Corporation), FP16 kernels, extracted into `sim/data/vidur_linear_ops.csv`.\n\n"
        "## Model\n\n"
        "Each linear layer (QKV, O, gate/up, down) of m tokens, n outputs, k inputs costs\n"
        "`latency + (t_mem^p + t_compute^p)^(1/p)` with `t_mem = (n*k*w + m*(n+k)*2 bytes) /"
        " (bw_efficiency * peak bandwidth)`\n"
        f"and `t_compute = 2*pad(m)*n*k / (flops_efficiency * peak FLOP/s)`, where pad(m) rounds"
        f" m up to a power of two below {cal['tile_tokens']} and to a multiple of"
        f" {cal['tile_tokens']} above (GEMM row tiles).\n"
        f"Efficiencies are capped at {cal['efficiency_cap']} of the datasheet peak. Four"
        " parameters per GPU generation, no per-model terms.\n\n"
        "## Fitted factors\n\n"
        + _table(
            fam_rows,
            [
                "family",
                "bw_efficiency",
                "flops_efficiency",
                "kernel_latency_us",
                "smooth_p",
                "fitted_on",
            ],
        )
        + f"\nGPUs without profiles use their generation's factors by this rule: {rule}.\n"
        "Ada (L4, L40S) is close to Ampere in its memory system; Blackwell and MI300X are\n"
        "assumed to reach Hopper's fractions of their own peaks. That is an assumption, not a"
        " measurement.\n\n"
        "## TP all-reduce (alpha-beta, intra-node NCCL)\n\n"
        + _table(ar_rows, ["family", "tp", "alpha_us", "beta_gbps", "fitted_on", "median_rel_err"])
        + "\n## Error of the linear-layer time, in sample\n\n"
        f"Relative error |predicted/measured - 1| over all token counts ({summary(ins)}).\n\n"
        + _table(ins, ["gpu", "model", "tp", "tokens", "points", "median_rel_err", "worst_rel_err"])
        + "\n## Error of the linear-layer time, leave one out\n\n"
        + _misses(ins + loo)
        + "Refit without the rows named in `left_out` (a whole model, or one model/TP\n"
        "combination), then measure the error on exactly those rows. Hopper has profiles of one\n"
        f"model only, so only its TP sizes can be left out ({summary(loo)}).\n\n"
        + _table(
            loo,
            ["left_out", "gpu", "model", "tp", "tokens", "median_rel_err", "worst_rel_err"],
        )
    )


def main(argv: list[str] | None = None) -> int:
    """Write sim/data/calibration.json and docs/calibration.md."""
    cal = compute(leave_one_out=True)
    CAL_PATH.write_text(json.dumps(cal, indent=1) + "\n", encoding="utf-8")
    DOC_PATH.parent.mkdir(parents=True, exist_ok=True)
    DOC_PATH.write_text(render_markdown(cal), encoding="utf-8")
    sys.stdout.write(f"wrote {CAL_PATH} and {DOC_PATH}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
