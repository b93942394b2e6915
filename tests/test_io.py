import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gsme import io, schema


def sample_trials(rng, n=60):
    text = ["plain", "with,comma", 'quote"d', "new\nline", "NA", "null", "ünïcode", " pad "]
    return schema.as_trials(pd.DataFrame({
        "candidate": rng.choice(["base", "c,1", "NA"], n),
        "task_id": [f"t{i}" for i in range(n)],
        "split": rng.choice(["train", "test"], n),
        "repeat": rng.integers(0, 3, n),
        "attempt": rng.integers(0, 3, n),
        "passed": rng.random(n) < 0.5,
        "infra_ok": rng.random(n) < 0.8,
        "activated": rng.random(n) < 0.3,
        "beacons": rng.choice(["", "b1", "b1,b2"], n),
        "tokens": np.where(rng.random(n) < 0.3, np.nan, rng.integers(0, 10**6, n)),
        "cost_usd": rng.random(n) / 7,
        "seconds": np.where(rng.random(n) < 0.2, np.nan, rng.exponential(30, n)),
        "pathology": rng.choice(np.array([None, *text], dtype=object), n),
        "trajectory": rng.choice(np.array([None, "runs/a b.json", "s3://x/y"], dtype=object), n),
    }))



@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_round_trip_is_exact(tmp_path, suffix):
    trials = sample_trials(np.random.default_rng(0))
    path = io.write_trials(trials, tmp_path / f"trials.{suffix}")
    back = io.read_trials(path)
    pd.testing.assert_frame_equal(back, trials, check_exact=True)
    assert back["cost_usd"].to_numpy().tobytes() == trials["cost_usd"].to_numpy().tobytes()


@settings(max_examples=30, deadline=None, derandomize=True)
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=False, width=64),
                       min_size=1, max_size=20),
       label=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12))
@example(values=[0.0], label="\r")  # a bare carriage return once broke CSV rows apart
@example(values=[1.5], label="a\r\nb\n")
def test_csv_round_trips_any_float_and_text(tmp_path_factory, values, label):
    n = len(values)
    trials = schema.as_trials(pd.DataFrame({
        "candidate": [label] * n, "task_id": [f"t{i}" for i in range(n)], "split": "train",
        "repeat": 0, "passed": True, "tokens": values, "pathology": label, "beacons": label,
    }))
    path = io.write_trials(trials, tmp_path_factory.mktemp("csv") / "t.csv")
    pd.testing.assert_frame_equal(io.read_trials(path), trials, check_exact=True)


def test_extra_columns_are_kept(tmp_path):
    trials = sample_trials(np.random.default_rng(1)).assign(harness_version="v2")
    for suffix in ("csv", "parquet"):
        back = io.read_trials(io.write_trials(trials, tmp_path / f"t.{suffix}"))
        assert back["harness_version"].tolist() == trials["harness_version"].tolist()
        assert list(back.columns) == list(trials.columns)


def test_bad_frame_writes_nothing(tmp_path):
    trials = sample_trials(np.random.default_rng(2))
    bad = trials.assign(repeat=-1)
    target = tmp_path / "bad.parquet"
    with pytest.raises(schema.FrameError, match="'repeat'"):
        io.write_trials(bad, target)
    assert not target.exists()
    empty_text = trials.assign(trajectory="")
    with pytest.raises(ValueError, match="empty string"):
        io.write_trials(empty_text, tmp_path / "bad.csv")
    assert not (tmp_path / "bad.csv").exists()
    io.write_trials(empty_text, tmp_path / "ok.parquet")  # Parquet keeps "" apart from None
    assert io.read_trials(tmp_path / "ok.parquet")["trajectory"].eq("").all()


def test_format_and_path_errors(tmp_path):
    trials = sample_trials(np.random.default_rng(3))
    with pytest.raises(ValueError, match="cannot tell the format"):
        io.write_trials(trials, tmp_path / "t.txt")
    with pytest.raises(ValueError, match="format must be one of"):
        io.write_trials(trials, tmp_path / "t.csv", format="xlsx")
    with pytest.raises(FileNotFoundError, match="no trials file"):
        io.read_trials(tmp_path / "missing.csv")
    path = io.write_trials(trials, tmp_path / "t.data", format="parquet")
    pd.testing.assert_frame_equal(io.read_trials(path, format="parquet"), trials)


def test_reading_a_broken_csv_names_the_column(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("candidate,task_id,split,repeat,passed\nbase,t1,train,0,maybe\n")
    with pytest.raises(schema.FrameError, match="passed"):
        io.read_trials(path)


def test_reading_non_numbers_in_a_number_column_names_it(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("candidate,task_id,split,repeat,passed,cost_usd\nbase,t1,train,0,True,cheap\n")
    with pytest.raises(schema.FrameError, match="'cost_usd'"):
        io.read_trials(path)
