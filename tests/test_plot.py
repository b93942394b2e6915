"""gsme.plot: each test checks what is drawn (positions, colours, lines, labels)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_hex, to_rgb, to_rgba
from matplotlib.markers import MarkerStyle
from matplotlib.patches import Rectangle

from gsme import plot, schema

# Machado, Oliveira & Fernandes (2009) CVD simulation, severity 1, on linear RGB.
CVD = {
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]],
}


@pytest.fixture
def ax():
    fig, ax = plt.subplots()
    yield ax
    plt.close(fig)


def contracted(kind, given: pd.DataFrame, **values) -> pd.DataFrame:
    """``given`` plus every other column of the ``kind`` contract, at a neutral default."""
    neutral = {"text": "", "int": 3, "float": 0.5, "bool": True}
    out = given.assign(**values)
    for col in schema.FRAMES[kind].columns:
        if col.name not in out.columns:
            out[col.name] = None if col.nullable and col.kind == "text" else neutral[col.kind]
    return out


def decisions_frame(rows):
    """A valid decisions frame from (child, parent, round, z, delta_pp, se_pp, decision)."""
    out = pd.DataFrame(rows, columns=["child", "parent", "round", "z", "delta_pp", "se_pp",
                                      "decision"])
    return contracted("decisions", out, split="train", n_tasks=20, n_dropped=0, n_changed=3,
                      rate_parent=0.5, rate_child=0.5 + out["delta_pp"] / 100, p_value=0.05,
                      activation_rate=1.0, reason="")


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


def marker_of(collection) -> str:
    """The marker code (``^ v o x X s D``) a scatter's points are drawn with."""
    path = collection.get_paths()[0]
    for code in ("^", "v", "o", "x", "X", "s", "D"):
        style = MarkerStyle(code)
        ref = style.get_path().transformed(style.get_transform())
        if ref.vertices.shape == path.vertices.shape and np.allclose(ref.vertices,
                                                                     path.vertices):
            return code
    raise AssertionError(f"unknown marker with vertices {path.vertices[:4]}")


def hex_faces(collection) -> set:
    return {to_hex(f) for f in collection.get_facecolors()}


def delta_e(a, b, deficiency=None) -> float:
    """CIELAB ΔE76 between colours ``a`` and ``b`` as seen with ``deficiency`` (or normal)."""
    def lab(color):
        c = np.asarray(to_rgb(color))
        linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        if deficiency is not None:
            linear = np.clip(np.asarray(CVD[deficiency]) @ linear, 0, 1)
        xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                        [0.0193, 0.1192, 0.9505]]) @ linear / [0.95047, 1.0, 1.08883]
        f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
        return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])
    return float(np.linalg.norm(lab(a) - lab(b)))


def visible_label_boxes(ax):
    ax.figure.canvas.draw()
    renderer = ax.figure.canvas.get_renderer()
    return {t.get_text(): t.get_window_extent(renderer) for t in ax.texts if t.get_visible()}


def hlines_at(ax):
    return sorted(line.get_ydata()[0] for line in ax.lines
                  if len(set(line.get_ydata())) == 1 and len(line.get_ydata()) == 2)


FOREST = decisions_frame([
    ("c1", "c0", 1, 2.5, 8.0, 3.0, "credit"),
    ("c2", "c0", 1, -2.2, -6.0, 2.5, "cull"),
    ("c3", "c1", 2, 0.7, 2.0, 2.8, "inconclusive"),
    ("c4", "c1", 2, np.nan, np.nan, np.nan, "invalid"),
])


OLD_RED_GREEN = {"credit": "#2ca02c", "cull": "#d62728"}


def test_decision_and_direction_palettes_are_blue_orange_grey_with_shapes():
    assert plot.DECISION_COLORS["credit"] == plot.DIRECTION_COLORS["up"] == "#0072B2"
    assert plot.DECISION_COLORS["cull"] == plot.DIRECTION_COLORS["down"] == "#E69F00"
    for grey in (plot.DECISION_COLORS["inconclusive"], plot.DIRECTION_COLORS["unchanged"]):
        r, g, b = to_rgb(grey)
        assert r == g == b  # "nothing happened" is neutral, not a hue
    assert {k: plot.DECISION_MARKERS[k] for k in ("credit", "cull", "inconclusive")} == {
        "credit": "^", "cull": "v", "inconclusive": "o"}
    assert plot.DIRECTION_MARKERS == {"up": "^", "down": "v", "unchanged": "o"}
    assert len(set(plot.DECISION_MARKERS.values())) == len(plot.DECISION_MARKERS)
    assert set(plot.DECISION_COLORS) == set(plot.DECISION_MARKERS) == set(schema.DECISIONS)


