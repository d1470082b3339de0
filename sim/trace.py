"""CSV traces: read a request trace with pandas (one clear error naming the bad rows), write one.

`read_trace_csv` reads `arrival_s,prompt_tokens,output_tokens` (required) and
`priority,tenant,prefix_id,prefix_tokens,request_id` (optional) with pandas. Column names are
matched after trimming spaces and lower-casing; other columns are ignored, except a name that
looks like a misspelt known column, which is rejected. Every cell of a present column must be
filled. Problems are reported in one line naming the rows as a spreadsheet numbers them (row 1
is the header, the first request is row 2): the first few and a count. Rows are sorted stably by
arrival_s, because the scheduler receives requests in list order and a timed run admits them by
arrival time; request ids stay the 1-based data row numbers of the file ("1" is spreadsheet
row 2) unless a request_id column gives them. Tenants that are not integers (names) are numbered
0, 1, ... in order of first appearance. `write_trace_csv` writes all columns back.
"""

from __future__ import annotations

import csv
import difflib
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd

from sim.errors import SimInputError
from sim.workload import Workload

TRACE_REQUIRED = ("arrival_s", "prompt_tokens", "output_tokens")
TRACE_OPTIONAL = ("priority", "tenant", "prefix_id", "prefix_tokens", "request_id")
MAX_TRACE_ROWS = 1_000_000
_ROWS_SHOWN = 5
MAX_TRACE_TOKENS = 100_000_000  # longer than any model's context; keeps int64 conversion safe
MAX_TRACE_INTEGER = 2**53  # other integer columns: exact in float64
_FIRST_ROW = 2  # spreadsheet numbering: row 1 is the header
_HEADER_NOTE = " (row 1 is the header)"
_FIELDS = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")


def _source_name(source: object) -> str:
    if isinstance(source, str | os.PathLike):
        return Path(source).name
    return Path(str(getattr(source, "name", "") or "trace")).name


def _peek(source: object, name: str) -> bytes:
    """The first 8 KiB (bytes), without consuming a buffer; also turns OS errors into one line."""
    if isinstance(source, str | os.PathLike):
        try:
            with open(source, "rb") as handle:
                return handle.read(8192)
        except FileNotFoundError:
            raise SimInputError(f"trace file not found: {source}") from None
        except OSError as exc:
            raise SimInputError(f"cannot read trace {name}: {exc.strerror or exc}") from None
    if hasattr(source, "seek") and hasattr(source, "tell") and hasattr(source, "read"):
        try:
            start = source.tell()  # type: ignore[attr-defined]
            head = source.read(8192)  # type: ignore[attr-defined]
            source.seek(start)  # type: ignore[attr-defined]
        except (OSError, ValueError):  # not seekable (a pipe): let pandas read it as it comes
            return b""
        return head if isinstance(head, bytes) else str(head).encode("utf-8", "replace")
    return b""


def _every_column(name: str, *checks) -> list[np.ndarray]:
    """Each check's column; if several fail, one error naming every column's problem (so a file
    with a negative prompt and a negative output is not fixed and refused twice)."""
    values, problems = [], []
    for check in checks:
        try:
            values.append(check())
        except SimInputError as exc:
            problems.append(str(exc).removeprefix(f"{name}: ").removesuffix(_HEADER_NOTE))
    if problems:
        raise SimInputError(f"{name}: {'; '.join(problems)}{_HEADER_NOTE}")
    return values


def _rows_error(name: str, problem: str, bad: np.ndarray) -> SimInputError:
    """One line naming the first few bad rows (spreadsheet numbering) and how many there are."""
    rows = np.flatnonzero(bad) + _FIRST_ROW
    shown = ", ".join(str(r) for r in rows[:_ROWS_SHOWN])
    count = f"{rows.size} rows" if rows.size > 1 else "1 row"
    more = f" and {rows.size - _ROWS_SHOWN} more" if rows.size > _ROWS_SHOWN else ""
    return SimInputError(
        f"{name}: {problem} in {count}: {'rows' if rows.size > 1 else 'row'} {shown}{more}"
        f"{_HEADER_NOTE}"
    )


