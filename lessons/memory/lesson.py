"""Lesson "When memory runs out": its controls (Params), the workload, build(p) and at_step.

A batch job of BATCH requests is queued at 0 s (priority 1, less important) and interactive
requests (priority 0) arrive as a Poisson stream at the learner's rate, all with the learner's
prompt and output lengths (each drawn within +-50%, one fixed seed). The KV pool comes from the
catalogs (`sim.models.kv_pool` at the learner's gpu_memory_utilization) or is set in blocks.
`sim.traced.run_traced` runs it on the cost model's clock with every step's block tables, which
is what the grid draws; runs.py makes the comparisons (the other policy, the other prefix-caching
setting, the other scheduling mode, the fixes), each a run of its own on the same workload.

A prompt of max_model_len tokens or more never reaches the scheduler (vLLM's front end refuses
it), so such requests are left out of the run and counted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from lessons.kit import limits, shared
from lessons.kit.anim import MAX_FRAMES
from lessons.kit.controls import Choice, Integer, Steps, Toggle, control
from lessons.kit.selection import selection, used_limits
from lessons.memory import runs
from lessons.memory.readout import Comparison, Readout, Refusal, StepReadout
from lessons.memory.trace import frames_of, victims_of
from sim.config import SchedulerConfig
from sim.cost import Deployment
from sim.kv import cdiv, refuses_to_start, request_blocks
from sim.models import kv_pool
from sim.run import Run
from sim.timed import timer_for
from sim.traced import run_traced
from sim.workload import Workload

PREFIX = "mem"
# text.md sections filled with values of their own, not a readout's (figures.py, ui/predict.py)
OWN_VALUES = ("frame-", "predict-revealed")
STEP_KEY = f"{PREFIX}-step"
BLOCK_SIZE: int = next(
    f.default for f in dataclasses.fields(SchedulerConfig) if f.name == "block_size"
)
BATCH = 16  # batch requests queued at 0 s
INTERACTIVE = 24  # interactive requests arriving at the chosen rate
SEED = 7
SPREAD = 0.5  # lengths are drawn uniformly within +-50% of the chosen ones
GRID_MAX_BLOCKS = 4096  # the grid draws at most this many blocks (see Readout.grid_blocks)
GRID_COLUMNS = (16, 32, 64)  # a row of the grid: 16 blocks for a small pool, up to 64
GRID_ROWS = 16  # the most rows a row length is used for before the next longer one
FRAME_CELLS = 400_000  # cells in all frames together: keeps the figure under 1 MB
POOL_FROM = ("memory", "blocks")
PROMPTS = (128, 256, 512, 768, 1024, 1536, 2048, 3072, 4096)
OUTPUTS = (32, 64, 128, 192, 256, 384, 512)
RATES = (0.5, 1, 2, 4, 8, 16, 32)
MAX_MODEL_LENS = (1024, 2048, 4096, 8192, 16384, 32768, 131072)
WATERMARKS = (0.0, 0.01, 0.02, 0.05, 0.1)
# the notes above the run, in order, with their icons: settings vLLM would refuse or adjust
WARNINGS = (
    ("bad-limits", "block"),
    ("no-fit", "memory"),
    ("len-refused", "block"),
    ("pool-raised", "memory"),
)
UTILIZATIONS = runs.UTILIZATIONS  # gpu_memory_utilization in percent: the slider's range
MOST_MEMORY = {"gpu_memory_utilization": UTILIZATIONS[1] / 100}  # the slider at its top


def _pool_name(value: str) -> str:
    return {"memory": "GPU memory", "blocks": "blocks"}[value]


def _rate_name(value: float) -> str:
    return f"{value:g}"


@dataclass(frozen=True)
class Params(limits.Limits, shared.Deployment):
    """Everything the lesson's controls set."""

    gpu: str = shared.gpu("L4")
    pool_from: str = control(
        "memory",
        Choice(
            "KV cache pool sized from",
            key="pool",
            options=POOL_FROM,
            format=_pool_name,
            help="From GPU memory: what vLLM would give the cache on this GPU after the weights "
            "(sim.models.kv_pool). A number of blocks: set the pool directly.",
        ),
    )
    gpu_memory_utilization: int = control(
        90,
        Integer(
            "gpu_memory_utilization (% of GPU memory vLLM may use)",
            key="util",
            lo=UTILIZATIONS[0],
            hi=UTILIZATIONS[1],
            main=True,
        ),
    )
    num_gpu_blocks: int = control(
        1200,
        Integer(f"Pool (blocks of {BLOCK_SIZE} tokens)", key="blocks", lo=100, hi=4000, step=50),
    )
    prompt_tokens: int = control(
        1024, Steps("Prompt length (tokens, each within ±50%)", key="prompt", options=PROMPTS)
    )
    output_tokens: int = control(
        192, Steps("Output length (tokens, each within ±50%)", key="output", options=OUTPUTS)
    )
    rate: float = control(
        4,
        Choice(
            "Interactive arrivals (requests per second)",
            key="rate",
            options=RATES,
            format=_rate_name,
        ),
    )
    max_model_len: int = control(
        8192,
        Steps(
            "max_model_len (tokens)",
            key="mml",
            options=MAX_MODEL_LENS,
            help="The longest sequence vLLM accepts. Longer prompts are refused at the door.",
        ),
    )
    policy: str = control(
        "fcfs",
        Choice(
            "Policy",
            key="policy",
            options=("fcfs", "priority"),
            format=str.upper,
            main=True,
            help="FCFS preempts the running request admitted (or readmitted) last. PRIORITY "
            "preempts the least important one (largest priority value, then the latest arrival).",
        ),
    )
    prefix_caching: bool = control(
        True,
        Toggle(
            "Prefix caching",
            key="caching",
            help="vLLM's default. A preempted request's full blocks keep their fingerprint "
            "until another request needs them, and count as cache hits when it returns.",
        ),
    )
    watermark: float = control(
        0.0,
        Choice(
            "Watermark (share of the pool kept back from admissions)",
            key="watermark",
            options=WATERMARKS,
            format=lambda w: f"{w:g}",
        ),
    )
    async_scheduling: bool = control(
        True,
        Toggle(
            "Async scheduling",
            key="async",
            help="vLLM's default in real deployments: the next step is scheduled before this "
            "step's output is processed, so a finished request frees its blocks one step later.",
        ),
    )


