"""Playground: your own trace, simulated under two configurations side by side."""