def _numeric_column(
    df: pd.DataFrame,
    column: str,
    name: str,
    *,
    integer: bool,
    minimum: float | None,
    maximum: float = MAX_TRACE_INTEGER,
) -> np.ndarray:
    """The column as float64 after checking every cell; raises naming the offending rows."""
    raw = df[column]
    if pd.api.types.is_numeric_dtype(raw.dtype) and not pd.api.types.is_bool_dtype(raw.dtype):
        values = raw.to_numpy(dtype=np.float64, na_value=np.nan)  # the fast, common case
        empty = np.isnan(values)
    else:  # text in the column: find the cells that are empty or not numbers
        text = raw.astype("string").str.strip()
        empty = (raw.isna() | (text == "")).to_numpy(dtype=bool)
        values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    if empty.any():
        raise _rows_error(name, f"{column} is empty", empty)
    not_number = np.isnan(values)
    if not_number.any():
        raise _rows_error(name, f"{column} is not a number", not_number)
    infinite = ~np.isfinite(values)
    if infinite.any():
        raise _rows_error(name, f"{column} is not a finite number", infinite)
    if integer:
        fractional = values != np.floor(values)
        if fractional.any():
            raise _rows_error(name, f"{column} is not a whole number", fractional)
    if minimum is not None:
        low = values < minimum
        if low.any():
            word = "negative" if minimum == 0 else f"below {minimum:g}"
            raise _rows_error(name, f"{column} is {word}", low)
    high = np.abs(values) > maximum
    if high.any():
        raise _rows_error(name, f"{column} is above {maximum:,.0f}", high)
    return values


def _extra_fields(source: object, name: str, width: int) -> SimInputError:
    """The rows with more fields than the header. pandas reads the extra leading fields of a
    too-wide first row as row labels and shifts every column (`0,100,10,5,6` read as prompt 5,
    output 6), so the file is read again, on this rare path, to count each row's fields."""
    if isinstance(source, str | os.PathLike):
        with open(source, encoding="utf-8-sig", newline="") as handle:
            text = handle.read()
    else:
        source.seek(0)  # type: ignore[attr-defined]
        raw = source.read()  # type: ignore[attr-defined]
        text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else str(raw)
    counts = np.array([len(row) for row in csv.reader(text.splitlines()[1:])])
    wide = counts > width
    most = int(counts.max()) if counts.size else width
    return _rows_error(name, f"more fields than the header's {width} (up to {most})", wide)


def _read_frame(source: object, name: str) -> pd.DataFrame:
    head = _peek(source, name)
    if b"\x00" in head:
        raise SimInputError(f"{name} is not a CSV text file (it contains binary data)")
    first_line = head.split(b"\n", 1)[0].decode("utf-8-sig", "replace")
    if "\r" in first_line.rstrip("\r"):  # a bare carriage return inside the header
        raise SimInputError(
            f"{name} is not a valid CSV file: its header (row 1) holds a line break (a bare"
            " carriage return); save it with ordinary line endings"
        )
    header = next(csv.reader([first_line.rstrip("\r")]), [])
    text_columns = {raw: str for raw in header if raw.strip().lower() in ("tenant", "request_id")}
    try:
        df = pd.read_csv(
            source,  # type: ignore[arg-type]
            dtype=text_columns,  # tenant names and request ids stay text; numbers parse fast
            nrows=MAX_TRACE_ROWS + 1,
            skip_blank_lines=False,
            skipinitialspace=True,
            keep_default_na=False,  # only an empty cell is missing: "nan" is not a number
            na_values=[""],
            encoding="utf-8-sig",
            low_memory=False,  # one dtype per column, no DtypeWarning on large mixed files
        )
    except pd.errors.EmptyDataError:
        raise SimInputError(f"{name} is empty; a trace needs a header and rows") from None
    except UnicodeDecodeError:
        raise SimInputError(f"{name} is not a CSV text file (it is not UTF-8 text)") from None
    except csv.Error as exc:  # the python engine's own errors, as one line
        raise SimInputError(f"{name} is not a valid CSV file: {exc}") from None
    except pd.errors.ParserError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "parse error"
        fields = _FIELDS.search(first)  # pandas: "Expected 3 fields in line 4, saw 4"
        if fields:
            want, row, got = fields.groups()
            first = f"row {row} has {got} fields, the header has {want}"
        raise SimInputError(f"{name} is not a valid CSV file: {first}") from None
    except FileNotFoundError:
        raise SimInputError(f"trace file not found: {source}") from None
    except OSError as exc:
        raise SimInputError(f"cannot read trace {name}: {exc.strerror or exc}") from None
    if not isinstance(df.index, pd.RangeIndex):  # pandas took the first row's extra fields
        raise _extra_fields(source, name, len(header))  # as row labels: columns shifted
    df.columns = [str(c).strip().lower() for c in df.columns]
    filled = df.notna().to_numpy().any(axis=1)
    last = np.flatnonzero(filled)
    return df.iloc[: (last[-1] + 1 if last.size else 0)]