def show_pool_utilization(chosen: dict) -> bool:
    return chosen.get("pool_from") == "memory"


def show_pool_blocks(chosen: dict) -> bool:
    return chosen.get("pool_from") == "blocks"


SHOW_IF = {
    "gpu_memory_utilization": show_pool_utilization,
    "num_gpu_blocks": show_pool_blocks,
}
# The controls' rows on the page, in the order a learner meets them: the pool's size beside the
# lesson's key sentence, above the grid (MAIN), and the others under the grid (LAYOUT).
MAIN = (("gpu_memory_utilization", "num_gpu_blocks"),)
LAYOUT = (
    ("gpu", "model", "dtype", "tp"),
    ("pool_from", "max_model_len", "prompt_tokens", "output_tokens"),
    ("rate", "policy", "prefix_caching", "watermark"),
    ("async_scheduling", "vllm_defaults", "max_num_batched_tokens", "max_num_seqs"),
)


# What the page draws, in order (views/lesson_memory.py `tell`): each line is (what, whose
# values, names): text.md sections said ("say") or a metrics row ("metrics") from the Readout
# ("r"), the Comparison ("c") or the step's StepReadout ("s"), a chart or a table of figures.py /
# tables.py (an empty table is left out), questions of quiz.toml asked next to their chart
# ("ask", or folded: "fold") and a folded aside ("deeper:<key>", "", the script inside it).
# Under the grid: the run's summary, kept back while the learner predicts (TOTALS_WAIT).
TOTALS = (("say", "r", "summary"), ("metrics", "r", "metrics"), ("say", "r", "stepper"))
TOTALS_WAIT = (("say", "r", "summary-wait", "metrics-wait", "stepper"),)
# The step the stepper shows: vLLM's readouts, what happened, every block table.
STEP_PANEL = (
    ("metrics", "s", "step-metrics"),
    ("say", "s", "step-hits", "step-victim-hits", "step-preempted", "step-resumed"),
    ("say", "s", "step-finished"),
    ("deeper:tables", "", (("say", "s", "tables"), ("table", "s", "block_tables"))),
    ("deeper:counting", "", (("say", "r", "readouts", "counting"),)),
)
RATE = (("deeper:rate", "", (("say", "r", "rate-same"),)),)  # when the rate changes nothing
PAGING = (
    ("say", "r", "paging-lead"),
    ("chart", "r", "paging"),
    ("ask", "", "fragmentation"),
    ("fold", "", "reservation", "max_model_len_cap"),
    ("deeper:paging", "", (("say", "r", "paging"),)),
)
# ... once the predictions are answered: the victim, the price, the fixes, async scheduling
REST = (
    ("say", "c", "victim", "victim-result"),
    ("chart", "c", "classes"),
    ("fold", "", "priority_admit"),
    ("deeper:victim", "", (("say", "c", "victim-queue"),)),
    ("say", "r", "price"),
    ("table", "r", "victims"),
    ("say", "c", "caching"),
    ("deeper:swap", "", (("say", "r", "swap"),)),
    ("fold", "", "caching_recompute", "swap_v1"),
    ("say", "c", "fixes", "fixes-left-out"),
    ("chart", "c", "fixes"),
    ("table", "c", "fixes"),
    ("say", "c", "fixes-after", "fixes-pool-more"),
    ("deeper:async", "", (("say", "c", "async"),)),
    ("say", "r", "takeaway"),
)
REST_WAIT = (("say", "r", "rest-wait"),)