@pytest.mark.parametrize("deficiency", [None, *CVD])
def test_good_bad_and_nothing_stay_apart_under_colour_blindness(deficiency):
    for colors, good, bad, nothing in ((plot.DECISION_COLORS, "credit", "cull", "inconclusive"),
                                       (plot.DIRECTION_COLORS, "up", "down", "unchanged")):
        assert delta_e(colors[good], colors[bad], deficiency) > 40
        assert delta_e(colors[good], colors[nothing], deficiency) > 20
        assert delta_e(colors[bad], colors[nothing], deficiency) > 20


def test_the_colour_blindness_check_rejects_red_green():
    # the old palette: 120 ΔE apart with normal vision, 7 under deuteranopia
    assert delta_e(OLD_RED_GREEN["credit"], OLD_RED_GREEN["cull"]) > 100
    assert delta_e(OLD_RED_GREEN["credit"], OLD_RED_GREEN["cull"], "deuteranopia") < 15


CVD_VIEWS = (None, "deuteranopia", "protanopia", "tritanopia")


@pytest.mark.parametrize("deficiency", CVD_VIEWS)
def test_category_palette_stays_apart_under_colour_blindness(deficiency):
    # every two category colours, and each against the grey of "unknown", stay apart in
    # CAM02-UCS after the Machado et al. (2009) simulation (colorspacious's, full severity);
    # Paul Tol's muted scheme, used before, fell to 12.3 under deuteranopia (rose vs teal)
    colorspacious = pytest.importorskip("colorspacious")
    colors = [to_rgb(c) for c in [*plot.CATEGORY_PALETTE, plot.category_colors(["unknown"])[
        "unknown"]]]
    if deficiency is not None:
        cvd = {"name": "sRGB1+CVD", "cvd_type": deficiency.replace("opia", "omaly"),
               "severity": 100}
        colors = np.clip(colorspacious.cspace_convert(np.array(colors), cvd, "sRGB1"), 0, 1)
    ucs = colorspacious.cspace_convert(np.array(colors), "sRGB1", "CAM02-UCS")
    distances = np.linalg.norm(ucs[:, None] - ucs[None], axis=2)[np.triu_indices(len(ucs), 1)]
    assert distances.min() > 19


@pytest.mark.parametrize("deficiency", CVD_VIEWS)
def test_category_palette_stays_apart_on_the_hand_written_matrices(deficiency):
    # the same check without colorspacious: the matrices above, CIELAB ΔE76
    colors = [*plot.CATEGORY_PALETTE, plot.category_colors(["unknown"])["unknown"]]
    assert min(delta_e(a, b, deficiency) for i, a in enumerate(colors)
               for b in colors[i + 1:]) > 20


def test_category_palette_is_apart_from_decisions():
    decision_hex = {to_hex(c) for c in [*plot.DECISION_COLORS.values(),
                                        *plot.DIRECTION_COLORS.values()]}
    category_hex = {to_hex(c) for c in plot.CATEGORY_PALETTE}
    assert len(category_hex) == 9 and not category_hex & decision_hex
    many = plot.category_colors([f"p{i}" for i in range(12)] + ["unknown"])
    assert [to_hex(many[f"p{i}"]) for i in range(9)] == [to_hex(c) for c in
                                                         plot.CATEGORY_PALETTE]
    assert len({to_hex(c) for c in many.values()}) == 13
    assert to_hex(many["unknown"]) == "#dddddd"


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
    drawn = {c.get_label(): c for c in ax.collections if isinstance(c, PathCollection)}
    assert {k: (marker_of(drawn[k]), hex_faces(drawn[k]))
            for k in ("credit", "cull", "inconclusive")} == {
        "credit": ("^", {"#0072b2"}), "cull": ("v", {"#e69f00"}),
        "inconclusive": ("o", {"#8c8c8c"})}
    legend_markers = [h.get_paths()[0] for h in ax.get_legend().legend_handles[:3]]
    assert [marker_of(PathCollection([p])) for p in legend_markers] == ["^", "v", "o"]
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


