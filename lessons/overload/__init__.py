"""Lesson "Too many requests": overload, queues and admission control."""
