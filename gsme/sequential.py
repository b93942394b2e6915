"""Deprecated: gate designs moved to :mod:`gsme.designs` (this name goes in 0.4.0).

Every name of ``gsme.sequential`` is read from :mod:`gsme.designs` (its submodules
included), with a DeprecationWarning.
"""

from __future__ import annotations

from gsme import _renamed, designs
from gsme.designs import adaptive, base, fixed, spending

__all__ = list(designs.__all__)

__getattr__ = _renamed.moved(__name__, (designs, base, spending, fixed, adaptive))
