"""Evolvers: the interface and the shipped implementations."""

from gsme.evolvers.base import DIAGNOSIS_COLUMNS, Evolver

__all__ = ["DIAGNOSIS_COLUMNS", "Evolver"]
