"""Public LLM-serving traces: detect a trace's format from its first line, map it to a Workload.

`read_trace` reads our own CSV (sim/trace.py, unchanged) and three published formats, and says
in one plain line what it mapped. The format is told by the file's first line: a JSON object
(or a .jsonl/.json name) is a Mooncake trace; a CSV header with `TIMESTAMP, ContextTokens,
GeneratedTokens` is Azure's, one with `Timestamp, Request tokens, Response tokens` is BurstGPT's
(names matched after trimming spaces and lower-casing); anything else is read as our own CSV,
with its own messages. Every format is mapped as our CSV is: sorted stably by arrival, request
ids the 1-based data row numbers (CSV) or line numbers (JSONL) of the file, and arrival_s counted
in seconds from the first request. Bad rows are refused in one line naming them (spreadsheet
rows for CSV, row 1 the header; line numbers for JSONL), and MAX_TRACE_ROWS and
MAX_TRACE_TOKENS hold. Rows with 0 prompt or 0 output tokens are skipped and counted in the
description (vLLM runs no request without a prompt, and a request that generated nothing is a
failure: BurstGPT's README calls its 0-response rows failures, and ships files without them).

Sources (headers and units; looked up in the projects' own repositories):
- Azure LLM inference traces 2023 and 2024 (Azure/AzurePublicDataset,
  AzureLLMInferenceDataset2023.md and AzureLLMInferenceDataset2024.md): `TIMESTAMP,
  ContextTokens,GeneratedTokens`, TIMESTAMP the invocation time as a date and time with
  fractional seconds (`2023-11-16 18:15:46.6805900`; the 2024 files add `+00:00`).
- BurstGPT (HPMLL/BurstGPT, README.md "Schema"): `Timestamp,Model,Request tokens,Response
  tokens,Total tokens,Log Type`, Timestamp in seconds; its later files add `Session ID,Elapsed
  time` after Timestamp. Model, Total tokens, Log Type and the session columns are not used.
- Mooncake (kvcache-ai/Mooncake, FAST25-release/README.md and traces/*.jsonl): one JSON object
  per line, `{"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [...]}`,
  timestamp in milliseconds from the first request; hash_ids are the remapped hashes of the
  prompt's 512-token blocks (a 6,758-token prompt has 14), equal where two prompts share the
  same leading blocks.

Mooncake's shared blocks and our prefix model. A Workload gives each request one `prefix_id` and
`prefix_tokens`: requests with the same id share their first prefix_tokens tokens. The hash_ids
form a tree (two prompts share a leading run of blocks, then part). A request's depth is its
longest leading run of blocks that another request of the trace also has; the tree of those
shared blocks is cut into paths from each block to its most-used shared child (the block most
requests go on to; the smaller hash id on ties), and each path is one prefix_id; a request
takes its deepest shared block's path and prefix_tokens = depth x 512, capped at its
input_length. Kept: any two requests with
the same id share exactly the blocks the model says (never more), and requests along one path
share what they really share. Lost: a block that requests on different paths share (a system
prompt block that many conversations start with, then part) is shared only within each path,
so the prefix cache recomputes it once per path; the description counts what is kept.
"""

from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from sim.errors import SimInputError
from sim.trace import (
    MAX_TRACE_ROWS,
    MAX_TRACE_TOKENS,
    _every_column,
    _numeric_column,
    _peek,
    _read_frame,
    _rows_error,
    _source_name,
    read_trace_csv,
)
from sim.workload import Workload

MOONCAKE_BLOCK_TOKENS = 512
FORMATS = ("stepwise", "azure", "burstgpt", "mooncake")
_ROWS_SHOWN = 5
_COLUMNS_SHOWN = 6
_NOT_JSON = "no valid JSON object"


class MappedTrace(NamedTuple):
    """A trace read: its requests, which format it was, and what was mapped (plain text)."""

    workload: Workload
    format: str
    description: str


@dataclass(frozen=True)
class _CsvFormat:
    title: str
    time: str  # the arrival column, as the format spells it
    prompt: str
    output: str
    datetime: bool  # the time column holds dates and times (else seconds)
    zero_output: str  # what a row with 0 output tokens is, in this format


