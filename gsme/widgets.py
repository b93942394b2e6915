"""Interactive views of a run for Jupyter (ipywidgets is imported only when one is built).

Each figure of the panel is its own matplotlib :class:`~matplotlib.figure.Figure` drawn
with the Agg canvas, never through pyplot, at a fixed layout, and shown as PNG bytes in an
``ipywidgets.Image`` at 100 px per inch: it shows wherever ipywidgets render (JupyterLab,
Notebook 7, VS Code), whatever the matplotlib backend, and leaves pyplot's current figure
alone. Only the figures a control changes are redrawn. ``tests/browser`` checks this in
JupyterLab with a headless Chromium.
"""

from __future__ import annotations

import html
import io
from contextlib import contextmanager

import numpy as np
import pandas as pd
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from gsme import archive, explain, parent_trials, plot, report, schema, stats, view

__all__ = ["Explorer", "explore"]

#: Each figure's share of the panel's width and its height in inches. The candidate list
#: sits beside the z forest, the retention plot (drawn once) beside the archive.
SIZES = {"forest": (0.72, 3.4), "archive": (0.76, 4.0), "retention": (0.24, 4.0),
         "paired": (1.0, 3.6)}


def explore(run, *, split="train", width=10.0, max_tasks=20, dpi=100) -> Explorer:
    """Build a panel that shows why each candidate was kept: its gate, patch and trials.

    The round slider sets the round ``r``: the z forest shows the decisions made up to
    ``r``, the archive map the elites after ``r`` (named, over every why of the run), the
    archive's coverage and best rate by round, and train Δ against sealed Δ once the run is
    sealed. The candidate list beside the z forest (each entry with its decision and z;
    it opens on the harness the run reports, :func:`gsme.explain.selected`) picks one
    decided candidate: it is ringed in the z forest; the paired-task plot compares it with
    the parent of its decision over the repeats that decision read; the patch pane shows
    its diff from that parent, the evolver's rationale, where × why, env gate, beacon,
    activation rate and decision; and its trials and its parent's of the same task and
    repeat show side by side, filtered by task, pathology and change (fixed, broken, ...).
    Everything shown is computed by :mod:`gsme.explain`, :func:`gsme.stats.paired_tasks`
    (with the run's gate) and :mod:`gsme.archive`.

    It stays readable on large runs and in a 1,000 px column: figures are ``width``
    inches wide, shown at 100 px per inch (no text under 7 pt, 9.7 px); when more than
    ``max_tasks`` tasks are paired, the paired-task plot shows only the tasks that moved,
    at most ``max_tasks`` of them (the largest ``|Δ|``), and counts the rest; a z-forest
    label that would overlap is moved around its point, and dropped only when no place is
    free (the picked candidate's first, then credits and culls by ``|z|``).

    Parameters
    ----------
    run : gsme.run.Run
        A run, live (open read-only) or sealed.
    split : {"train", "test"}
        The split whose decisions and trials are shown.
    width : float
        Width of the panel's figures, in inches (shown at 100 px per inch, or narrower to
        fit the page).
    max_tasks : int
        Most task rows the paired-task plot draws.
    dpi : int
        Resolution of the PNGs the figures are rendered to (200 for sharp text on
        high-density screens, at about twice the redraw time).

    Returns
    -------
    Explorer
        Displays as the panel in a notebook; holds the widgets, the figures and their PNGs.

    Raises
    ------
    ImportError
        When ipywidgets is not installed.
    ValueError
        When ``split`` is not a split, ``width`` not a positive number or ``max_tasks``
        not a positive int.

    Examples
    --------
    >>> from gsme import experiments
    >>> from gsme.widgets import explore
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> explorer = explore(run)  # shown when it is the last expression of a notebook cell
    >>> run.close()
    """
    return Explorer(run, split=split, width=width, max_tasks=max_tasks, dpi=dpi)


