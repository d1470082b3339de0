"""Workloads: the requests a run serves, as NumPy arrays indexed by request.

`Workload` is what the scheduler consumes. Generators (seeded) and the CSV trace import build one;
every constructor validates its input and raises `SimInputError` with a clear one-line message.

Generators. Arrivals start at 0 s: `constant` (request i at i / rate), `poisson` (exponential
gaps at `rate` requests per second, the first at 0) or `burst` (all at 0). Lengths are drawn
separately for prompt_tokens and output_tokens, rounded, and clipped to [1, max]:
`fixed:N`, `uniform:LO:HI` (integers, both ends included), `lognormal:MEDIAN:SIGMA`,
`longtail:MEDIAN[:ALPHA]` (a Pareto with that median and tail index ALPHA, default 1.5: most
lengths sit near the median, a few are many times longer). Options add two classes
(`interactive=F`: that fraction gets priority 0, the rest is batch with priority 1; vLLM's rule,
lower is more important; batch lengths may differ via `batch_prompt`/`batch_output`), a shared
system prompt (`prefix=T`: T tokens prepended to every prompt, prefix_id 0, or one of
`prefixes=K` ids drawn uniformly) and tenants (`tenants=K`: ids 0..K-1 drawn uniformly). Each
part draws from its own child of `np.random.SeedSequence(seed)`, so adding tenants does not
change the arrivals or lengths of the same seed.

Spec grammar (command line and app), see `SPEC_HELP`:

    SPEC   := ARRIVAL ":" KEY=VALUE ("," KEY=VALUE)*
    ARRIVAL:= poisson | constant | burst
    LENGTH := fixed:N | uniform:LO:HI | lognormal:MEDIAN:SIGMA | longtail:MEDIAN[:ALPHA]

e.g. `poisson:rate=8,n=1000,prompt=lognormal:1024:0.8,output=uniform:16:512,seed=0`.

Traces. `read_trace_csv` reads `arrival_s,prompt_tokens,output_tokens` (required) and
`priority,tenant,prefix_id,prefix_tokens,request_id` (optional) with pandas. Column names are
matched after trimming spaces and lower-casing; other columns are ignored, except a name that
looks like a misspelt known column, which is rejected. Every cell of a present column must be
filled. Problems are reported in one line naming the rows as a spreadsheet numbers them (row 1
is the header, the first request is row 2): the first few and a count. Rows are sorted stably by
arrival_s, because the scheduler receives requests in list order and a timed run admits them by
arrival time; request ids stay the 1-based data row numbers of the file ("1" is spreadsheet
row 2) unless a request_id column gives them. Tenants that are not integers (names) are numbered
0, 1, ... in order of first appearance. `write_trace_csv` writes all columns back, and
`load_workload` turns the command line's `--workload TRACE.csv|SPEC` into a Workload.
"""

from __future__ import annotations

import csv
import difflib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sim.errors import SimInputError


