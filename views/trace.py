"""Playground: your own trace (or a sample) run under two configurations, compared side by side:
the table, the overlaid distributions and every request as CSV (lessons/trace_lab). An upload
may be in a published format (Azure, BurstGPT, Mooncake); a line under it says what was mapped.
A box above the two sides takes a pasted `vllm serve` command for side A (lessons/trace_lab/tool:
the command sets the deployment of both sides); what it read shows under it as plain text."""

import streamlit as st

from lessons.kit.controls import shown
from lessons.trace_lab import figures, tool
from sim.errors import SimInputError
from ui.lesson_page import LessonPage
from ui.trace_tool import run_sides, serve_and_sides

page = LessonPage(None, tool.Params, tool.PREFIX, text_path=tool.TEXT)
page.say(None, "title", "intro")
page.say(None, "format", max_upload_mb=tool.MAX_UPLOAD_MB, max_requests=tool.MAX_REQUESTS)
SIDE = ["defaults", "budget", "seqs", "policy", "caching"]
ROWS = [["gpu", "model", "dtype", "tp"], ["trace"]]
COLUMNS = [[f"a_{k}" for k in SIDE], [f"b_{k}" for k in SIDE]]
rules = tool.show_if(page.upcoming("a_serve"), page.upcoming("gpu"))
p = page.controls_here(ROWS, show_if=rules)  # the deployment and the trace; then the box
p = serve_and_sides(page, p, ROWS, COLUMNS, rules)


def refuse(problem: str) -> None:
    st.error(page.text("bad-trace", None, error=shown(problem, limit=400)), icon=":material/error:")
    st.stop()


try:
    limit = tool.max_model_len(p)
    if p.trace == "upload":
        upload = st.file_uploader(
            page.text("upload-label"),
            type=list(tool.UPLOAD_TYPES),
            max_upload_size=tool.MAX_UPLOAD_MB,
        )
        if upload is None:
            page.say(None, "upload-first")
            st.stop()
        trace = tool.load(upload.getvalue(), upload.name, limit)
        mapped = shown(trace.mapped, limit=tool.MAPPED_CHARS)  # plain text: it quotes the file
        st.caption(page.text("mapped", None, description=mapped))
    else:
        trace = tool.sample(p.trace, limit)
        st.download_button(
            page.text("sample-label"), tool.SAMPLES[p.trace].read_bytes(),
            file_name=tool.SAMPLES[p.trace].name, mime="text/csv", on_click="ignore",
        )  # fmt: skip
    sides = run_sides(page, p, trace)
except SimInputError as exc:
    refuse(str(exc))

r = tool.build(trace, p, sides["a"], sides["b"])
page.say(r, "summary")
page.metrics(r)
page.say(r, "verdict", "preempted", "compare")
st.dataframe(tool.comparison(r), hide_index=True)
page.say(r, "distributions")
for key, *_ in figures.METRICS:
    page.chart(figures.distribution(r, key), r, key)
page.say(r, "download")
st.download_button(
    page.text("download-label"), lambda: tool.per_request_csv(r), file_name="stepwise-requests.csv",
    mime="text/csv", help=page.text("download-help"), on_click="ignore", icon=":material/download:",
)  # fmt: skip
