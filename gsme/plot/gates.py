"""Plots of the significance gate: the z forest, per-task moves of one comparison, power."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from gsme import schema
from gsme.plot._base import (
    CATEGORY_PALETTE,
    DECISION_COLORS,
    DECISION_MARKERS,
    DIRECTION_COLORS,
    DIRECTION_MARKERS,
    category_colors,
    declutter,
    finish,
    get_axes,
)
from gsme.settings import GateConfig

__all__ = ["paired_tasks", "power_curve", "z_forest"]

_VALUES = {"z": "z (paired, per task)", "delta_pp": "Δ pass rate (pp)"}
_DODGE = 0.6  # width of a round's slot shared by the candidates scored in it
_BAR = 0.12  # half-width of a comparison's boundary bar
#: Ring colour of kept children in the z forest (Okabe–Ito bluish green).
KEPT_COLOR = "#009E73"
#: Where a point's label is tried, in turn (points from the point): right, below right,
#: left, below left, above.
_LABEL_OFFSETS = [(8, 3, "left"), (8, -11, "left"), (-8, 3, "right"), (-8, -11, "right"),
                  (0, 9, "center")]


def z_forest(
    decisions,
    *,
    x="round",
    value="z",
    z_crit: float = GateConfig().z_crit,
    hue="decision",
    palette=None,
    markers=None,
    labels=False,
    highlight=None,
    boundary=None,
    kept=None,
    title=None,
    ax=None,
    **kwargs,
):
    """Draw each comparison's z (or Δpp with its interval) per round, coloured by decision.

    With ``value="z"`` the gate's thresholds are drawn as dashed lines at ±``z_crit``, or,
    with ``boundary``, each comparison's own credit boundary as a short bar across its
    point (the boundary of the look that decided it: the adaptive design's differ by look)
    and the cull threshold −``z_crit`` as a dashed line; with
    ``value="delta_pp"`` each point carries its interval ±``z_crit``·``se_pp`` and a dashed
    line marks 0. Candidates scored in the same round are spread side by side. Rows whose
    value is NaN (e.g. an ``invalid`` comparison has no z) are drawn as × on the bottom edge.
    Decisions are told apart by colour and by shape (▲ credit, ▼ cull, ● inconclusive), so
    the plot reads without colour vision.

    Parameters
    ----------
    decisions : DataFrame
        Decisions (the columns of :mod:`gsme.schema`'s decisions frame that it draws:
        ``candidate, decision`` and ``value``, ``se_pp`` for ``delta_pp``), usually joined
        with the candidates' ``round``; rows of several runs (e.g. one per seed, ``x="seed"``)
        may share candidate ids.
    x : str
        Column placing each comparison on the x axis. When the frame has no such column the
        comparisons are placed by row order and the axis says so.
    value : {"z", "delta_pp"}
        What to draw on the y axis.
    z_crit : float
        The gate's critical z: the threshold lines, or the interval half-width in se units.
    hue : str or None
        Column colouring the points; ``"decision"`` uses :data:`DECISION_COLORS`.
    palette : dict, optional
        Colour per ``hue`` level; defaults to :data:`DECISION_COLORS` for decisions and to
        the categorical :data:`CATEGORY_PALETTE` otherwise.
    markers : dict, optional
        Marker per ``hue`` level; defaults to :data:`DECISION_MARKERS` for decisions and to
        ``"o"`` otherwise.
    labels : bool or list
        Annotate points with their candidate id: ``True`` for every point, or a list of
        candidate ids, most important first. A label that would cover a label shown before
        it, or another point, is moved to the point's other side, below or above it, and
        is not shown only when every place is taken (with ``True`` the larger ``|value|``
        comes first); this is settled when the figure is drawn, at its final size.
    highlight : str or list, optional
        Candidate id(s) whose points get a black ring (e.g. the one being inspected).
    boundary : str, optional
        Column of each comparison's credit boundary on the z scale (e.g. ``boundary`` of
        :func:`gsme.explain.keep_reasons`), drawn per point with ``value="z"``.
    kept : str, optional
        Boolean column marking the children the run kept: their points get a green ring
        (kept and credited are told apart: a kept child need not be credited).
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
    >>> import matplotlib.pyplot as plt
    >>> import gsme.plot as gp
    >>> from gsme import experiments
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> decisions, candidates = run.decisions(), run.candidates()
    >>> ax = gp.z_forest(decisions.merge(candidates[["candidate", "round"]]))
    >>> plt.close(ax.figure)
    >>> run.close()
    """
    if value not in _VALUES:
        raise ValueError(f"value must be one of {list(_VALUES)}, got {value!r}")
    needed = ["child", "decision", value, hue] + (["se_pp"] if value == "delta_pp" else [])
    decisions = schema.require(decisions, needed, "decisions")
    unknown = sorted(set(decisions["decision"].dropna()) - set(schema.DECISIONS))
    if unknown:
        raise schema.FrameError(f"decisions column 'decision' holds {unknown}; allowed: "
                                f"{list(schema.DECISIONS)}")
    ax = get_axes(ax)
    data = decisions.reset_index(drop=True)
    if x in data.columns:
        pos = _dodge(data[x].to_numpy(dtype=float))
        xlabel = x
    else:
        pos = np.arange(len(data), dtype=float)
        xlabel = f"comparison (row order; no {x!r} column)"
    y = data[value].to_numpy(dtype=float)
    levels, colors = _hue_colors(data, hue, palette)
    shapes = _hue_markers(levels, hue, markers)
    for level in levels:
        mask = np.ones(len(data), bool) if hue is None else (data[hue] == level).to_numpy()
        ok = mask & np.isfinite(y)
        color = colors[level]
        if value == "delta_pp":
            half = z_crit * data.loc[ok, "se_pp"].to_numpy(dtype=float)
            ax.vlines(pos[ok], y[ok] - half, y[ok] + half, colors=color, lw=1.5, zorder=2)
        style = {"marker": shapes[level], "edgecolors": "0.2", "linewidths": 0.5, **kwargs}
        ax.scatter(pos[ok], y[ok], color=color, label=str(level), zorder=3, **style)
        if (mask & ~ok).any():
            n = int((mask & ~ok).sum())
            ax.scatter(pos[mask & ~ok], np.full(n, 0.03), marker="x", color=color,
                       transform=ax.get_xaxis_transform(), label="_nolegend_", zorder=3)
    if value == "z" and boundary is not None:
        schema.require(data, [boundary], "decisions")
        bars = data[boundary].to_numpy(dtype=float)
        has = np.isfinite(bars)
        ax.hlines(bars[has], pos[has] - _BAR, pos[has] + _BAR, colors="0.25", lw=1.6,
                  zorder=2, label="credit boundary (its look)", gid="boundaries")
        ax.axhline(-z_crit, ls="--", color="0.3", lw=1, label="cull threshold")
        ax.axhline(0, color="0.7", lw=0.8)
    elif value == "z":
        for level in (-z_crit, z_crit):
            ax.axhline(level, ls="--", color="0.3", lw=1)
        ax.axhline(0, color="0.7", lw=0.8)
    else:
        ax.axhline(0, ls="--", color="0.3", lw=1)
    names = data["child"].astype(str).to_numpy()
    if kept is not None:
        schema.require(data, [kept], "decisions")
        ring = data[kept].fillna(False).to_numpy(dtype=bool) & np.isfinite(y)
        ax.scatter(pos[ring], y[ring], s=110, facecolors="none", edgecolors=KEPT_COLOR,
                   linewidths=1.8, zorder=4, label="kept", gid="kept")
    if highlight is not None:
        ring = np.isin(names, [str(h) for h in np.atleast_1d(highlight)]) & np.isfinite(y)
        ax.scatter(pos[ring], y[ring], s=180, facecolors="none", edgecolors="black",
                   linewidths=1.5, zorder=4, label="_nolegend_", gid="highlight")
    _label_points(ax, pos, y, names, labels)
    handles, names = ax.get_legend_handles_labels()
    if not np.isfinite(y).all():
        handles.append(Line2D([], [], ls="", marker="x", color="0.3"))
        names.append(f"no {value} (on the axis edge)")
    if hue is not None:
        ax.legend(handles, names, title=hue)
    if x in data.columns:
        ax.set_xticks(np.unique(data[x].dropna().to_numpy()))
    if len(pos):
        ax.set_xlim(np.nanmin(pos) - 0.5, np.nanmax(pos) + 0.5)
    return finish(ax, xlabel=xlabel, ylabel=_VALUES[value], title=title)


def paired_tasks(
    tasks, *, parent_label="parent", child_label="child", top=None, title=None, ax=None,
    **kwargs
):
    """Draw one comparison task by task: parent rate → child rate, moved tasks highlighted.

    One row per task (a dumbbell): a hollow circle at the parent's rate, a filled marker at
    the child's, joined by a segment coloured by direction (:data:`DIRECTION_COLORS`); the
    child's marker says the direction too (▲ up, ▼ down, ● unchanged). Tasks are ordered
    by ``diff``, biggest gain on top; the legend counts the tasks that moved, all of them.

    Parameters
    ----------
    tasks : DataFrame
        The output of :func:`gsme.stats.paired_tasks` (per task and side, the repeats the
        decision read): ``task_id, rate_parent, rate_child, diff`` (other columns ignored).
    parent_label, child_label : str
        Legend names of the two sides (e.g. the candidate ids).
    top : int, optional
        Draw only the tasks that moved, at most ``top`` of them (the largest ``|diff|``,
        ties by ``task_id``); a note beside the legend counts the tasks left out. For
        suites of 100+ tasks. By default every task is drawn.
    title : str, optional
        Axes title.
    ax : matplotlib Axes, optional
        Where to draw; the current Axes by default.
    **kwargs
        Passed to the child markers' :meth:`~matplotlib.axes.Axes.scatter`.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from gsme import stats, plot
    >>> trials = pd.DataFrame({"candidate": ["c0"] * 3 + ["c1"] * 3, "split": "train",
    ...                        "task_id": ["t1", "t2", "t3"] * 2, "repeat": 0,
    ...                        "passed": [0, 1, 0, 1, 1, 0]})
    >>> t = stats.paired_tasks(trials, parent="c0", child="c1", split="train")
    >>> ax = plot.paired_tasks(t, parent_label="c0", child_label="c1", top=20)
    >>> plt.close(ax.figure)
    """
    cols = ["task_id", "rate_parent", "rate_child", "diff"]
    schema.require(tasks, cols, "paired tasks")
    bad = tasks[cols[1:]].isna().any(axis=1)
    if bad.any():
        raise schema.FrameError(
            f"paired tasks frame has missing rates in {int(bad.sum())} row(s):\n"
            f"{tasks.loc[bad].head(10)}"
        )
    if top is not None and (isinstance(top, bool) or not isinstance(top, int | np.integer)
                            or top < 1):
        raise ValueError(f"top must be a positive int or None, got {top!r}")
    ax = get_axes(ax)
    data = tasks.sort_values(["diff", "task_id"], ascending=[False, True], kind="stable")
    n = len(data)
    all_diff = data["diff"].to_numpy(dtype=float)
    counts = {"up": int((all_diff > 0).sum()), "down": int((all_diff < 0).sum()),
              "unchanged": int((all_diff == 0).sum())}
    moved = counts["up"] + counts["down"]
    if top is not None:
        data = _largest_moves(data, top)
    shown = len(data)
    y = np.arange(shown)[::-1].astype(float)
    diff = data["diff"].to_numpy(dtype=float)
    direction = np.where(diff > 0, "up", np.where(diff < 0, "down", "unchanged"))
    colors = [DIRECTION_COLORS[d] for d in direction]
    parent = data["rate_parent"].to_numpy(dtype=float)
    child = data["rate_child"].to_numpy(dtype=float)
    ax.hlines(y, parent, child, colors=colors, lw=2, zorder=1)
    ax.scatter(parent, y, facecolors="white", edgecolors="0.3", zorder=2, gid="parent")
    for d, marker in DIRECTION_MARKERS.items():
        these = direction == d
        if these.any():
            style = {"marker": marker, "edgecolors": "0.3", **kwargs}
            ax.scatter(child[these], y[these], color=DIRECTION_COLORS[d], zorder=3,
                       gid=f"child-{d}", **style)
    handles = [Line2D([], [], color=DIRECTION_COLORS[d], lw=2, marker=DIRECTION_MARKERS[d],
                      mec="0.3") for d in DIRECTION_COLORS]
    names = [f"{d} ({counts[d]})" for d in DIRECTION_COLORS]
    handles += [Line2D([], [], ls="", marker="o", mfc="white", mec="0.3"),
                Line2D([], [], ls="", marker="o", mfc="0.5", mec="0.3")]
    names += [parent_label, child_label]
    ax.legend(handles, names, title=f"{moved} of {n} tasks moved", fontsize=8,
              loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if shown < n:
        ax.text(1.02, 0.0, _hidden_note(shown, moved, counts["unchanged"]),
                transform=ax.transAxes, ha="left", va="bottom", fontsize=8, color="0.3",
                gid="hidden-note")
    if shown <= 40:
        ax.set_yticks(y, [str(t) for t in data["task_id"]], fontsize=7)
    else:
        ax.set_yticks([])
    ax.set_xlim(-0.05, 1.05)
    if shown == 0:
        ax.set_ylim(-1, 1)
        ax.text(0.5, 0.5, f"no task moved ({n} unchanged)", ha="center", va="center",
                transform=ax.transAxes, color="0.4")
    ylabel = f"task ({n})" if shown == n else f"task ({shown} of {n} shown)"
    return finish(ax, xlabel="pass rate over the repeats the decision read", ylabel=ylabel,
                  title=title)


def _largest_moves(data: pd.DataFrame, top: int) -> pd.DataFrame:
    """The ``top`` moved rows of ``data`` with the largest ``|diff|``, in ``data``'s order."""
    moved = data[data["diff"] != 0]
    size = moved["diff"].abs().rename("size")
    keep = (moved.assign(size=size).sort_values(["size", "task_id"], ascending=[False, True],
                                                kind="stable").head(top).index)
    return data.loc[data.index.isin(keep)]


