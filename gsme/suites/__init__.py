"""Bundled real task suites for the real task agents (``pyfunc``: Python function tasks)."""
