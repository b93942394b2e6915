"""Deprecated: gate designs moved to :mod:`gsme.designs` (this name goes in 0.4).

Every name of ``gsme.sequential`` is read from :mod:`gsme.designs` (its submodules
included), with a DeprecationWarning.
"""

from __future__ import annotations

import warnings

from gsme import designs
from gsme.designs import adaptive, base, fixed, spending

__all__ = list(designs.__all__)

_HOMES = (designs, base, spending, fixed, adaptive)


def __getattr__(name: str):
    for home in _HOMES:
        if hasattr(home, name):
            warnings.warn(f"gsme.sequential is deprecated; use {home.__name__}.{name}",
                          DeprecationWarning, stacklevel=2)
            return getattr(home, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