def _hidden_note(shown: int, moved: int, unchanged: int) -> str:
    hidden = [f"{moved - shown} moved, smaller |Δ|"] if moved > shown else []
    hidden += [f"{unchanged} unchanged"] if unchanged else []
    return "not shown:\n" + "\n".join(hidden)


def power_curve(table, *, x="n_tasks", hue="k", target=0.8, title=None, ax=None, **kwargs):
    """Draw power against the number of tasks (or the effect), one line per K.

    Parameters
    ----------
    table : DataFrame
        The output of :func:`gsme.stats.power_table` (``n_tasks, effect_pp, k, power,
        mde_pp``), filtered so that each (``hue``, ``x``) pair occurs once, e.g. one
        ``effect_pp`` when ``x="n_tasks"``.
    x : str
        ``"n_tasks"`` or ``"effect_pp"`` (any numeric column).
    hue : str or None
        One line per level of this column.
    target : float
        The power drawn as a dashed reference line.
    title : str, optional
        Axes title.
    ax : matplotlib Axes, optional
        Where to draw; the current Axes by default.
    **kwargs
        Passed to :meth:`matplotlib.axes.Axes.plot`.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from gsme import plot, power
    >>> table = power.power_table(n_tasks=[26, 50, 100], effect_pp=[5], k=[1, 3])
    >>> ax = plot.power_curve(table)
    >>> plt.close(ax.figure)
    """
    schema.require(table, [x, hue, "power"], "power table")
    key = [x] if hue is None else [hue, x]
    dup = table.duplicated(key, keep=False)
    if dup.any():
        raise schema.FrameError(
            f"power table has several rows per {key}; filter it to one value of the other "
            f"columns first. Offending rows:\n{table.loc[dup].head(10)}"
        )
    ax = get_axes(ax)
    groups = [(None, table)] if hue is None else list(table.groupby(hue, sort=True))
    colors = category_colors(range(len(groups))).values()
    for (level, group), color in zip(groups, colors):
        group = group.sort_values(x)
        name = "power" if level is None else (f"K={level}" if hue == "k" else str(level))
        ax.plot(group[x], group["power"], marker="o", color=color, label=name, **kwargs)
    ax.axhline(target, ls="--", color="0.3", lw=1, label=f"target power {target:g}")
    ax.set_ylim(0, 1.02)
    ax.legend()
    xlabel = {"n_tasks": "tasks (n)", "effect_pp": "true effect (pp)"}.get(x, x)
    return finish(ax, xlabel=xlabel, ylabel="power", title=title)


