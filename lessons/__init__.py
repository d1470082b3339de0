"""Stepwise's lessons: per lesson a package with its text (Markdown), figure builders (Plotly
figure dicts, no Streamlit calls), quiz bank (TOML) and parameterized exercises.

Lessons import `sim`, never `views` or `ui`. `lessons.course` lists them in course order.
"""
