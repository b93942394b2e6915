"""Deprecated: the checked, encoded trials are public in :mod:`gsme.pairing` (this name goes
in 0.4.0).

Every name of ``gsme._paired`` is read from its new home, with a DeprecationWarning:
:mod:`gsme.pairing` (slots, task counts, pairing), :mod:`gsme.designs.significance` (the
one-look test; ``compare`` is ``one_look``), :mod:`gsme.designs.exact` (the sign-flip p).
"""

from __future__ import annotations

from gsme import _checks, _renamed, pairing
from gsme.designs import exact, significance

__getattr__ = _renamed.moved(
    __name__, (pairing, significance, exact, _checks),
    renamed={"compare": (significance, "one_look"), "task_rates": (pairing, "paired_rates"),
             "task_key": (pairing, "_task_key"), "graded_tails": (exact, "_graded_tails")})
