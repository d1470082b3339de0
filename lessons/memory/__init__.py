"""Lesson "When memory runs out": KV blocks, preemption by recompute and the victim."""
