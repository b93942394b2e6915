"""The ledger: a batch of trials is written whole or not at all; frames come back in key
order with their contracted dtypes."""

import sqlite3
import tarfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gsme import evolve
from gsme.agents import Trajectory, TrialSpec, trial_row
from gsme.ledger import _ADDED, Ledger
from gsme.run import Run, verify


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


def _fresh(ledger) -> pd.DataFrame:
    """What a new connection reads: every trial, from the file alone."""
    other = Ledger(ledger.path, read_only=True)
    try:
        return other.frame("trials")
    finally:
        other.close()


def test_trials_read_pass_after_pass_are_what_the_file_holds(ledger, tmp_path):
    rng = np.random.default_rng(0)
    tasks = [f"t{i}" for i in rng.permutation(12)]
    ledger.frame("trials")  # an empty table read first
    for batch, candidate in enumerate(["m", "b", "z", "a"]):
        ledger.add_trials(_rows(tasks[batch * 3:], candidate=candidate))
        pd.testing.assert_frame_equal(ledger.frame("trials"), _fresh(ledger))
    borrowed = ledger.frame("trials", candidate="b").assign(candidate="c", borrowed_from="b")
    ledger.append("trials", borrowed)
    pd.testing.assert_frame_equal(ledger.frame("trials"), _fresh(ledger))
    replaced = ledger.frame("trials", candidate="z").head(2).assign(passed=True, tokens=9.0)
    ledger.append("trials", replaced)  # equal keys: the rows are replaced
    pd.testing.assert_frame_equal(ledger.frame("trials"), _fresh(ledger))
    ledger.mark_infra_failed([("a", tasks[9], "train", 0, 0)], "health check failed")
    pd.testing.assert_frame_equal(ledger.frame("trials"), _fresh(ledger))
    writer = Ledger(ledger.path)  # another connection writes: this one reads it all again
    writer.add_trials(_rows(["t0", "t1"], candidate="y"))
    writer.close()
    got = ledger.frame("trials")
    pd.testing.assert_frame_equal(got, _fresh(ledger))
    assert len(got) == ledger.count_trials() and not got["infra_ok"].all()
    assert (got.loc[got["candidate"] == "z", "tokens"].head(2) == 9.0).all()
    mine = ledger.frame("trials", candidate="a", split="train")
    expected = got[(got["candidate"] == "a") & (got["split"] == "train")].reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, expected)


def test_trials_kept_checked_check_only_the_rows_written_since(ledger):
    from gsme import pairing, schema

    tasks = [f"t{i}" for i in range(9)]
    ledger.add_trials(_rows(tasks, candidate="m"))
    assert len(ledger.checked_trials()) == 9
    for candidate in ["b", "z", "a"]:
        before = schema.CHECKS.copy()
        ledger.add_trials(_rows(tasks[3:], candidate=candidate))
        checked = ledger.checked_trials(split="train")
        assert schema.CHECKS["trials"] == before["trials"]
        assert schema.CHECKS["trials_added"] == before["trials_added"] + 1
        fresh = ledger.frame("trials", split="train")
        pd.testing.assert_frame_equal(checked.frame, fresh)
        assert list(checked.slots.candidates) == list(pairing.checked_slots(fresh).candidates)
        assert ledger.checked_trials(split="train") is checked  # kept until the trials change
    with pytest.raises(ValueError, match="no column"):
        ledger.checked_trials(nope=1)


def test_trials_written_here_are_read_from_the_file_again_only_after_another_writer(ledger):
    ledger.frame("trials")
    for batch in range(3):  # written here: kept, merged without SQL
        ledger.add_trials(_rows([f"t{batch}{i}" for i in range(4)], candidate=f"c{batch}"))
        assert len(ledger.frame("trials", split="train")) == 4 * (batch + 1)
        pd.testing.assert_frame_equal(ledger.frame("trials"), _fresh(ledger))
    assert ledger.reads["trials"] == 1
    odd = ledger.frame("trials", candidate="c0").head(1).assign(task_id=7, candidate="c9")
    ledger.append("trials", odd)  # SQLite stores the number as text: read again
    pd.testing.assert_frame_equal(ledger.frame("trials"), _fresh(ledger))
    assert ledger.reads["trials"] == 2 and "7" in set(ledger.frame("trials")["task_id"])
    writer = Ledger(ledger.path)
    writer.add_trials(_rows(["t0", "t1"], candidate="y"))
    writer.close()
    assert len(ledger.frame("trials")) == 15 and ledger.reads["trials"] == 3


def test_a_frame_read_is_the_callers_to_change(ledger):
    ledger.add_trials(_rows(["t1", "t2"]))
    first = ledger.frame("trials")
    first["passed"] = ~first["passed"]
    first["extra"] = 1
    again = ledger.frame("trials")
    assert "extra" not in again and again["passed"].tolist() == [True, False]


