"""Lesson "The step loop": what the scheduler does in one step, replayed on a small scenario."""
