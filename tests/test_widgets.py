"""gsme.widgets.explore: the controls redraw the figure and the transcript viewer."""

import matplotlib

matplotlib.use("Agg")

import sys

import pandas as pd
import pytest
from matplotlib.collections import PathCollection

from gsme import schema, widgets

TASKS = ["t1", "t2", "t3", "t4"]
# pass pattern per candidate and task over K=3 repeats
PASSES = {
    "c0": {"t1": [0, 0, 0], "t2": [1, 1, 0], "t3": [0, 0, 0], "t4": [1, 1, 1]},
    "c1": {"t1": [1, 1, 1], "t2": [1, 1, 1], "t3": [0, 1, 0], "t4": [1, 1, 1]},
    "c2": {"t1": [1, 1, 1], "t2": [0, 1, 1], "t3": [0, 0, 0], "t4": [1, 1, 1]},
}


class FakeRun:
    """The methods :func:`gsme.widgets.explore` uses, over three candidates in two rounds."""

    def candidates(self):
        return pd.DataFrame({
            "candidate": ["c0", "c1", "c2"], "parents": ["", "c0", "c1"],
            "kind": ["baseline", "mutation", "mutation"], "where": [None, "prompt", "runtime"],
            "why": [None, "careless", "runaway"], "patch_id": None, "beacon": None,
            "env_gate": None, "commit": None, "branch": None, "round": [0, 1, 2],
            "rationale": None,
        })

    def decisions(self):
        rows = [("c1", "c0", 1, 2.4, "credit"), ("c2", "c1", 2, -0.8, "inconclusive")]
        out = pd.DataFrame(rows, columns=["candidate", "parent", "round", "z", "decision"])
        return out.assign(split="train", n_tasks=4, n_dropped=0, n_changed=2, k=3,
                          rate_parent=0.5, rate_child=0.6, delta_pp=10.0, se_pp=4.0,
                          p_value=0.02, activation_rate=1.0, gate_failed=None, reason="")

    def trials(self, *, split=None):
        rows = [(c, t, "train", k, bool(p), f"{c}/{t}/{k}", None if p else "careless")
                for c, by_task in PASSES.items() for t, ps in by_task.items()
                for k, p in enumerate(ps)]
        cols = ["candidate", "task_id", "split", "k", "passed", "trajectory", "pathology"]
        out = schema.as_trials(pd.DataFrame(rows, columns=cols))
        return out if split is None else out[out["split"] == split]

    def archive(self, round=None):
        if round is not None and round < 1:
            return schema.empty("archive")
        return pd.DataFrame({"where": ["prompt"], "why": ["careless"], "candidate": ["c1"],
                             "rate": [0.83], "delta_pp": [25.0], "z": [2.4], "round": [1]})

    def transcript(self, ref):
        return f"<transcript {ref}>"


@pytest.fixture
def panel():
    return widgets.explore(FakeRun())


def forest_points(panel):
    ax = panel.axes[0]
    return sorted(tuple(p) for c in ax.collections if isinstance(c, PathCollection)
                  for p in c.get_offsets().tolist())


def test_initial_panel_shows_the_last_round(panel):
    assert (panel.round.min, panel.round.max, panel.round.value) == (0, 2, 2)
    assert list(panel.candidate.options) == ["c1", "c2"] and panel.candidate.value == "c2"
    assert forest_points(panel) == [(1.0, 2.4), (2.0, -0.8)]
    cells = panel.axes[1]
    assert cells.get_title() == "archive after round 2"
    assert sorted(t.get_text() for t in cells.texts).count("0.83") == 1
    assert sum(p.get_gid() == "empty-cell" for p in cells.patches) == 4 * 2 - 1
    assert panel.axes[2].get_title() == "c2 vs c1: inconclusive"
    # c2's failing trials: t2 k=0, t3 k=0..2; the first one's transcript is shown
    assert [ref for _, ref in panel.trial.options] == ["c2/t2/0", "c2/t3/0", "c2/t3/1",
                                                       "c2/t3/2"]
    assert "&lt;transcript c2/t2/0&gt;" in panel.transcript.value


def test_round_slider_redraws_forest_archive_and_picker(panel):
    panel.round.value = 1
    assert forest_points(panel) == [(1.0, 2.4)]
    assert panel.axes[0].get_title() == "decisions up to round 1"
    assert list(panel.candidate.options) == ["c1"] and panel.candidate.value == "c1"
    assert panel.axes[1].get_title() == "archive after round 1"
    assert panel.axes[2].get_title() == "c1 vs c0: credit"
    assert panel.axes[2].get_legend().get_title().get_text() == "3 of 4 tasks moved"
    panel.round.value = 0
    assert forest_points(panel) == []
    assert [t.get_text() for t in panel.axes[0].texts] == ["no decisions up to round 0"]
    assert panel.candidate.value is None
    assert sum(p.get_gid() == "empty-cell" for p in panel.axes[1].patches) == 4 * 2
    assert "no failing trial" in panel.transcript.value


def test_candidate_and_trial_pickers_update_plot_and_transcript(panel):
    panel.candidate.value = "c1"
    assert panel.axes[2].get_title() == "c1 vs c0: credit"
    assert [ref for _, ref in panel.trial.options] == ["c1/t3/0", "c1/t3/2"]
    assert "c1/t3/0" in panel.transcript.value
    panel.trial.value = "c1/t3/2"
    assert "c1/t3/2" in panel.transcript.value
    assert forest_points(panel) == [(1.0, 2.4), (2.0, -0.8)]  # the round is unchanged


def test_missing_ipywidgets_raises_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    with pytest.raises(ImportError, match="pip install ipywidgets"):
        widgets.explore(FakeRun())


def test_bad_split_is_named():
    with pytest.raises(ValueError, match="split"):
        widgets.explore(FakeRun(), split="dev")