def test_z_forest_draws_each_comparisons_own_boundary_and_rings_kept_children(ax):
    frame = FOREST.assign(boundary=[2.51, 3.71, 1.99, np.nan], kept=[True, False, True, False])
    plot.z_forest(frame, boundary="boundary", kept="kept", ax=ax)
    bars = next(c for c in ax.collections if c.get_gid() == "boundaries")
    segments = np.array([seg for seg in bars.get_segments()])
    np.testing.assert_allclose(segments, [[[0.73, 2.51], [0.97, 2.51]],
                                          [[1.03, 3.71], [1.27, 3.71]],
                                          [[1.73, 1.99], [1.97, 1.99]]])  # one per look
    dashed = [line.get_ydata()[0] for line in ax.lines if line.get_linestyle() == "--"]
    assert dashed == [-1.96]  # no +1.96 line: the boundaries are the comparisons' own
    ring = next(c for c in ax.collections if c.get_gid() == "kept")
    assert ring.get_offsets().tolist() == [[0.85, 2.5], [1.85, 0.7]]  # c1 and c3
    assert np.allclose(ring.get_edgecolor()[0], to_rgba(plot.gates.KEPT_COLOR))
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"kept", "credit boundary (its look)", "cull threshold"} <= set(legend)
    with pytest.raises(schema.FrameError, match="boundary"):
        plot.z_forest(FOREST, boundary="boundary", ax=ax)


def test_z_forest_labels_never_overlap_and_keep_the_largest_z(ax):
    ax.figure.set_size_inches(3, 3)
    crowd = decisions_frame([(f"c{i:02d}", "c0", 1, 2.0 + 0.01 * i, 1.0, 1.0, "inconclusive")
                             for i in range(12)])
    plot.z_forest(crowd, labels=True, ax=ax)
    boxes = visible_label_boxes(ax)
    assert "c11" in boxes  # the largest |z| keeps its label
    assert 1 <= len(boxes) < 12
    names = sorted(boxes)
    assert not any(boxes[a].overlaps(boxes[b]) for a in names for b in names if a < b)
    assert len(ax.texts) == 12  # the hidden ones are kept, only not drawn
    points = ax.transData.transform(next(c for c in ax.collections
                                         if c.get_label() == "inconclusive").get_offsets())
    assert not any(box.contains(px, py) for box in boxes.values() for px, py in points)


def test_z_forest_labels_in_priority_order_and_highlight(ax):
    ax.figure.set_size_inches(3, 3)
    crowd = decisions_frame([(f"c{i:02d}", "c0", 1, 2.0 + 0.01 * i, 1.0, 1.0, "inconclusive")
                             for i in range(12)])
    plot.z_forest(crowd, labels=["c03", "c04", "c99"], highlight="c03", ax=ax)
    assert [t.get_text() for t in ax.texts] == ["c03", "c04"]
    # c04 would overlap c03 at its first place: it moves around its point instead
    boxes = visible_label_boxes(ax)
    assert list(boxes) == ["c03", "c04"] and not boxes["c03"].overlaps(boxes["c04"])
    assert tuple(ax.texts[1].xyann) != (8, 3)
    ring = next(c for c in ax.collections if c.get_gid() == "highlight")
    point = next(c for c in ax.collections if c.get_label() == "inconclusive")
    assert ring.get_offsets().tolist() == [point.get_offsets()[3].tolist()]


def test_z_forest_other_hue_uses_the_category_palette(ax):
    plot.z_forest(FOREST.assign(mechanism=["a", "b", "a", "b"]), hue="mechanism", ax=ax)
    pts = scatter_points(ax)
    assert to_hex(pts["a"][1][0]) == to_hex(plot.CATEGORY_PALETTE[0])
    assert to_hex(pts["b"][1][0]) == to_hex(plot.CATEGORY_PALETTE[1])


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
    with pytest.raises(schema.FrameError, match="'maybe'"):
        plot.z_forest(FOREST.assign(decision="maybe"), ax=ax)