class Explorer:
    """The panel :func:`explore` returns: ``widget`` to display.

    Controls: ``round`` (IntSlider), ``candidate`` (Select, valued by candidate id),
    ``task``, ``pathology``, ``change`` (Dropdown filters, None for any) and ``pair``
    (Dropdown of the filtered rows of :attr:`pairs`). Views: ``images`` (an Image per
    figure: ``forest``, ``archive``, ``retention``, ``paired``; ``figures`` and ``axes`` by
    the same names), ``patch`` (HTML: the patch pane) and ``sides`` (HTML: the parent's and the
    child's transcripts side by side).

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1, policy="greedy")
    >>> panel = explore(run)
    >>> type(panel).__name__, panel.candidate.value, sorted(panel.images)
    ('Explorer', 'c0001', ['archive', 'forest', 'paired', 'retention'])
    >>> run.close()
    """

    def __init__(self, run, *, split, width=10.0, max_tasks=20, dpi=100):
        if split not in schema.SPLITS:
            raise ValueError(f"split must be one of {list(schema.SPLITS)}, got {split!r}")
        if isinstance(max_tasks, bool) or not isinstance(max_tasks, int) or max_tasks < 1:
            raise ValueError(f"max_tasks must be a positive int, got {max_tasks!r}")
        if isinstance(width, bool) or not isinstance(width, (int, float)) or not width > 0:
            raise ValueError(f"width must be a positive number of inches, got {width!r}")
        widgets = _ipywidgets()
        self.run, self.split, self.max_tasks, self.dpi = run, split, max_tasks, dpi
        self.gate = run.config.gate
        self.candidates = run.candidates()
        decisions = _with_round(run.decisions(), self.candidates)
        self.decisions = decisions[decisions["split"] == split]
        reasons = explain.keep_reasons(run, split=split)
        self.decisions = self.decisions.assign(boundary=reasons["boundary"].to_numpy())
        self.trials = run.trials(split=split)
        self.details = explain.patch_details(run, split=split, reasons=reasons)
        self.whys = explain.why_levels(run)
        self.selected = explain.selected(run)
        self.ship = report.run_ship_line(run)
        self.progress = explain.archive_progress(run)
        self.pairs = explain.paired_trials(self.trials.iloc[:0], parent="", child="",
                                           split=split)
        agent = getattr(run, "agent", None)
        self.tag = "SIMULATED: " if getattr(agent, "simulated", False) else ""

        self.figures, self.canvases, self.images, self.axes = {}, {}, {}, {}
        for name, (share, height) in SIZES.items():
            size = (width * share, height)
            figure = Figure(figsize=size, dpi=dpi)
            self.figures[name], self.canvases[name] = figure, FigureCanvasAgg(figure)
            self.images[name] = widgets.Image(format="png", layout=widgets.Layout(
                width=f"{round(size[0] * 100)}px", max_width="100%", height="auto"))
            self.images[name].add_class(f"gsme-explorer-{name}")
        self.axes["forest"] = self.figures["forest"].add_axes((0.09, 0.14, 0.89, 0.76))
        grid = self.figures["archive"]
        self.axes["archive"] = grid.add_axes((0.16, 0.4, 0.45, 0.52))
        self.axes["colorbar"] = grid.add_axes((0.625, 0.4, 0.016, 0.52))
        self.axes["progress"] = grid.add_axes((0.82, 0.4, 0.17, 0.52))
        self.axes["retention"] = self.figures["retention"].add_axes((0.24, 0.4, 0.5, 0.52))
        self.axes["paired"] = self.figures["paired"].add_axes((0.1, 0.14, 0.6, 0.76))
        self._draw_retention(run)
        self._show("retention")

        rounds = self.candidates["round"].astype(int)
        self.round = widgets.IntSlider(min=int(rounds.min()), max=int(rounds.max()),
                                       value=int(rounds.max()), description="round")
        self.candidate = widgets.Select(rows=14, layout=widgets.Layout(
            width=f"{round(width * (1 - SIZES['forest'][0]) * 100) - 12}px"))
        self.candidate.add_class("gsme-explorer-candidates")
        self.patch = widgets.HTML()
        self.patch.add_class("gsme-explorer-patch")
        wide = widgets.Layout(width="32%")
        self.task = widgets.Dropdown(description="task", layout=wide)
        self.pathology = widgets.Dropdown(description="pathology", layout=wide)
        self.change = widgets.Dropdown(description="change", layout=wide)
        self.pair = widgets.Dropdown(description="repeat", layout=widgets.Layout(width="98%"))
        self.sides = widgets.HTML()
        self.sides.add_class("gsme-explorer-sides")
        heading = widgets.HTML(
            f"<b>{html.escape(self.tag)}candidates</b> (decision, z; ★ the reported harness "
            f"{html.escape(self.selected)})")
        ship = widgets.HTML(f"<p><b>{html.escape(self.ship)}</b></p>")
        ship.add_class("gsme-explorer-ship")
        self.widget = widgets.VBox([
            ship, self.round,
            widgets.HBox([self.images["forest"], widgets.VBox([heading, self.candidate])]),
            widgets.HBox([self.images["archive"], self.images["retention"]]),
            self.images["paired"], self.patch,
            widgets.HTML("<b>parent and child, side by side</b>"),
            widgets.HBox([self.task, self.pathology, self.change]), self.pair, self.sides,
        ])
        self._quiet = False
        self.round.observe(self._on_round, names="value")
        self.candidate.observe(self._on_candidate, names="value")
        for control in (self.task, self.pathology, self.change):
            control.observe(self._on_filter, names="value")
        self.pair.observe(self._on_pair, names="value")
        self._on_round({"new": self.round.value})

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def png(self, name: str = "forest") -> bytes:
        """The figure ``name`` (``forest``, ``archive``, ``retention``, ``paired``) as last
        shown, PNG bytes."""
        return bytes(self.images[name].value)

    # ------------------------------------------------------------------ events

    def _on_round(self, change) -> None:
        r = change["new"]
        decided = self._decided(r).drop_duplicates("child", keep="last")
        options = [(self._label(row), row.child) for row in decided.itertuples()]
        ids = [value for _, value in options]
        current = self.candidate.value
        pick = (current if current in ids else self.selected if self.selected in ids
                else ids[-1] if ids else None)
        with self._quietly():
            self.candidate.options = options
            self.candidate.value = pick
        with self._sketching(self.figures["archive"]):
            self._draw_archive(r)
        self._show("archive")
        self._draw_forest(r)
        if pick != current or not self.patch.value:
            self._show_candidate()

    def _on_candidate(self, change) -> None:
        if not self._quiet:
            self._draw_forest(self.round.value)
            self._show_candidate()

    def _on_filter(self, change) -> None:
        if not self._quiet:
            self._show_pairs()

    def _on_pair(self, change) -> None:
        if not self._quiet:
            self._show_sides()

    # ------------------------------------------------------------------ drawing

    def _decided(self, r) -> pd.DataFrame:
        return self.decisions[self.decisions["round"] <= r]

    def _label(self, row) -> str:
        z = "z —" if pd.isna(row.z) else f"z={row.z:+.2f}"
        kept = " · kept" if bool(getattr(row, "kept", False)) else ""
        star = " ★" if row.child == self.selected else ""
        return f"{row.child} · {row.decision} · {z}{kept}{star}"

    def _draw_forest(self, r) -> None:
        forest, decided = self.axes["forest"], self._decided(r)
        forest.clear()
        if not len(decided):
            _note(forest, f"no decisions up to round {r}")
        else:
            picked = self.candidate.value
            plot.z_forest(decided, labels=_label_order(decided, picked), highlight=picked,
                          boundary="boundary", kept="kept", ax=forest)
            forest.set_title(f"{self.tag}decisions up to round {r}", loc="left")
            forest.legend(fontsize=8, ncols=3, loc="lower right", bbox_to_anchor=(1.0, 1.0),
                          frameon=False, borderaxespad=0.1)
        self._show("forest")

    def _draw_archive(self, r) -> None:
        ax, bar, progress = self.axes["archive"], self.axes["colorbar"], self.axes["progress"]
        for each in (ax, bar, progress):
            each.clear()
        elites = explain.archive_table(self.run, round=r)
        plot.occupancy(archive.occupancy(elites, why_levels=self.whys),
                       names=explain.elite_names(elites, why_levels=self.whys),
                       credited=archive.occupancy(elites, why_levels=self.whys,
                                                  value="credited"),
                       cbar_ax=bar, ax=ax, title=f"{self.tag}archive after round {r}")
        plot.archive_progress(self.progress, ax=progress, title="archive by round")
        progress.axvline(r, color="0.6", lw=6, alpha=0.3, zorder=0, gid="current-round")

    def _draw_retention(self, run) -> None:
        ax = self.axes["retention"]
        if run.sealed_result is None:
            _note(ax, "not sealed yet:\nno sealed Δ to\nset against train Δ")
            ax.set_title("retention")
        else:
            plot.retention(report.run_table(run), label="selected", ax=ax,
                           title="train vs sealed Δ")

    def _show_candidate(self) -> None:
        child, ax = self.candidate.value, self.axes["paired"]
        ax.clear()
        if child is None:
            _note(ax, "no candidate to compare")
            self.patch.value = "<p>(no decided candidate up to this round)</p>"
            self._parent = None
        else:
            row = self.decisions[self.decisions["child"] == child].iloc[-1]
            self._parent = row["parent"]
            seen, reference = parent_trials.of_child(self.trials, self.candidates, child,
                                                     split=self.split, gate=self.gate)
            tasks = stats.paired_tasks(seen, parent=reference, child=child, split=self.split,
                                       gate=self.gate)
            top = self.max_tasks if len(tasks) > self.max_tasks else None
            plot.paired_tasks(tasks, parent_label=row["parent"], child_label=child, top=top,
                              ax=ax, title=f"{self.tag}{child} vs {row['parent']}: "
                                           f"{row['decision']}")
            detail = next(self.details[self.details["candidate"] == child].itertuples())
            self.patch.value = (f"<h4>patch {html.escape(child)} ← "
                                f"{html.escape(str(row['parent']))}</h4>"
                                f"{view.patch_html(detail)}")
        self._show("paired")
        self._reset_filters()

    def _both(self) -> pd.DataFrame:
        names = [self._parent, self.candidate.value]
        return self.trials[self.trials["candidate"].isin(names)]

    def _reset_filters(self) -> None:
        child = self.candidate.value
        every = (explain.paired_trials(self._both(), parent=self._parent, child=child,
                                       split=self.split) if child is not None else self.pairs)
        labels = sorted(set(every["pathology_parent"].dropna())
                        | set(every["pathology_child"].dropna()))
        counts = every["change"].value_counts()
        with self._quietly():
            self.task.options = [("all tasks", None)] + [
                (t, t) for t in pd.unique(every["task_id"])]
            self.pathology.options = [("any", None)] + [(p, p) for p in labels]
            self.change.options = [("any", None)] + [
                (f"{c} ({counts[c]})", c) for c in explain.CHANGES if c in counts]
            self.task.value = self.pathology.value = self.change.value = None
        self._show_pairs()

    def _show_pairs(self) -> None:
        child = self.candidate.value
        self.pairs = (self.pairs.iloc[:0] if child is None else explain.paired_trials(
            self._both(), parent=self._parent, child=child, split=self.split,
            task_id=self.task.value, pathology=self.pathology.value,
            change=self.change.value))
        options = [(_pair_label(r), i) for i, r in enumerate(self.pairs.itertuples())]
        moved = np.flatnonzero(self.pairs["change"].isin(["fixed", "broken"]).to_numpy())
        with self._quietly():
            self.pair.options = options
            self.pair.value = (int(moved[0]) if len(moved) else 0) if options else None
        self._show_sides()

    def _show_sides(self) -> None:
        i = self.pair.value
        if i is None:
            self.sides.value = "<p>(no trials match the filters)</p>"
            return
        row = next(self.pairs.iloc[[i]].itertuples())
        self.sides.value = view.pair_html(row, parent=self._parent, child=self.candidate.value,
                                          texts=self.run.transcript)

    def _show(self, name: str) -> None:
        """Render figure ``name`` to PNG and hand the bytes to its Image widget.

        One Agg draw at the figure's fixed layout, encoded by Pillow.
        """
        from PIL import Image

        canvas = self.canvases[name]
        canvas.draw()
        pixels = Image.fromarray(np.asarray(canvas.buffer_rgba())).convert("RGB")
        buffer = io.BytesIO()
        pixels.save(buffer, format="png", dpi=(self.dpi, self.dpi), compress_level=1)
        self.images[name].value = buffer.getvalue()

    @contextmanager
    def _sketching(self, figure):
        """Plot on a bare canvas, then put the Agg canvas back for :meth:`_show`.

        seaborn's heatmap draws the whole figure to check its tick labels; on the bare
        canvas that draw costs nothing, and the figure is rendered once, in ``_show``.
        """
        canvas = figure.canvas
        FigureCanvasBase(figure)
        try:
            yield
        finally:
            figure.set_canvas(canvas)

    @contextmanager
    def _quietly(self):
        """Change controls without their observers redrawing (the caller redraws once)."""
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False