def main_rules(pool_from: str) -> dict:
    """SHOW_IF for the pool's size above the grid, where "sized from" (drawn below it) is
    `pool_from`, its kept value."""
    return {n: lambda c, f=f: f({"pool_from": pool_from} | c) for n, f in SHOW_IF.items()}


@lru_cache(maxsize=64)
def workload(prompt_tokens: int, output_tokens: int, rate: float, max_model_len: int) -> Workload:
    """The lesson's requests: BATCH batch ones at 0 s, then INTERACTIVE arriving at `rate`;
    prompts of max_model_len tokens or more are left out (vLLM refuses them)."""
    names, prompt, output, arrival, priority = _requests(prompt_tokens, output_tokens, rate)
    keep = prompt < max_model_len
    return Workload.build(
        prompt[keep],
        output[keep],
        arrival_s=arrival[keep],
        priority=priority[keep],
        request_ids=tuple(np.array(names)[keep].tolist()),
    )


def _requests(prompt_tokens: int, output_tokens: int, rate: float) -> tuple:
    rng = np.random.default_rng(SEED)
    n = BATCH + INTERACTIVE
    low, high = 1 - SPREAD, 1 + SPREAD
    prompt = np.maximum(np.round(prompt_tokens * rng.uniform(low, high, n)), 1).astype(np.int64)
    output = np.maximum(np.round(output_tokens * rng.uniform(low, high, n)), 1).astype(np.int64)
    gaps = rng.exponential(1.0, INTERACTIVE) / rate
    arrival = np.concatenate([np.zeros(BATCH), np.cumsum(gaps)])
    priority = np.concatenate([np.ones(BATCH), np.zeros(INTERACTIVE)]).astype(np.int64)
    names = [f"B{i + 1}" for i in range(BATCH)] + [f"I{i + 1}" for i in range(INTERACTIVE)]
    return names, prompt, output, arrival, priority


