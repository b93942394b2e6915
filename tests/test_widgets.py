"""gsme.widgets.explore: the controls redraw the figure and the transcript viewer."""

import matplotlib

matplotlib.use("Agg")

import io
import sys
from types import SimpleNamespace

import matplotlib.text
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection
from PIL import Image

from gsme import schema, widgets
from gsme.settings import GateConfig, KeepConfig

TASKS = ["t1", "t2", "t3", "t4"]
# pass pattern per candidate and task over K=3 repeats
PASSES = {
    "c0": {"t1": [0, 0, 0], "t2": [1, 1, 0], "t3": [0, 0, 0], "t4": [1, 1, 1]},
    "c1": {"t1": [1, 1, 1], "t2": [1, 1, 1], "t3": [0, 1, 0], "t4": [1, 1, 1]},
    "c2": {"t1": [1, 1, 1], "t2": [0, 1, 1], "t3": [0, 0, 0], "t4": [1, 1, 1]},
}


class FakeRun:
    """The methods :func:`gsme.widgets.explore` uses, over three candidates in two rounds."""

    config = SimpleNamespace(gate=GateConfig(parent_trials="stored"), policy="learned",
                             keep=KeepConfig())
    vocabulary = SimpleNamespace(labels=["careless", "runaway"])
    sealed_result = None

    def diff(self, parent, child):
        return f"--- a/x\n+++ b/x\n+{child} over {parent}\n"

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
        return decisions_frame(rows).assign(kept=[True, False], expected_delta_pp=[3.0, -0.5])

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

    def comparisons(self, *, before_round=None):
        return schema.empty("comparisons")


def decisions_frame(rows) -> pd.DataFrame:
    """A valid decisions frame from (candidate, parent, round, z, decision) rows."""
    out = pd.DataFrame(rows, columns=["child", "parent", "round", "z", "decision"])
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
        frame = decisions_frame(rows)
        return frame.assign(kept=frame["decision"] == "credit", expected_delta_pp=1.0)

    def trials(self, *, split=None):
        return trials_frame(self.passes, split)


@pytest.fixture
def panel():
    return widgets.explore(FakeRun())


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return Image.open(io.BytesIO(data)).size


def forest_points(panel):
    ax = panel.axes["forest"]
    return sorted(tuple(p) for c in ax.collections
                  if isinstance(c, PathCollection) and c.get_gid() not in ("highlight", "kept")
                  for p in c.get_offsets().tolist())


def test_initial_panel_shows_the_last_round_and_the_reported_harness(panel):
    assert (panel.round.min, panel.round.max, panel.round.value) == (0, 2, 2)
    assert [v for _, v in panel.candidate.options] == ["c1", "c2"]
    # the archive's best elite is the harness the run reports: the panel opens on it
    assert panel.candidate.value == "c1"
    labels = {v: k for k, v in panel.candidate.options}
    assert labels == {"c1": "c1 · credit · z=+2.40 · kept ★", "c2": "c2 · inconclusive · z=-0.80"}
    assert forest_points(panel) == [(1.0, 2.4), (2.0, -0.8)]
    cells = panel.axes["archive"]
    assert cells.get_title() == "archive after round 2"
    assert "c1\n0.83" in [t.get_text() for t in cells.texts]  # the elite is named
    assert [t.get_text() for t in cells.get_xticklabels()] == ["careless", "runaway"]
    assert sum(p.get_gid() == "empty-cell" for p in cells.patches) == 4 * 2 - 1
    assert panel.axes["colorbar"].get_ylabel() == "elite pass rate"
    assert panel.axes["paired"].get_title() == "c1 vs c0: credit"


def test_patch_pane_shows_the_diff_gate_and_rationale(panel):
    value = panel.patch.value
    assert "patch c1 ← c0" in value
    assert "class='gsme-add'" in value and "+c1 over c0" in value
    assert "prompt × careless" in value and "credit" in value
    panel.candidate.value = "c2"
    assert "+c2 over c1" in panel.patch.value and "runtime × runaway" in panel.patch.value


def test_side_by_side_pairs_parent_and_child_trials_and_filters_them(panel):
    # c1 vs c0: t1 fixed on every repeat, t2 fixed on repeat 2, t3 fixed on repeat 1
    changes = {v: k for k, v in panel.change.options}
    assert changes == {None: "any", "fixed": "fixed (5)", "both_failed": "both_failed (2)",
                       "both_passed": "both_passed (5)"}
    assert len(panel.pair.options) == 12
    first = panel.pairs.iloc[panel.pair.value]
    assert (first["task_id"], first["change"]) == ("t1", "fixed")  # opens on a change
    sides = panel.sides.value
    assert "parent c0: failed · careless" in sides and "child c1: passed" in sides
    assert "&lt;transcript c0/t1/0&gt;" in sides and "&lt;transcript c1/t1/0&gt;" in sides
    panel.task.value = "t3"
    assert [label.split(" · ")[:2] for label, _ in panel.pair.options] == [
        ["t3 repeat 0", "both_failed"], ["t3 repeat 1", "fixed"], ["t3 repeat 2", "both_failed"]]
    panel.change.value = "fixed"
    assert [label.split(" · ")[0] for label, _ in panel.pair.options] == ["t3 repeat 1"]
    assert "c1/t3/1" in panel.sides.value
    panel.pathology.value = "careless"
    assert len(panel.pair.options) == 1
    panel.change.value = "both_passed"
    assert panel.pair.options == () and "no trials match" in panel.sides.value
    panel.candidate.value = "c2"  # another candidate resets the filters
    assert panel.task.value is None and panel.change.value is None
    assert len(panel.pair.options) == 12