def _label_order(decided: pd.DataFrame, picked) -> list[str]:
    """Candidates to label in the z forest, most important first: the picked one, then the
    credits and culls, then the rest, each by ``|z|``; overlapping labels drop from the end."""
    rank = (decided.assign(other=decided["child"] != picked,
                           unsettled=~decided["decision"].isin(["credit", "cull"]),
                           smaller=-decided["z"].abs())
            .sort_values(["other", "unsettled", "smaller", "child"], kind="stable"))
    return list(pd.unique(rank["child"].astype(str)))


def _pair_label(row) -> str:
    return (f"{row.task_id} repeat {int(row.repeat)} · {row.change} · parent "
            f"{_outcome(row.passed_parent, row.pathology_parent)} · child "
            f"{_outcome(row.passed_child, row.pathology_child)}")


def _outcome(passed, pathology) -> str:
    if pd.isna(passed):
        return "—"
    return "passed" if passed else f"failed ({'unlabelled' if pd.isna(pathology) else pathology})"


def _with_round(decisions: pd.DataFrame, candidates: pd.DataFrame) -> pd.DataFrame:
    if "round" in decisions.columns:
        return decisions
    return decisions.merge(candidates[["candidate", "round"]], on="candidate", how="left")


def _note(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def _ipywidgets():
    try:
        import ipywidgets
    except ImportError as err:
        raise ImportError(
            "gsme.widgets needs ipywidgets; install it with `pip install ipywidgets` "
            "(and restart the kernel)"
        ) from err
    return ipywidgets