def test_retention_marks_the_true_effects(ax):
    table = pd.DataFrame({"run": ["a", "b"], "train_delta_pp": [6.0, 4.0],
                          "sealed_delta_pp": [3.0, 5.0], "retention_pct": [50.0, 125.0],
                          "true_train_delta_pp": [4.0, 4.5], "true_sealed_delta_pp": [3.5, 4.2]})
    plot.retention(table, true=("true_train_delta_pp", "true_sealed_delta_pp"), ax=ax)
    diamonds = [c for c in ax.collections if c.get_label() == "true (simulator)"]
    assert len(diamonds) == 1
    assert diamonds[0].get_offsets().tolist() == [[4.0, 3.5], [4.5, 4.2]]
    with pytest.raises(schema.FrameError, match="true_x"):
        plot.retention(table, true=("true_x", "true_sealed_delta_pp"), ax=ax)


def test_z_forest_draws_several_runs_whose_candidates_share_ids(ax):
    seeds = pd.concat([FOREST.assign(seed=s) for s in (0, 1)], ignore_index=True)
    plot.z_forest(seeds, x="seed", ax=ax)
    drawn = sum(len(c.get_offsets()) for c in ax.collections)
    assert drawn >= len(seeds)


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
    # the child's marker repeats the direction: ▲ blue up, ▼ orange down, ● grey unchanged
    child = {c.get_gid(): c for c in ax.collections if isinstance(c, PathCollection)}
    assert {d: (marker_of(child[f"child-{d}"]), hex_faces(child[f"child-{d}"]),
                child[f"child-{d}"].get_offsets()[:, 1].tolist())
            for d in ("up", "down", "unchanged")} == {
        "up": ("^", {"#0072b2"}, [3.0, 2.0]), "down": ("v", {"#e69f00"}, [0.0]),
        "unchanged": ("o", {"#8c8c8c"}, [1.0])}
    assert hex_faces(child["parent"]) == {"#ffffff"}
    assert not any(t.get_gid() == "hidden-note" for t in ax.texts)


def test_paired_tasks_top_shows_the_largest_moves_and_counts_the_rest(ax):
    n = 120
    diff = np.zeros(n)
    diff[:30] = np.linspace(-0.9, 0.9, 30)  # 30 moved tasks, the rest unchanged
    many = pd.DataFrame({"task_id": [f"task{i:03d}" for i in range(n)], "rate_parent": 0.5,
                         "rate_child": 0.5 + diff / 2}).assign(
        diff=lambda d: d["rate_child"] - d["rate_parent"])
    plot.paired_tasks(many, top=10, ax=ax)
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert len(rows) == 10
    kept = many.set_index("task_id").loc[rows, "diff"]
    assert kept.abs().min() >= many["diff"].abs().nlargest(10).min()
    assert list(kept) == sorted(kept, reverse=True)  # still biggest gain on top
    assert ax.get_legend().get_title().get_text() == "30 of 120 tasks moved"
    note = next(t for t in ax.texts if t.get_gid() == "hidden-note").get_text()
    assert note == "not shown:\n20 moved, smaller |Δ|\n90 unchanged"
    assert ax.get_ylabel() == "task (10 of 120 shown)"


def test_paired_tasks_top_with_nothing_moved_says_so(ax):
    still = TASKS.assign(rate_child=TASKS["rate_parent"], diff=0.0)
    plot.paired_tasks(still, top=5, ax=ax)
    texts = [t.get_text() for t in ax.texts]
    assert "no task moved (4 unchanged)" in texts and "not shown:\n4 unchanged" in texts
    with pytest.raises(ValueError, match="top"):
        plot.paired_tasks(TASKS, top=0, ax=ax)


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
    assert all(t.get_rotation() == 45 for t in ax.get_xticklabels())  # long slugs slant
    mesh = ax.collections[0]
    assert mesh.get_array().count() == 2  # only the occupied cells are coloured


