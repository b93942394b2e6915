"""The ledger: a batch of trials is written whole or not at all; frames come back in key
order with their contracted dtypes."""

import sqlite3
import zlib

import numpy as np
import pandas as pd
import pytest

from gsme.agents import Trajectory, TrialSpec, trial_row
from gsme.ledger import Ledger


@pytest.fixture
def ledger(tmp_path):
    made = Ledger(tmp_path / "ledger.sqlite", create=True)
    yield made
    made.close()


def _rows(tasks, candidate="c", **trajectory):
    out = []
    for i, task in enumerate(tasks):
        spec = TrialSpec(candidate, task, "train", i % 3, 0, "b1")
        traj = Trajectory(**{"passed": i % 2 == 0, "transcript": f"trial of {task}",
                             **trajectory})
        ref = f"train/{candidate}/{task}/r{i % 3}a0"
        out.append(({**trial_row(spec, traj, ref), "round": 1}, traj.transcript))
    return out


def test_a_batch_of_trials_is_written_whole_or_not_at_all(ledger):
    rows = _rows(["t1", "t2", "t3"])
    rows[-1][0]["tokens"] = object()  # SQLite cannot store it: the batch fails at its end
    with pytest.raises(sqlite3.Error):
        ledger.add_trials(rows)
    assert ledger.count_trials() == 0
    with pytest.raises(KeyError):
        ledger.transcript(rows[0][0]["trajectory"])  # no transcript without its trial
    ledger.add_trials(_rows(["t1", "t2", "t3"]))
    assert ledger.count_trials() == 3
    assert ledger.transcript("train/c/t2/r1a0") == "trial of t2"


def test_frames_come_back_in_key_order_with_their_dtypes(ledger):
    ledger.add_trials(_rows(["t9", "t10", "t2"], candidate="z", tokens=float("nan")))
    ledger.add_trials(_rows(["é", "t1"], candidate="a", tokens=5.0, pathology="looping"))
    trials = ledger.frame("trials")
    db = sqlite3.connect(ledger.path)  # the order SQLite itself gives
    ordered = db.execute('SELECT candidate, task_id FROM trials ORDER BY candidate, task_id, '
                         'split, "repeat", attempt').fetchall()
    db.close()
    assert list(zip(trials["candidate"], trials["task_id"], strict=True)) == ordered
    assert trials["candidate"].dtype == object and trials["pathology"].dtype == object
    assert trials["passed"].dtype == bool and trials["repeat"].dtype == np.int64
    assert trials["tokens"].dtype == np.float64 and trials["tokens"].isna().sum() == 3
    assert trials["pathology"].tolist()[:2] == ["looping", "looping"]
    assert trials["borrowed_from"].isna().all() and (trials["beacons"] == "").all()
    one = ledger.frame("trials", candidate="a", task_id="é")
    assert len(one) == 1 and one["tokens"].iloc[0] == 5.0
    empty = ledger.frame("trials", candidate="nobody")
    assert empty.empty and empty["repeat"].dtype == np.int64


def test_an_int_column_with_nulls_reads_as_nullable_integers(ledger):
    ledger.append("candidates", pd.DataFrame({
        "candidate": ["baseline", "c1"], "parents": ["", "baseline"],
        "kind": ["baseline", "mutation"], "where": [None, "prompt"], "why": [None, "looping"],
        "patch_id": [None, "p1"], "beacon": [None, "b1"], "env_gate": [None, ""],
        "commit": [None, None], "branch": [None, None], "round": [0, 1],
        "rationale": [None, None]}))
    with sqlite3.connect(ledger.path) as db:
        db.execute("UPDATE candidates SET round = NULL WHERE candidate = 'c1'")
    db.close()
    frame = ledger.frame("candidates")
    assert str(frame["round"].dtype) == "Int64" and frame["round"].isna().tolist() == [False,
                                                                                      True]


def test_transcripts_read_back_whether_stored_as_text_or_compressed(ledger):
    long = "Wait, let me reconsider. " * 200
    ledger.add_trials(_rows(["t1"], transcript="short") + _rows(["t2"], transcript=long))
    assert ledger.transcript("train/c/t1/r0a0") == "short"
    assert ledger.transcript("train/c/t2/r0a0") == long
    with sqlite3.connect(ledger.path) as db:  # a ledger written before short ones were text
        db.execute("UPDATE transcripts SET text = ? WHERE ref = ?",
                   (zlib.compress(b"short"), "train/c/t1/r0a0"))
        stored = dict(db.execute("SELECT ref, typeof(text) FROM transcripts").fetchall())
    db.close()
    assert stored == {"train/c/t1/r0a0": "blob", "train/c/t2/r0a0": "blob"}
    assert ledger.transcript("train/c/t1/r0a0") == "short"