def test_an_absent_kind_of_event_is_found_once_added_here_or_elsewhere(ledger):
    assert ledger.events("sealing").empty
    none = ledger.events("sealing")
    none["extra"] = 1  # the caller's frame: the next answer is untouched
    assert list(ledger.events("sealing").columns) == ["id", "ts", "kind", "round", "payload"]
    ledger.event("sealing", None, candidate="c1")
    assert ledger.events("sealing")["payload"].tolist() == [{"candidate": "c1"}]
    assert ledger.events("sealed").empty
    writer = Ledger(ledger.path)  # another connection
    writer.event("sealed", None, candidate="c1")
    writer.close()
    assert ledger.events("sealed")["kind"].tolist() == ["sealed"]


def _candidate(name: str, round: int) -> pd.DataFrame:
    return pd.DataFrame({
        "candidate": [name], "parents": ["baseline"], "kind": ["mutation"], "where": ["prompt"],
        "why": ["looping"], "patch_id": [None], "beacon": [None], "env_gate": [None],
        "commit": [None], "branch": [None], "round": [round], "rationale": [None]})


def test_a_table_read_whole_shows_every_later_write_here_or_elsewhere(ledger):
    assert ledger.frame("candidates").empty
    ledger.append("candidates", _candidate("c1", 1))
    ledger.append("candidates", _candidate("c2", 1))
    assert ledger.frame("candidates")["candidate"].tolist() == ["c1", "c2"]
    ledger.delete_candidate("c2")
    ledger.append("candidates", _candidate("c2", 2))  # made again, maybe in the same rowid
    assert ledger.frame("candidates")["round"].tolist() == [1, 2]
    read = ledger.frame("candidates")
    read.loc[0, "round"] = 9  # the caller's copy
    with sqlite3.connect(ledger.path) as db:  # another connection
        db.execute("UPDATE candidates SET why = 'tool-misuse' WHERE candidate = 'c1'")
    db.close()
    again = ledger.frame("candidates")
    assert again["why"].tolist() == ["tool-misuse", "looping"] and again["round"].tolist() == [1, 2]


PREVIOUS = Path(__file__).parent / "data" / "previous_release" / "runs.tar.gz"


@pytest.fixture
def previous(tmp_path):
    """The run directories the previous release wrote (see that folder's README)."""
    with tarfile.open(PREVIOUS) as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path


def _stored(path: Path) -> dict[str, list]:
    """Every row of every table of a ledger file, as SQLite holds it (the new columns left
    out)."""
    db = sqlite3.connect(path)
    try:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                           "AND name NOT LIKE 'sqlite_%'")]
        out = {}
        for table in tables:
            cols = [r[1] for r in db.execute(f"PRAGMA table_info({table})")
                    if (table, r[1]) not in _ADDED]
            out[table] = db.execute(f"SELECT {', '.join(f'[{c}]' for c in cols)} FROM {table} "
                                    "ORDER BY rowid").fetchall()
        return out
    finally:
        db.close()


def _columns(path: Path, table: str) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
    finally:
        db.close()


def test_a_ledger_of_the_previous_release_reads_unchanged_and_migrates_on_open(previous):
    path = previous / "open" / "ledger.sqlite"
    before, raw = _stored(path), path.read_bytes()
    assert "score" not in _columns(path, "trials")
    assert "candidate" in _columns(path, "decisions") and "child" not in _columns(path,
                                                                                  "decisions")
    with Run.open(previous / "open", read_only=True) as run:  # reads it as it is
        trials = run.trials()
        assert len(trials) == len(before["trials"]) and trials["score"].isna().all()
        children = run.decisions()["child"].tolist()  # the decisions' candidate, as child
        assert children == [row[0] for row in before["decisions"]] and children
    assert path.read_bytes() == raw
    with Run.open(previous / "open") as run:  # migrates: the column is added, empty
        assert "score" in _columns(path, "trials")
        decided = _columns(path, "decisions")  # and candidate renamed child, in its place
        assert decided[0] == "child" and "candidate" not in decided
        assert run.decisions()["child"].tolist() == children
        assert _stored(path) == before  # nothing stored earlier changed, events included
        assert run.rounds_done() == 1
        evolve.run_round(run)  # and the run goes on
        task = run.tasks("train")["task_id"][0]
        run.record("trials", pd.DataFrame([{"candidate": "baseline", "task_id": task,
                                            "split": "train", "repeat": 40, "passed": True,
                                            "score": 0.75}]), round=2)
        assert run.trials(candidate="baseline")["score"].dropna().tolist() == [0.75]
    assert verify(previous / "open") == []


def test_a_sealed_run_of_the_previous_release_still_verifies_once_migrated(previous):
    path = previous / "sealed" / "ledger.sqlite"
    assert verify(previous / "sealed") == []
    Ledger(path).close()  # opened for writing: migrated
    assert "score" in _columns(path, "trials")
    assert verify(previous / "sealed") == []  # the test trials' digest is what it was
