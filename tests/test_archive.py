import numpy as np
import pandas as pd
import pytest

from gsme import archive as ar
from gsme.schema import LEVERS, FrameError, empty, validate

WHYS = ["careless-submit", "looping", "thinking-runaway"]


def candidates_frame():
    rows = [  # candidate, parents, kind, where, why, round
        ("baseline", "", "baseline", None, None, 0),
        ("c1", "baseline", "mutation", "prompt", "careless-submit", 1),
        ("c2", "baseline", "mutation", "config", "thinking-runaway", 1),
        ("c4", "baseline", "mutation", "runtime", "looping", 1),
        ("c3", "c1", "mutation", "prompt", "careless-submit", 2),
        ("c5", "c3,c2", "recombination", None, None, 2),
        ("c6", "baseline,c4,c2", "recombination", None, None, 2),
        ("c7", "c1", "mutation", "knowledge", "tool-misuse", 2),
    ]
    frame = pd.DataFrame(rows, columns=["candidate", "parents", "kind", "where", "why",
                                        "round"], dtype=object)
    for column in ("patch_id", "beacon", "env_gate", "commit", "branch", "rationale"):
        frame[column] = pd.Series([None] * len(frame), dtype=object)
    frame["round"] = frame["round"].astype(np.int64)
    return validate(frame, "candidates")


def decisions_frame(rows):
    """rows: (candidate, parent, rate_child, delta_pp, z, decision)."""
    frame = empty("decisions")
    records = []
    for candidate, parent, rate, delta, z, decision in rows:
        records.append({**{c: np.nan for c in frame.columns}, "child": candidate,
                        "parent": parent, "split": "train", "n_tasks": 30, "n_dropped": 0,
                        "n_changed": 5, "k": 3, "looks": 1, "rate_parent": rate - delta / 100,
                        "rate_child": rate, "delta_pp": delta, "z": z,
                        "gate_failed": None, "decision": decision, "reason": None})
    out = pd.DataFrame(records, columns=frame.columns)
    out = out.astype({c: frame[c].dtype for c in frame.columns})
    return validate(out, "decisions")


ROUND1 = [("c1", "baseline", 0.6, 10.0, 2.5, "credit"),
          ("c2", "baseline", 0.55, 5.0, 2.0, "credit"),
          ("c4", "baseline", 0.3, -20.0, -2.5, "cull")]
ROUND2 = [("c3", "c1", 0.58, 8.0, 2.1, "credit"),
          ("c5", "c3", 0.7, 12.0, 3.0, "credit"),
          ("c6", "baseline", 0.5, 0.0, 2.2, "credit"),
          ("c7", "c1", 0.9, 30.0, 1.5, "inconclusive")]


@pytest.fixture
def two_rounds():
    cands = candidates_frame()
    first, out1 = ar.insert(ar.empty(), decisions_frame(ROUND1), cands)
    second, out2 = ar.insert(first, decisions_frame(ROUND2), cands, round=7)
    return first, out1, second, out2


def test_empty_archive_has_the_contract():
    frame = ar.empty()
    assert frame.empty and list(frame.columns) == list(empty("archive").columns)
    validate(frame, "archive")


def test_first_round_outcomes(two_rounds):
    first, out1, _, _ = two_rounds
    assert first[["where", "why", "candidate", "rate", "round"]].values.tolist() == [
        ["config", "thinking-runaway", "c2", 0.55, 1],
        ["prompt", "careless-submit", "c1", 0.6, 1],
    ]
    assert out1["status"].tolist() == ["new_cell", "new_cell", "not_added"]
    np.testing.assert_allclose(out1["improvement"], [0.6, 0.55, np.nan])
    assert out1["reason"].iloc[2] == "not kept (decision cull)"
    assert list(out1.columns) == ["candidate", "where", "why", "status", "improvement",
                                  "reason"]


def test_second_round_replacement_and_recombination_cells(two_rounds):
    _, _, second, out2 = two_rounds
    assert second[["where", "why", "candidate", "rate", "round"]].values.tolist() == [
        ["config", "thinking-runaway", "c2", 0.55, 1],
        ["prompt", "careless-submit", "c5", 0.7, 7],
        ["runtime", "looping", "c6", 0.5, 7],
    ]
    assert out2["status"].tolist() == ["not_added", "improved", "new_cell", "not_added"]
    # c3 (0.58) loses to c1 (0.6); c5 sits on its base c3's cell and beats c1;
    # c6 is stacked on the baseline, so it takes its first elite c4's cell.
    np.testing.assert_allclose(out2["improvement"], [-0.02, 0.1, 0.5, np.nan])
    assert out2[["where", "why"]].values.tolist() == [
        ["prompt", "careless-submit"], ["prompt", "careless-submit"],
        ["runtime", "looping"], ["knowledge", "tool-misuse"]]
    assert "does not beat elite c1" in out2["reason"].iloc[0]
    assert out2["reason"].iloc[1] == "replaces c1"
    assert "inconclusive" in out2["reason"].iloc[3]
    assert "c7" not in set(second["candidate"])  # the best rate, but never credited


