"""The trace playground (lessons/trace_lab, views/trace.py): what a bad file gets, that each
side is the run `simulate` would make, the comparison and the per-request CSV, and the page."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from lessons.trace_lab import figures, tool
from sim.errors import SimInputError
from sim.metrics import summarize
from sim.timed import config_for, deployment, run_timed
from tests.apptest_util import run_page

MML = 131_072
GOOD = b"arrival_s,prompt_tokens,output_tokens\n0,100,20\n0.5,300,40\n1.0,50,10\n"


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"arrival_s,prompt_tokens\n0,100\n", "missing column output_tokens"),
        (b"arrival_s,prompt_tokens,output_tokens\n0,abc,20\n", "row"),
        (b"arrival_s,prompt_tokens,output_tokens\n-1,100,20\n", "row 2"),
        (b"arrival_s,prompt_tokens,output_tokens\n0,200000,20\n", "max_model_len"),
        (b"", "empty"),
        (b"arrival_s,prompt_tokens,output_tokens\n", "no requests"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00binary", "binary"),
        # a walk: "nan" was called empty, and a long row got pandas' own words
        (
            b"arrival_s,prompt_tokens,output_tokens\n0,1,2\nnan,100,20\n",
            "not a number in 1 row: row 3",
        ),
        (
            b"arrival_s,prompt_tokens,output_tokens\n0,1,2\n1,2,3,4\n",
            "row 3 has 4 fields, the header has 3",
        ),
        # issue 37, fault 6: a bare carriage return in the header, and a wide first row
        (b"arrival_s,prompt\rx_tokens,output_tokens\n0,1,1\n", "holds a line break"),
        (b"arrival_s,prompt_tokens,output_tokens\n0,100,10,5,6\n", "in 1 row: row 2"),
    ],
)
def test_a_bad_trace_is_refused_with_one_line(data, says):
    with pytest.raises(SimInputError) as err:
        tool.load(data, "mine.csv", MML)
    message = str(err.value)
    assert says in message and "\n" not in message and "mine.csv" in message


def test_too_big_and_too_many_are_refused(monkeypatch):
    with pytest.raises(SimInputError, match="over 20 MB"):
        tool.load(b"x" * (tool.MAX_UPLOAD_MB * 1024 * 1024 + 1), "big.csv", MML)
    monkeypatch.setattr(tool, "MAX_REQUESTS", 2)
    with pytest.raises(SimInputError, match="has 3 requests"):
        tool.load(GOOD, "three.csv", MML)


def test_each_side_is_the_run_simulate_makes():
    p = tool.Params(b_defaults=False, b_budget=512, b_seqs=4)
    trace = tool.sample("documents", tool.max_model_len(p))
    side = tool.run_side(p, "b", trace)
    dep = deployment(p.gpu, p.model)
    config = config_for(dep, max_num_batched_tokens=512, max_num_seqs=4)
    direct = summarize(run_timed(config, trace.workload, dep))
    assert side.summary == direct
    assert side.ttft_p99_ms == direct["ttft_ms"]["p99"] and side.max_num_seqs == 4
    assert tool.run_side(p, "b", trace) is side  # cached
    a = tool.run_side(p, "a", trace)
    r = tool.build(trace, p, a, side)
    assert r.b_better_ttft == (side.ttft_p99_ms < a.ttft_p99_ms)
    table = tool.comparison(r)
    assert table.loc[table[""] == "max_num_seqs", "B"].item() == "4"
    csv = pd.read_csv(io.BytesIO(tool.per_request_csv(r)))
    assert len(csv) == 2 * trace.workload.num_requests
    assert set(csv["configuration"]) == {"A", "B"}
    b_ttft = csv.loc[csv["configuration"] == "B", "ttft_ms"].to_numpy()
    assert np.percentile(b_ttft, 50) == pytest.approx(direct["ttft_ms"]["p50"], rel=1e-6)
    fig = figures.distribution(r, "ttft")
    assert [t["name"] for t in fig["data"]] == ["A", "B"] and fig["data"][1]["y"][-1] == 100


def test_the_page_shows_the_readout_of_the_sample():
    at = run_page("views/trace.py", timeout=120)
    p = tool.Params()
    trace = tool.sample("chat", tool.max_model_len(p))
    a, b = tool.run_side(p, "a", trace), tool.run_side(p, "b", trace)
    shown = {m.label: m.value for m in at.metric}
    assert shown["TTFT p99, A"] == f"{a.ttft_p99_ms:,.0f} ms"
    assert shown["TTFT p99, B"] == f"{b.ttft_p99_ms:,.0f} ms"
    assert len(at.get("plotly_chart")) == 3
    at.selectbox(key="w:trc-trace").set_value("upload").run()
    assert not at.exception and not at.get("plotly_chart")
    assert any("Choose a CSV file" in m.value for m in at.markdown)
    at.toggle(key="w:trc-b-caching").set_value(True).run()  # still waiting for a file
    assert not at.exception


def test_progress_is_reported_while_a_run_goes(monkeypatch):
    import sim.engine.engine

    monkeypatch.setattr(sim.engine.engine, "PROGRESS_EVERY_S", 0.0)
    seen: list[tuple[int, int]] = []
    trace = tool.load(GOOD, "t.csv", MML)
    dep = deployment("L4", "Llama-3.1-8B")
    run_timed(config_for(dep), trace.workload, dep, progress=lambda d, n: seen.append((d, n)))
    assert seen and all(n == 3 for _, n in seen)
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] < 3


def test_a_tiny_upload_still_draws_its_curves_on_an_axis_with_ticks():
    """A few requests: each curve starts at 0% and rises, and a log axis whose values span less
    than a decade gets Plotly's own ticks (a tick per decade would leave it bare)."""
    p = tool.Params()
    trace = tool.load(GOOD, "tiny.csv", MML)
    r = tool.build(trace, p, tool.run_side(p, "a", trace), tool.run_side(p, "b", trace))
    for key, *_ in figures.METRICS:
        fig = figures.distribution(r, key)
        for trace_fig in fig["data"]:
            assert trace_fig["y"][0] == 0 and trace_fig["y"][-1] == 100
            assert trace_fig["x"][0] == min(trace_fig["x"])
        xaxis = fig["layout"]["xaxis"]
        xs = [x for t in fig["data"] for x in t["x"]]
        if xaxis.get("type") == "log":
            assert ("dtick" in xaxis) == (max(xs) >= 10 * min(xs))


