"""`python -m sim step-time` and `defaults`: JSON shape (ARCHITECTURE.md) and one-line errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sim.__main__ import main

ROOT = Path(__file__).resolve().parent.parent
KEYS = {
    "tokens",
    "step_ms",
    "linear_ms",
    "attention_ms",
    "lm_head_ms",
    "comm_ms",
    "overhead_ms",
    "bound",
    "fits",
}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_step_time_json_shape(capsys):
    code, out, err = run(
        capsys,
        "step-time",
        "--gpu",
        "H100-SXM",
        "--model",
        "Llama-3.1-8B",
        "--tokens",
        "1,512,2048",
    )
    assert code == 0 and err == ""
    rows = json.loads(out)
    assert [r["tokens"] for r in rows] == [1, 512, 2048]
    for r in rows:
        assert set(r) == KEYS
        parts = (
            r["linear_ms"] + r["attention_ms"] + r["lm_head_ms"] + r["comm_ms"] + r["overhead_ms"]
        )
        assert r["step_ms"] == pytest.approx(parts, abs=1e-3)
        assert r["fits"] is True and r["comm_ms"] == 0
    assert rows[0]["bound"] == "memory" and rows[2]["bound"] == "compute"
    assert rows[0]["step_ms"] < rows[1]["step_ms"] < rows[2]["step_ms"]


def test_step_time_decodes_and_tp(capsys):
    base = ["step-time", "--gpu", "A100-80GB", "--model", "Llama-3.1-70B", "--tokens", "0,256"]
    _, out, _ = run(capsys, *base, "--tp", "4", "--decode-seqs", "64", "--context-tokens", "2000")
    rows = json.loads(out)
    _, out2, _ = run(capsys, *base, "--tp", "4", "--decode-seqs", "64", "--context-tokens", "8000")
    rows2 = json.loads(out2)
    assert rows2[0]["attention_ms"] > rows[0]["attention_ms"] > 0
    assert rows[0]["comm_ms"] > 0 and rows[0]["fits"] is True
    _, out3, _ = run(capsys, *base, "--decode-seqs", "1")
    assert all(r["fits"] is False for r in json.loads(out3))  # 141 GB on one 80 GB GPU


def test_defaults(capsys):
    _, out, _ = run(capsys, "defaults", "--gpu", "L4")
    assert json.loads(out) == {"max_num_batched_tokens": 2048, "max_num_seqs": 256}
    _, out, _ = run(capsys, "defaults", "--gpu", "H100-SXM", "--usage", "llm")
    assert json.loads(out) == {"max_num_batched_tokens": 16384, "max_num_seqs": 1024}


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["step-time", "--gpu", "V100", "--model", "Llama-3.1-8B", "--tokens", "1"], "V100"),
        (["step-time", "--gpu", "L4", "--model", "GPT", "--tokens", "1"], "GPT"),
        (["step-time", "--gpu", "L4", "--model", "Llama-3.1-8B", "--tokens", "-5"], "-5"),
        (
            ["step-time", "--gpu", "L4", "--model", "Llama-3.1-8B", "--tokens", "99999999"],
            "99999999",
        ),
        (["step-time", "--gpu", "L4", "--model", "Llama-3.1-8B", "--tokens", "abc"], "abc"),
        (
            ["step-time", "--gpu", "L4", "--model", "Llama-3.1-8B", "--tokens", "1", "--tp", "3"],
            "tp",
        ),
        (
            [
                "step-time",
                "--gpu",
                "A10G",
                "--model",
                "Llama-3.1-8B",
                "--tokens",
                "1",
                "--dtype",
                "fp8",
            ],
            "FP8",
        ),
        (["defaults", "--gpu", "nope"], "nope"),
        (["defaults", "--gpu", "L4", "--usage", "batch"], "batch"),
    ],
)
def test_bad_input_one_line_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_real_process_exit_code():
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "sim",
            "step-time",
            "--gpu",
            "L4",
            "--model",
            "Qwen2.5-7B",
            "--tokens",
            "-1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1
    assert "-1" in bad.stderr and "Traceback" not in bad.stderr
