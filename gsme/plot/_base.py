"""What every gsme plot shares: the decision palette, column checks and the Axes to draw on."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from gsme import schema

#: One colour per gate decision, used by every plot that colours by decision.
DECISION_COLORS = {
    "credit": "#2ca02c",
    "cull": "#d62728",
    "inconclusive": "#8c8c8c",
    "invalid": "#c9b59a",
    "inactive": "#b7c4d6",
}

#: Colours of a task whose rate went up, down or stayed put between parent and child.
DIRECTION_COLORS = {"up": "#2ca02c", "down": "#d62728", "unchanged": "#bdbdbd"}


def require(frame, columns, what: str) -> pd.DataFrame:
    """Return ``frame`` when it is a DataFrame holding every one of ``columns``.

    Raises
    ------
    TypeError
        When ``frame`` is not a DataFrame.
    gsme.schema.FrameError
        Naming the missing columns and the columns the frame has.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c is not None and c not in frame.columns]
    if missing:
        raise schema.FrameError(
            f"{what} is missing column(s) {missing}; it has {list(frame.columns)}"
        )
    return frame


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
