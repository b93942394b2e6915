"""Plots of gsme frames. Each takes a frame the library computed and returns the Axes.

Every function follows seaborn's shape, ``plot(data, *, ..., ax=None, **kwargs) -> Axes``,
draws on ``ax`` (the current Axes by default) and computes no statistics of its own: z,
intervals, retention, power and shares all come from :mod:`gsme.stats`,
:mod:`gsme.archive` and :mod:`gsme.analysis`.

Colours are colour-blind safe and set in one place: decisions and directions in blue
(credit, up) and orange (cull, down) with a grey "nothing", each doubled by a marker shape
(:data:`DECISION_MARKERS`, :data:`DIRECTION_MARKERS`); pathologies and other categories in a
separate palette (:data:`CATEGORY_PALETTE`).
"""

from gsme.plot._base import (
    CATEGORY_PALETTE,
    DECISION_COLORS,
    DECISION_MARKERS,
    DIRECTION_COLORS,
    DIRECTION_MARKERS,
    category_colors,
)
from gsme.plot.archive import KIND_MARKERS, archive_progress, lineage, occupancy, tree_layout
from gsme.plot.gates import paired_tasks, power_curve, z_forest
from gsme.plot.results import pathologies, retention

__all__ = [
    "CATEGORY_PALETTE",
    "DECISION_COLORS",
    "DECISION_MARKERS",
    "DIRECTION_COLORS",
    "DIRECTION_MARKERS",
    "KIND_MARKERS",
    "archive_progress",
    "category_colors",
    "lineage",
    "occupancy",
    "paired_tasks",
    "pathologies",
    "power_curve",
    "retention",
    "tree_layout",
    "z_forest",
]
