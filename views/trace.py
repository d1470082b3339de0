"""Playground: your own trace (or a sample) run under two configurations, compared side by side:
the table, the overlaid distributions and every request as CSV (lessons/trace_lab)."""

import streamlit as st

from lessons.kit.controls import shown
from lessons.trace_lab import figures, tool
from sim.errors import SimInputError
from ui.lesson_page import LessonPage

page = LessonPage(None, tool.Params, tool.PREFIX, text_path=tool.TEXT)
page.say(None, "title", "intro")
page.say(None, "format", max_upload_mb=tool.MAX_UPLOAD_MB, max_requests=tool.MAX_REQUESTS)
SIDE = ["defaults", "budget", "seqs", "policy", "caching"]
p = page.controls(
    [["gpu", "model", "dtype", "tp"], ["trace"]],
    columns=[[f"a_{k}" for k in SIDE], [f"b_{k}" for k in SIDE]],
    show_if=tool.SHOW_IF,
)


def refuse(problem: str) -> None:
    st.error(page.text("bad-trace", None, error=shown(problem, limit=400)), icon=":material/error:")
    st.stop()


try:
    limit = tool.max_model_len(p)
    if p.trace == "upload":
        upload = st.file_uploader(
            page.text("upload-label"), type=["csv"], max_upload_size=tool.MAX_UPLOAD_MB
        )
        if upload is None:
            page.say(None, "upload-first")
            st.stop()
        trace = tool.load(upload.getvalue(), upload.name, limit)
    else:
        trace = tool.sample(p.trace, limit)
        st.download_button(
            page.text("sample-label"), tool.SAMPLES[p.trace].read_bytes(),
            file_name=tool.SAMPLES[p.trace].name, mime="text/csv", on_click="ignore",
        )  # fmt: skip
    sides = {}
    for side in ("a", "b"):
        bar = None if tool.is_cached(p, side, trace) else st.progress(0.0)

        def report(done: int, total: int, bar=bar, side=side) -> None:
            words = page.text("running", None, side=side.upper(), done=done, total=total)
            bar.progress(done / total, text=words)

        sides[side] = tool.run_side(p, side, trace, progress=report if bar else None)
        if bar is not None:
            bar.empty()
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