def test_one_elite_per_cell_and_ties_keep_the_elite():
    cands = candidates_frame()
    first, _ = ar.insert(ar.empty(), decisions_frame(ROUND1[:1]), cands)
    same, out = ar.insert(first, decisions_frame([("c3", "c1", 0.6, 0.0, 2.0, "credit")]),
                          cands)
    pd.testing.assert_frame_equal(same, first)
    assert out["status"].tolist() == ["not_added"] and out["improvement"].tolist() == [0.0]
    validate(same, "archive")
    assert not same.duplicated(["where", "why"]).any()


def test_insert_does_not_mutate_inputs(two_rounds):
    first, *_ = two_rounds
    cands, decisions = candidates_frame(), decisions_frame(ROUND2)
    copies = [first.copy(), decisions.copy(), cands.copy()]
    ar.insert(first, decisions, cands)
    for frame, copy in zip([first, decisions, cands], copies):
        pd.testing.assert_frame_equal(frame, copy)


def test_test_split_decisions_never_enter():
    decisions = decisions_frame(ROUND1[:1]).assign(split="test")
    new, out = ar.insert(ar.empty(), decisions, candidates_frame())
    assert new.empty and out["status"].tolist() == ["not_added"]
    assert "split test" in out["reason"].iloc[0]


def test_insert_refuses_bad_input():
    cands = candidates_frame()
    with pytest.raises(FrameError, match=r"\['zz'\] are not rows of candidates"):
        ar.insert(ar.empty(), decisions_frame([("zz", "baseline", 0.5, 1.0, 2.0, "credit")]),
                  cands)
    with pytest.raises(FrameError, match=r"must be unique; 2 rows share a key"):
        ar.insert(ar.empty(), decisions_frame([ROUND1[0], ROUND1[0]]), cands)
    twice = pd.concat([decisions_frame(ROUND1[:1]),
                       decisions_frame(ROUND1[:1]).assign(parent="c2")], ignore_index=True)
    with pytest.raises(FrameError, match=r"\['c1'\] more than once"):
        ar.insert(ar.empty(), twice, cands)
    with pytest.raises(FrameError, match="rate_child"):
        ar.insert(ar.empty(), decisions_frame(ROUND1[:1]).drop(columns="rate_child"), cands)
    with pytest.raises(ValueError, match="round must be"):
        ar.insert(ar.empty(), decisions_frame(ROUND1[:1]), cands, round=-1)


def test_select_parent(two_rounds):
    _, _, second, _ = two_rounds
    rng = np.random.default_rng(0)
    assert ar.select_parent(ar.empty(), rng=rng) == "baseline"
    assert ar.select_parent(ar.empty(), rng=rng, baseline="root") == "root"
    assert ar.select_parent(second, rng=rng) == "c5"
    assert {ar.select_parent(second, rng=rng, explore=1.0) for _ in range(50)} == {"c2", "c6"}

    def picks(seed):
        rng = np.random.default_rng(seed)
        return [ar.select_parent(second, rng=rng, explore=0.3) for _ in range(120)]

    assert picks(11) == picks(11) and picks(11) != picks(12)
    assert 0.55 < picks(11).count("c5") / 120 < 0.85  # explore 0.3: the best ~70%, ±3.5 sd


def test_select_parent_ties_and_errors():
    frame = pd.DataFrame({"where": ["prompt", "config"], "why": ["a", "b"],
                          "candidate": ["x", "y"], "rate": [0.5, 0.5], "delta_pp": [1.0, 1.0],
                          "z": [2.0, 2.5], "round": [1, 1]}).astype({"where": object,
                                                                   "why": object,
                                                                   "candidate": object})
    assert ar.select_parent(frame, rng=np.random.default_rng(0)) == "y"  # higher z
    with pytest.raises(TypeError, match="numpy Generator"):
        ar.select_parent(frame, rng=0)
    with pytest.raises(ValueError, match="explore"):
        ar.select_parent(frame, rng=np.random.default_rng(0), explore=1.5)
    with pytest.raises(FrameError, match=r"missing column\(s\) \['rate'\]"):
        ar.select_parent(frame.drop(columns="rate"), rng=np.random.default_rng(0))