def _dodge(x: np.ndarray) -> np.ndarray:
    """Spread points sharing an x value across a slot of width ``_DODGE`` around it."""
    keys = pd.Series(x)
    rank = keys.groupby(keys, dropna=False).cumcount().to_numpy()
    size = keys.groupby(keys, dropna=False).transform("size").to_numpy()
    return x + ((rank + 0.5) / size - 0.5) * _DODGE * (size > 1)


def _hue_colors(data: pd.DataFrame, hue, palette):
    if hue is None:
        return [None], {None: CATEGORY_PALETTE[1]}
    if hue == "decision":
        levels = [d for d in schema.DECISIONS if (data[hue] == d).any()]
        palette = DECISION_COLORS if palette is None else palette
    else:
        levels = list(pd.unique(data[hue]))
        if palette is None:
            palette = category_colors(levels)
    missing = [lv for lv in levels if lv not in palette]
    if missing:
        raise ValueError(f"palette has no colour for {hue} level(s) {missing}")
    return levels, palette


def _hue_markers(levels, hue, markers) -> dict:
    if markers is None:
        markers = DECISION_MARKERS if hue == "decision" else {}
    return {level: markers.get(level, "o") for level in levels}


def _label_points(ax, x, y, names, labels) -> None:
    """Annotate the chosen points with their names; collisions keep the first one."""
    if labels is None or (isinstance(labels, bool | np.bool_) and not labels):
        return
    finite = np.isfinite(y)
    if isinstance(labels, bool | np.bool_):
        order = sorted(np.flatnonzero(finite), key=lambda i: (-abs(y[i]), names[i]))
    else:
        wanted = [str(name) for name in ([labels] if isinstance(labels, str) else labels)]
        order = [i for name in wanted for i in np.flatnonzero((names == name) & finite)]
    texts = [ax.annotate(names[i], (x[i], y[i]), xytext=_LABEL_OFFSETS[0][:2],
                         textcoords="offset points", fontsize=7, gid="label") for i in order]
    if texts:
        declutter(ax, texts, points=np.column_stack([x, y])[finite], offsets=_LABEL_OFFSETS)
