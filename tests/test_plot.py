"""gsme.plot: each test checks what is drawn (positions, colours, lines, labels)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_rgba
from matplotlib.patches import Rectangle

from gsme import plot, schema


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def decisions_frame(rows):
    """A valid decisions frame from (candidate, parent, round, z, delta_pp, se_pp, decision)."""
    out = pd.DataFrame(rows, columns=["candidate", "parent", "round", "z", "delta_pp", "se_pp",
                                      "decision"])
    n = len(out)
    out = out.assign(split="train", n_tasks=20, n_dropped=0, n_changed=3, k=3,
                     rate_parent=0.5, rate_child=0.5 + out["delta_pp"] / 100,
                     p_value=0.05, activation_rate=1.0, gate_failed=[None] * n, reason="")
    return out


def candidates_frame(rows):
    """A valid candidates frame from (candidate, parents, kind, round)."""
    out = pd.DataFrame(rows, columns=["candidate", "parents", "kind", "round"])
    out = out.assign(where=[None if k == "baseline" else "prompt" for k in out["kind"]],
                     why="careless", patch_id=None, beacon=None, env_gate=None, commit=None,
                     branch=None, rationale=None)
    return out[schema.columns("candidates")]


def scatter_points(ax):
    """{legend label: (offsets, facecolours)} of every labelled scatter on ``ax``."""
    return {c.get_label(): (c.get_offsets(), c.get_facecolors())
            for c in ax.collections if isinstance(c, PathCollection)}


def hlines_at(ax):
    return sorted(line.get_ydata()[0] for line in ax.lines
                  if len(set(line.get_ydata())) == 1 and len(line.get_ydata()) == 2)


FOREST = decisions_frame([
    ("c1", "c0", 1, 2.5, 8.0, 3.0, "credit"),
    ("c2", "c0", 1, -2.2, -6.0, 2.5, "cull"),
    ("c3", "c1", 2, 0.7, 2.0, 2.8, "inconclusive"),
    ("c4", "c1", 2, np.nan, np.nan, np.nan, "invalid"),
])


def test_z_forest_points_colours_thresholds_and_legend(ax):
    out = plot.z_forest(FOREST, ax=ax, labels=True)
    assert out is ax
    pts = scatter_points(ax)
    offsets, faces = pts["credit"]
    assert offsets.tolist() == [[0.85, 2.5]]  # round 1, dodged left of its sibling c2
    assert np.allclose(faces[0], to_rgba(plot.DECISION_COLORS["credit"]))
    assert pts["cull"][0].tolist() == [[1.15, -2.2]]
    assert np.allclose(pts["cull"][1][0], to_rgba(plot.DECISION_COLORS["cull"]))
    assert pts["inconclusive"][0].tolist() == [[1.85, 0.7]]
    assert hlines_at(ax) == [-1.96, 0.0, 1.96]
    dashed = [line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == "--"]
    assert sorted(dashed) == [-1.96, 1.96]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["credit", "cull", "inconclusive", "invalid", "no z (on the axis edge)"]
    # the invalid comparison has no z: an x on the bottom edge at its round
    assert pts["_nolegend_"][0].tolist() == [[2.15, 0.03]]
    assert sorted(t.get_text() for t in ax.texts) == ["c1", "c2", "c3"]
    assert ax.get_ylabel().startswith("z") and ax.get_xlabel() == "round"
    assert list(ax.get_xticks()) == [1, 2] and ax.get_xlim() == (0.35, 2.65)


def test_z_forest_delta_draws_intervals_of_z_crit_se(ax):
    plot.z_forest(FOREST, value="delta_pp", z_crit=2.0, ax=ax)
    segments = [seg for c in ax.collections if isinstance(c, LineCollection)
                for seg in c.get_segments()]
    spans = sorted((seg[0][1], seg[1][1]) for seg in segments)
    assert np.allclose(spans, [(-11.0, -1.0), (-3.6, 7.6), (2.0, 14.0)])
    assert hlines_at(ax) == [0.0]
    assert "Δ" in ax.get_ylabel()


def test_z_forest_without_round_places_by_order(ax):
    plot.z_forest(FOREST.drop(columns="round").iloc[:2], ax=ax)
    pts = scatter_points(ax)
    assert pts["credit"][0].tolist() == [[0.0, 2.5]]
    assert pts["cull"][0].tolist() == [[1.0, -2.2]]
    assert "row order" in ax.get_xlabel()


def test_z_forest_title_and_validation(ax):
    plot.z_forest(FOREST, title="simulated run", ax=ax)
    assert ax.get_title() == "simulated run"
    with pytest.raises(schema.FrameError, match="z"):
        plot.z_forest(FOREST.drop(columns="z"), ax=ax)
    with pytest.raises(ValueError, match="value"):
        plot.z_forest(FOREST, value="p_value", ax=ax)


TASKS = pd.DataFrame({
    "task_id": ["t1", "t2", "t3", "t4"],
    "rate_parent": [0.0, 1.0, 1 / 3, 2 / 3],
    "rate_child": [1.0, 2 / 3, 1 / 3, 1.0],
    "n_parent": 3, "n_child": 3,
}).assign(diff=lambda d: d["rate_child"] - d["rate_parent"])


def test_paired_tasks_segments_coloured_by_direction(ax):
    plot.paired_tasks(TASKS, parent_label="c0", child_label="c1", ax=ax)
    lines = next(c for c in ax.collections if isinstance(c, LineCollection))
    segs = lines.get_segments()
    # ordered by diff, biggest gain on top: t1 (+1), t4 (+1/3), t3 (0), t2 (-1/3)
    assert [seg[0][1] for seg in segs] == [3.0, 2.0, 1.0, 0.0]
    assert (segs[0][0][0], segs[0][1][0]) == (0.0, 1.0)  # t1: parent 0 → child 1
    colours = [tuple(c) for c in lines.get_colors()]
    expected = ["up", "up", "unchanged", "down"]
    assert colours == [to_rgba(plot.DIRECTION_COLORS[d]) for d in expected]
    ticks = dict(zip(ax.get_yticks(), (t.get_text() for t in ax.get_yticklabels())))
    assert ticks == {3.0: "t1", 2.0: "t4", 1.0: "t3", 0.0: "t2"}
    legend = ax.get_legend()
    assert legend.get_title().get_text() == "3 of 4 tasks moved"
    assert [t.get_text() for t in legend.get_texts()] == [
        "up (2)", "down (1)", "unchanged (1)", "c0", "c1"]


def test_paired_tasks_names_missing_column_and_nan_rows(ax):
    with pytest.raises(schema.FrameError, match="diff"):
        plot.paired_tasks(TASKS.drop(columns="diff"), ax=ax)
    with pytest.raises(schema.FrameError, match="missing rates"):
        plot.paired_tasks(TASKS.assign(rate_child=np.nan), ax=ax)


POWER = pd.DataFrame({
    "n_tasks": [26, 50, 100] * 2,
    "effect_pp": 5.0,
    "k": [1] * 3 + [3] * 3,
    "power": [0.10, 0.18, 0.30, 0.20, 0.40, 0.70],
    "mde_pp": np.nan,
})


def test_power_curve_one_line_per_k_and_target(ax):
    plot.power_curve(POWER, ax=ax, target=0.8)
    lines = {line.get_label(): line for line in ax.lines}
    assert lines["K=3"].get_xydata().tolist() == [[26, 0.2], [50, 0.4], [100, 0.7]]
    assert lines["K=1"].get_ydata().tolist() == [0.10, 0.18, 0.30]
    target = lines["target power 0.8"]
    assert target.get_linestyle() == "--" and list(target.get_ydata()) == [0.8, 0.8]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "K=1", "K=3", "target power 0.8"]
    assert ax.get_ylim() == (0, 1.02)


def test_power_curve_refuses_ambiguous_rows(ax):
    two_effects = pd.concat([POWER, POWER.assign(effect_pp=10.0)])
    with pytest.raises(schema.FrameError, match="several rows"):
        plot.power_curve(two_effects, ax=ax)


OCC = pd.DataFrame(
    {"careless": [0.62, np.nan], "runaway": [np.nan, 0.55], "tooling": [np.nan, np.nan]},
    index=pd.Index(["prompt", "runtime"], name="where"),
).rename_axis(columns="why")


def test_occupancy_shows_rates_and_hatched_empty_cells(ax):
    plot.occupancy(OCC, ax=ax)
    empty = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_gid() == "empty-cell"]
    assert sorted(p.get_xy() for p in empty) == [(0, 1), (1, 0), (2, 0), (2, 1)]  # (why, where)
    assert all(p.get_hatch() == "//" for p in empty)
    texts = sorted(t.get_text() for t in ax.texts)
    assert texts == ["0.55", "0.62", "—", "—", "—", "—"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["careless", "runaway", "tooling"]
    assert ax.get_xlabel() == "why" and ax.get_ylabel() == "where"
    assert all(t.get_rotation() == 0 for t in ax.get_yticklabels())  # levers read across
    mesh = ax.collections[0]
    assert mesh.get_array().count() == 2  # only the occupied cells are coloured


def test_occupancy_all_empty_and_errors(ax):
    plot.occupancy(OCC * np.nan, annot=False, ax=ax)
    assert sum(p.get_gid() == "empty-cell" for p in ax.patches) == 6
    assert len(ax.texts) == 0
    with pytest.raises(schema.FrameError, match="label"):
        plot.occupancy(OCC.assign(label="x"), ax=ax)


CANDS = candidates_frame([
    ("c0", "", "baseline", 0),
    ("c1", "c0", "mutation", 1),
    ("c2", "c0", "mutation", 1),
    ("c3", "c1", "mutation", 2),
    ("c4", "c1,c2", "recombination", 3),
])
LINEAGE_DECISIONS = decisions_frame([
    ("c1", "c0", 1, 2.5, 8.0, 3.0, "credit"),
    ("c2", "c0", 1, 2.1, 6.0, 2.5, "credit"),
    ("c3", "c1", 2, -2.4, -7.0, 2.8, "cull"),
    ("c4", "c1", 3, 0.9, 2.0, 2.0, "inconclusive"),
]).drop(columns="round")


def test_tree_layout_is_tidy_and_deterministic():
    pos = plot.tree_layout(CANDS)
    # leaves c3, c4 (children of c1) then c2; c1 midway over its children; c0 over c1, c2
    assert pos == {"c0": (0.0, 1.25), "c1": (1.0, 0.5), "c2": (1.0, 2.0),
                   "c3": (2.0, 0.0), "c4": (3.0, 1.0)}
    assert plot.tree_layout(CANDS.iloc[::-1]) == pos


def test_lineage_nodes_edges_colours_and_shapes(ax):
    plot.lineage(CANDS, LINEAGE_DECISIONS, ax=ax)
    nodes = {c.get_gid(): c for c in ax.collections if isinstance(c, PathCollection)}
    assert set(nodes) == {"baseline", "mutation", "recombination"}
    assert sum(len(c.get_offsets()) for c in nodes.values()) == 5
    assert nodes["recombination"].get_offsets().tolist() == [[3.0, 1.0]]
    faces = [tuple(f) for f in nodes["mutation"].get_facecolors()]
    assert faces == [to_rgba(plot.DECISION_COLORS[d]) for d in ("credit", "credit", "cull")]
    assert tuple(nodes["baseline"].get_facecolors()[0]) == to_rgba("white")
    edges = {c.get_gid(): c.get_segments() for c in ax.collections
             if isinstance(c, LineCollection)}
    assert len(edges["edges"]) == 4  # one per non-root candidate, from its first parent
    assert [s.tolist() for s in edges["merge-edges"]] == [[[1.0, 2.0], [3.0, 1.0]]]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["credit", "cull", "inconclusive", "no decision",
                      "baseline", "mutation", "recombination"]
    assert sorted(t.get_text() for t in ax.texts) == ["c0", "c1", "c2", "c3", "c4"]


def test_lineage_rejects_unknown_parent_and_cycles(ax):
    orphan = CANDS.assign(parents=["", "c0", "c9", "c1", "c1,c2"])
    with pytest.raises(schema.FrameError, match="c9"):
        plot.lineage(orphan, ax=ax)
    cycle = CANDS.assign(parents=["", "c3", "c0", "c1", "c1,c2"])
    with pytest.raises(schema.FrameError, match="cycle"):
        plot.lineage(cycle, ax=ax)


RETENTION = pd.DataFrame({
    "benchmark": ["TB2", "LiveCode", "SWE"],
    "train_delta_pp": [6.3, 15.8, 4.0],
    "sealed_delta_pp": [9.3, 13.7, -1.0],
    "retention_pct": [147.0, 86.0, np.nan],
    "credited": [True, True, False],
})


def test_retention_points_identity_line_and_labels(ax):
    plot.retention(RETENTION, ax=ax, title="published")
    pts = scatter_points(ax)
    assert pts["credited"][0].tolist() == [[6.3, 9.3], [15.8, 13.7]]
    hollow = next(c for c in ax.collections if c.get_label() == "not credited")
    assert hollow.get_offsets().tolist() == [[4.0, -1.0]]
    assert np.allclose(hollow.get_facecolors()[0], to_rgba("white"))
    identity = next(line for line in ax.lines if line.get_label() == "100% retention")
    assert identity.get_xy1() == (0, 0) and identity.get_slope() == 1
    assert [t.get_text() for t in ax.texts] == ["TB2 147%", "LiveCode 86%", "SWE —"]
    assert ax.get_xlim() == ax.get_ylim()
    assert ax.get_title() == "published"


def test_retention_label_column_run_and_missing_columns(ax):
    runs = RETENTION.drop(columns=["benchmark", "credited"]).assign(run=["a", "b", "c"])
    plot.retention(runs, ax=ax)
    assert ax.texts[0].get_text() == "a 147%"
    assert len(ax.collections[0].get_offsets()) == 3  # no credited column: no credit claimed
    assert "credited" not in [c.get_label() for c in ax.collections]
    with pytest.raises(schema.FrameError, match="retention_pct"):
        plot.retention(RETENTION.drop(columns="retention_pct"), ax=ax)


SHARES = pd.DataFrame({
    "candidate": ["c0", "c0", "c1"],
    "pathology": ["careless", "runaway", "careless"],
    "n": [3, 1, 2],
    "share": [0.75, 0.25, 1.0],
})


def test_pathologies_stacks_shares_per_candidate(ax):
    plot.pathologies(SHARES, ax=ax)
    bars = [(p.get_x() + p.get_width() / 2, p.get_y(), p.get_height()) for p in ax.patches]
    # careless segments first at the bottom, runaway stacked on c0, zero-height on c1
    assert bars == [(0.0, 0.0, 0.75), (1.0, 0.0, 1.0), (0.0, 0.75, 0.25), (1.0, 1.0, 0.0)]
    assert ax.patches[0].get_facecolor() != ax.patches[2].get_facecolor()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["careless", "runaway"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["c0", "c1"]
    assert ax.get_ylabel() == "share of failing trials"


def test_pathologies_counts_by_round_and_duplicates(ax):
    plot.pathologies(SHARES.rename(columns={"candidate": "round"}).assign(round=[1, 1, 2]),
                     x="round", value="n", ax=ax)
    assert [p.get_height() for p in ax.patches] == [3, 2, 1, 0]
    assert ax.get_xlabel() == "round"
    with pytest.raises(schema.FrameError, match="several rows"):
        plot.pathologies(pd.concat([SHARES, SHARES]), ax=ax)


def test_retention_stacks_labels_of_crowded_points(ax):
    crowded = pd.DataFrame({"benchmark": ["LiveCode", "BrowseComp+", "TB2"],
                            "train_delta_pp": [15.8, 15.8, 6.3],
                            "sealed_delta_pp": [13.7, 13.9, 9.3],
                            "retention_pct": [86.0, 88.0, 147.0]})
    plot.retention(crowded, ax=ax)
    offsets = [t.xyann for t in ax.texts]
    assert offsets == [(5, 4), (5, -7), (5, 4)]  # the second crowded label goes below
