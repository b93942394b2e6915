"""Plots of gsme frames. Each takes a frame the library computed and returns the Axes.

Every function follows seaborn's shape, ``plot(data, *, ..., ax=None, **kwargs) -> Axes``,
draws on ``ax`` (the current Axes by default) and computes no statistics of its own: z,
intervals, retention, power and shares all come from :mod:`gsme.stats`,
:mod:`gsme.archive` and :mod:`gsme.analysis`.
"""

from gsme.plot._base import DECISION_COLORS, DIRECTION_COLORS
from gsme.plot.archive import KIND_MARKERS, lineage, occupancy, tree_layout
from gsme.plot.gates import paired_tasks, power_curve, z_forest
from gsme.plot.results import pathologies, retention

__all__ = [
    "DECISION_COLORS",
    "DIRECTION_COLORS",
    "KIND_MARKERS",
    "lineage",
    "occupancy",
    "paired_tasks",
    "pathologies",
    "power_curve",
    "retention",
    "tree_layout",
    "z_forest",
]
