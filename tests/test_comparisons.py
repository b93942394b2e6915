"""Comparisons files: what a run learns from, and what it leaves for the next run."""

import pandas as pd
import pytest

from gsme import comparisons, config, experiments, measure, schema
from gsme.schema import FrameError


def _run(tmp_path, name, *, learn_from, seed=0, policy="learned", finalize=True):
    return experiments.simulated_run("tiny", root=tmp_path / name, seed=seed, rounds=2,
                                     policy=policy, finalize=finalize,
                                     learn_from=str(learn_from))


def test_a_sealed_run_appends_its_train_comparisons_once(tmp_path):
    book = tmp_path / "comparisons.csv"
    with _run(tmp_path, "a", learn_from=book) as run:
        decided = run.decisions()
        written = comparisons.read(book)
        measure.finalize(run)  # a second call writes nothing more
        again = comparisons.read(book)
        run_id = run.run_id
    assert len(written) == len(decided) > 0
    assert set(written["run"]) == {run_id}
    assert (written["agent"] == run.agent.name).all() and (written["evolver"] == "rule").all()
    pd.testing.assert_frame_equal(written, again)
    assert written["delta_pp"].tolist() == decided["delta_pp"].tolist()


def test_the_next_run_learns_from_the_file_and_keeps_its_own_copy(tmp_path):
    book = tmp_path / "comparisons.csv"
    _run(tmp_path, "a", learn_from=book).close()
    first = comparisons.read(book)
    with _run(tmp_path, "b", learn_from=book, seed=1, finalize=False) as run:
        book.unlink()  # the run read it when it was created
        before_round_1 = run.comparisons(before_round=1)
        everything = run.comparisons()
        run_id = run.run_id
    pd.testing.assert_frame_equal(before_round_1, first)
    assert len(everything) > len(first) and everything["run"].iloc[-1] == run_id


def test_rows_of_another_agent_or_evolver_are_not_learned_from(tmp_path):
    book = tmp_path / "comparisons.csv"
    _run(tmp_path, "a", learn_from=book).close()
    rows = comparisons.read(book)
    foreign = pd.concat([rows.assign(agent="simulated:tb2/balanced"),
                         rows.assign(evolver="claude")], ignore_index=True)
    foreign.to_csv(book, index=False)
    with _run(tmp_path, "b", learn_from=book, finalize=False) as run:
        assert run.comparisons(before_round=1).empty


def test_a_bad_comparisons_file_is_refused_naming_the_column(tmp_path):
    book = tmp_path / "comparisons.csv"
    pd.DataFrame({"agent": ["a"], "delta_pp": [1.0]}).to_csv(book, index=False)
    with pytest.raises(FrameError, match="se_pp"):
        comparisons.read(book)
    bad = schema.empty("comparisons").astype(object)
    bad.loc[0] = ["a", "rule", "r", 1, "c1", "baseline", 40, 1.0, 2.0, "maybe"]
    bad.to_csv(book, index=False)
    with pytest.raises(FrameError, match="decision"):
        comparisons.read(book)
    with pytest.raises(IsADirectoryError, match="CSV file"):
        comparisons.read(tmp_path)
    assert not (tmp_path / "b").exists()
    with pytest.raises(FrameError):
        _run(tmp_path, "b", learn_from=book)
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())


def test_learn_from_in_a_config_is_relative_to_the_file(tmp_path):
    (tmp_path / "cfg").mkdir()
    path = tmp_path / "cfg" / "run.toml"
    path.write_text('[run]\ndir = "r"\npolicy = "learned"\nlearn_from = "past.csv"\n')
    spec = config.load(path)
    assert spec.config.learn_from == str((tmp_path / "cfg" / "past.csv").resolve())
    assert spec.config.policy == "learned"
