"""Interactive views of a run for Jupyter (ipywidgets is imported only when one is built).

The panel draws on its own matplotlib :class:`~matplotlib.figure.Figure` with the Agg
canvas, never through pyplot, and shows it as PNG bytes in an ``ipywidgets.Image``: it shows
wherever ipywidgets render, whatever the matplotlib backend (no ``%matplotlib inline``
needed), and leaves pyplot's current figure alone. ``tests/browser`` checks this in
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

from gsme import analysis, plot, schema

__all__ = ["Explorer", "explore"]


def explore(run, *, split="train", figsize=(15, 4.5), max_tasks=20, dpi=150) -> Explorer:
    """Build a panel to step through a run: round slider, candidate picker, transcripts.

    The slider sets the round ``r``: the z forest shows the decisions made up to ``r`` and
    the heatmap the archive after ``r``. The picker chooses one of those decided candidates:
    it is ringed in the z forest, the paired-task plot compares it with the parent of its
    decision over the repeats that decision read (under the adaptive design, per task the
    repeats up to the look it stopped at, so the tasks' mean Δ is the decision's), and the
    transcript viewer lists its failing valid trials. Everything drawn is computed by
    :func:`gsme.stats.paired_tasks` (with the run's gate, ``run.config.gate``) and
    :func:`gsme.archive.occupancy`.

    It stays readable on large runs: when more than ``max_tasks`` tasks are paired, the
    paired-task plot shows only the tasks that moved, at most ``max_tasks`` of them (the
    largest ``|Δ|``), and counts the rest; z-forest labels that would overlap are dropped,
    the picked candidate's first, then credits and culls by ``|z|``.

    Parameters
    ----------
    run : gsme.run.Run or any object with the same methods
        ``candidates()``, ``decisions()`` (with ``round``), ``trials(split=...)``,
        ``archive(round=...)``, ``transcript(ref) -> str`` and ``config.gate`` (the
        :class:`~gsme.settings.GateConfig` that decided).
    split : {"train", "test"}
        The split whose decisions and trials are shown.
    figsize : tuple of float
        Size of the three-plot figure, in inches (shown at 100 px per inch, or narrower to
        fit the page).
    max_tasks : int
        Most task rows the paired-task plot draws.
    dpi : int
        Resolution of the PNG the figure is rendered to.

    Returns
    -------
    Explorer
        Displays as the panel in a notebook; holds the widgets, the figure and its PNG.

    Raises
    ------
    ImportError
        When ipywidgets is not installed.
    ValueError
        When ``split`` is not a split or ``max_tasks`` not a positive int.

    Examples
    --------
    >>> from gsme.widgets import explore
    >>> explore(run)  # doctest: +SKIP
    """
    return Explorer(run, split=split, figsize=figsize, max_tasks=max_tasks, dpi=dpi)


class Explorer:
    """The panel :func:`explore` returns: ``widget`` to display, ``figure`` it draws on.

    ``round`` (IntSlider), ``candidate`` (Dropdown), ``trial`` (Dropdown of failing trials,
    valued by transcript reference) and ``transcript`` (HTML) are the panel's controls;
    ``image`` (Image) shows the figure, rendered to PNG (``png``) after every change.
    """

    def __init__(self, run, *, split, figsize, max_tasks=20, dpi=150):
        if split not in schema.SPLITS:
            raise ValueError(f"split must be one of {list(schema.SPLITS)}, got {split!r}")
        if isinstance(max_tasks, bool) or not isinstance(max_tasks, int) or max_tasks < 1:
            raise ValueError(f"max_tasks must be a positive int, got {max_tasks!r}")
        widgets = _ipywidgets()
        self.run, self.split, self.max_tasks, self.dpi = run, split, max_tasks, dpi
        self.gate = run.config.gate
        self.candidates = run.candidates()
        self.decisions = _with_round(run.decisions(), self.candidates)
        self.decisions = self.decisions[self.decisions["split"] == split]
        self.trials = run.trials(split=split)
        self.failing = analysis.failing_trials(self.trials)
        rounds = self.candidates["round"].astype(int)
        self.figure = Figure(figsize=figsize, dpi=dpi, layout="constrained")
        self.canvas = FigureCanvasAgg(self.figure)  # non-interactive, whatever the backend
        self.axes = self.figure.subplots(1, 3, width_ratios=[1.2, 1, 1])
        agent = getattr(run, "agent", None)
        if getattr(agent, "simulated", False):
            self.figure.suptitle(f"SIMULATED: {agent.name}", fontsize=10)
        self.round = widgets.IntSlider(min=int(rounds.min()), max=int(rounds.max()),
                                       value=int(rounds.max()), description="round")
        self.candidate = widgets.Dropdown(description="candidate")
        self.trial = widgets.Dropdown(description="failing trial",
                                      layout=widgets.Layout(width="420px"))
        self.transcript = widgets.HTML()
        self.image = widgets.Image(format="png", layout=widgets.Layout(
            width=f"{round(figsize[0] * 100)}px", max_width="100%", height="auto"))
        self.image.add_class("gsme-explorer-figure")
        self.widget = widgets.VBox([widgets.HBox([self.round, self.candidate]), self.image,
                                    self.trial, self.transcript])
        self._quiet = False
        self.round.observe(self._on_round, names="value")
        self.candidate.observe(self._on_candidate, names="value")
        self.trial.observe(self._on_trial, names="value")
        self._on_round({"new": self.round.value})

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    @property
    def png(self) -> bytes:
        """The figure as last shown, PNG bytes."""
        return bytes(self.image.value)

    def _on_round(self, change) -> None:
        r = change["new"]
        options = list(pd.unique(self._decided(r)["candidate"]))
        current = self.candidate.value
        with self._quietly():
            self.candidate.options = options
            self.candidate.value = current if current in options else (
                options[-1] if options else None)
        with self._sketching():
            cells = self.axes[1]
            cells.clear()
            self._draw_archive(cells, r)
            self._draw_forest(r)
            self._draw_candidate()
        self._show()

    def _on_candidate(self, change) -> None:
        if not self._quiet:
            with self._sketching():
                self._draw_forest(self.round.value)
                self._draw_candidate()
            self._show()

    def _on_trial(self, change) -> None:
        if not self._quiet:
            self._show_transcript()

    def _decided(self, r) -> pd.DataFrame:
        return self.decisions[self.decisions["round"] <= r]

    def _draw_forest(self, r) -> None:
        forest, decided = self.axes[0], self._decided(r)
        forest.clear()
        if not len(decided):
            _note(forest, f"no decisions up to round {r}")
            return
        picked = self.candidate.value
        plot.z_forest(decided, labels=_label_order(decided, picked), highlight=picked,
                      ax=forest, title=f"decisions up to round {r}")

    def _draw_archive(self, ax, r) -> None:
        from gsme import archive

        elites = self.run.archive(round=r)
        whys = pd.concat([self.candidates["why"], elites["why"]]).dropna()
        table = archive.occupancy(elites, where_levels=list(schema.LEVERS),
                                  why_levels=sorted(set(whys)))
        if table.empty:
            _note(ax, "no pathology labels yet")
        else:
            plot.occupancy(table, ax=ax, cbar=False, title=f"archive after round {r}")

    def _draw_candidate(self) -> None:
        from gsme import stats

        child, ax = self.candidate.value, self.axes[2]
        ax.clear()
        failing = []
        if child is None:
            _note(ax, "no candidate to compare")
        else:
            row = self.decisions[self.decisions["candidate"] == child].iloc[-1]
            tasks = stats.paired_tasks(self.trials, parent=row["parent"], child=child,
                                       split=self.split, config=self.gate)
            top = self.max_tasks if len(tasks) > self.max_tasks else None
            plot.paired_tasks(tasks, parent_label=row["parent"], child_label=child, top=top,
                              ax=ax, title=f"{child} vs {row['parent']}: {row['decision']}")
            failing = _transcripts(self.failing, child)
        with self._quietly():
            self.trial.options = failing
            self.trial.value = failing[0][1] if failing else None
        self._show_transcript()

    def _show_transcript(self) -> None:
        ref = self.trial.value
        text = "(no failing trial with a transcript)" if ref is None else self.run.transcript(ref)
        self.transcript.value = (
            f"<pre style='max-height:24em;overflow:auto'>{html.escape(text)}</pre>")

    def _show(self) -> None:
        """Render the figure to PNG and hand the bytes to the Image widget.

        One Agg draw (it runs the constrained layout once), encoded by Pillow; ``savefig``
        would lay the figure out twice.
        """
        from PIL import Image

        self.canvas.draw()
        pixels = Image.fromarray(np.asarray(self.canvas.buffer_rgba())).convert("RGB")
        buffer = io.BytesIO()
        pixels.save(buffer, format="png", dpi=(self.dpi, self.dpi), compress_level=3)
        self.image.value = buffer.getvalue()

    @contextmanager
    def _sketching(self):
        """Plot on a bare canvas, then put the Agg canvas back for :meth:`_show`.

        seaborn's heatmap draws the whole figure to check its tick labels; on the bare
        canvas that draw costs nothing, and the figure is rendered once, in ``_show``.
        """
        FigureCanvasBase(self.figure)
        try:
            yield
        finally:
            self.figure.set_canvas(self.canvas)

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
    rank = (decided.assign(other=decided["candidate"] != picked,
                           unsettled=~decided["decision"].isin(["credit", "cull"]),
                           smaller=-decided["z"].abs())
            .sort_values(["other", "unsettled", "smaller", "candidate"], kind="stable"))
    return list(pd.unique(rank["candidate"].astype(str)))


def _transcripts(failing: pd.DataFrame, candidate) -> list[tuple[str, str]]:
    """(label, transcript ref) of the candidate's failing trials that kept a transcript."""
    rows = failing[(failing["candidate"] == candidate) & failing["trajectory"].notna()]
    rows = rows.sort_values(["task_id", "repeat", "attempt"])
    labels = rows["pathology"].where(rows["pathology"].notna(), "unlabelled")
    return [(f"{task} repeat={repeat} · {label}", ref) for task, repeat, label, ref
            in zip(rows["task_id"], rows["repeat"], labels, rows["trajectory"])]


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
