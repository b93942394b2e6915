"""Evolvers: the interface and the shipped implementations.

:class:`ClaudeEvolver` is imported on first use, so ``import gsme`` does not import the
``anthropic`` SDK.
"""

from gsme.evolvers.base import DIAGNOSIS_COLUMNS, Evolver
from gsme.evolvers.rule import RuleEvolver

__all__ = ["DIAGNOSIS_COLUMNS", "ClaudeEvolver", "Evolver", "RuleEvolver"]


def __getattr__(name: str):
    if name == "ClaudeEvolver":
        from gsme.evolvers.claude import ClaudeEvolver

        return ClaudeEvolver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
