"""What every gsme plot shares: the palettes, column checks and the Axes to draw on.

The palettes live here and only here. Decisions and directions use the Okabe–Ito blue and
orange, which stay apart under every common colour-vision deficiency, each doubled by a
marker shape (▲ credit/up, ▼ cull/down, ● inconclusive/unchanged) so that a figure reads
in greyscale too; "nothing happened" is a neutral grey. Pathologies use a different
palette, as does any other category (a mechanism, a profile), so neither is mistaken for a
decision: nine colours chosen so that every two of them, and each against the light grey of
``unknown``, stay at least 19 CAM02-UCS ΔE apart with normal vision and under simulated
deuteranopia, protanopia and tritanopia (Machado et al. 2009, full severity);
``tests/test_plot.py`` checks it.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.artist import Artist

#: Okabe & Ito (2008), "Color Universal Design": the two decision hues come from here.
BLUE, ORANGE = "#0072B2", "#E69F00"
#: Neutral greys: inconclusive / unchanged (mid), invalid (dark), inactive (light).
GREY, DARK_GREY, LIGHT_GREY = "#8C8C8C", "#555555", "#C8C8C8"

#: One colour per gate decision, used by every plot that colours by decision.
DECISION_COLORS = {
    "credit": BLUE,
    "cull": ORANGE,
    "inconclusive": GREY,
    "invalid": DARK_GREY,
    "inactive": LIGHT_GREY,
}

#: One marker per gate decision, doubling the colour: ▲ credit, ▼ cull, ● inconclusive.
DECISION_MARKERS = {
    "credit": "^",
    "cull": "v",
    "inconclusive": "o",
    "invalid": "X",
    "inactive": "s",
}

#: Colours of a task whose rate went up, down or stayed put between parent and child.
DIRECTION_COLORS = {"up": BLUE, "down": ORANGE, "unchanged": GREY}

#: Markers of the child's rate by direction: ▲ up, ▼ down, ● unchanged.
DIRECTION_MARKERS = {"up": "^", "down": "v", "unchanged": "o"}

#: Nine category colours (indigo, olive, teal, plum, light green, raspberry, lavender,
#: pink, dark olive), searched on the sRGB grid for the largest smallest distance under
#: normal vision and the three simulated dichromacies, each at least 20 CAM02-UCS ΔE from
#: every :data:`DECISION_COLORS` colour. Pathologies (and other categories) take these in
#: order; the earlier ones are the more distinct.
CATEGORY_PALETTE = ("#4B2DA5", "#878700", "#3CA5A5", "#781E4B", "#87E169", "#B44B69",
                     "#8769E1", "#FF96FF", "#4B4B00")

#: The colour of failures without a pathology label (``"unknown"``).
UNKNOWN_PATHOLOGY = "#DDDDDD"


def category_colors(levels) -> dict:
    """Colour per category (e.g. pathology): :data:`CATEGORY_PALETTE` in order.

    The pathology ``"unknown"`` (a failure without a label) is light grey.

    Past nine labels the rest take evenly spaced ``husl`` hues (distinct, but no longer
    checked for colour-blind safety).

    Examples
    --------
    >>> category_colors(["careless-submit", "unknown"])
    {'careless-submit': '#4B2DA5', 'unknown': '#DDDDDD'}
    """
    levels = list(dict.fromkeys(levels))
    named = [lv for lv in levels if lv != "unknown"]
    colors = list(CATEGORY_PALETTE)
    if len(named) > len(colors):
        colors += sns.color_palette("husl", len(named) - len(colors)).as_hex()
    out = dict(zip(named, colors))
    return {lv: out.get(lv, UNKNOWN_PATHOLOGY) for lv in levels}


def get_axes(ax):
    """The Axes to draw on: ``ax`` itself, or the current Axes when ``ax`` is None."""
    return plt.gca() if ax is None else ax


def finish(ax, *, xlabel=None, ylabel=None, title=None):
    """Label the axes and set the caller's title (when given); return ``ax``."""
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    return ax


class Declutter(Artist):
    """Hides, at every draw, each label that would cover a label shown before it or a point.

    Labels are kept in the given priority order: the first always shows; each next one only
    when its box (padded by ``pad`` pixels) touches no box already shown and covers none of
    ``points`` (data coordinates, each taken as a marker of radius ``radius`` points). An
    annotation is tried at each of ``offsets`` (``(dx, dy, ha)`` in points from its point)
    in turn before it is hidden. The choice is made at draw time, on the final layout, so
    it holds at any figure size or dpi. Add it to the Axes that holds the labels
    (:func:`declutter` does).
    """

    def __init__(self, texts, *, points=None, radius: float = 4.0, pad: float = 1.0,
                 offsets=None):
        super().__init__()
        self.texts = list(texts)
        self.points = np.empty((0, 2)) if points is None else np.asarray(points, float)
        self.radius, self.pad = radius, pad
        self.offsets = list(offsets) if offsets else [None]
        # drawn just before the labels (zorder 3), so their visibility is set in time
        self.set_zorder(min((t.get_zorder() for t in self.texts), default=3) - 0.001)
        self.set_in_layout(False)

    def draw(self, renderer):
        xy = self.axes.transData.transform(self.points) if len(self.points) else self.points
        xy = xy[np.isfinite(xy).all(axis=1)]
        reach = renderer.points_to_pixels(self.radius)
        shown = []
        for text in self.texts:
            for offset in self.offsets:
                if offset is not None:
                    text.xyann = offset[:2]
                    text.set_horizontalalignment(offset[2])
                text.set_visible(True)
                box = text.get_window_extent(renderer).padded(self.pad)
                near = box.padded(reach)
                covers = ((xy[:, 0] > near.x0) & (xy[:, 0] < near.x1)
                          & (xy[:, 1] > near.y0) & (xy[:, 1] < near.y1)).any()
                clear = not shown or not (covers or any(box.overlaps(b) for b in shown))
                if clear:
                    break
            text.set_visible(clear)
            if clear:
                shown.append(box)
        self.stale = False


def declutter(ax, texts, *, points=None, radius: float = 4.0, pad: float = 1.0,
              offsets=None) -> Declutter:
    """Keep ``texts`` (labels on ``ax``, most important first) off each other and off
    ``points`` when drawn, trying each of ``offsets``; see :class:`Declutter`."""
    artist = Declutter(texts, points=points, radius=radius, pad=pad, offsets=offsets)
    artist.set_gid("declutter")
    ax.add_artist(artist)
    return artist
