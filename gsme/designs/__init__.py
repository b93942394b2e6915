"""Gate designs: which repeats a comparison needs, and how its looks decide.

``design="fixed"`` (the paper's gate, :mod:`gsme.designs.fixed`) scores every task ``k``
times on each side and looks once; ``design="adaptive"`` (:mod:`gsme.designs.adaptive`) is
group-sequential, spending its level over its looks (:mod:`gsme.designs.spending`). What
every design shares, the :class:`Design` interface and the functions that replay a design
from the trials (:func:`wanted`, :func:`looks`, :func:`decided_repeats`), is in
:mod:`gsme.designs.base`; the one-look paired test in :mod:`gsme.designs.significance`
and its exact sign-flip p in :mod:`gsme.designs.exact`. A design receives the checked,
encoded trials of :mod:`gsme.pairing`.

A new design subclasses :class:`Design` (or :class:`Fixed`, :class:`Adaptive`) and
registers under a name (:data:`gsme.registry.DESIGNS`), see :class:`Design`.
"""

from gsme.designs.adaptive import Adaptive
from gsme.designs.base import (
    Design,
    compare,
    decided_repeats,
    design_of,
    looks,
    looks_of_slots,
    wanted,
)
from gsme.designs.fixed import Fixed
from gsme.designs.spending import boundaries, look_repeats, obf_spending, spending_boundaries

__all__ = ["Adaptive", "Design", "Fixed", "boundaries", "compare", "decided_repeats",
           "design_of", "look_repeats", "looks", "looks_of_slots", "obf_spending",
           "spending_boundaries", "wanted"]
