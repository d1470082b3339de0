"""Seeded workload generators and the spec grammar that names them (`poisson:rate=8,n=1000,...`).

Arrivals start at 0 s: `constant` (request i at i / rate), `poisson` (exponential
gaps at `rate` requests per second, the first at 0) or `burst` (all at 0); or a closed loop,
`concurrency` (`clients=C`: the first C requests at 0 s, then each finish sends the next one at
that moment, as `vllm bench serve --max-concurrency C`, AIPerf and genai-perf run; the times come
from the timed run, see `Workload.concurrency`). Lengths are drawn
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
    ARRIVAL:= poisson | constant | burst | concurrency
    LENGTH := fixed:N | uniform:LO:HI | lognormal:MEDIAN:SIGMA | longtail:MEDIAN[:ALPHA]

e.g. `poisson:rate=8,n=1000,prompt=lognormal:1024:0.8,output=uniform:16:512,seed=0` or
`concurrency:clients=32,n=1000,prompt=fixed:1024,output=fixed:256,seed=0`.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.errors import SimInputError
from sim.workload import Workload

MAX_REQUESTS = 1_000_000
DEFAULT_PROMPT_MAX = 32_768
DEFAULT_OUTPUT_MAX = 32_768
ARRIVAL_KINDS = ("poisson", "constant", "burst", "concurrency")
LENGTH_KINDS = ("fixed", "uniform", "lognormal", "longtail")
LONGTAIL_DEFAULT_ALPHA = 1.5
INTERACTIVE_PRIORITY = 0
BATCH_PRIORITY = 1

SPEC_HELP = """\
A workload spec is ARRIVAL:KEY=VALUE,KEY=VALUE,...
  ARRIVAL   poisson (random gaps at `rate`), constant (one request every 1/rate s), burst (all
            at 0), concurrency (a closed loop: `clients` in flight, each finish sends the next)
  n         number of requests, 1 to 1,000,000 (required)
  rate      requests per second, > 0 (required for poisson and constant, not allowed otherwise)
  clients   requests in flight at once, >= 1 (required for concurrency, and only there); with
            clients >= n every request is sent at 0 s
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
Example: poisson:rate=8,n=1000,prompt=lognormal:1024:0.8,output=uniform:16:512,seed=0
Closed loop: concurrency:clients=32,n=1000,prompt=fixed:1024,output=fixed:256,seed=0"""


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
    if kind not in ARRIVAL_KINDS[:3]:
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
    clients: int | None = None

    def __post_init__(self) -> None:
        for field in ("n", "seed", "tenants", "prefix_tokens", "prefixes"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise SimInputError(f"{field} must be a whole number, got {value!r}")
        if self.arrival not in ARRIVAL_KINDS:
            raise SimInputError(
                f"unknown arrival {self.arrival!r}; use poisson, constant, burst or concurrency"
            )
        if not 1 <= self.n <= MAX_REQUESTS:
            raise SimInputError(f"n={self.n} must be between 1 and {MAX_REQUESTS:,} requests")
        c = self.clients
        if self.arrival == "concurrency":
            if c is None:
                raise SimInputError(
                    "concurrency workloads need clients=C (how many requests are in flight)"
                )
            if isinstance(c, bool) or not isinstance(c, int | np.integer):
                raise SimInputError(f"clients must be a whole number, got {c!r}")
            if c < 1:
                raise SimInputError(f"clients={c} must be at least 1")
        elif c is not None:
            raise SimInputError(
                f"clients=C is for concurrency: workloads, not {self.arrival} (open-loop) ones"
            )
        if self.arrival in ("burst", "concurrency"):
            if self.rate_per_s is not None:
                raise SimInputError(
                    "burst arrivals take no rate (every request arrives at 0 s)"
                    if self.arrival == "burst"
                    else "concurrency workloads take no rate (each finish sends the next request)"
                )
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
        if self.clients is not None:
            parts.append(f"clients={self.clients}")
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

        # a closed loop's arrival times come from its run (Workload.concurrency)
        closed = self.arrival == "concurrency"
        arrival_s = None if closed else arrivals(self.arrival, n, self.rate_per_s, rng[0])
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
            concurrency=int(self.clients) if closed else None,
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
    "clients": "clients",
}
_INT_KEYS = {"n", "seed", "tenants", "prefix", "prefixes", "prompt_max", "output_max", "clients"}
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
            f"workload spec starts with {kind!r}; it must start with poisson:, constant:, burst: "
            "or concurrency:"
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


def concurrency_workload(
    n: int,
    clients: int,
    *,
    prompt: str | LengthDist = "fixed:512",
    output: str | LengthDist = "fixed:128",
    seed: int = 0,
    max_model_len: int | None = None,
    **options: object,
) -> Workload:
    """A closed loop: `clients` requests in flight, each finish sends the next one (list order)
    at that moment; arrival times come from the timed run. `options` as in `poisson_workload`."""
    spec = WorkloadSpec("concurrency", n, None, prompt, output, seed, clients=clients, **options)  # type: ignore[arg-type]
    return spec.build(max_model_len=max_model_len)
