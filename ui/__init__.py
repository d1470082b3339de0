"""Streamlit building blocks shared by the page scripts (quiz, exercises, charts, selectors).

Pages stay thin: they read widgets and call these and `lessons`. Nothing in `sim` or `lessons`
imports this package.
"""
