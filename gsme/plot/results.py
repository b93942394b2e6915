"""Plots of results: train vs sealed retention, and the pathologies behind failures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from gsme import schema
from gsme.plot._base import (
    DECISION_COLORS,
    DECISION_MARKERS,
    GREY,
    category_colors,
    finish,
    get_axes,
)

__all__ = ["pathologies", "retention"]

_LABEL_COLUMNS = ("benchmark", "run")


def retention(
    table,
    *,
    x="train_delta_pp",
    y="sealed_delta_pp",
    label=None,
    value="retention_pct",
    true=None,
    title=None,
    ax=None,
    **kwargs,
):
    """Draw train Δ against sealed Δ, each point labelled with its retention.

    The dashed y = x line is 100 % retention (the sealed gain equals the train gain);
    points above it retained more than they gained on train. Each point is annotated
    "<label> <retention>%" ("—" when the retention is undefined). When the table says whether
    each sealed gain was credited, credited rows are drawn as filled ▲ in the credit colour
    and the others as hollow grey ●: a run table (:func:`gsme.report.run_table`) says it in
    ``sealed_decision``, the paper's table (:func:`gsme.report.paper_table`) in its boolean
    ``credited`` (its z is the sealed test's). A run table's ``credited``, a count of
    credited children, marks nothing.

    Parameters
    ----------
    table : DataFrame
        One row per benchmark or run with ``x``, ``y``, ``value`` and the label column.
    x, y : str
        Columns of the train and sealed Δ (pp).
    label : str, optional
        Column naming each point; by default ``benchmark``, else ``run``.
    value : str
        Column of the retention in percent, as the library computed it.
    true : tuple of str, optional
        Columns of the true train and sealed Δ (a simulator's ground truth, e.g.
        ``("true_train_delta_pp", "true_sealed_delta_pp")``): each row's truth is drawn as
        a hollow ◇ joined to its measured point by a thin line.
    title : str, optional
        Axes title (say "simulated" here when the data are).
    ax : matplotlib Axes, optional
        Where to draw; the current Axes by default.
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.scatter`.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import pandas as pd, gsme.plot as gp
    >>> t = pd.DataFrame({"benchmark": ["TB2"], "train_delta_pp": [6.3],
    ...                   "sealed_delta_pp": [9.3], "retention_pct": [147.0]})
    >>> gp.retention(t).texts[0].get_text()
    'TB2 147%'
    """
    if label is None:
        label = next((c for c in _LABEL_COLUMNS if c in getattr(table, "columns", ())),
                     _LABEL_COLUMNS[0])
    schema.require(table, [x, y, label, value, *(true or ())], "retention table")
    ax = get_axes(ax)
    xs = table[x].to_numpy(dtype=float)
    ys = table[y].to_numpy(dtype=float)
    truth = (np.empty((0,)), np.empty((0,)))
    if true is not None:
        truth = tuple(table[c].to_numpy(dtype=float) for c in true)
        for px, py, tx, ty in zip(xs, ys, *truth):
            ax.plot([px, tx], [py, ty], color="0.75", lw=0.8, zorder=1)
        ax.scatter(*truth, marker="D", facecolors="none", edgecolors="0.35", s=30,
                   linewidths=1, zorder=2, label="true (simulator)")
    sealed_credit = _sealed_credit(table)
    marked = sealed_credit is not None
    credited = sealed_credit if marked else np.ones(len(table), bool)
    ax.axhline(0, color="0.85", lw=0.8)
    ax.axvline(0, color="0.85", lw=0.8)
    ax.axline((0, 0), slope=1, ls="--", color="0.3", lw=1, label="100% retention")
    color = kwargs.pop("color", DECISION_COLORS["credit"])
    if credited.any():
        style = {"marker": DECISION_MARKERS["credit"] if marked else "o", **kwargs}
        ax.scatter(xs[credited], ys[credited], color=color, edgecolors="0.2", linewidths=0.5,
                   s=50, zorder=3, label="sealed Δ credited" if marked else "_points", **style)
    if (~credited).any():
        style = {"marker": DECISION_MARKERS["inconclusive"], **kwargs}
        ax.scatter(xs[~credited], ys[~credited], facecolors="white", edgecolors=GREY, s=45,
                   linewidths=1.5, zorder=3, label="sealed Δ not credited", **style)
    finite = np.concatenate([xs, ys, *truth, [0.0]])
    finite = finite[np.isfinite(finite)]
    lo, hi = finite.min(), finite.max()
    pad = 0.1 * (hi - lo) or 1.0
    below = _crowding(xs, ys, near=0.04 * (hi - lo + 2 * pad))
    for px, py, name, pct, shift in zip(xs, ys, table[label], table[value], below):
        text = "—" if pd.isna(pct) else f"{pct:.0f}%"
        ax.annotate(f"{name} {text}", (px, py), xytext=(5, 4 - 11 * shift),
                    textcoords="offset points", fontsize=8)
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
    ax.legend(fontsize=8, loc="upper left")
    return finish(ax, xlabel="train Δ (pp)", ylabel="sealed test Δ (pp)", title=title)


def _sealed_credit(table) -> np.ndarray | None:
    """Whether each row's sealed gain was credited, or None when the table does not say."""
    if "sealed_decision" in table.columns:
        return (table["sealed_decision"] == "credit").to_numpy()
    if "credited" in table.columns and pd.api.types.is_bool_dtype(table["credited"]):
        return table["credited"].to_numpy()
    return None


def pathologies(shares, *, x="candidate", value="share", palette=None, title=None, ax=None,
                **kwargs):
    """Draw a stacked bar per candidate (or round) of its failing trials' pathologies.

    Parameters
    ----------
    shares : DataFrame
        One row per (``x``, ``pathology``), as :func:`gsme.analysis.pathology_shares`
        returns; bars and stack segments follow the frame's row order.
    x : str
        The column with one bar per value, e.g. ``candidate`` or ``round``.
    value : str
        ``share`` (fractions of the bar's failures) or ``n`` (counts).
    palette : dict or str, optional
        Colour per pathology, or a seaborn palette name; by default
        :func:`gsme.plot.category_colors` (colour-blind safe, apart from the decision
        colours; ``unknown`` in light grey).
    title : str, optional
        Axes title.
    ax : matplotlib Axes, optional
        Where to draw; the current Axes by default.
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.bar`.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from gsme import analysis, experiments, plot
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> shares = analysis.pathology_shares(run.trials(), split="train")
    >>> ax = plot.pathologies(shares)
    >>> plt.close(ax.figure)
    >>> run.close()
    """
    schema.require(shares, [x, "pathology", value], "pathology shares")
    dup = shares.duplicated([x, "pathology"], keep=False)
    if dup.any():
        raise schema.FrameError(
            f"pathology shares frame has several rows per ({x}, pathology):\n"
            f"{shares.loc[dup].head(10)}"
        )
    ax = get_axes(ax)
    bars = pd.unique(shares[x])
    kinds = list(pd.unique(shares["pathology"]))
    table = shares.pivot(index=x, columns="pathology", values=value)
    table = table.reindex(index=bars, columns=kinds).fillna(0.0)
    if palette is None:
        palette = category_colors(kinds)
    elif not isinstance(palette, dict):
        palette = dict(zip(kinds, sns.color_palette(palette, len(kinds))))
    missing = [k for k in kinds if k not in palette]
    if missing:
        raise ValueError(f"palette has no colour for pathology level(s) {missing}")
    positions = np.arange(len(bars))
    bottom = np.zeros(len(bars))
    for kind in kinds:
        heights = table[kind].to_numpy(dtype=float)
        ax.bar(positions, heights, bottom=bottom, color=palette[kind], label=str(kind),
               **kwargs)
        bottom += heights
    crowded = len(bars) > 6
    ax.set_xticks(positions, [str(b) for b in bars], rotation=45 if crowded else 0,
                  ha="right" if crowded else "center")
    ax.legend(title="pathology", fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ylabel = "share of failing trials" if value == "share" else f"failing trials ({value})"
    return finish(ax, xlabel=x, ylabel=ylabel, title=title)


def _crowding(xs, ys, *, near: float) -> np.ndarray:
    """For each point, how many earlier points lie within ``near`` (their labels stack)."""
    close = (np.abs(xs[:, None] - xs[None, :]) < near) & (np.abs(ys[:, None] - ys[None, :]) < near)
    return np.tril(close, k=-1).sum(axis=1)