def elites_frame():
    rows = [("prompt", "careless-submit", "best", 0.8, 12.0, 3.0, 3),
            ("config", "thinking-runaway", "e1", 0.6, 6.0, 2.2, 1),
            ("runtime", "looping", "e2", 0.55, 8.0, 2.4, 1),
            ("knowledge", "tool-misuse", "e3", 0.5, 4.0, 2.0, 2),
            ("config", "looping", "old", 0.5, 3.0, 2.0, 1)]
    frame = pd.DataFrame(rows, columns=["where", "why", "candidate", "rate", "delta_pp", "z",
                                        "round"], dtype=object)
    return frame.astype({"rate": float, "delta_pp": float, "z": float,
                         "round": np.int64}).assign(credited=True)


def test_recombinations_best_first_without_lineage_or_repeats():
    arch = elites_frame()
    out = ar.recombinations(arch, base="best", lineage=["baseline", "old", "best"])
    assert list(out.columns) == ["base", "elites", "cells", "size", "score"]
    assert out["elites"].tolist() == ["e2,e1", "e2,e3", "e1,e3", "e2", "e1", "e3"]
    assert out["score"].tolist() == [14.0, 12.0, 10.0, 8.0, 6.0, 4.0]
    assert out["cells"].iloc[0] == "runtime/looping,config/thinking-runaway"
    assert (out["base"] == "best").all() and out["size"].tolist() == [2, 2, 2, 1, 1, 1]
    tried = {frozenset({"best", "e2", "e1"}), frozenset({"best", "e3"})}
    again = ar.recombinations(arch, base="best", lineage={"old", "best"}, proposed=tried,
                              limit=3)
    assert again["elites"].tolist() == ["e2,e3", "e1,e3", "e2"]
    three = ar.recombinations(arch, base="best", lineage=[], max_size=3)
    assert three["elites"].iloc[0] == "e2,e1,e3" and len(three) == 4 + 6 + 4
    assert ar.recombinations(arch, base="best", lineage=set(arch["candidate"])).empty


def test_recombinations_refuse_bad_arguments():
    with pytest.raises(TypeError, match="lineage"):
        ar.recombinations(elites_frame(), base="best", lineage="best")
    with pytest.raises(ValueError, match="max_size"):
        ar.recombinations(elites_frame(), base="best", lineage=[], max_size=0)


def test_occupancy_and_summary_hand_computed(two_rounds):
    _, _, second, _ = two_rounds
    table = ar.occupancy(second, why_levels=WHYS)
    expected = pd.DataFrame(
        [[np.nan, np.nan, np.nan], [np.nan, np.nan, np.nan], [np.nan, 0.5, np.nan],
         [np.nan, np.nan, 0.55]], index=pd.Index(list(LEVERS), name="where"),
        columns=pd.Index(WHYS, name="why"))
    expected.iloc[0, 0] = 0.7
    pd.testing.assert_frame_equal(table, expected, check_index_type=False,
                                  check_column_type=False)
    credited = ar.occupancy(second, why_levels=WHYS, value="credited")
    assert credited.notna().equals(table.notna())
    assert set(credited.stack().dropna().tolist()) <= {0.0, 1.0}
    with pytest.raises(ValueError, match="value must be one of"):
        ar.occupancy(second, value="candidate")
    assert ar.occupancy(second).columns.tolist() == ["careless-submit", "looping",
                                                     "thinking-runaway"]
    with pytest.raises(ValueError, match=r"why value\(s\) \['looping'\]"):
        ar.occupancy(second, why_levels=["careless-submit", "thinking-runaway"])
    row = ar.summary(second, n_cells=4 * 7).iloc[0]
    assert row["num_elites"] == 3 and row["best_candidate"] == "c5"
    assert row["coverage"] == pytest.approx(3 / 28)
    assert row["qd_score"] == pytest.approx(0.7 + 0.55 + 0.5)
    assert row["best_rate"] == pytest.approx(0.7)
    assert list(ar.summary(second).columns) == ["num_elites", "coverage", "qd_score",
                                              "best_rate", "best_candidate"]
    assert np.isnan(ar.summary(second).loc[0, "coverage"])
    with pytest.raises(ValueError, match="n_cells"):
        ar.summary(second, n_cells=2)


def test_summary_of_an_empty_archive():
    row = ar.summary(ar.empty(), n_cells=28).iloc[0]
    assert row["num_elites"] == 0 and row["coverage"] == 0 and row["qd_score"] == 0
    assert np.isnan(row["best_rate"]) and row["best_candidate"] is None
