"""Interactive views of a run for Jupyter (ipywidgets is imported only when one is built)."""

from __future__ import annotations

import html
from contextlib import contextmanager

import pandas as pd
from matplotlib.figure import Figure

from gsme import analysis, plot, schema


def explore(run, *, split="train", figsize=(15, 4.5)) -> Explorer:
    """Build a panel to step through a run: round slider, candidate picker, transcripts.

    The slider sets the round ``r``: the z forest shows the decisions made up to ``r`` and
    the heatmap the archive after ``r``. The picker chooses one of those decided candidates:
    the paired-task plot compares it with the parent of its decision, and the transcript
    viewer lists its failing valid trials. Everything drawn is computed by
    :func:`gsme.stats.paired_tasks` and :func:`gsme.archive.occupancy`.

    Parameters
    ----------
    run : gsme.run.Run or any object with the same methods
        ``candidates()``, ``decisions()`` (with ``round``), ``trials(split=...)``,
        ``archive(round=...)`` and ``transcript(ref) -> str``.
    split : {"train", "test"}
        The split whose decisions and trials are shown.
    figsize : tuple of float
        Size of the three-plot figure, in inches.

    Returns
    -------
    Explorer
        Displays as the panel in a notebook; holds the widgets and the figure.

    Raises
    ------
    ImportError
        When ipywidgets is not installed.

    Examples
    --------
    >>> from gsme.widgets import explore
    >>> explore(run)  # doctest: +SKIP
    """
    return Explorer(run, split=split, figsize=figsize)


class Explorer:
    """The panel :func:`explore` returns: ``widget`` to display, ``figure`` it draws on.

    ``round`` (IntSlider), ``candidate`` (Dropdown), ``trial`` (Dropdown of failing trials,
    valued by transcript reference) and ``transcript`` (HTML) are the panel's controls.
    """

    def __init__(self, run, *, split, figsize):
        if split not in schema.SPLITS:
            raise ValueError(f"split must be one of {list(schema.SPLITS)}, got {split!r}")
        widgets = _ipywidgets()
        self.run, self.split = run, split
        self.candidates = run.candidates()
        self.decisions = _with_round(run.decisions(), self.candidates)
        self.decisions = self.decisions[self.decisions["split"] == split]
        self.trials = run.trials(split=split)
        self.failing = analysis.failing_trials(self.trials)
        rounds = self.candidates["round"].astype(int)
        self.figure = Figure(figsize=figsize, layout="constrained")
        self.axes = self.figure.subplots(1, 3, width_ratios=[1.2, 1, 1])
        self.round = widgets.IntSlider(min=int(rounds.min()), max=int(rounds.max()),
                                       value=int(rounds.max()), description="round")
        self.candidate = widgets.Dropdown(description="candidate")
        self.trial = widgets.Dropdown(description="failing trial",
                                      layout=widgets.Layout(width="420px"))
        self.transcript = widgets.HTML()
        self.output = widgets.Output()
        self.widget = widgets.VBox([widgets.HBox([self.round, self.candidate]), self.output,
                                    self.trial, self.transcript])
        self._quiet = False
        self.round.observe(self._on_round, names="value")
        self.candidate.observe(self._on_candidate, names="value")
        self.trial.observe(self._on_trial, names="value")
        self._on_round({"new": self.round.value})

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def _on_round(self, change) -> None:
        r = change["new"]
        decided = self.decisions[self.decisions["round"] <= r]
        options = list(pd.unique(decided["candidate"]))
        current = self.candidate.value
        with self._quietly():
            self.candidate.options = options
            self.candidate.value = current if current in options else (
                options[-1] if options else None)
        forest, cells, _ = self.axes
        forest.clear()
        if len(decided):
            plot.z_forest(decided, labels=True, ax=forest, title=f"decisions up to round {r}")
        else:
            _note(forest, f"no decisions up to round {r}")
        cells.clear()
        self._draw_archive(cells, r)
        self._draw_candidate()
        self._show()

    def _on_candidate(self, change) -> None:
        if not self._quiet:
            self._draw_candidate()
            self._show()

    def _on_trial(self, change) -> None:
        if not self._quiet:
            self._show_transcript()

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
                                       split=self.split)
            plot.paired_tasks(tasks, parent_label=row["parent"], child_label=child, ax=ax,
                              title=f"{child} vs {row['parent']}: {row['decision']}")
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
        from IPython.display import display

        self.output.clear_output(wait=True)
        with self.output:
            display(self.figure)

    @contextmanager
    def _quietly(self):
        """Change controls without their observers redrawing (the caller redraws once)."""
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False


def _transcripts(failing: pd.DataFrame, candidate) -> list[tuple[str, str]]:
    """(label, transcript ref) of the candidate's failing trials that kept a transcript."""
    rows = failing[(failing["candidate"] == candidate) & failing["trajectory"].notna()]
    rows = rows.sort_values(["task_id", "k", "attempt"])
    return [(f"{r.task_id} k={r.k} · {r.pathology if pd.notna(r.pathology) else 'unlabelled'}",
             r.trajectory) for r in rows.itertuples()]


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
