"""Bundled real benchmarks for the real task agents (``pyfunc``: Python function tasks)."""
