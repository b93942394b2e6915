"""Bundled real task suites for the real task agents (``pyfunc``: Python function tasks)."""

import importlib

__all__ = ["pyfunc"]


def __getattr__(name: str):
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
