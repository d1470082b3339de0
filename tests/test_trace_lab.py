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
    import sim.scheduler

    monkeypatch.setattr(sim.scheduler, "PROGRESS_EVERY_S", 0.0)
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
