"""Plots of the archive: the where × why occupancy heatmap, its progress over rounds and
the candidate lineage tree."""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgb
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from gsme import schema
from gsme.plot._base import (
    CATEGORY_PALETTE,
    DECISION_COLORS,
    DECISION_MARKERS,
    finish,
    get_axes,
)

__all__ = ["archive_progress", "lineage", "occupancy", "tree_layout"]

EMPTY_CELL = {"facecolor": "#f2f2f2", "edgecolor": "#9e9e9e", "hatch": "//"}
KIND_MARKERS = {"baseline": "s", "mutation": "o", "recombination": "D"}
UNDECIDED = "white"


def occupancy(table, *, credited=None, names=None, cmap="YlGn", annot=True, fmt=".2f",
              title=None, ax=None, **kwargs):
    """Draw the where × why archive as a heatmap of elite rates, empty cells hatched.

    Parameters
    ----------
    table : DataFrame
        The output of :func:`gsme.archive.occupancy`: index ``where``, columns ``why``,
        values the elite's pass rate, NaN where the cell is empty.
    credited : DataFrame, optional
        The same table of the elites' ``credited`` column
        (``archive.occupancy(arch, value="credited")``): an elite kept without a credit is
        framed with a dashed outline and its annotation marked "kept", so that kept and
        credited read apart.
    names : DataFrame, optional
        The same table of the elites' candidate ids (:func:`gsme.explain.elite_names`):
        each occupied cell names its elite above its rate.
    cmap : str or Colormap
        Colour map of the occupied cells.
    annot : bool
        Write each elite's rate in its cell, and "—" in empty cells.
    fmt : str
        Format of the annotations.
    title : str, optional
        Axes title.
    ax : matplotlib Axes, optional
        Where to draw; the current Axes by default.
    **kwargs
        Passed to :func:`seaborn.heatmap` (``vmin``/``vmax`` default to 0 and 1).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from gsme import archive, experiments, explain, plot
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> table = archive.occupancy(run.archive(), why_levels=explain.why_levels(run))
    >>> ax = plot.occupancy(table)
    >>> plt.close(ax.figure)
    >>> run.close()
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"occupancy table must be a pandas DataFrame, got {type(table).__name__}")
    if table.empty:
        raise ValueError("occupancy table has no cells; pass the where × why levels to "
                         "gsme.archive.occupancy so that empty cells appear as NaN")
    text = [c for c in table.columns if not pd.api.types.is_numeric_dtype(table[c])]
    if text:
        raise schema.FrameError(f"occupancy table column(s) {text} are not numeric rates")
    ax = get_axes(ax)
    empty = table.isna().to_numpy()
    kwargs.setdefault("vmin", 0.0)
    kwargs.setdefault("vmax", 1.0)
    cbar_kws = {"label": "elite pass rate", **kwargs.pop("cbar_kws", {})}
    written = bool(annot)
    if written and names is not None:
        if names.shape != table.shape:
            raise ValueError(f"names must be a table of the shape of table {table.shape}, "
                             f"got {names.shape}")
        rates = table.astype(float).to_numpy()
        annot = np.array([[f"{n}\n{r:{fmt}}" if np.isfinite(r) else ""
                           for n, r in zip(row_n, row_r)]
                          for row_n, row_r in zip(names.to_numpy(), rates)], dtype=object)
        fmt = ""
        kwargs.setdefault("annot_kws", {"size": 8})
    sns.heatmap(table.astype(float), mask=empty, cmap=cmap, annot=annot, fmt=fmt, ax=ax,
                linewidths=0.5, linecolor="white", cbar_kws=cbar_kws, **kwargs)
    for i, j in zip(*np.nonzero(empty)):
        ax.add_patch(Rectangle((j, i), 1, 1, lw=0, gid="empty-cell", **EMPTY_CELL))
        if written:
            ax.text(j + 0.5, i + 0.5, "—", ha="center", va="center", color="0.45")
    if credited is not None:
        _mark_uncredited(ax, table, credited, written)
    ax.tick_params(axis="y", rotation=0)
    # why labels are long slugs: slanted, so that they never run into each other
    for label in ax.get_xticklabels():
        label.set(rotation=45, ha="right", rotation_mode="anchor")
    return finish(ax, xlabel=table.columns.name or "why", ylabel=table.index.name or "where",
                  title=title)


def _mark_uncredited(ax, table: pd.DataFrame, credited: pd.DataFrame, annot: bool) -> None:
    """Frame the cells whose elite was kept without a credit, and say so in a legend."""
    if not (credited.shape == table.shape and credited.index.equals(table.index)
            and credited.columns.equals(table.columns)):
        raise ValueError("credited must be the occupancy table of the same archive and "
                         "levels (archive.occupancy(arch, value='credited'))")
    kept_only = (credited.to_numpy(dtype=float) == 0.0) & table.notna().to_numpy()
    for i, j in zip(*np.nonzero(kept_only)):
        ax.add_patch(Rectangle((j + 0.06, i + 0.06), 0.88, 0.88, fill=False, lw=1.6,
                               ls="--", edgecolor="0.1", gid="kept-not-credited"))
        if annot:
            ax.text(j + 0.5, i + 0.82, "kept", ha="center", va="center", fontsize=7,
                    color="0.1")
    if kept_only.any():
        ax.legend(handles=[Patch(fill=False, ls="--", edgecolor="0.1",
                                 label="kept, not credited")],
                  fontsize=8, loc="upper left", bbox_to_anchor=(1.0, -0.02))


def lineage(candidates, decisions=None, *, labels=True, title=None, ax=None, **kwargs):
    """Draw the candidate tree: x is the round, each child to the right of its parents.

    Nodes are coloured by their train-split decision (:data:`DECISION_COLORS`; white when
    undecided, e.g. the baseline), marked inside with the decision's glyph
    (:data:`DECISION_MARKERS`: ▲ credit, ▼ cull, ● inconclusive) so that they read without
    colour, and shaped by kind (:data:`KIND_MARKERS`). A solid edge
    joins each candidate to its first parent; a recombination also gets a dashed edge from
    every other parent it merges. The vertical layout is a deterministic tidy tree over
    first parents: leaves stack in (round, id) order, a parent sits midway between its
    first and last child.

    Parameters
    ----------
    candidates : DataFrame
        A candidates frame (:data:`gsme.schema.CANDIDATES`); ``parents`` is comma-separated.
    decisions : DataFrame, optional
        A decisions frame; the last ``train`` row of each candidate gives its colour. When
        it has a ``kept`` column (a run's decisions), every kept child gets a thick ring,
        so that a child kept without a credit reads apart from a credited one.
    labels : bool
        Write each candidate id beside its node.
    title : str, optional
        Axes title.
    ax : matplotlib Axes, optional
        Where to draw; the current Axes by default.
    **kwargs
        Passed to the nodes' :meth:`~matplotlib.axes.Axes.scatter`.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from gsme import experiments, plot
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> ax = plot.lineage(run.candidates(), run.decisions())
    >>> plt.close(ax.figure)
    >>> run.close()
    """
    schema.validate(candidates, "candidates")
    decided, kept = pd.Series(dtype=object), set()
    if decisions is not None:
        decisions = schema.validate(decisions, "decisions")
        train = decisions[decisions["split"] == "train"].drop_duplicates("child", keep="last")
        decided = train.set_index("child")["decision"]
        if "kept" in train.columns:
            kept = set(train.loc[train["kept"].astype(bool), "child"])
    ax = get_axes(ax)
    pos = tree_layout(candidates)
    first, extra = [], []
    for child, parents in _parents(candidates).items():
        for i, parent in enumerate(parents):
            (first if i == 0 else extra).append([pos[parent], pos[child]])
    ax.add_collection(LineCollection(first, colors="0.55", lw=1.2, zorder=1, gid="edges"))
    ax.add_collection(LineCollection(extra, colors="0.55", lw=1.2, linestyles="--", zorder=1,
                                     gid="merge-edges"))
    kinds = candidates["kind"].astype(object).to_numpy()
    names = candidates["candidate"].astype(object).to_numpy()
    for kind, marker in KIND_MARKERS.items():
        these = names[kinds == kind]
        if len(these):
            faces = [DECISION_COLORS.get(decided.get(c), UNDECIDED) for c in these]
            ax.scatter([pos[c][0] for c in these], [pos[c][1] for c in these], marker=marker,
                       c=faces, edgecolors="0.2", s=70, zorder=3, gid=kind, **kwargs)
    rings = [c for c in names if c in kept]
    if rings:
        ax.scatter([pos[c][0] for c in rings], [pos[c][1] for c in rings], s=190,
                   facecolors="none", edgecolors="0.1", linewidths=1.8, zorder=2, gid="kept")
    for decision in schema.DECISIONS:
        these = [c for c in names if decided.get(c) == decision]
        if these:
            ax.scatter([pos[c][0] for c in these], [pos[c][1] for c in these], s=18,
                       marker=DECISION_MARKERS[decision], linewidths=0, zorder=4,
                       color=_ink(DECISION_COLORS[decision]), gid=f"decision-{decision}")
    if labels:
        for c in names:
            ax.annotate(str(c), pos[c], xytext=(6, 4), textcoords="offset points", fontsize=7)
    handles = [Line2D([], [], ls="", marker=DECISION_MARKERS[d], ms=8, mfc=DECISION_COLORS[d],
                      mec="0.2", label=d) for d in schema.DECISIONS if (decided == d).any()]
    if (~pd.Series(names).isin(decided.index)).any():
        handles.append(Patch(facecolor=UNDECIDED, edgecolor="0.2", label="no decision"))
    if rings:
        handles.append(Line2D([], [], ls="", marker="o", ms=12, mfc="none", mec="0.1",
                              mew=1.8, label="kept"))
    handles += [Line2D([], [], ls="", marker=KIND_MARKERS[k], mfc="0.8", mec="0.2", label=k)
                for k in KIND_MARKERS if (kinds == k).any()]
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.margins(x=0.15, y=0.08)  # room for the labels of the last round
    ax.autoscale_view()
    ax.set_yticks([])
    return finish(ax, xlabel="round", title=title)


def archive_progress(table, *, title=None, ax=None, **kwargs):
    """Draw the archive's coverage and its best elite's rate round by round.

    Both read on one 0–1 axis: coverage (■, the share of where × why cells holding an
    elite) and the best elite's train pass rate (▲, named where the best changes).

    Parameters
    ----------
    table : DataFrame
        The output of :func:`gsme.explain.archive_progress`: ``round, coverage,
        best_candidate, best_rate``.
    title : str, optional
        Axes title.
    ax : matplotlib Axes, optional
        Where to draw; the current Axes by default.
    **kwargs
        Passed to both lines' :meth:`~matplotlib.axes.Axes.plot`.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from gsme import experiments, explain, plot
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> ax = plot.archive_progress(explain.archive_progress(run))
    >>> plt.close(ax.figure)
    >>> run.close()
    """
    schema.require(table, ["round", "coverage", "best_candidate", "best_rate"],
                   "archive progress")
    ax = get_axes(ax)
    rounds = table["round"].to_numpy(dtype=float)
    ax.plot(rounds, table["coverage"].to_numpy(dtype=float), marker="s", color=CATEGORY_PALETTE[1],
            label="coverage", **kwargs)
    best = table["best_rate"].to_numpy(dtype=float)
    ax.plot(rounds, best, marker=DECISION_MARKERS["credit"], color=DECISION_COLORS["credit"],
            label="best elite's rate", **kwargs)
    named = table["best_candidate"].astype(object)
    changed = named.notna() & (named != named.shift())
    for r, rate, name in zip(rounds[changed], best[changed], named[changed]):
        ax.annotate(str(name), (r, rate), xytext=(0, 6), textcoords="offset points",
                    ha="center", fontsize=7)
    ax.set_ylim(0, 1.05)
    if len(rounds):
        ax.set_xticks(rounds)
    ax.legend(fontsize=7, loc="upper left")
    return finish(ax, xlabel="round", ylabel="share / pass rate", title=title)


def tree_layout(candidates) -> dict:
    """Positions ``{candidate: (round, y)}`` of the tidy tree :func:`lineage` draws.

    Raises
    ------
    gsme.schema.FrameError
        When a parent is not a candidate of the frame, or the parents form a cycle.

    Examples
    --------
    Leaves take the rows 0, 1, ... in order; a parent sits midway between its children:

    >>> c = pd.DataFrame({"candidate": ["baseline", "c1", "c2", "c3"],
    ...                   "parents": ["", "baseline", "baseline", "c1"], "round": [0, 1, 1, 2]})
    >>> tree_layout(c)
    {'baseline': (0.0, 0.5), 'c1': (1.0, 0.0), 'c2': (1.0, 1.0), 'c3': (2.0, 0.0)}
    """
    parents = _parents(candidates)
    rounds = dict(zip(candidates["candidate"], candidates["round"].astype(int)))
    order = sorted(parents, key=lambda c: (rounds[c], str(c)))
    children = {c: [] for c in order}
    for c in order:
        if parents[c]:
            children[parents[c][0]].append(c)
    ys, next_leaf = {}, 0.0
    stack = [(root, False) for root in reversed(order) if not parents[root]]
    while stack:
        node, expanded = stack.pop()
        if not children[node]:
            ys[node], next_leaf = next_leaf, next_leaf + 1
        elif expanded:
            ys[node] = (ys[children[node][0]] + ys[children[node][-1]]) / 2
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(children[node]))
    cyclic = [c for c in order if c not in ys]
    if cyclic:
        raise schema.FrameError(f"candidates {cyclic} descend from themselves (parent cycle)")
    return {c: (float(rounds[c]), ys[c]) for c in order}


def _ink(fill) -> str:
    """Black or white, whichever reads better on ``fill`` (by its relative luminance)."""
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
               for c in to_rgb(fill))
    return "black" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.3 else "white"


def _parents(candidates) -> dict:
    ids = set(candidates["candidate"])
    parents = {c: schema.split_ids(p) for c, p in zip(candidates["candidate"],
                                                      candidates["parents"])}
    unknown = {c: [p for p in ps if p not in ids] for c, ps in parents.items()}
    unknown = {c: ps for c, ps in unknown.items() if ps}
    if unknown:
        raise schema.FrameError(f"candidates name parents that are not in the frame: {unknown}")
    return parents
