"""Lesson "Who goes first": scheduling policies side by side (lesson.py)."""