def test_round_slider_redraws_forest_archive_and_picker(panel):
    panel.round.value = 1
    assert forest_points(panel) == [(1.0, 2.4)]
    assert panel.axes["forest"].get_title(loc="left") == "decisions up to round 1"
    assert [v for _, v in panel.candidate.options] == ["c1"] and panel.candidate.value == "c1"
    assert panel.axes["archive"].get_title() == "archive after round 1"
    assert panel.axes["paired"].get_title() == "c1 vs c0: credit"
    assert panel.axes["paired"].get_legend().get_title().get_text() == "3 of 4 tasks moved"
    marker = next(a for a in panel.axes["progress"].lines if a.get_gid() == "current-round")
    assert marker.get_xdata()[0] == 1
    panel.round.value = 0
    assert forest_points(panel) == []
    assert [t.get_text() for t in panel.axes["forest"].texts] == ["no decisions up to round 0"]
    assert panel.candidate.value is None
    assert sum(p.get_gid() == "empty-cell" for p in panel.axes["archive"].patches) == 4 * 2
    assert "no trials match" in panel.sides.value


def test_figures_are_pngs_in_image_widgets_sized_for_a_1000_px_column(panel):
    import ipywidgets
    import matplotlib.pyplot as plt

    sizes = {name: png_size(panel.png(name)) for name in panel.images}
    assert sizes == {"forest": (720, 340), "archive": (760, 400), "retention": (240, 400),
                     "paired": (1000, 360)}
    for name, image in panel.images.items():
        assert isinstance(image, ipywidgets.Image) and image.format == "png"
        assert image.layout.width == f"{sizes[name][0]}px"  # shown at 100 px per inch
    # no text smaller than 7 pt: at 100 px per inch, at least 9.7 px on the page
    for figure in panel.figures.values():
        sizes_pt = [t.get_fontsize() for t in figure.findobj(matplotlib.text.Text)
                    if t.get_visible() and t.get_text()]
        assert min(sizes_pt) >= 7
    before = plt.get_fignums()
    another = widgets.explore(FakeRun())
    another._on_round({"new": another.round.value})  # a redraw, as the slider makes
    assert plt.get_fignums() == before
    before = panel.png("archive")
    panel.round.value = 1
    assert panel.png("archive") != before
    bundle = panel._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_picked_candidate_is_ringed_in_the_forest(panel):
    ring = next(c for c in panel.axes["forest"].collections if c.get_gid() == "highlight")
    assert ring.get_offsets().tolist() == [[1.0, 2.4]]
    before = panel.png("forest")
    panel.candidate.value = "c2"
    ring = next(c for c in panel.axes["forest"].collections if c.get_gid() == "highlight")
    assert ring.get_offsets().tolist() == [[2.0, -0.8]]
    assert panel.png("forest") != before


def test_large_run_stays_readable():
    panel = widgets.explore(BigRun(), max_tasks=15)
    paired = panel.axes["paired"]
    rows = [t.get_text() for t in paired.get_yticklabels()]
    assert len(rows) == 15
    title = paired.get_legend().get_title().get_text()
    moved = int(title.split()[0])
    assert title == f"{moved} of 120 tasks moved" and moved > 15
    note = next(t for t in paired.texts if t.get_gid() == "hidden-note").get_text()
    assert note == f"not shown:\n{moved - 15} moved, smaller |Δ|\n{120 - moved} unchanged"
    # forest: 16 labelled points, crowded; the labels drawn never overlap, and every
    # credit is named (a label moves around its point before it is dropped)
    forest = panel.axes["forest"]
    renderer = panel.figures["forest"].canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in forest.texts if t.get_visible()]
    assert 1 <= len(boxes) <= len(forest.texts) == 16
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    shown = [t.get_text() for t in forest.texts if t.get_visible()]
    assert panel.candidate.value in shown
    credited = BigRun().decisions().query("decision == 'credit'")["child"]
    assert set(credited) <= set(shown)
    renderer = panel.figures["paired"].canvas.get_renderer()
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

    panel = widgets.explore(SimulatedRun())
    assert panel.axes["forest"].get_title(loc="left").startswith("SIMULATED: ")
    assert panel.axes["archive"].get_title().startswith("SIMULATED: ")
    assert panel.axes["paired"].get_title().startswith("SIMULATED: ")
    assert not widgets.explore(FakeRun()).axes["archive"].get_title().startswith("SIMULATED")


def test_the_paired_plot_draws_the_repeats_each_decision_read(tmp_path):
    from gsme import experiments, parent_trials, stats

    run = experiments.simulated_run("tb2", rounds=2, finalize=False, root=tmp_path)
    try:
        panel = widgets.explore(run, max_tasks=100)
        decisions, trials = run.decisions(), run.trials(split="train")
        extended = decisions[decisions["looks"] > 1]
        assert len(extended)
        for row in extended.itertuples():
            panel.candidate.value = row.child
            seen, reference = parent_trials.of_child(trials, run.candidates(), row.child,
                                                     gate=run.config.gate)
            tasks = stats.paired_tasks(seen, parent=reference, child=row.child,
                                       gate=run.config.gate)
            assert 100 * tasks["diff"].mean() == pytest.approx(row.delta_pp, abs=1e-9)
            paired = panel.axes["paired"]
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
