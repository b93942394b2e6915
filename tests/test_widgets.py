"""gsme.widgets.explore: the controls redraw the figure and the transcript viewer."""

import matplotlib

matplotlib.use("Agg")

import io
import sys
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection
from PIL import Image

from gsme import schema, widgets
from gsme.settings import GateConfig

TASKS = ["t1", "t2", "t3", "t4"]
# pass pattern per candidate and task over K=3 repeats
PASSES = {
    "c0": {"t1": [0, 0, 0], "t2": [1, 1, 0], "t3": [0, 0, 0], "t4": [1, 1, 1]},
    "c1": {"t1": [1, 1, 1], "t2": [1, 1, 1], "t3": [0, 1, 0], "t4": [1, 1, 1]},
    "c2": {"t1": [1, 1, 1], "t2": [0, 1, 1], "t3": [0, 0, 0], "t4": [1, 1, 1]},
}


class FakeRun:
    """The methods :func:`gsme.widgets.explore` uses, over three candidates in two rounds."""

    config = SimpleNamespace(gate=GateConfig())

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
        return decisions_frame(rows)

    def trials(self, *, split=None):
        return trials_frame(PASSES, split)

    def archive(self, round=None):
        if round is not None and round < 1:
            return schema.empty("archive")
        return pd.DataFrame({"where": ["prompt"], "why": ["careless"], "candidate": ["c1"],
                             "rate": [0.83], "delta_pp": [25.0], "z": [2.4], "round": [1],
                             "credited": [True]})

    def transcript(self, ref):
        return f"<transcript {ref}>"


def decisions_frame(rows) -> pd.DataFrame:
    """A valid decisions frame from (candidate, parent, round, z, decision) rows."""
    out = pd.DataFrame(rows, columns=["candidate", "parent", "round", "z", "decision"])
    neutral = {"text": "", "int": 3, "float": 0.5, "bool": True}
    out = out.assign(split="train", delta_pp=10.0, se_pp=4.0, p_value=0.02, reason="")
    for col in schema.FRAMES["decisions"].columns:
        if col.name not in out.columns:
            out[col.name] = None if col.nullable and col.kind == "text" else neutral[col.kind]
    return out


def trials_frame(passes, split=None) -> pd.DataFrame:
    """A trials frame from {candidate: {task: [pass per repeat]}}; failures are labelled."""
    rows = [(c, t, "train", r, bool(p), f"{c}/{t}/{r}", None if p else "careless")
            for c, by_task in passes.items() for t, ps in by_task.items()
            for r, p in enumerate(ps)]
    cols = ["candidate", "task_id", "split", "repeat", "passed", "trajectory", "pathology"]
    out = schema.as_trials(pd.DataFrame(rows, columns=cols))
    return out if split is None else out[out["split"] == split]