def refused(p: Params) -> int:
    """Requests left out because their prompt is not shorter than max_model_len."""
    _, prompt, _, _, _ = _requests(p.prompt_tokens, p.output_tokens, p.rate)
    return int(np.count_nonzero(prompt >= p.max_model_len))


def refusal(p: Params) -> Refusal:
    """How the requests' prompts compare with max_model_len (the all-refused section)."""
    _, prompt, _, _, _ = _requests(p.prompt_tokens, p.output_tokens, p.rate)
    return Refusal(int(prompt.shape[0]), int(prompt.min()), p.max_model_len)


def all_refused(p: Params) -> Refusal | None:
    """The refusal to show instead of a run when no prompt is shorter than max_model_len."""
    r = refusal(p)
    return r if r.shortest_prompt >= r.max_model_len else None


def catalog_blocks(p: Params, budget: int, **change) -> tuple[int, bool]:
    """(num_gpu_blocks, weights fit) from the catalogs for these settings (`change`: a what-if:
    gpu, tp, kv_dtype or gpu_memory_utilization as a fraction)."""
    args = {
        "gpu": p.gpu,
        "tp": p.tp,
        "kv_dtype": None,
        "gpu_memory_utilization": p.gpu_memory_utilization / 100,
    } | change
    pool = kv_pool(
        args["gpu"],
        p.model,
        tp=args["tp"],
        dtype=p.dtype,
        kv_dtype=args["kv_dtype"],
        gpu_memory_utilization=args["gpu_memory_utilization"],
        block_size=BLOCK_SIZE,
        max_num_batched_tokens=budget,
    )
    return pool.num_gpu_blocks, pool.fits


def config(p: Params, budget: int, seqs: int, blocks: int, **change) -> SchedulerConfig:
    """vLLM's scheduler settings for the lesson's run (`change`: SchedulerConfig fields)."""
    cfg = SchedulerConfig(
        max_num_batched_tokens=budget,
        max_num_seqs=seqs,
        max_model_len=p.max_model_len,
        num_gpu_blocks=blocks,
        block_size=BLOCK_SIZE,
        enable_prefix_caching=p.prefix_caching,
        policy=p.policy,
        watermark=p.watermark,
        async_scheduling=p.async_scheduling,
    )
    return dataclasses.replace(cfg, **change) if change else cfg


def smallest_pool(wl: Workload, max_model_len: int) -> int:
    """The fewest blocks (null block included) with which every request can run alone: its
    longest sequence (prompt and answer, capped at max_model_len) must fit."""
    longest = np.minimum(wl.prompt_tokens + wl.output_tokens, max_model_len)
    return int(cdiv(int(longest.max()), BLOCK_SIZE)) + 1


@dataclass(frozen=True, eq=False)
class Setup:
    """What one selection runs: the limits, the workload, the pool, the configuration."""

    budget: int
    asked_seqs: int
    seqs: int
    workload: Workload
    catalog_blocks: int
    weights_fit: bool
    wanted_blocks: int
    smallest: int
    config: SchedulerConfig
    deployment: Deployment


def setup(p: Params) -> Setup:
    budget, asked = limits.effective_for(p)
    seqs = min(asked, budget)
    wl = workload(p.prompt_tokens, p.output_tokens, p.rate, p.max_model_len)
    catalog, fits = catalog_blocks(p, budget)
    wanted = catalog if p.pool_from == "memory" else p.num_gpu_blocks
    floor = smallest_pool(wl, p.max_model_len)
    cfg = config(p, budget, seqs, max(wanted, floor))
    dep = Deployment(gpu=p.gpu, model=p.model, tp=p.tp, dtype=p.dtype)
    return Setup(budget, asked, seqs, wl, catalog, fits, wanted, floor, cfg, dep)


