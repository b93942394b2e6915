"""Frame contracts: bad frames fail at the boundary, naming the column and the rows."""

import numpy as np
import pandas as pd
import pytest

from gsme import schema
from gsme.schema import FrameError


@pytest.fixture
def trials():
    return schema.as_trials(pd.DataFrame({
        "candidate": ["a", "a", "b", "b"], "task_id": ["t1", "t2", "t1", "t2"],
        "split": "train", "repeat": [0, 0, 0, 0], "passed": [1, 0, True, "false"],
    }))


def test_as_trials_fills_optional_columns_with_documented_defaults(trials):
    assert list(trials.columns) == schema.columns("trials")
    row = trials.iloc[0]
    assert row["attempt"] == 0 and bool(row["infra_ok"]) and not bool(row["activated"])
    assert row["beacons"] == "" and np.isnan(row["tokens"]) and row["pathology"] is None
    assert trials["passed"].tolist() == [True, False, True, False]
    assert trials["passed"].dtype == bool and trials["repeat"].dtype == np.int64


def test_as_trials_does_not_mutate_its_input():
    raw = pd.DataFrame({"candidate": ["a"], "task_id": ["t"], "split": ["train"], "repeat": [0],
                        "passed": [1]})
    before = raw.copy()
    schema.as_trials(raw)
    pd.testing.assert_frame_equal(raw, before)


def test_missing_column_is_named(trials):
    with pytest.raises(FrameError, match=r"missing column\(s\) \['passed'\]"):
        schema.validate(trials.drop(columns="passed"), "trials")
    with pytest.raises(FrameError, match=r"missing required column\(s\) \['repeat'\]"):
        schema.as_trials(trials.drop(columns="repeat"))


def test_wrong_dtype_is_named(trials):
    with pytest.raises(FrameError, match="column 'repeat'.*int64"):
        schema.validate(trials.astype({"repeat": float}), "trials")


def test_nan_in_passed_names_the_column_and_shows_the_row(trials):
    bad = trials.astype({"passed": object})
    bad.loc[3, "passed"] = np.nan
    with pytest.raises(FrameError) as err:
        schema.validate(bad, "trials")
    text = str(err.value)
    assert "column 'passed'" in text and "not_nullable" in text
    assert "offending rows" in text and "    3 " in text
    with pytest.raises(FrameError, match="'passed' must be bool"):
        schema.as_trials(bad)


def test_duplicate_key_shows_every_row_that_shares_it(trials):
    bad = pd.concat([trials, trials.iloc[[1]]])
    with pytest.raises(FrameError) as err:
        schema.validate(bad, "trials")
    text = str(err.value)
    assert str(schema.TRIAL_KEY) in text and "2 rows share a key" in text
    assert text.count(" t2 ") == 2


def test_negative_k_is_refused_with_its_row(trials):
    bad = trials.copy()
    bad.loc[2, "repeat"] = -1
    with pytest.raises(FrameError) as err:
        schema.validate(bad, "trials")
    assert "column 'repeat'" in str(err.value) and "greater_than_or_equal_to(0)" in str(err.value)
    assert " -1 " in str(err.value)


def test_unknown_split_and_non_whole_k_are_refused(trials):
    bad = trials.copy()
    bad["split"] = ["train", "dev", "train", "train"]
    with pytest.raises(FrameError, match="column 'split'.*isin"):
        schema.validate(bad, "trials")
    raw = trials.astype({"repeat": float})
    raw.loc[0, "repeat"] = 0.5
    with pytest.raises(FrameError, match="'repeat' must hold whole numbers"):
        schema.as_trials(raw)


def test_string_dtype_columns_are_accepted(trials):
    assert schema.validate(trials.astype({"candidate": "string"}), "trials") is not None


def test_non_frames_and_unknown_kinds_get_clear_errors(trials):
    with pytest.raises(TypeError, match="DataFrame, got list"):
        schema.validate([1, 2], "trials")
    with pytest.raises(ValueError, match="unknown frame kind 'trial'"):
        schema.validate(trials, "trial")


@pytest.mark.parametrize("kind", list(schema.FRAMES))
def test_empty_frames_satisfy_their_contract(kind):
    frame = schema.empty(kind)
    assert frame.empty and list(frame.columns) == schema.columns(kind)
    schema.validate(frame, kind)