def test_occupancy_frames_elites_kept_without_a_credit(ax):
    credited = OCC.notna().astype(float).where(OCC.notna())
    credited.loc["runtime", "runaway"] = 0.0  # kept, not credited
    plot.occupancy(OCC, credited=credited, ax=ax)
    framed = [p for p in ax.patches if p.get_gid() == "kept-not-credited"]
    assert [p.get_xy() for p in framed] == [(1.06, 1.06)]  # (why, where) of runaway/runtime
    assert "kept" in [t.get_text() for t in ax.texts]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["kept, not credited"]
    with pytest.raises(ValueError, match="same archive"):
        plot.occupancy(OCC, credited=credited.iloc[:1], ax=ax)


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
    drawn = {c.get_gid(): c for c in ax.collections if isinstance(c, PathCollection)}
    nodes = {k: drawn[k] for k in plot.KIND_MARKERS}
    assert set(drawn) == {*plot.KIND_MARKERS, "decision-credit", "decision-cull",
                          "decision-inconclusive"}
    assert sum(len(c.get_offsets()) for c in nodes.values()) == 5
    # each decided node also carries its decision's glyph, so the tree reads without colour
    glyphs = {k: (marker_of(drawn[f"decision-{k}"]), drawn[f"decision-{k}"].get_offsets().tolist())
              for k in ("credit", "cull", "inconclusive")}
    assert glyphs == {"credit": ("^", [[1.0, 0.5], [1.0, 2.0]]), "cull": ("v", [[2.0, 0.0]]),
                      "inconclusive": ("o", [[3.0, 1.0]])}
    assert nodes["recombination"].get_offsets().tolist() == [[3.0, 1.0]]
    faces = [tuple(f) for f in nodes["mutation"].get_facecolors()]
    assert faces == [to_rgba(plot.DECISION_COLORS[d]) for d in ("credit", "credit", "cull")]
    assert tuple(nodes["baseline"].get_facecolors()[0]) == to_rgba("white")
    edges = {c.get_gid(): c.get_segments() for c in ax.collections
             if isinstance(c, LineCollection)}
    assert len(edges["edges"]) == 4  # one per non-root candidate, from its first parent
    assert [s.tolist() for s in edges["merge-edges"]] == [[[1.0, 2.0], [3.0, 1.0]]]
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [
        "credit", "cull", "inconclusive", "no decision", "baseline", "mutation", "recombination"]
    assert [h.get_marker() for h in legend.legend_handles[:3]] == ["^", "v", "o"]
    assert [h.get_markerfacecolor() for h in legend.legend_handles[:3]] == [
        "#0072B2", "#E69F00", "#8C8C8C"]
    assert sorted(t.get_text() for t in ax.texts) == ["c0", "c1", "c2", "c3", "c4"]


def test_lineage_rings_kept_children(ax):
    kept = LINEAGE_DECISIONS.assign(kept=LINEAGE_DECISIONS["child"].isin(["c1", "c4"]))
    plot.lineage(CANDS, kept, ax=ax)
    ring = next(c for c in ax.collections if c.get_gid() == "kept")
    assert ring.get_offsets().tolist() == [[1.0, 0.5], [3.0, 1.0]]  # c1 credited, c4 not
    assert "kept" in [t.get_text() for t in ax.get_legend().get_texts()]


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
    assert pts["sealed Δ credited"][0].tolist() == [[6.3, 9.3], [15.8, 13.7]]
    credited = next(c for c in ax.collections if c.get_label() == "sealed Δ credited")
    assert (marker_of(credited), hex_faces(credited)) == ("^", {"#0072b2"})
    hollow = next(c for c in ax.collections if c.get_label() == "sealed Δ not credited")
    assert hollow.get_offsets().tolist() == [[4.0, -1.0]]
    assert np.allclose(hollow.get_facecolors()[0], to_rgba("white"))
    assert marker_of(hollow) == "o" and to_hex(hollow.get_edgecolors()[0]) == "#8c8c8c"
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
    assert "sealed Δ credited" not in [c.get_label() for c in ax.collections]


def test_retention_marks_a_run_table_by_its_sealed_decision(ax):
    runs = RETENTION.drop(columns=["benchmark", "credited"]).assign(
        run=["a", "b", "c"], credited=[2, 1, 3],  # a run table's count of credited children
        sealed_decision=["credit", "inconclusive", "credit"])
    plot.retention(runs, ax=ax)
    filled = next(c for c in ax.collections if c.get_label() == "sealed Δ credited")
    hollow = next(c for c in ax.collections if c.get_label() == "sealed Δ not credited")
    assert filled.get_offsets().tolist() == [[6.3, 9.3], [4.0, -1.0]]
    assert hollow.get_offsets().tolist() == [[15.8, 13.7]]
    plot.retention(runs.drop(columns="sealed_decision"), ax=ax)  # a count alone marks nothing
    labels = [c.get_label() for c in ax.collections]
    assert labels.count("sealed Δ credited") == 1 and labels.count("sealed Δ not credited") == 1
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
    assert [to_hex(ax.patches[i].get_facecolor()) for i in (0, 2)] == [
        to_hex(c) for c in plot.CATEGORY_PALETTE[:2]]  # careless, runaway: not decision hues
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