@pytest.mark.parametrize(
    "name",
    ["**x**[a](http:evil).csv", "[Click here](https:__evil.example) ## H.csv", "<b>x</b>.csv"],
)
def test_an_uploaded_file_name_is_shown_as_plain_text(name):
    """A walk found an upload named '**x**[a](http:evil).csv' drawn in bold with a live link
    in the summary: the name is data, shown as plain text."""
    import markdown_it

    from lessons.kit import story

    p = tool.Params()
    trace = tool.load(GOOD, name, tool.max_model_len(p))
    r = tool.build(trace, p, tool.run_side(p, "a", trace), tool.run_side(p, "b", trace))
    said = story.text(tool.TEXT, "summary", r)
    html = markdown_it.MarkdownIt("gfm-like").enable("linkify").render(said)
    assert html.count("<strong>") == 1  # the name's own bold, nothing inside it
    for tag in ("<a", "<img", "<h1", "<h2", "<b>", "<code", "<em"):
        assert tag not in html, html


def test_request_ids_that_look_like_formulas_download_as_text():
    """Issue 37, fault 7: the per-request CSV wrote a request id starting with = + - @ as it was
    (a spreadsheet runs it as a formula); it gets a leading apostrophe, numbers stay numbers."""
    ids = ['=HYPERLINK("http://e.x","hi")', "+1", "-cmd", "@SUM(A1)"]
    rows = "".join(f'{i},16,4,"{x.replace(chr(34), 2 * chr(34))}"\n' for i, x in enumerate(ids))
    trace = tool.load(
        f"arrival_s,prompt_tokens,output_tokens,request_id\n{rows}".encode(), "f.csv", MML
    )
    p = tool.Params()
    r = tool.build(trace, p, tool.run_side(p, "a", trace), tool.run_side(p, "b", trace))
    table = pd.read_csv(io.BytesIO(tool.per_request_csv(r)), dtype={"request_id": str})
    assert set(table["request_id"]) == {"'" + x for x in ids}
    assert pd.api.types.is_numeric_dtype(table["ttft_ms"])


AZURE = (
    b"TIMESTAMP,ContextTokens,GeneratedTokens\n"
    b"2023-11-16 18:15:46.6805900,374,44\n"
    b"2023-11-16 18:15:50.9951690,396,109\n"
    b"2023-11-16 18:15:51.1000000,1200,0\n"
    b"2023-11-16 18:15:52.0000000,4808,10\n"
)