AZURE = _CsvFormat(
    "Azure LLM inference trace", "TIMESTAMP", "ContextTokens", "GeneratedTokens", True, ""
)
BURSTGPT = _CsvFormat(
    "BurstGPT trace", "Timestamp", "Request tokens", "Response tokens", False, " (failed requests)"
)
_CSV_FORMATS = {"azure": AZURE, "burstgpt": BURSTGPT}


def _header(head: bytes) -> list[str]:
    """The first line's fields ([] if it is no CSV line: our reader then says why)."""
    first = head.split(b"\n", 1)[0].decode("utf-8-sig", "replace").rstrip("\r")
    try:
        return next(csv.reader([first]), [])
    except csv.Error:  # a bare carriage return inside the header
        return []


def detect_format(head: bytes, name: str = "") -> str:
    """ "mooncake", "azure", "burstgpt" or "stepwise" (ours) from a file's first bytes."""
    text = head.decode("utf-8-sig", "replace").lstrip()
    if text.startswith("{") or name.lower().endswith((".jsonl", ".json")):
        return "mooncake"
    names = {c.strip().lower() for c in _header(head)}
    if "arrival_s" in names:
        return "stepwise"
    for key, fmt in _CSV_FORMATS.items():
        if {fmt.time.lower(), fmt.prompt.lower(), fmt.output.lower()} <= names:
            return key
    return "stepwise"


def read_trace(source: object, *, max_model_len: int | None = None) -> MappedTrace:
    """A timed Workload from a trace in any known format (path or file-like), with a line
    saying what was mapped; SimInputError with one line naming the bad rows otherwise."""
    name = _source_name(source)
    head = _peek(source, name)
    fmt = detect_format(head, name)
    if fmt == "mooncake":
        return _read_mooncake(source, name, max_model_len)
    if fmt in _CSV_FORMATS:
        return _read_public_csv(source, name, head, _CSV_FORMATS[fmt], max_model_len)
    workload = read_trace_csv(source, max_model_len=max_model_len)
    return MappedTrace(
        workload,
        "stepwise",
        "Stepwise trace CSV (arrival_s, prompt_tokens, output_tokens and the optional"
        f" columns), read as it is: {_requests(workload)}",
    )


def _requests(workload: Workload) -> str:
    n = workload.num_requests
    return f"{n:,} requests" if n != 1 else "1 request"


def _skipped(zero_output: int, zero_prompt: int, output: str, prompt: str, unit: str, why: str):
    parts = []
    if zero_output:
        parts.append(f"{zero_output:,} {unit}{'s' if zero_output > 1 else ''} with 0 {output}{why}")
    if zero_prompt:
        parts.append(f"{zero_prompt:,} {unit}{'s' if zero_prompt > 1 else ''} with 0 {prompt}")
    if not parts:
        return ""
    return f"; skipped {' and '.join(parts)}: a request needs a prompt and an answer"


def _all_zero(name: str, prompt: str, output: str) -> SimInputError:
    return SimInputError(
        f"{name}: every request has 0 {prompt} or 0 {output}; there is nothing to run"
    )


def _time_column(df: pd.DataFrame, column: str, name: str) -> np.ndarray:
    """Seconds since the epoch of each date and time; raises naming the rows."""
    text = df[column].astype("string").str.strip()
    empty = (text.isna() | (text == "")).to_numpy(dtype=bool)
    if empty.any():
        raise _rows_error(name, f"{column} is empty", empty)
    when = pd.to_datetime(text, format="ISO8601", errors="coerce", utc=True)
    bad = when.isna().to_numpy(dtype=bool)
    if bad.any():
        raise _rows_error(name, f"{column} is not a date and time", bad)
    return (when - when.min()).dt.total_seconds().to_numpy(dtype=np.float64)


