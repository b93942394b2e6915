"""Small helpers the statistics share: argument checks, the gate's settings, text columns.

Each raises a ValueError (a TypeError for a wrong type) that names the argument at fault.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gsme.settings import GateConfig


def text(values) -> pd.Series:
    """``values`` as an object-dtype Series (pandas would infer its ``str`` dtype)."""
    return pd.Series(np.asarray(values, dtype=object), dtype=object)


def check_choice(name: str, value, allowed) -> None:
    """Raise a ValueError naming ``name`` unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


def check_int(name: str, value, minimum: int) -> int:
    """Return ``value`` as int, or raise naming ``name`` when it is not a whole number ≥ minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def check_finite(name: str, value) -> np.ndarray:
    """``value`` as a float64 array, or raise naming ``name`` when it holds NaN or ±inf (or
    is no number)."""
    try:
        values = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not np.isfinite(values).all():
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return values


def gate_config(config) -> GateConfig:
    """``config`` when it is a :class:`GateConfig`; the defaults when None; else a TypeError."""
    if config is None:
        return GateConfig()
    if not isinstance(config, GateConfig):
        raise TypeError(f"config must be a gsme.settings.GateConfig, got {type(config).__name__}")
    return config