def grid_columns(blocks: int) -> int:
    """Blocks to a row of the grid: the shortest row of GRID_COLUMNS that draws the pool in at
    most GRID_ROWS rows, else 64 (a pool of 100 blocks drawn 64 to a row was two thin rows)."""
    return next((c for c in GRID_COLUMNS if blocks <= GRID_ROWS * c), GRID_COLUMNS[-1])


def arrivals_queue_behind(run: Run) -> bool:
    """True if every interactive request arrived behind another request still waiting, under
    FCFS (with no long-prefill threshold, whose rule counts the queue). Then the scheduler's
    decisions do not depend on when they arrived: a faster stream brings each one earlier, but
    still behind the same requests, which are admitted in the same steps, so it is admitted in
    the same step too. Only the waiting counts and the TTFT, measured from arrival, change."""
    cfg = run.config
    if cfg.policy != "fcfs" or cfg.long_prefill_token_threshold:
        return False
    detail, late = run.detail, run.workload.priority == 0
    for k in range(len(detail)):
        if late[detail[k].arrived].any() and (k == 0 or not detail[k - 1].waiting.shape[0]):
            return False  # arrived to an empty queue (the queue after the step before)
    return True


def longest_sequence(p: Params) -> int:
    """The longest request of the selection, prompt and answer together (refused ones too)."""
    _, prompt, output, _, _ = _requests(p.prompt_tokens, p.output_tokens, p.rate)
    return int((prompt + output).max())


def runs_as(p: Params) -> Params:
    """The selection whose runs `p` shares. A max_model_len longer than every request changes
    no decision: it refuses no prompt, stops no sequence, and the pool does not depend on it
    (vLLM reserves nothing per request). So every such limit runs as the largest one, and
    moving the slider among them runs nothing again (tests/test_lesson_memory.py checks the
    shared runs against runs made at the limit itself)."""
    if longest_sequence(p) < p.max_model_len:
        return dataclasses.replace(p, max_model_len=MAX_MODEL_LENS[-1])
    return p


def traced_run(p: Params) -> tuple[Setup, Run]:
    """The selection's run with its block tables (shared by build and comparison)."""
    return _traced_run(runs_as(p))


@lru_cache(maxsize=16)
def _traced_run(p: Params) -> tuple[Setup, Run]:
    s = setup(p)
    timer = timer_for(s.deployment, async_scheduling=p.async_scheduling)
    return s, run_traced(s.config, s.workload, timer)


def comparison(p: Params) -> Comparison:
    """The comparisons (runs.compare) for one selection: a few more runs, cached apart from
    build() so that the grid does not wait for them (and made at server start for the opening
    selection, WARM_ALSO). Shared as the runs are (`runs_as`)."""
    return _comparison(runs_as(p))


@lru_cache(maxsize=16)
def _comparison(p: Params) -> Comparison:
    s, run = _traced_run(p)
    return runs.compare(
        p,
        s.config,
        s.deployment,
        s.workload,
        run,
        catalog_fn=lambda **change: catalog_blocks(p, s.budget, **change),
        smallest=s.smallest,
    )


