"""Comparisons files: what a run learns from, and what it leaves for the next run."""

import warnings

import pandas as pd
import pytest

from gsme import comparisons, config, experiments, measure, schema
from gsme.schema import FrameError


def _run(tmp_path, name, *, learn_from, seed=0, policy="learned", finalize=True):
    """A run of the rule evolver on the tiny suite of seed 0 (one world), run seed ``seed``."""
    return experiments.simulated_run("tiny", root=tmp_path / name, seed=seed, suite_seed=0,
                                     rounds=2, policy=policy, finalize=finalize,
                                     learn_from=str(learn_from))


def test_a_sealed_run_appends_its_train_comparisons_once(tmp_path):
    book = tmp_path / "comparisons.csv"
    with _run(tmp_path, "a", learn_from=book) as run:
        decided = run.decisions()
        written = comparisons.read(book)
        measure.finalize(run)  # a second call writes nothing more
        again = comparisons.read(book)
        run_id, world = run.run_id, run.world["world"]
    assert len(written) == len(decided) > 0
    assert set(written["run"]) == {run_id}
    assert (written["agent"] == run.agent.name).all() and (written["evolver"] == "rule").all()
    assert (written["world"] == world).all() and len(world) == 16
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
    assert not before_round_1["own"].any()
    pd.testing.assert_frame_equal(before_round_1.drop(columns="own"), first)
    assert len(everything) > len(first) and everything["run"].iloc[-1] == run_id
    assert everything["own"].tolist() == [False] * len(first) + [True] * (len(everything)
                                                                         - len(first))


def test_rows_of_another_agent_or_evolver_are_not_learned_from(tmp_path):
    book = tmp_path / "comparisons.csv"
    _run(tmp_path, "a", learn_from=book).close()
    rows = comparisons.read(book)
    foreign = pd.concat([rows.assign(agent="simulated:tb2/balanced"),
                         rows.assign(evolver="claude")], ignore_index=True)
    foreign.to_csv(book, index=False)
    with _run(tmp_path, "b", learn_from=book, finalize=False) as run:
        assert run.comparisons(before_round=1).empty


@pytest.mark.parametrize("part", ["task_model", "suite", "evolver_model", "prompt", "harness"])
def test_rows_of_another_world_with_the_same_names_are_not_learned_from(tmp_path, part):
    book = tmp_path / "comparisons.csv"
    _run(tmp_path, "a", learn_from=book).close()
    rows = comparisons.read(book)
    other = comparisons.signature_of(rows.iloc[0][list(comparisons.PARTS)].to_dict()
                                     | {part: "another"})
    rows.assign(**other).to_csv(book, index=False)
    with _run(tmp_path, "b", learn_from=book, finalize=False) as run:
        assert run.comparisons(before_round=1).empty
    names = experiments.simulated_run("tiny", root=tmp_path / "c", seed=0, rounds=1,
                                      finalize=False, learn_from=str(book),
                                      learn_match="agent,evolver")
    with names as run:
        assert len(run.comparisons(before_round=1)) == len(rows)


def test_the_suite_seed_and_mix_of_a_simulated_agent_are_its_world():
    from gsme import sim
    from gsme.evolvers import RuleEvolver

    world = comparisons.signature(sim.preset("tiny"), RuleEvolver(seed=0))["world"]
    for agent, evolver in [(sim.preset("tiny", suite_seed=1), RuleEvolver(seed=0)),
                           (sim.preset("tiny", mix="harmful"), RuleEvolver(seed=0)),
                           (sim.preset("tiny"), RuleEvolver(seed=0, misdiagnosis=0.5))]:
        assert comparisons.signature(agent, evolver)["world"] != world
    assert comparisons.signature(sim.preset("tiny"), RuleEvolver(seed=3))["world"] == world


def test_a_file_written_before_0_3_reads_and_matches_nothing_by_default(tmp_path, capsys):
    book = tmp_path / "comparisons.csv"
    _run(tmp_path, "a", learn_from=book).close()
    old = comparisons.read(book)[comparisons._COLUMNS[:10]]
    old.rename(columns={"child": "candidate"}).to_csv(book, index=False)  # 0.2's header
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a file gsme wrote reads without a warning
        read = comparisons.read(book)
    assert read["child"].tolist() == old["child"].tolist()
    assert (read["world"] == "").all()
    assert read["first_delta_pp"].tolist() == read["delta_pp"].tolist()
    with _run(tmp_path, "b", learn_from=book, finalize=True) as run:
        assert not (~run.comparisons(before_round=1)["own"]).any()
    said = capsys.readouterr().err
    assert said.count(f"{len(old)} comparison(s) of the learn_from file were written before "
                      "0.3.0") == 1
    after = comparisons.read(book)  # the sealed run rewrote it once with the full header
    assert book.read_text().splitlines()[0].split(",") == comparisons._COLUMNS
    assert (after["world"] == "").sum() == len(old) and (after["world"] != "").any()


def test_a_bad_comparisons_file_is_refused_naming_the_column(tmp_path):
    book = tmp_path / "comparisons.csv"
    pd.DataFrame({"agent": ["a"], "delta_pp": [1.0]}).to_csv(book, index=False)
    with pytest.raises(FrameError, match="se_pp"):
        comparisons.read(book)
    bad = schema.empty("comparisons").astype(object)
    bad.loc[0] = ["a", "rule", "r", 1, "c1", "baseline", 40, 1.0, 2.0, "maybe", *[""] * 6,
                  1.0, 2.0]
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


def test_a_history_the_run_disagrees_with_is_dropped_recorded_and_said(tmp_path, capsys):
    """Five earlier runs of this world that measured +12 pp everywhere, and a run whose
    children measure around 0: its first round drops them (event, one printed line)."""
    from gsme import sim
    from gsme.evolvers import RuleEvolver

    world = comparisons.signature(sim.preset("tiny", suite_seed=0), RuleEvolver(seed=0))
    kind = pd.DataFrame({"child": [f"c{i}" for i in range(15)], "parent": "baseline",
                         "split": "train", "round": 1, "n_tasks": 16, "delta_pp": 12.0,
                         "se_pp": 2.0, "decision": "inconclusive"})
    book = tmp_path / "comparisons.csv"
    for r in range(5):
        comparisons.append(book, comparisons.of_run(kind, signature=world, run=f"old{r}"))
    with _run(tmp_path, "a", learn_from=book, finalize=False) as run:
        checks = run.events("history_checked")
        decided = run.decisions()
    first = checks["payload"].iloc[0]
    assert (first["runs"], first["comparisons"], first["used"]) == (5, 75, False)
    assert first["p_value"] < 0.05 and checks["round"].tolist() == [1, 2]
    said = [line for line in capsys.readouterr().err.splitlines() if "is dropped" in line]
    assert len(said) == 1 and said[0].startswith("gsme: round 1: the history of 5 earlier run")
    assert not (decided["kept"] & (decided["decision"] != "credit")
                & (decided["delta_pp"] <= 0)).any()
