"""Deprecated: the checked, encoded trials are public in :mod:`gsme.pairing` (this name goes
in 0.4).

Every name of ``gsme._paired`` is read from its new home, with a DeprecationWarning:
:mod:`gsme.pairing` (slots, task counts, pairing), :mod:`gsme.designs.significance` (the
one-look test; ``compare`` is ``one_look``), :mod:`gsme.designs.exact` (the sign-flip p).
"""

from __future__ import annotations

import warnings

from gsme import _checks, pairing
from gsme.designs import exact, significance

_RENAMED = {"compare": (significance, "one_look"), "task_rates": (pairing, "paired_rates"),
            "task_key": (pairing, "_task_key"), "graded_tails": (exact, "_graded_tails")}
_HOMES = (pairing, significance, exact, _checks)


def __getattr__(name: str):
    renamed, new = _RENAMED.get(name, (None, name))
    for home in (renamed,) if renamed else _HOMES:
        if hasattr(home, new):
            warnings.warn(f"gsme._paired is deprecated; use {home.__name__}.{new}",
                          DeprecationWarning, stacklevel=2)
            return getattr(home, new)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
