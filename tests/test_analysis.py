"""gsme.analysis.pathology_shares: counts over failing valid trials, shares per group."""

import pandas as pd
import pytest

from gsme import analysis, schema


def trials(rows):
    """Trials from (candidate, task_id, split, passed, infra_ok, pathology)."""
    out = pd.DataFrame(rows, columns=["candidate", "task_id", "split", "passed", "infra_ok",
                                      "pathology"])
    return out.assign(repeat=out.groupby(["candidate", "task_id", "split"]).cumcount())


TRIALS = trials([
    ("c0", "t1", "train", False, True, "careless"),
    ("c0", "t1", "train", False, True, "careless"),
    ("c0", "t2", "train", False, True, "runaway"),
    ("c0", "t3", "train", False, False, "careless"),  # infra failure: not counted
    ("c0", "t4", "train", True, True, None),  # passed: not counted
    ("c0", "t5", "train", False, True, None),  # unlabelled failure
    ("c0", "t9", "test", False, True, "runaway"),
    ("c1", "t1", "train", False, True, "runaway"),
    ("c2", "t1", "train", True, True, None),  # no failure: no rows
])


def test_counts_and_shares_per_candidate():
    out = analysis.pathology_shares(TRIALS, split="train")
    expected = pd.DataFrame({
        "candidate": ["c0", "c0", "c0", "c1"],
        "pathology": ["careless", "runaway", "unknown", "runaway"],
        "n": [2, 1, 1, 1],
        "share": [0.5, 0.25, 0.25, 1.0],
    })
    pd.testing.assert_frame_equal(out, expected, check_dtype=False)
    assert out["n"].dtype == "int64"
    assert out.groupby("candidate")["share"].sum().tolist() == [1.0, 1.0]


def test_all_splits_by_default_and_group_by_round():
    out = analysis.pathology_shares(TRIALS)
    assert out.loc[out["candidate"] == "c0", "n"].tolist() == [2, 2, 1]
    with_round = TRIALS.assign(round=TRIALS["candidate"].map({"c0": 0, "c1": 1, "c2": 1}))
    by_round = analysis.pathology_shares(with_round, by="round", split="train")
    assert by_round[["round", "pathology", "n"]].values.tolist() == [
        [0, "careless", 2], [0, "runaway", 1], [0, "unknown", 1], [1, "runaway", 1]]


def test_input_is_not_mutated_and_errors_name_the_problem():
    before = TRIALS.copy()
    analysis.pathology_shares(TRIALS)
    pd.testing.assert_frame_equal(TRIALS, before)
    with pytest.raises(schema.FrameError, match="'round'"):
        analysis.pathology_shares(TRIALS, by="round")
    with pytest.raises(ValueError, match="split"):
        analysis.pathology_shares(TRIALS, split="dev")
    with pytest.raises(schema.FrameError, match="passed"):
        analysis.pathology_shares(TRIALS.drop(columns="passed"))


def test_failing_trials_keeps_agent_failures_only():
    out = analysis.failing_trials(TRIALS, split="train")
    assert list(zip(out["candidate"], out["task_id"])) == [
        ("c0", "t1"), ("c0", "t1"), ("c0", "t2"), ("c0", "t5"), ("c1", "t1")]
    assert not out["passed"].any() and out["infra_ok"].all()
    assert len(analysis.failing_trials(TRIALS)) == 6  # the test-split failure too
