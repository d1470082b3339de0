"""Playground: the step-time calculator, the cost model's parts for any GPU, model and step."""

import pandas as pd
import streamlit as st

from lessons.course import SITE_TEXT
from lessons.step_cost.figures import calculator
from lessons.text import section
from sim.cost import parse_token_list
from sim.errors import SimInputError
from sim.hardware import gpu_keys
from sim.models import model_keys
from ui.charts import show
from ui.controls import choice, integer, weights

st.markdown(section(SITE_TEXT, "playground-title"))
st.markdown(section(SITE_TEXT, "playground-intro"))

cols = st.columns(4)
with cols[0]:
    gpu = choice("GPU", gpu_keys(), key="gpu", default="H100-SXM")
with cols[1]:
    model = choice("Model", model_keys(), key="model", default="Llama-3.1-8B")
with cols[2]:
    dtype = weights(gpu)
with cols[3]:
    tp = choice("GPUs (tensor parallel)", [1, 2, 4, 8], key="tp", default=1)
cols = st.columns(3)
with cols[0]:
    raw = st.text_input(
        "Prompt tokens in the step",
        value="1, 64, 512, 2048, 8192",
        key="tokens",
        help=section(SITE_TEXT, "playground-tokens-help"),
        bind="query-params",
    )
with cols[1]:
    decodes = integer("Running decodes", 0, 1024, key="decodes", default=0)
with cols[2]:
    context = integer(
        "KV context per decode (tokens)", 0, 131072, key="context", default=0, step=128
    )

try:
    tokens = tuple(parse_token_list(raw, what="Prompt tokens"))
    if decodes == 0 and 0 in tokens:
        raise SimInputError("a step of 0 prompt tokens and no decodes is empty")
    result = calculator(gpu, model, dtype, tp, tokens, decodes, context)
except SimInputError as exc:
    st.error(section(SITE_TEXT, "playground-bad-tokens", {"error": exc}))
else:
    show(result["figure"], alt=result["alt"], key="calculator")
    table = pd.DataFrame(result["rows"])
    st.dataframe(
        table,
        hide_index=True,
        column_config={
            c: st.column_config.NumberColumn(format="%.2f") for c in table if c.endswith("(ms)")
        },
    )