class BigRun(FakeRun):
    """120 tasks and 16 children in 4 rounds with crowded z values: a run at scale."""

    n_tasks, rounds, children = 120, 4, 4

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        names = ["c00"] + [f"c{i:02d}" for i in range(1, self.rounds * self.children + 1)]
        base = rng.random(self.n_tasks)
        self.passes = {}
        for i, name in enumerate(names):
            # each child flips a few tasks of the baseline: most tasks do not move
            flip = rng.random(self.n_tasks) < (0 if i == 0 else 0.25)
            rate = np.where(flip, rng.random(self.n_tasks), base)
            self.passes[name] = {f"task{t:03d}": (rng.random(3) < rate[t]).astype(int).tolist()
                                 for t in range(self.n_tasks)}
        self.names = names

    def candidates(self):
        n = len(self.names)
        rounds = [0] + [1 + i // self.children for i in range(n - 1)]
        return pd.DataFrame({
            "candidate": self.names, "parents": [""] + ["c00"] * (n - 1),
            "kind": ["baseline"] + ["mutation"] * (n - 1),
            "where": [None] + ["prompt"] * (n - 1), "why": [None] + ["careless"] * (n - 1),
            "patch_id": None, "beacon": None, "env_gate": None, "commit": None,
            "branch": None, "round": rounds, "rationale": None,
        })

    def decisions(self):
        decisions = ["credit", "cull", "inconclusive", "credit"]
        rows = [(c, "c00", 1 + i // self.children, 2.0 + 0.02 * i, decisions[i % 4])
                for i, c in enumerate(self.names[1:])]
        return decisions_frame(rows)

    def trials(self, *, split=None):
        return trials_frame(self.passes, split)


@pytest.fixture
def panel():
    return widgets.explore(FakeRun())


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return Image.open(io.BytesIO(data)).size


def forest_points(panel):
    ax = panel.axes[0]
    return sorted(tuple(p) for c in ax.collections
                  if isinstance(c, PathCollection) and c.get_gid() != "highlight"
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
    # c2's failing trials: t2 repeat 0, t3 repeats 0..2; the first one's transcript shows
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


def test_figure_is_a_png_in_an_image_widget_not_a_pyplot_figure(panel):
    import ipywidgets
    import matplotlib.pyplot as plt

    assert isinstance(panel.image, ipywidgets.Image) and panel.image.format == "png"
    assert panel.image in panel.widget.children
    assert png_size(panel.png) == (15 * 150, round(4.5 * 150))  # figsize at 150 dpi
    before = plt.get_fignums()
    another = widgets.explore(FakeRun())
    another._on_round({"new": another.round.value})  # a redraw, as the slider makes
    assert plt.get_fignums() == before
    before = panel.png
    panel.round.value = 1
    assert panel.png != before and png_size(panel.png) == (2250, 675)
    bundle = panel._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_transcript_labels_name_the_repeat(panel):
    assert [label for label, _ in panel.trial.options][:2] == [
        "t2 repeat=0 · careless", "t3 repeat=0 · careless"]


def test_picked_candidate_is_ringed_in_the_forest(panel):
    ring = next(c for c in panel.axes[0].collections if c.get_gid() == "highlight")
    assert ring.get_offsets().tolist() == [[2.0, -0.8]]
    before = panel.png
    panel.candidate.value = "c1"
    ring = next(c for c in panel.axes[0].collections if c.get_gid() == "highlight")
    assert ring.get_offsets().tolist() == [[1.0, 2.4]]
    assert panel.png != before


def test_large_run_stays_readable():
    panel = widgets.explore(BigRun(), max_tasks=15)
    assert png_size(panel.png) == (2250, 675)
    paired = panel.axes[2]
    rows = [t.get_text() for t in paired.get_yticklabels()]
    assert len(rows) == 15
    title = paired.get_legend().get_title().get_text()
    moved = int(title.split()[0])
    assert title == f"{moved} of 120 tasks moved" and moved > 15
    note = next(t for t in paired.texts if t.get_gid() == "hidden-note").get_text()
    assert note == f"not shown:\n{moved - 15} moved, smaller |Δ|\n{120 - moved} unchanged"
    # forest: 16 labelled points, crowded; the labels drawn never overlap
    forest = panel.axes[0]
    renderer = panel.figure.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in forest.texts if t.get_visible()]
    assert 1 <= len(boxes) < len(forest.texts) == 16
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    picked = panel.candidate.value
    assert picked in [t.get_text() for t in forest.texts if t.get_visible()]
    # and every task label of the paired plot fits in its row
    tick_boxes = [t.get_window_extent(renderer) for t in paired.get_yticklabels()]
    assert not any(a.overlaps(b) for i, a in enumerate(tick_boxes) for b in tick_boxes[i + 1:])


def test_bad_max_tasks_is_named():
    with pytest.raises(ValueError, match="max_tasks"):
        widgets.explore(FakeRun(), max_tasks=0)


def test_missing_ipywidgets_raises_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    with pytest.raises(ImportError, match="pip install ipywidgets"):
        widgets.explore(FakeRun())


def test_bad_split_is_named():
    with pytest.raises(ValueError, match="split"):
        widgets.explore(FakeRun(), split="dev")


def test_a_simulated_run_is_titled_simulated():
    class SimulatedRun(FakeRun):
        class agent:
            name, simulated = "simulated:tiny/qwen-careless", True

    title = widgets.explore(SimulatedRun()).figure.get_suptitle()
    assert title == "SIMULATED: simulated:tiny/qwen-careless"
    assert widgets.explore(FakeRun()).figure.get_suptitle() == ""


def test_the_paired_plot_draws_the_repeats_each_decision_read(tmp_path):
    from gsme import experiments, stats

    run = experiments.simulated_run("tb2", rounds=2, finalize=False, root=tmp_path)
    try:
        panel = widgets.explore(run, max_tasks=100)
        decisions, trials = run.decisions(), run.trials(split="train")
        extended = decisions[decisions["looks"] > 1]
        assert len(extended)
        for row in extended.itertuples():
            panel.candidate.value = row.candidate
            tasks = stats.paired_tasks(trials, parent=row.parent, child=row.candidate,
                                       config=run.config.gate)
            assert 100 * tasks["diff"].mean() == pytest.approx(row.delta_pp)
            paired = panel.axes[2]
            moved = int((tasks["diff"] != 0).sum())
            title = paired.get_legend().get_title().get_text()
            assert title == f"{moved} of {row.n_tasks} tasks moved"
            drawn = {c.get_gid(): c.get_offsets()[:, 0] for c in paired.collections
                     if c.get_gid()}
            np.testing.assert_allclose(np.sort(drawn["parent"]),
                                       np.sort(tasks["rate_parent"]))
            child = np.concatenate([v for k, v in drawn.items() if k.startswith("child-")])
            np.testing.assert_allclose(np.sort(child), np.sort(tasks["rate_child"]))
    finally:
        run.close()