def _read_public_csv(
    source: object, name: str, head: bytes, fmt: _CsvFormat, max_model_len: int | None
) -> MappedTrace:
    df = _read_frame(source, name)
    if len(df) > MAX_TRACE_ROWS:
        raise SimInputError(f"{name} has more than {MAX_TRACE_ROWS:,} rows (the limit)")
    if len(df) == 0:
        raise SimInputError(f"{name} has a header but no requests")
    df = df.rename(columns={c.lower(): c for c in (fmt.time, fmt.prompt, fmt.output)})
    tokens = {"integer": True, "minimum": 0, "maximum": MAX_TRACE_TOKENS}
    arrival, prompt, output = _every_column(
        name,
        (lambda: _time_column(df, fmt.time, name))
        if fmt.datetime
        else (lambda: _numeric_column(df, fmt.time, name, integer=False, minimum=None)),
        lambda: _numeric_column(df, fmt.prompt, name, **tokens),
        lambda: _numeric_column(df, fmt.output, name, **tokens),
    )
    keep = (prompt > 0) & (output > 0)
    if not keep.any():
        raise _all_zero(name, fmt.prompt, fmt.output)
    if max_model_len is not None:
        too_long = keep & (prompt >= max_model_len)
        if too_long.any():
            raise _rows_error(
                name,
                f"{fmt.prompt} >= max_model_len={max_model_len} (vLLM rejects such prompts)",
                too_long,
            )
    rows = np.flatnonzero(keep)
    start = arrival[rows].min()
    order = rows[np.argsort(arrival[rows] - start, kind="stable")]
    workload = Workload.build(
        prompt[order],
        output[order],
        arrival_s=arrival[order] - start,
        request_ids=tuple(str(i + 1) for i in order.tolist()),
    )
    used = {fmt.time.lower(), fmt.prompt.lower(), fmt.output.lower()}
    others = [c.strip() for c in _header(head) if c.strip() and c.strip().lower() not in used]
    unused = ", ".join(others[:_COLUMNS_SHOWN]) + (", …" if len(others) > _COLUMNS_SHOWN else "")
    time_words = "a date and time" if fmt.datetime else "seconds"
    description = (
        f"{fmt.title}: {fmt.time} ({time_words}) → arrival_s (seconds after the first request),"
        f" {fmt.prompt} → prompt_tokens, {fmt.output} → output_tokens; {_requests(workload)}"
        + _skipped(
            int(np.sum(output == 0)),
            int(np.sum((output > 0) & (prompt == 0))),
            fmt.output,
            fmt.prompt,
            "row",
            fmt.zero_output,
        )
        + (f"; not used: {unused}" if others else "")
    )
    return MappedTrace(workload, "azure" if fmt is AZURE else "burstgpt", description)


# ---- Mooncake JSONL ----------------------------------------------------------------------------


def _lines(problem: str, lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:_ROWS_SHOWN])
    more = f" and {len(lines) - _ROWS_SHOWN} more" if len(lines) > _ROWS_SHOWN else ""
    if len(lines) == 1:
        return f"{problem} in 1 line: line {shown}"
    return f"{problem} in {len(lines)} lines: lines {shown}{more}"


