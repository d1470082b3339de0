"""Lesson "What to watch": a dashboard of vLLM's metrics and the problems each shows."""
