"""Lesson 3, "Chunked prefill versus the whole prompt at once": two lanes of one workload."""