def _whole(value: object) -> int | None:
    """A JSON whole number (6758 or 6758.0) as an int, else None (true and false are not)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def _mooncake_text(source: object, name: str) -> str:
    try:
        path = isinstance(source, str | os.PathLike)
        raw = Path(source).read_bytes() if path else source.read()  # type: ignore[attr-defined]
    except FileNotFoundError:
        raise SimInputError(f"trace file not found: {source}") from None
    except OSError as exc:
        raise SimInputError(f"cannot read trace {name}: {exc.strerror or exc}") from None
    if isinstance(raw, str):
        return raw
    if b"\x00" in raw[:8192]:
        raise SimInputError(f"{name} is not a JSONL text file (it contains binary data)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SimInputError(f"{name} is not a JSONL text file (it is not UTF-8 text)") from None


def _read_mooncake(source: object, name: str, max_model_len: int | None) -> MappedTrace:
    lines = _mooncake_text(source, name).split("\n")
    problems: dict[str, list[int]] = {}
    line_no, stamp_ms, prompt, output, hashes = [], [], [], [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if len(line_no) >= MAX_TRACE_ROWS:
            raise SimInputError(f"{name} has more than {MAX_TRACE_ROWS:,} requests (the limit)")
        try:
            row = json.loads(line)
        except ValueError:
            problems.setdefault(_NOT_JSON, []).append(number)
            continue
        if not isinstance(row, dict):
            problems.setdefault(_NOT_JSON, []).append(number)
            continue
        fields = _mooncake_fields(row)
        if isinstance(fields, str):
            problems.setdefault(fields, []).append(number)
            continue
        line_no.append(number)
        stamp_ms.append(fields[0])
        prompt.append(fields[1])
        output.append(fields[2])
        hashes.append(fields[3])
    if problems:
        raise SimInputError(f"{name}: {'; '.join(_lines(p, n) for p, n in problems.items())}")
    if not line_no:
        raise SimInputError(f"{name} is empty; a trace needs one request per line")
    numbers = np.asarray(line_no)
    stamp, p_tok, o_tok = (np.asarray(v, dtype=np.float64) for v in (stamp_ms, prompt, output))
    p_tok, o_tok = p_tok.astype(np.int64), o_tok.astype(np.int64)
    keep = (p_tok > 0) & (o_tok > 0)
    if not keep.any():
        raise _all_zero(name, "input_length", "output_length")
    if max_model_len is not None:
        too_long = keep & (p_tok >= max_model_len)
        if too_long.any():
            raise SimInputError(
                f"{name}: "
                + _lines(
                    f"input_length >= max_model_len={max_model_len} (vLLM rejects such prompts)",
                    numbers[too_long].tolist(),
                )
            )
    rows = np.flatnonzero(keep)
    rows = rows[np.argsort(stamp[rows], kind="stable")]
    arrival_s = (stamp[rows] - stamp[rows].min()) / 1000.0
    prefix_id, depth, kept, shared = _prefix_paths([hashes[i] for i in rows.tolist()])
    prefix_tokens = np.minimum(depth * MOONCAKE_BLOCK_TOKENS, p_tok[rows])
    workload = Workload.build(
        p_tok[rows],
        o_tok[rows],
        arrival_s=arrival_s,
        prefix_id=prefix_id,
        prefix_tokens=prefix_tokens,
        request_ids=tuple(str(n) for n in numbers[rows].tolist()),
    )
    description = (
        "Mooncake trace: timestamp (ms) → arrival_s (seconds after the first request),"
        " input_length → prompt_tokens, output_length → output_tokens, hash_ids (blocks of"
        f" {MOONCAKE_BLOCK_TOKENS} tokens) → prefix_id and prefix_tokens; {_requests(workload)}"
        + _prefix_words(prefix_id, kept, shared)
        + _skipped(
            int(np.sum(o_tok == 0)),
            int(np.sum((o_tok > 0) & (p_tok == 0))),
            "output_length",
            "input_length",
            "line",
            "",
        )
    )
    return MappedTrace(workload, "mooncake", description)


def _mooncake_fields(row: dict) -> tuple[float, int, int, list] | str:
    """(timestamp_ms, input_length, output_length, hash_ids) or the line's problem."""
    for key in ("timestamp", "input_length", "output_length"):
        if key not in row:
            return f"{key} is missing"
    stamp = row["timestamp"]
    if isinstance(stamp, bool) or not isinstance(stamp, int | float) or not math.isfinite(stamp):
        return "timestamp is not a number"
    if stamp < 0:
        return "timestamp is negative"
    lengths = []
    for key in ("input_length", "output_length"):
        value = _whole(row[key])
        if value is None:
            return f"{key} is not a whole number"
        if value < 0:
            return f"{key} is negative"
        if value > MAX_TRACE_TOKENS:
            return f"{key} is above {MAX_TRACE_TOKENS:,}"
        lengths.append(value)
    ids = row.get("hash_ids", [])
    if not isinstance(ids, list) or not all(type(h) is int for h in ids):
        return "hash_ids is not a list of whole numbers"
    if ids and (min(ids) < -(2**63) or max(ids) >= 2**63):
        return "hash_ids holds a number beyond 64 bits"
    return float(stamp), lengths[0], lengths[1], ids