@dataclass(frozen=True, eq=False)
class Workload:
    """Requests as arrays of equal length n, in list order (the order vLLM receives them).

    Exactly one of `arrival_s` (timed runs, seconds) and `arrival_step` (step replays, 1-based
    step numbers) is set. `priority` follows vLLM: a lower value is more important.
    `prefix_id` = -1 means no shared prefix; requests with the same id share their first
    `prefix_tokens` prompt tokens (a system prompt), which prefix caching can reuse.
    """

    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    arrival_s: np.ndarray | None
    arrival_step: np.ndarray | None
    priority: np.ndarray
    tenant: np.ndarray
    prefix_id: np.ndarray
    prefix_tokens: np.ndarray
    request_ids: tuple[str, ...]

    @property
    def num_requests(self) -> int:
        return int(self.prompt_tokens.shape[0])

    @classmethod
    def build(
        cls,
        prompt_tokens,
        output_tokens,
        *,
        arrival_s=None,
        arrival_step=None,
        priority=None,
        tenant=None,
        prefix_id=None,
        prefix_tokens=None,
        request_ids=None,
    ) -> Workload:
        """Validate and fill defaults (priority 0, tenant 0, no prefix, ids "0".."n-1")."""
        prompt = np.asarray(prompt_tokens, dtype=np.int64).reshape(-1)
        output = np.asarray(output_tokens, dtype=np.int64).reshape(-1)
        n = prompt.shape[0]
        if (arrival_s is None) == (arrival_step is None):
            raise SimInputError("give exactly one of arrival_s (seconds) or arrival_step (steps)")

        def column(values, default, dtype, name):
            if values is None:
                return np.full(n, default, dtype=dtype)
            arr = np.asarray(values, dtype=dtype).reshape(-1)
            if arr.shape[0] != n:
                raise SimInputError(f"{name} has {arr.shape[0]} values, expected {n}")
            return arr

        out = column(output, 0, np.int64, "output_tokens")
        arr_s = None if arrival_s is None else column(arrival_s, 0.0, np.float64, "arrival_s")
        arr_step = (
            None if arrival_step is None else column(arrival_step, 1, np.int64, "arrival_step")
        )
        prio = column(priority, 0, np.int64, "priority")
        ten = column(tenant, 0, np.int64, "tenant")
        pid = column(prefix_id, -1, np.int64, "prefix_id")
        ptok = column(prefix_tokens, 0, np.int64, "prefix_tokens")
        ids = tuple(str(i) for i in range(n)) if request_ids is None else tuple(request_ids)
        if len(ids) != n:
            raise SimInputError(f"request_ids has {len(ids)} values, expected {n}")
        if len(set(ids)) != n:
            raise SimInputError("request ids must be unique")
        if n and prompt.min() < 1:
            raise SimInputError("every prompt needs at least 1 token")
        if n and out.min() < 1:
            raise SimInputError("every request needs at least 1 output token")
        if arr_s is not None and n and (not np.all(np.isfinite(arr_s)) or arr_s.min() < 0):
            raise SimInputError("arrival times must be finite and >= 0 seconds")
        if arr_step is not None and n and arr_step.min() < 1:
            raise SimInputError("arrival steps are 1-based")
        if n and (ptok.min() < 0 or np.any(ptok > prompt)):
            raise SimInputError("prefix_tokens must be between 0 and the prompt length")
        return cls(prompt, out, arr_s, arr_step, prio, ten, pid, ptok, ids)


# ---------------------------------------------------------------------------------------------
# Generators
# ---------------------------------------------------------------------------------------------

MAX_REQUESTS = 1_000_000
DEFAULT_PROMPT_MAX = 32_768
DEFAULT_OUTPUT_MAX = 32_768
ARRIVAL_KINDS = ("poisson", "constant", "burst")
LENGTH_KINDS = ("fixed", "uniform", "lognormal", "longtail")
LONGTAIL_DEFAULT_ALPHA = 1.5
INTERACTIVE_PRIORITY = 0
BATCH_PRIORITY = 1

SPEC_HELP = """\
A workload spec is ARRIVAL:KEY=VALUE,KEY=VALUE,...
  ARRIVAL   poisson (random gaps at `rate`), constant (one request every 1/rate s), burst (all at 0)
  n         number of requests, 1 to 1,000,000 (required)
  rate      requests per second, > 0 (required for poisson and constant, not allowed for burst)
  prompt    prompt length (default fixed:512), output: output length (default fixed:128):
              fixed:N | uniform:LO:HI | lognormal:MEDIAN:SIGMA | longtail:MEDIAN[:ALPHA]
  prompt_max, output_max   clip lengths to this many tokens (default 32,768; prompts stay
            below max_model_len when one is given)
  seed      integer >= 0 (default 0); the same spec and seed give the same workload
  interactive  fraction 0..1 of interactive requests (priority 0); the rest is batch (priority 1)
  batch_prompt, batch_output   lengths for the batch class (default: as prompt, output)
  tenants   number of tenants, ids drawn uniformly (default 1)
  prefix    tokens of a shared system prompt prepended to every prompt (default 0)
  prefixes  number of distinct system prompts, ids drawn uniformly (default 1)
Example: poisson:rate=8,n=1000,prompt=lognormal:1024:0.8,output=uniform:16:512,seed=0"""