def read_trace_csv(source: object, *, max_model_len: int | None = None) -> Workload:
    """A timed `Workload` from a CSV trace (path or file-like); see the module docstring.

    Raises `SimInputError` with one line naming the bad rows (spreadsheet numbering) for: a
    missing or unreadable file, binary data, an empty file or a header alone, missing required
    columns, a misspelt optional column, empty cells, non-numbers, negative arrivals, token
    counts that are not whole numbers >= 1, prompt_tokens >= max_model_len, prefix_tokens above
    prompt_tokens, duplicate request ids, or more than 1,000,000 rows.
    """
    name = _source_name(source)
    df = _read_frame(source, name)
    if len(df) > MAX_TRACE_ROWS:
        raise SimInputError(f"{name} has more than {MAX_TRACE_ROWS:,} rows (the limit)")
    columns = list(df.columns)
    missing = [c for c in TRACE_REQUIRED if c not in columns]
    if missing:
        found = ", ".join(columns[:8]) or "none"
        raise SimInputError(
            f"{name}: missing column {', '.join(missing)}; a trace needs "
            f"{','.join(TRACE_REQUIRED)} (found: {found})"
        )
    known = TRACE_REQUIRED + TRACE_OPTIONAL
    for extra in (c for c in columns if c not in known):
        close = difflib.get_close_matches(extra, known, n=1, cutoff=0.8)
        if close:
            raise SimInputError(f"{name}: unknown column {extra!r} (did you mean {close[0]!r}?)")
    if ("prefix_id" in columns) != ("prefix_tokens" in columns):
        raise SimInputError(f"{name}: give prefix_id and prefix_tokens together")
    if len(df) == 0:
        raise SimInputError(f"{name} has a header but no requests")

    arrival, prompt, output = _every_column(
        name,
        lambda: _numeric_column(df, "arrival_s", name, integer=False, minimum=0),
        *(
            lambda col=col: _numeric_column(
                df, col, name, integer=True, minimum=1, maximum=MAX_TRACE_TOKENS
            )
            for col in ("prompt_tokens", "output_tokens")
        ),
    )
    if max_model_len is not None:
        too_long = prompt >= max_model_len
        if too_long.any():
            raise _rows_error(
                name,
                f"prompt_tokens >= max_model_len={max_model_len} (vLLM rejects such prompts)",
                too_long,
            )
    optional: dict[str, np.ndarray] = {}
    if "priority" in columns:
        optional["priority"] = _numeric_column(df, "priority", name, integer=True, minimum=None)
    if "tenant" in columns:
        optional["tenant"] = _tenant_column(df, name)
    if "prefix_id" in columns:
        optional["prefix_id"] = _numeric_column(df, "prefix_id", name, integer=True, minimum=-1)
        ptok = _numeric_column(df, "prefix_tokens", name, integer=True, minimum=0)
        over = ptok > prompt
        if over.any():
            raise _rows_error(name, "prefix_tokens is above prompt_tokens", over)
        optional["prefix_tokens"] = ptok
    ids = np.arange(1, len(df) + 1).astype(str)
    if "request_id" in columns:
        raw = df["request_id"].astype("string").str.strip()
        empty = (raw.isna() | (raw == "")).to_numpy(dtype=bool)
        if empty.any():
            raise _rows_error(name, "request_id is empty", empty)
        dup = raw.duplicated(keep=False).to_numpy(dtype=bool)
        if dup.any():
            raise _rows_error(name, "request_id is repeated", dup)
        ids = raw.to_numpy(dtype=object).astype(str)

    order = np.argsort(arrival, kind="stable")
    return Workload.build(
        prompt[order],
        output[order],
        arrival_s=arrival[order],
        request_ids=tuple(ids[order].tolist()),
        **{k: v[order] for k, v in optional.items()},
    )


def _tenant_column(df: pd.DataFrame, name: str) -> np.ndarray:
    """Integer tenant ids >= 0 as given, or names numbered 0, 1, ... by first appearance."""
    raw = df["tenant"].astype("string").str.strip()
    empty = (raw.isna() | (raw == "")).to_numpy(dtype=bool)
    if empty.any():
        raise _rows_error(name, "tenant is empty", empty)
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    if np.all(np.isfinite(values)) and np.all(values == np.floor(values)):
        negative = values < 0
        if negative.any():
            raise _rows_error(name, "tenant is negative", negative)
        return values
    codes, _ = pd.factorize(raw)
    return codes.astype(np.float64)


def write_trace_csv(workload: Workload, path: str | os.PathLike) -> None:
    """Write a timed workload as a trace CSV that `read_trace_csv` reads back unchanged."""
    if workload.concurrency is not None:
        raise SimInputError(
            "a concurrency (closed-loop) workload has no arrival times until it runs: write "
            "its run's arrival_s instead"
        )
    if workload.arrival_s is None:
        raise SimInputError("only a timed workload (arrival_s) can be written as a trace")
    frame = pd.DataFrame(
        {
            "arrival_s": workload.arrival_s,
            "prompt_tokens": workload.prompt_tokens,
            "output_tokens": workload.output_tokens,
            "priority": workload.priority,
            "tenant": workload.tenant,
            "prefix_id": workload.prefix_id,
            "prefix_tokens": workload.prefix_tokens,
            "request_id": list(workload.request_ids),
        }
    )
    frame.to_csv(path, index=False)