def _prefix_paths(hashes: list[list]) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(prefix_id, depth in blocks, block reuses kept, block reuses in the trace); see the
    module docstring. A block is a node of the tree: the pair (parent node, hash id), numbered
    depth by depth, so every parent is numbered before its children."""
    n = len(hashes)
    lengths = np.fromiter((len(ids) for ids in hashes), dtype=np.int64, count=n)
    flat = np.fromiter(chain.from_iterable(hashes), dtype=np.int64, count=int(lengths.sum()))
    offsets = np.cumsum(lengths) - lengths
    hash_values, code = np.unique(flat, return_inverse=True)  # hash ids as 0, 1, 2, ...
    width = max(hash_values.size, 1)
    longest_first = np.argsort(-lengths, kind="stable")
    blocks = np.arange(lengths.max(initial=0))
    still = n - np.searchsorted(np.sort(lengths), blocks, side="right")  # longer than k blocks
    leaf = np.full(n, -1, dtype=np.int64)  # each request's last block
    parents, counts_at, depths = [], [], []
    numbered = 0
    for k, m in enumerate(still.tolist()):
        active = longest_first[:m]  # the requests with more than k blocks
        pair = (leaf[active] + 1) * width + code[offsets[active] + k]  # (parent, hash) as one int
        keys, inverse, count = np.unique(pair, return_inverse=True, return_counts=True)
        leaf[active] = numbered + inverse
        parents.append(keys // width - 1)
        counts_at.append(count)
        depths.append(np.full(keys.size, k + 1, dtype=np.int64))
        numbered += keys.size
    up = np.concatenate(parents) if parents else np.zeros(0, dtype=np.int64)
    counts = np.concatenate(counts_at) if parents else np.zeros(0, dtype=np.int64)
    node_depth = np.concatenate(depths) if parents else np.zeros(0, dtype=np.int64)
    nodes = np.arange(up.size)
    shared = counts >= 2
    # Each node's deepest shared ancestor (itself if shared), by pointer jumping; -1 for none.
    deepest = _chase(np.where(shared, nodes, up))
    # The most-used shared child of each shared node (the smaller hash id on ties) continues
    # its parent's path; every other shared node starts a path of its own.
    kids = np.flatnonzero(shared & (up >= 0))
    kids = kids[np.lexsort((kids, -counts[kids], up[kids]))]
    first = np.ones(kids.size, dtype=bool)
    first[1:] = up[kids][1:] != up[kids][:-1]
    step = nodes.copy()
    step[kids[first]] = up[kids[first]]
    head = _chase(step)  # the node each path starts at
    path = np.full(up.size, -1, dtype=np.int64)
    starts, path[shared] = np.unique(head[shared], return_inverse=True)
    mine = np.where(leaf >= 0, deepest[np.maximum(leaf, 0)], -1)
    prefix_id = np.where(mine >= 0, path[np.maximum(mine, 0)], -1)
    depth = np.where(mine >= 0, node_depth[np.maximum(mine, 0)], 0)
    total = int(depth.sum())
    longest = np.zeros(starts.size, dtype=np.int64)
    np.maximum.at(longest, prefix_id[prefix_id >= 0], depth[prefix_id >= 0])
    return prefix_id, depth, total - int(longest.sum()), total - int(shared.sum())


def _chase(step: np.ndarray) -> np.ndarray:
    """Follow `step` (node -> node, -1 ends) to its fixed points, doubling the stride each
    round: log2 of the deepest chain rounds, not one per block."""
    out = step.copy()
    while True:
        nxt = np.where(out >= 0, out[np.maximum(out, 0)], -1) if out.size else out
        if np.array_equal(nxt, out):
            return out
        out = nxt


def _prefix_words(prefix_id: np.ndarray, kept: int, shared: int) -> str:
    sharing = int(np.sum(prefix_id >= 0))
    if not sharing:
        return "; no two requests share a leading block"
    groups = int(np.unique(prefix_id[prefix_id >= 0]).size)
    share = f" ({kept / shared:.0%})" if shared else ""
    return (
        f"; {sharing:,} share leading blocks with another request, in {groups:,} prefix"
        f" group{'s' if groups != 1 else ''} (prefix_tokens = the blocks shared × "
        f"{MOONCAKE_BLOCK_TOKENS}, at most the prompt); one prefix per request keeps {kept:,}"
        f" of the trace's {shared:,} reused blocks{share}: a block shared by prompts that then"
        " part is shared only along one of their paths"
    )


__all__ = ["FORMATS", "MOONCAKE_BLOCK_TOKENS", "MappedTrace", "detect_format", "read_trace"]
