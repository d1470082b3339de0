"""The quiz engine shared by every lesson: question banks (bank.py), exercises (exercise.py), XP
rules derived from a learner's answer log (progress.py), where that log is kept (store.py) and
the progress file that carries it to another browser (saved.py). Nothing here imports streamlit.
"""
