"""Playground: the step-time calculator, the cost model's parts for any GPU, model and step."""

import pandas as pd
import streamlit as st

from lessons.calculator import tool
from lessons.kit.controls import shown
from ui.lesson_page import LessonPage

page = LessonPage(None, tool.Params, tool.PREFIX, text_path=tool.TEXT)
page.say(None, "title", "intro")
p = page.controls([["gpu", "model", "dtype", "tp"], ["tokens", "decodes", "context_tokens"]])
r = tool.build(p)
if not r.ok:
    st.error(page.text("bad-tokens", r, error=shown(r.error, limit=200)), icon=":material/error:")
else:
    page.chart(tool.figure(r), r, "calculator")
    table = pd.DataFrame(tool.table(r))
    st.dataframe(
        table,
        hide_index=True,
        column_config={
            c: st.column_config.NumberColumn(format="%.2f") for c in table if c.endswith("(ms)")
        },
    )