def build(p: Params) -> Readout:
    """The traced run and every number the grid and its sections quote, for one selection."""
    s, run = traced_run(p)
    budget, asked, seqs, wl = s.budget, s.asked_seqs, s.seqs, s.workload
    catalog, fits, wanted, floor = s.catalog_blocks, s.weights_fit, s.wanted_blocks, s.smallest
    blocks = s.config.num_gpu_blocks
    fr = frames_of(run, min(MAX_FRAMES, FRAME_CELLS // min(blocks, GRID_MAX_BLOCKS)))
    victims = victims_of(run)
    mean_seq = int(np.mean(np.minimum(wl.prompt_tokens + wl.output_tokens, p.max_model_len)))
    left_out = refused(p)
    memory = p.pool_from == "memory"
    raised = wanted < floor and (fits or not memory)  # no pool at all is the no-fit note's
    same_rate = arrivals_queue_behind(run)
    longest = longest_sequence(p)
    pool_set = catalog if memory else wanted  # the pool vLLM is asked to start with
    return Readout(
        **selection(p, dtype=p.dtype),
        **used_limits(p, budget, seqs),
        asked_seqs=asked,
        limits_refused=asked > budget,
        utilization=p.gpu_memory_utilization,
        catalog_blocks=catalog,
        weights_fit=fits,
        pool_raised=raised,
        catalog_usable=max(catalog - 1, 0),
        len_refused=fits and refuses_to_start(pool_set, p.max_model_len, BLOCK_SIZE),
        len_blocks=request_blocks(p.max_model_len, BLOCK_SIZE),
        len_pool_usable=max(pool_set - 1, 0),
        len_pool_tokens=max(pool_set - 1, 0) * BLOCK_SIZE,
        no_fit_memory=memory and not fits,
        util_helps=memory and not fits and catalog_blocks(p, budget, **MOST_MEMORY)[1],
        no_fit_blocks=not memory and not fits,
        pool_vllm=memory and fits and not raised,
        pool_by_hand=not memory and not raised,
        pool_floor=raised or (memory and not fits),
        wanted_blocks=wanted,
        num_gpu_blocks=blocks,
        usable=blocks - 1,
        block_size=BLOCK_SIZE,
        pool_tokens=(blocks - 1) * BLOCK_SIZE,
        static_seqs=(blocks - 1) * BLOCK_SIZE // p.max_model_len,
        paged_seqs=(blocks - 1) // int(cdiv(mean_seq, BLOCK_SIZE)),
        mean_seq_tokens=mean_seq,
        requests=wl.num_requests,
        batch=int(np.count_nonzero(wl.priority == 1)),
        interactive=int(np.count_nonzero(wl.priority == 0)),
        refused=left_out,
        any_refused=left_out > 0,
        policy=p.policy.upper(),
        rate=p.rate,
        rate_changes_nothing=same_rate,
        rate_same_below_top=same_rate and p.rate < RATES[-1],
        rate_same_at_top=same_rate and p.rate == RATES[-1],
        prefix_caching=p.prefix_caching,
        async_scheduling=p.async_scheduling,
        watermark=p.watermark,
        max_model_len=p.max_model_len,
        longest_seq_tokens=longest,
        len_changes_nothing=longest < p.max_model_len,
        num_steps=int(run.num_steps),
        **fr.summary(),
        **victims.summary(),
        grid_columns=grid_columns(min(fr.grid_blocks, GRID_MAX_BLOCKS)),
        grid_blocks=min(fr.grid_blocks, GRID_MAX_BLOCKS),
        grid_cut=fr.grid_blocks > GRID_MAX_BLOCKS,
        frames=fr,
        victims=victims,
    )


def readouts(p: Params) -> tuple:
    """Every object the lesson's text is filled from: the Readout, the Comparison, the
    StepReadout of the first preemption (the step-* sections) and the Refusal."""
    r = build(p)
    return r, comparison(p), at_step(r, max(r.first_preempt_step, 1)), refusal(p)


def at_step(r: Readout, step: int, tables: bool = True) -> StepReadout:
    """The readouts of one step (1-based, clamped to the run), as the metrics beside the grid;
    `tables=False` leaves out every request's block table (the frames' words do not show them,
    and writing them out for every frame was most of the grid's cost)."""
    return r.frames.at(min(max(int(step), 1), r.num_steps), r.victims, tables)


def frame_of(r: Readout, step: int) -> int:
    """The animation frame that shows `step` (or the nearest one before it)."""
    return r.frames.frame_of(step)


# Built for the opening selection at server start besides the readout (ui/warm.py `warm_all`):
# the comparisons the page draws once the predictions are answered.
WARM_ALSO = (comparison,)
