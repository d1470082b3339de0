"""Stepwise's simulator: catalogs, cost model, vLLM's scheduler rules, workloads and metrics.

Pure Python and NumPy. Nothing here imports Streamlit, Plotly or the lessons, so every number a
learner sees can be reproduced from the command line (`python -m sim ...`) and tested.
"""