def test_decisions_and_archive_contracts_check_their_vocabularies():
    decisions = schema.empty("decisions")
    row = {c: 0 for c in schema.columns("decisions")}
    row.update(candidate="c", parent="p", split="train", decision="maybe", gate_failed=None,
               reason=None)
    bad = pd.concat([decisions, pd.DataFrame([row])]).astype(decisions.dtypes.to_dict())
    with pytest.raises(FrameError, match="column 'decision'"):
        schema.validate(bad, "decisions")
    archive = pd.DataFrame({"where": ["prompt", "prompt"], "why": ["looping"] * 2,
                            "candidate": ["c1", "c2"], "rate": [0.5, 0.6],
                            "delta_pp": [1.0, 2.0], "z": [2.0, 2.5], "round": [1, 2],
                            "credited": [True, False]})
    with pytest.raises(FrameError, match=r"\['where', 'why'\] must be unique"):
        schema.validate(archive, "archive")


def test_split_and_join_ids_round_trip():
    assert schema.split_ids(" a, b,,c ") == ["a", "b", "c"]
    assert schema.split_ids(None) == [] and schema.split_ids(float("nan")) == []
    assert schema.split_ids(schema.join_ids(["x", "y"])) == ["x", "y"]


def _broken(trials, how):
    """``trials`` broken one way: every check the trials contract makes."""
    bad = trials.copy()
    if how == "null candidate":
        bad.loc[1, "candidate"] = None
    elif how == "unknown split":
        bad.loc[2, "split"] = "dev"
    elif how == "negative repeat":
        bad.loc[0, "repeat"] = -1
    elif how == "duplicate key":
        bad.loc[1, ["candidate", "task_id"]] = bad.loc[0, ["candidate", "task_id"]].tolist()
    elif how == "null beacons":
        bad.loc[3, "beacons"] = None
    return bad


@pytest.mark.parametrize("how", ["null candidate", "unknown split", "negative repeat",
                                 "duplicate key", "null beacons"])
@pytest.mark.parametrize("text", ["object", "str"])
def test_the_fast_check_refuses_what_validation_refuses(trials, how, text):
    frame = trials if text == "object" else trials.astype(
        {c: "str" for c in ("candidate", "task_id", "split", "beacons")})
    assert schema.conforms(frame, "trials")
    bad = _broken(frame, how)
    codes = {c: pd.factorize(bad[c]) for c in ("candidate", "task_id", "split")}
    assert not schema.conforms(bad, "trials")
    assert not schema.conforms(bad, "trials", codes=codes)
    with pytest.raises(FrameError):
        schema.validate(bad, "trials")


def test_string_columns_are_validated_as_they_are_without_pandera(trials, monkeypatch):
    arrow = trials.astype({c: "str" for c in ("candidate", "task_id", "split", "beacons")})
    monkeypatch.setattr(schema, "_PANDERA", {})  # the slow path would raise KeyError
    assert schema.validate(arrow, "trials") is arrow
    assert arrow["candidate"].dtype != object  # nothing converted


def test_score_is_optional_kept_as_float_after_the_contract_and_checked_when_present(trials):
    assert "score" not in trials.columns and not schema.carries_scores(trials)
    given = schema.as_trials(trials.assign(extra=1, score=["0.5", None, 1, np.nan]))
    assert list(given.columns) == [*schema.columns("trials"), "score", "extra"]
    assert given["score"].dtype == np.float64 and given["score"].isna().tolist() == [
        False, True, False, True]
    assert schema.carries_scores(given) and schema.graded(given)
    assert not schema.carries_scores(trials.assign(score=np.nan))
    assert schema.trial_values(given)[[0, 2]].tolist() == [0.5, 1.0]
    assert schema.conforms(given, "trials")
    assert not schema.conforms(given.assign(score=given["score"].astype(object)), "trials")
    with pytest.raises(FrameError, match="'score'"):
        schema.validate(given.assign(score=["x", "y", "z", "w"]), "trials")
    with pytest.raises(FrameError, match="finite numbers"):
        schema.as_trials(trials.assign(score=[0.1, np.inf, 0.2, 0.3]))
