"""Lesson 5, "The sequence budget and the throughput curve": concurrency against throughput."""