def test_an_azure_upload_runs_and_says_what_was_mapped():
    """Issue 39, item 5: a published trace uploads as it comes; a plain line under the upload
    says what was mapped, and the runs are those of the mapped workload."""
    import markdown_it

    at = run_page("views/trace.py", timeout=120)
    at.selectbox(key="w:trc-trace").set_value("upload").run()
    assert at.file_uploader[0].allowed_type == [".csv", ".jsonl"]
    at.file_uploader[0].set_value(("AzureLLMInferenceTrace_code.csv", AZURE, "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]
    said = [c.value for c in at.caption if "What was read" in c.value]
    assert len(said) == 1
    html = markdown_it.MarkdownIt("gfm-like").enable("linkify").render(said[0])
    for words in ("Azure LLM inference trace", "3 requests", "skipped 1 row with 0"):
        assert words in html, html
    p = tool.Params()
    trace = tool.load(AZURE, "AzureLLMInferenceTrace_code.csv", tool.max_model_len(p))
    assert trace.format == "azure" and trace.workload.num_requests == 3
    a = tool.run_side(p, "a", trace)
    shown = {m.label: m.value for m in at.metric}
    assert shown["TTFT p99, A"] == f"{a.ttft_p99_ms:,.0f} ms"


def test_a_column_name_in_the_mapped_line_stays_plain_text():
    """The "what was mapped" line quotes the upload's unused column names: data, never a link."""
    import markdown_it

    from lessons.kit import story
    from lessons.kit.controls import shown

    data = b"Timestamp,Request tokens,Response tokens,[x](http://evil.example) **b**\n1,5,6,a\n"
    trace = tool.load(data, "b.csv", MML)
    assert trace.format == "burstgpt" and "[x](http://evil.example)" in trace.mapped
    said = story.text(
        tool.TEXT, "mapped", None, description=shown(trace.mapped, limit=tool.MAPPED_CHARS)
    )
    html = markdown_it.MarkdownIt("gfm-like").enable("linkify").render(said)
    for tag in ("<a", "<strong>", "<em"):
        assert tag not in html, html


# ---------------------------------------------------------------------------------------------
# Issue 39, item 2: a pasted `vllm serve` command is side A (and the deployment of both sides)

BOX = "w:trc-a-serve"


def _paste(at, command: str):
    at.text_area(key=BOX).set_value(command).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _table(at) -> dict[str, tuple[str, str]]:
    frame = at.dataframe[0].value
    return {row[""]: (row["A"], row["B"]) for _, row in frame.iterrows()}


def _rendered(markdown: str) -> str:
    import markdown_it

    return markdown_it.MarkdownIt("gfm-like").enable("linkify").render(markdown)


def test_a_pasted_command_is_what_side_a_runs():
    """The command's model, limits and policy are side A's run, priced on the command's model
    for both sides; side B is the same command with B's controls on top."""
    from sim.serve_args import config_from_serve, parse_serve_command

    command = (
        "vllm serve Qwen/Qwen2.5-7B-Instruct \\\n"
        "    --max-num-seqs 6 --max-num-batched-tokens 1024 \\\n"
        "    --scheduling-policy priority --port 8000"
    )
    at = _paste(run_page("views/trace.py", timeout=120), command)
    assert not at.error
    p = tool.Params(a_serve=command)
    trace = tool.sample("chat", tool.max_model_len(p))
    dep, config = config_from_serve(parse_serve_command(command), p.gpu)
    direct = summarize(run_timed(config, trace.workload, dep))
    shown = {m.label: m.value for m in at.metric}
    assert shown["TTFT p99, A"] == f"{direct['ttft_ms']['p99']:,.0f} ms"
    today = tool.run_side(tool.Params(), "a", trace)  # the box empty: 8B, 256 sequences
    assert shown["TTFT p99, A"] != f"{today.ttft_p99_ms:,.0f} ms"
    table = _table(at)
    assert table["max_num_seqs"][0] == str(config.max_num_seqs) == "6"
    assert table["max_num_batched_tokens"][0] == str(config.max_num_batched_tokens) == "1024"
    assert table["policy"][0] == config.policy.upper() == "PRIORITY"
    assert table["KV cache blocks"][0] == str(config.num_gpu_blocks)
    assert table["async scheduling"] == ("on", "on")  # vllm serve's default, on both sides
    # B: the command, with B's controls (2,048 tokens, 128 sequences, FCFS, no caching)
    b_config = config_for(
        dep, max_num_batched_tokens=2048, max_num_seqs=128, gpu_memory_utilization=0.92,
        enable_prefix_caching=False, async_scheduling=True,
    )  # fmt: skip
    b_direct = summarize(run_timed(b_config, trace.workload, dep))
    assert shown["TTFT p99, B"] == f"{b_direct['ttft_ms']['p99']:,.0f} ms"
    summary = [m.value for m in at.markdown if "arriving over" in m.value]
    assert " ".join(summary[0].split()).endswith("on H100-SXM with Qwen2.5-7B.")
    # what was read, line by line, as plain text; the model's controls give way to it
    assert at.code[0].value.splitlines() == list(parse_serve_command(command).mapped)
    assert "--port 8000 -> not used" in at.code[0].value
    assert {s.key for s in at.selectbox} & {"w:model", "w:dtype", "w:tp", "w:trc-a-policy"} == set()
    assert at.query_params["trc-a-serve"] == command  # the link reproduces the page


def test_an_fp8_kv_cache_doubles_side_a_s_pool():
    from sim.models import kv_pool

    at = run_page("views/trace.py", timeout=120)
    base = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-batched-tokens 8192"
    sixteen = int(_table(_paste(at, base))["KV cache blocks"][0])
    eight = int(_table(_paste(at, base + " --kv-cache-dtype fp8"))["KV cache blocks"][0])
    pool = kv_pool(
        "H100-SXM", "Llama-3.1-8B", gpu_memory_utilization=0.92, max_num_batched_tokens=8192
    )
    assert sixteen == pool.num_gpu_blocks
    assert eight == int(pool.kv_pool_gib * 2**30 // (pool.block_bytes // 2))
    assert 1.99 < eight / sixteen < 2.01


@pytest.mark.parametrize(
    ("command", "names"),
    [
        (
            "vllm serve acme/SuperLM-13B-Instruct --max-num-seqs 8",
            "model 'acme/SuperLM-13B-Instruct'",
        ),
        ("vllm serve meta-llama/Llama-3.1-8B-Instruct --enable-lora", "vLLM flag --enable-lora"),
        ("python serve.py --fast", "not a vllm serve command"),
        ("vllm serve meta-llama/Llama-3.1-70B-Instruct", "does not fit on 1 x H100-SXM"),
    ],
)
def test_a_command_that_cannot_run_gets_one_plain_line_naming_why(command, names):
    at = _paste(run_page("views/trace.py", timeout=120), command)
    said = [e.value for e in at.error]
    assert len(said) == 1 and said[0].startswith("This command cannot be run:")
    assert names in _rendered(said[0]).replace("&#x27;", "'").replace("\u200b", "")
    assert said[0].endswith("Side A uses its own settings below instead.")
    assert {"w:trc-a-defaults", "w:trc-b-defaults"} <= {t.key for t in at.toggle}
    # the page runs as with an empty box, as it does for a bad link value
    p = tool.Params()
    trace = tool.sample("chat", tool.max_model_len(p))
    today = tool.run_side(p, "a", trace)
    shown = {m.label: m.value for m in at.metric}
    assert shown["TTFT p99, A"] == f"{today.ttft_p99_ms:,.0f} ms"
    assert len(at.get("plotly_chart")) == 3 and "KV cache blocks" not in _table(at)
    at.text_area(key=BOX).set_value("").run()
    assert not at.error and not at.exception


def test_markdown_in_a_pasted_command_stays_plain_text():
    """The command is data: Markdown in it (a link, bold) renders as nothing but text, in the
    message for a bad one and in the lines read from a good one."""
    at = run_page("views/trace.py", timeout=120)
    _paste(at, "vllm serve '[x](http://e.com) **b**'")
    html = _rendered(at.error[0].value)
    for tag in ("<a", "<strong", "<em", "<code"):
        assert tag not in html, html
    assert "model '[x](h\u200bttp://e.com) **b**' is not in the catalog" in html.replace(
        "&#x27;", "'"
    )
    good = "vllm serve meta-llama/Llama-3.1-8B-Instruct --served-model-name '[y](http://e.com)'"
    _paste(at, good)
    assert not at.error
    assert "--served-model-name [y](http://e.com) -> not used" in at.code[0].value
    assert not any("e.com" in m.value for m in [*at.markdown, *at.caption])


def test_a_command_from_a_link_opens_in_the_box_and_a_too_long_one_is_reported():
    command = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 32"
    at = run_page("views/trace.py", query={"trc-a-serve": command}, timeout=120)
    assert at.text_area(key=BOX).value == command
    assert _table(at)["max_num_seqs"][0] == "32"
    hostile = "[x](https://evil.example) " + "z" * tool.SERVE_CHARS
    at = run_page("views/trace.py", query={"trc-a-serve": hostile}, timeout=120)
    notes = [w.value for w in at.warning if "This link sets trc-a-serve" in w.value]
    assert len(notes) == 1 and "<a" not in _rendered(notes[0]) and len(notes[0]) < 400
    assert at.text_area(key=BOX).value == "" and "KV cache blocks" not in _table(at)


def test_an_empty_box_leaves_side_a_as_it_was():
    p = tool.Params()
    assert tool.serve_args(p.a_serve) is None and tool.show_if("  \n", p.gpu) is tool.SHOW_IF
    assert tool._config(p, "a") == tool._config(tool.Params(a_serve=" "), "a")
    from lessons.kit.limits import effective

    budget, seqs = effective(p.gpu, True, 0, 0)  # vLLM's two limits for the GPU, as before
    dep = deployment(p.gpu, p.model)
    assert tool._config(p, "a") == config_for(dep, max_num_batched_tokens=budget, max_num_seqs=seqs)