@dataclass(frozen=True)
class LengthDist:
    """A length distribution: `kind` in LENGTH_KINDS and its numeric parameters."""

    kind: str
    params: tuple[float, ...]

    def __str__(self) -> str:
        return ":".join([self.kind, *(f"{p:g}" for p in self.params)])


def _number(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise SimInputError(f"{what}: {text!r} is not a number") from None
    if not np.isfinite(value):
        raise SimInputError(f"{what}: {text!r} is not a finite number")
    return value


def parse_length(text: str | LengthDist, *, what: str = "length") -> LengthDist:
    """Parse `fixed:N`, `uniform:LO:HI`, `lognormal:MEDIAN:SIGMA` or `longtail:MEDIAN[:ALPHA]`."""
    if isinstance(text, LengthDist):
        _check_length(text, what)
        return text
    parts = [p.strip() for p in str(text).split(":")]
    kind = parts[0].lower()
    params = tuple(_number(p, f"{what} {text!r}") for p in parts[1:])
    dist = LengthDist(kind, params)
    _check_length(dist, what)
    return dist


def _check_length(dist: LengthDist, what: str, max_tokens: int | None = None) -> None:
    kind, p = dist.kind, dist.params
    arity = {"fixed": (1,), "uniform": (2,), "lognormal": (2,), "longtail": (1, 2)}
    if kind not in arity:
        raise SimInputError(
            f"{what}: unknown length kind {kind!r}; use fixed:N, uniform:LO:HI, "
            "lognormal:MEDIAN:SIGMA or longtail:MEDIAN[:ALPHA]"
        )
    if len(p) not in arity[kind]:
        shape = {
            "fixed": "fixed:N",
            "uniform": "uniform:LO:HI",
            "lognormal": "lognormal:MEDIAN:SIGMA",
            "longtail": "longtail:MEDIAN[:ALPHA]",
        }[kind]
        raise SimInputError(f"{what}: {dist} has {len(p)} parameter(s); the form is {shape}")
    if not all(np.isfinite(x) for x in p):
        raise SimInputError(f"{what}: {dist} has a parameter that is not a finite number")
    if kind in ("fixed", "uniform") and any(x != int(x) for x in p):
        raise SimInputError(f"{what}: {dist} needs whole numbers of tokens")
    if p[0] < 1:
        raise SimInputError(f"{what}: {dist} must be at least 1 token")
    if kind == "uniform" and p[1] < p[0]:
        raise SimInputError(f"{what}: {dist} has HI below LO")
    if kind == "lognormal" and not 0 <= p[1] <= 5:
        raise SimInputError(f"{what}: {dist} needs SIGMA between 0 and 5")
    if kind == "longtail" and len(p) == 2 and not 0.1 <= p[1] <= 10:
        raise SimInputError(f"{what}: {dist} needs ALPHA between 0.1 and 10")
    if max_tokens is not None:
        lowest = p[0]
        if lowest > max_tokens:
            raise SimInputError(f"{what}: {dist} is above the maximum of {max_tokens} tokens")


def lengths(
    kind: str,
    params: Sequence[float],
    n: int,
    rng: np.random.Generator,
    *,
    max_tokens: int,
) -> np.ndarray:
    """`n` integer lengths in [1, max_tokens] (int64) drawn from one distribution.

    fixed:N, uniform:LO:HI (integers, both ends included), lognormal:MEDIAN:SIGMA (exp of a
    normal with mean ln MEDIAN), longtail:MEDIAN[:ALPHA] (a Pareto with that median: scale
    MEDIAN / 2**(1/ALPHA), tail index ALPHA, default 1.5). Rounded, then clipped to the range.
    """
    dist = LengthDist(str(kind).lower(), tuple(float(x) for x in params))
    if max_tokens < 1:
        raise SimInputError(f"the maximum length must be at least 1 token, got {max_tokens}")
    _check_length(dist, "length", max_tokens)
    p = dist.params
    if dist.kind == "fixed":
        raw = np.full(n, p[0])
    elif dist.kind == "uniform":
        raw = rng.integers(int(p[0]), int(min(p[1], max_tokens)), size=n, endpoint=True)
    elif dist.kind == "lognormal":
        raw = p[0] * np.exp(p[1] * rng.standard_normal(n))
    else:
        alpha = p[1] if len(p) == 2 else LONGTAIL_DEFAULT_ALPHA
        raw = p[0] / 2.0 ** (1.0 / alpha) * (1.0 + rng.pareto(alpha, size=n))
    return np.clip(np.rint(raw), 1, max_tokens).astype(np.int64)


def arrivals(kind: str, n: int, rate_per_s: float | None, rng: np.random.Generator) -> np.ndarray:
    """Arrival times in seconds (float64, non-decreasing, the first at 0) for `n` requests."""
    if kind == "burst":
        return np.zeros(n)
    if kind not in ARRIVAL_KINDS:
        raise SimInputError(f"unknown arrival kind {kind!r}; use poisson, constant or burst")
    if rate_per_s is None or not np.isfinite(rate_per_s) or rate_per_s <= 0:
        raise SimInputError(f"{kind} arrivals need a rate > 0 requests per second")
    if kind == "constant":
        return np.arange(n) / float(rate_per_s)
    gaps = rng.exponential(1.0 / rate_per_s, size=max(n - 1, 0))
    return np.concatenate([[0.0], np.cumsum(gaps)])[:n]


@dataclass(frozen=True)
class WorkloadSpec:
    """A generated workload's recipe (see SPEC_HELP); validated on creation, `build` draws it."""

    arrival: str
    n: int
    rate_per_s: float | None = None
    prompt: LengthDist | str = "fixed:512"
    output: LengthDist | str = "fixed:128"
    seed: int = 0
    interactive: float | None = None
    batch_prompt: LengthDist | str | None = None
    batch_output: LengthDist | str | None = None
    tenants: int = 1
    prefix_tokens: int = 0
    prefixes: int = 1
    prompt_max: int | None = None
    output_max: int | None = None

    def __post_init__(self) -> None:
        for field in ("n", "seed", "tenants", "prefix_tokens", "prefixes"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise SimInputError(f"{field} must be a whole number, got {value!r}")
        if self.arrival not in ARRIVAL_KINDS:
            raise SimInputError(f"unknown arrival {self.arrival!r}; use poisson, constant or burst")
        if not 1 <= self.n <= MAX_REQUESTS:
            raise SimInputError(f"n={self.n} must be between 1 and {MAX_REQUESTS:,} requests")
        if self.arrival == "burst":
            if self.rate_per_s is not None:
                raise SimInputError("burst arrivals take no rate (every request arrives at 0 s)")
        elif self.rate_per_s is None:
            raise SimInputError(f"{self.arrival} arrivals need rate=R (requests per second)")
        elif not np.isfinite(self.rate_per_s) or self.rate_per_s <= 0:
            raise SimInputError(f"rate={self.rate_per_s:g} must be > 0 requests per second")
        for field in ("prompt", "output", "batch_prompt", "batch_output"):
            value = getattr(self, field)
            if value is not None:
                object.__setattr__(self, field, parse_length(value, what=field))
        if self.seed < 0:
            raise SimInputError(f"seed={self.seed} must be >= 0")
        if self.interactive is not None and not 0 <= self.interactive <= 1:
            raise SimInputError(f"interactive={self.interactive:g} must be a fraction in 0..1")
        if (self.batch_prompt or self.batch_output) and self.interactive is None:
            raise SimInputError("batch_prompt/batch_output need interactive=F (the class mix)")
        if not 1 <= self.tenants <= 10_000:
            raise SimInputError(f"tenants={self.tenants} must be between 1 and 10,000")
        if self.prefix_tokens < 0:
            raise SimInputError(f"prefix={self.prefix_tokens} must be >= 0 tokens")
        if not 1 <= self.prefixes <= 10_000:
            raise SimInputError(f"prefixes={self.prefixes} must be between 1 and 10,000")
        for field in ("prompt_max", "output_max"):
            value = getattr(self, field)
            if value is not None and value < 1:
                raise SimInputError(f"{field}={value} must be at least 1 token")

    def to_spec(self) -> str:
        """The spec string that `parse_spec` turns back into this recipe."""
        parts = [f"{self.arrival}:n={self.n}"]
        if self.rate_per_s is not None:
            parts.append(f"rate={self.rate_per_s!r}")
        parts += [f"prompt={self.prompt}", f"output={self.output}", f"seed={self.seed}"]
        optional = {
            "interactive": self.interactive,
            "batch_prompt": self.batch_prompt,
            "batch_output": self.batch_output,
            "prompt_max": self.prompt_max,
            "output_max": self.output_max,
        }
        parts += [f"{k}={v}" for k, v in optional.items() if v is not None]
        defaults = {"tenants": (self.tenants, 1), "prefix": (self.prefix_tokens, 0)}
        defaults["prefixes"] = (self.prefixes, 1)
        parts += [f"{k}={v}" for k, (v, d) in defaults.items() if v != d]
        return ",".join(parts)

    def build(self, *, max_model_len: int | None = None) -> Workload:
        """Draw the workload. With `max_model_len`, prompts stay below it (vLLM's limit)."""
        if max_model_len is not None and max_model_len < 2:
            raise SimInputError(f"max_model_len={max_model_len} must be at least 2")
        prompt_cap = self.prompt_max
        if max_model_len is not None:
            if prompt_cap is not None and prompt_cap >= max_model_len:
                raise SimInputError(
                    f"prompt_max={prompt_cap} must be below max_model_len={max_model_len} "
                    "(vLLM rejects prompts of max_model_len tokens or more)"
                )
            prompt_cap = prompt_cap or max_model_len - 1
        prompt_cap = prompt_cap or DEFAULT_PROMPT_MAX
        user_cap = prompt_cap - self.prefix_tokens
        if user_cap < 1:
            raise SimInputError(
                f"prefix={self.prefix_tokens} tokens leaves no room below the prompt maximum "
                f"of {prompt_cap} tokens"
            )
        output_cap = self.output_max or DEFAULT_OUTPUT_MAX
        seeds = np.random.SeedSequence(self.seed).spawn(8)
        rng = [np.random.default_rng(s) for s in seeds]
        n = self.n

        def draw(dist: LengthDist, cap: int, gen: np.random.Generator, what: str) -> np.ndarray:
            _check_length(dist, what, cap)
            return lengths(dist.kind, dist.params, n, gen, max_tokens=cap)

        arrival_s = arrivals(self.arrival, n, self.rate_per_s, rng[0])
        prompt = draw(self.prompt, user_cap, rng[1], "prompt")
        output = draw(self.output, output_cap, rng[2], "output")
        priority = np.full(n, INTERACTIVE_PRIORITY, dtype=np.int64)
        if self.interactive is not None:
            is_batch = rng[3].random(n) >= self.interactive
            priority = np.where(is_batch, BATCH_PRIORITY, INTERACTIVE_PRIORITY)
            if self.batch_prompt is not None:
                batch = draw(self.batch_prompt, user_cap, rng[4], "batch_prompt")
                prompt = np.where(is_batch, batch, prompt)
            if self.batch_output is not None:
                batch = draw(self.batch_output, output_cap, rng[5], "batch_output")
                output = np.where(is_batch, batch, output)
        tenant = rng[6].integers(0, self.tenants, size=n) if self.tenants > 1 else np.zeros(n)
        if self.prefix_tokens > 0:
            prefix_id = rng[7].integers(0, self.prefixes, size=n)
            prefix_tokens = np.full(n, self.prefix_tokens)
        else:
            prefix_id, prefix_tokens = np.full(n, -1), np.zeros(n)
        return Workload.build(
            prompt + self.prefix_tokens,
            output,
            arrival_s=arrival_s,
            priority=priority,
            tenant=tenant,
            prefix_id=prefix_id,
            prefix_tokens=prefix_tokens,
        )


_SPEC_KEYS = {
    "n": "n",
    "rate": "rate_per_s",
    "prompt": "prompt",
    "output": "output",
    "seed": "seed",
    "interactive": "interactive",
    "batch_prompt": "batch_prompt",
    "batch_output": "batch_output",
    "tenants": "tenants",
    "prefix": "prefix_tokens",
    "prefixes": "prefixes",
    "prompt_max": "prompt_max",
    "output_max": "output_max",
}
_INT_KEYS = {"n", "seed", "tenants", "prefix", "prefixes", "prompt_max", "output_max"}
_FLOAT_KEYS = {"rate", "interactive"}


def _spec_int(key: str, text: str) -> int:
    value = _number(text, f"workload spec {key}")
    if value != int(value):
        raise SimInputError(f"workload spec {key}: {text!r} is not a whole number")
    return int(value)


def parse_spec(spec: str) -> WorkloadSpec:
    """Parse a spec string (grammar in SPEC_HELP) into a validated `WorkloadSpec`."""
    text = str(spec).strip()
    kind, sep, rest = text.partition(":")
    kind = kind.strip().lower()
    if not text:
        raise SimInputError("empty workload spec; e.g. poisson:rate=8,n=1000")
    if kind not in ARRIVAL_KINDS:
        raise SimInputError(
            f"workload spec starts with {kind!r}; it must start with poisson:, constant: or burst:"
        )
    fields: dict[str, object] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = (s.strip() for s in item.partition("="))
        key = key.lower()
        if not eq or not key or not value:
            raise SimInputError(f"workload spec: expected KEY=VALUE, got {item!r}")
        if key not in _SPEC_KEYS:
            close = difflib.get_close_matches(key, list(_SPEC_KEYS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise SimInputError(
                f"workload spec: unknown key {key!r}{hint}; keys are {', '.join(_SPEC_KEYS)}"
            )
        name = _SPEC_KEYS[key]
        if name in fields:
            raise SimInputError(f"workload spec: {key} is given twice")
        if key in _INT_KEYS:
            fields[name] = _spec_int(key, value)
        elif key in _FLOAT_KEYS:
            fields[name] = _number(value, f"workload spec {key}")
        else:
            fields[name] = parse_length(value, what=f"workload spec {key}")
    if "n" not in fields:
        raise SimInputError("workload spec needs n=N (the number of requests)")
    return WorkloadSpec(arrival=kind, **fields)  # type: ignore[arg-type]


def from_spec(spec: str, *, max_model_len: int | None = None) -> Workload:
    """The workload a spec string describes (SPEC_HELP), prompts below `max_model_len`."""
    return parse_spec(spec).build(max_model_len=max_model_len)


def poisson_workload(
    n: int,
    rate_per_s: float,
    *,
    prompt: str | LengthDist = "fixed:512",
    output: str | LengthDist = "fixed:128",
    seed: int = 0,
    max_model_len: int | None = None,
    **options: object,
) -> Workload:
    """Poisson arrivals at `rate_per_s`; `options` are WorkloadSpec fields (interactive, ...)."""
    spec = WorkloadSpec("poisson", n, rate_per_s, prompt, output, seed, **options)  # type: ignore[arg-type]
    return spec.build(max_model_len=max_model_len)


def constant_workload(
    n: int,
    rate_per_s: float,
    *,
    prompt: str | LengthDist = "fixed:512",
    output: str | LengthDist = "fixed:128",
    seed: int = 0,
    max_model_len: int | None = None,
    **options: object,
) -> Workload:
    """One request every 1 / `rate_per_s` seconds; `options` as in `poisson_workload`."""
    spec = WorkloadSpec("constant", n, rate_per_s, prompt, output, seed, **options)  # type: ignore[arg-type]
    return spec.build(max_model_len=max_model_len)


def burst_workload(
    n: int,
    *,
    prompt: str | LengthDist = "fixed:512",
    output: str | LengthDist = "fixed:128",
    seed: int = 0,
    max_model_len: int | None = None,
    **options: object,
) -> Workload:
    """All `n` requests at 0 s; `options` as in `poisson_workload`."""
    spec = WorkloadSpec("burst", n, None, prompt, output, seed, **options)  # type: ignore[arg-type]
    return spec.build(max_model_len=max_model_len)


# ---------------------------------------------------------------------------------------------
# Traces
# ---------------------------------------------------------------------------------------------

TRACE_REQUIRED = ("arrival_s", "prompt_tokens", "output_tokens")
TRACE_OPTIONAL = ("priority", "tenant", "prefix_id", "prefix_tokens", "request_id")
MAX_TRACE_ROWS = 1_000_000
_ROWS_SHOWN = 5
MAX_TRACE_TOKENS = 100_000_000  # longer than any model's context; keeps int64 conversion safe
MAX_TRACE_INTEGER = 2**53  # other integer columns: exact in float64
_FIRST_ROW = 2  # spreadsheet numbering: row 1 is the header


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


def _rows_error(name: str, problem: str, bad: np.ndarray) -> SimInputError:
    """One line naming the first few bad rows (spreadsheet numbering) and how many there are."""
    rows = np.flatnonzero(bad) + _FIRST_ROW
    shown = ", ".join(str(r) for r in rows[:_ROWS_SHOWN])
    count = f"{rows.size} rows" if rows.size > 1 else "1 row"
    more = f" and {rows.size - _ROWS_SHOWN} more" if rows.size > _ROWS_SHOWN else ""
    return SimInputError(
        f"{name}: {problem} in {count}: {'rows' if rows.size > 1 else 'row'} {shown}{more} "
        "(row 1 is the header)"
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


def _read_frame(source: object, name: str) -> pd.DataFrame:
    head = _peek(source, name)
    if b"\x00" in head:
        raise SimInputError(f"{name} is not a CSV text file (it contains binary data)")
    first_line = head.split(b"\n", 1)[0].decode("utf-8-sig", "replace")
    text_columns = {
        raw: str
        for raw in next(csv.reader([first_line]), [])
        if raw.strip().lower() in ("tenant", "request_id")
    }
    try:
        df = pd.read_csv(
            source,  # type: ignore[arg-type]
            dtype=text_columns,  # tenant names and request ids stay text; numbers parse fast
            nrows=MAX_TRACE_ROWS + 1,
            skip_blank_lines=False,
            skipinitialspace=True,
            encoding="utf-8-sig",
            low_memory=False,  # one dtype per column, no DtypeWarning on large mixed files
        )
    except pd.errors.EmptyDataError:
        raise SimInputError(f"{name} is empty; a trace needs a header and rows") from None
    except UnicodeDecodeError:
        raise SimInputError(f"{name} is not a CSV text file (it is not UTF-8 text)") from None
    except pd.errors.ParserError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "parse error"
        raise SimInputError(f"{name} is not a valid CSV file: {first}") from None
    except FileNotFoundError:
        raise SimInputError(f"trace file not found: {source}") from None
    except OSError as exc:
        raise SimInputError(f"cannot read trace {name}: {exc.strerror or exc}") from None
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

    arrival = _numeric_column(df, "arrival_s", name, integer=False, minimum=0)
    prompt, output = (
        _numeric_column(df, col, name, integer=True, minimum=1, maximum=MAX_TRACE_TOKENS)
        for col in ("prompt_tokens", "output_tokens")
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


def load_workload(text: str, *, max_model_len: int | None = None) -> Workload:
    """`--workload` of the command line: a CSV trace path (ends in .csv or is a file) or a spec."""
    if text.strip().lower().endswith(".csv") or os.path.isfile(text):
        return read_trace_csv(text, max_model_len=max_model_len)
    return from_spec(text, max_model_len=max_model_len)
