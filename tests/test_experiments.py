"""Multi-run experiments on the tiny simulated preset, checked against the runs they made."""

import doctest

import numpy as np
import pandas as pd
import pytest

from gsme import analysis, evolve, experiments, report, schema, sim
from gsme.resources import SEED_HARNESS
from gsme.run import Run


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    return experiments.compare_policies("tiny", seeds=[0, 2], rounds=1, progress=False,
                                        root=tmp_path_factory.mktemp("policies"))


@pytest.fixture(scope="module")
def runaway(tmp_path_factory):
    return experiments.ablation(
        "tiny", mechanisms=["runaway-recovery", "token-budget-16x", "thinking-off"],
        seeds=[0, 1], profile="qwen-runaway", progress=False,
        root=tmp_path_factory.mktemp("ablation"))


def test_docstring_examples_run():
    assert doctest.testmod(experiments, raise_on_error=False).failed == 0


def test_mechanism_patch_applies_the_mechanisms_template():
    off = experiments.mechanism_patch("thinking-off", SEED_HARNESS)
    assert (off.id, off.where, off.why, off.beacon) == (
        "thinking-off", "config", "thinking-runaway", "thinking-off")
    assert [c.new for c in off.changes] == ["thinking_budget = 0"]
    budget = experiments.mechanism_patch("token-budget-16x", SEED_HARNESS, env_gate="hard")
    assert budget.env_gate == "hard"
    assert budget.changes[0].new == f"thinking_budget = {16 * 8192}"
    recovery = experiments.mechanism_patch("runaway-recovery", SEED_HARNESS)
    assert recovery.where == "runtime" and 'beacon = "runaway-recovery"' in recovery.changes[0].new


def test_mechanism_patch_says_what_is_wrong():
    with pytest.raises(ValueError, match="no template; known: .*submit-verify"):
        experiments.mechanism_patch("make-it-better", SEED_HARNESS)
    with pytest.raises(ValueError, match="pass why="):
        experiments.mechanism_patch("polite-tone", SEED_HARNESS)
    assert experiments.mechanism_patch("polite-tone", SEED_HARNESS,
                                       why="careless-submit").why == "careless-submit"
    with pytest.raises(ValueError, match="at least one"):
        experiments.MechanismEvolver([])


def test_ablation_gates_one_child_per_mechanism_and_seed(runaway):
    assert len(runaway) == 6
    schema.validate(runaway, "decisions")
    assert runaway.groupby("seed")["mechanism"].apply(list).tolist() == [
        ["runaway-recovery", "token-budget-16x", "thinking-off"]] * 2
    assert (runaway["parent"] == "baseline").all()
    kinds = dict(zip(runaway["mechanism"], runaway["kind"]))
    assert kinds == {"runaway-recovery": "targeted", "token-budget-16x": "costly",
                     "thinking-off": "harmful"}
    ratio = runaway.groupby("mechanism")["tokens_ratio"].mean()
    assert ratio["token-budget-16x"] > 2.0 and ratio["thinking-off"] < 1.0
    assert ((runaway["decision"] == "credit") == (runaway["z"] >= 1.96)).all()


def test_ablation_true_effects_are_the_simulators(runaway):
    row = runaway.iloc[0]
    run = Run.open(row["run_dir"])
    agent = sim.preset("tiny", seed=int(row["seed"]), profile="qwen-runaway")
    for split, column in (("train", "true_delta_pp"), ("test", "true_sealed_delta_pp")):
        child = agent.true_rates(run.harness_dir(row["candidate"]), split)["rate"]
        base = agent.true_rates(run.harness_dir("baseline"), split)["rate"]
        assert row[column] == pytest.approx(100 * (child - base).mean())
    assert row[["rate_parent", "rate_child"]].tolist() == pytest.approx(
        run.decisions().iloc[0][["rate_parent", "rate_child"]].tolist())


def test_compare_policies_runs_every_policy_on_the_same_seeds(policies):
    assert policies[["policy", "seed"]].values.tolist() == [
        ["gated", 0], ["gated", 2], ["greedy", 0], ["greedy", 2], ["peak", 0], ["peak", 2]]
    assert policies["run"].tolist() == [f"{p}/s{s}" for p, s in
                                        zip(policies["policy"], policies["seed"])]
    names = [Run.open(d).agent.name for d in policies["run_dir"]]
    assert set(names) == {"simulated:tiny/qwen-careless"}


def test_compare_policies_counts_agree_with_an_audit_of_each_run(policies):
    for row in policies.itertuples():
        run = Run.open(row.run_dir)
        assert run.config.policy == row.policy and run.config.seed == row.seed
        audit = experiments.audit_decisions(run)
        decisions = run.decisions()
        if row.policy == "gated":
            assert row.kept == int((decisions["decision"] == "credit").sum())
        else:
            assert row.kept == int((decisions["delta_pp"] > 0).sum())
        assert row.false_credits == int((audit["kept"] & (audit["true_delta_pp"] <= 0)).sum())
        table = report.run_table(run).iloc[0]
        assert row.selected == table["selected"]
        assert row.sealed_delta_pp == pytest.approx(table["sealed_delta_pp"])
        assert row.true_train_delta_pp == pytest.approx(table["true_train_delta_pp"])


def test_audit_flags_kept_children_without_a_true_gain(tmp_path):
    agent = sim.preset("tiny", seed=0)
    run = Run.create(tmp_path / "r", agent=agent, config={"seed": 0, "policy": "greedy"},
                     evolver=experiments.MechanismEvolver(
                         ["submit-verify", "thinking-off", "concise-reasoning"]))
    evolve.run_round(run, children=3, recombinations=0, progress=False)
    audit = experiments.audit_decisions(run)
    assert audit["mechanism"].tolist() == ["submit-verify", "thinking-off", "concise-reasoning"]
    truth = [agent.true_effect(run.harness_dir(c), run.harness_dir("baseline"), "train")
             for c in audit["candidate"]]
    np.testing.assert_allclose(audit["true_delta_pp"], truth)
    assert audit["false_credit"].tolist() == (audit["kept"] & (np.array(truth) <= 0)).tolist()
    sealed = [agent.true_effect(run.harness_dir(c), run.harness_dir("baseline"), "test")
              for c in audit["candidate"]]
    np.testing.assert_allclose(audit["true_sealed_delta_pp"], sealed)
    expected = audit["kept"] & (np.array(truth) > 0) & (np.array(sealed) <= 0)
    assert audit["overfit"].tolist() == expected.tolist()


def test_audit_needs_ground_truth(tmp_path):
    run = Run.create(tmp_path / "r", agent=sim.preset("tiny"))

    class Real:
        name, simulated = "real", False

    run.agent = Real()
    with pytest.raises(TypeError, match="no ground truth"):
        experiments.audit_decisions(run)


def test_preset_table_rows_are_the_run_tables(tmp_path):
    table = experiments.preset_table(["tiny"], rounds=1, root=tmp_path, progress=False)
    assert table["preset"].tolist() == ["tiny"]
    again = report.run_table(Run.open(table["run_dir"].iloc[0]))
    pd.testing.assert_frame_equal(table.drop(columns=["preset", "run_dir"]), again)
    second = experiments.preset_table(["tiny"], rounds=1, root=tmp_path, progress=False)
    assert second["run_dir"].iloc[0] != table["run_dir"].iloc[0]  # calls never collide


def test_baseline_pathologies_follow_the_profiles(tmp_path):
    shares = experiments.baseline_pathologies(
        "tiny", profiles=["qwen-careless", "qwen-runaway"], root=tmp_path, progress=False)
    assert shares.groupby("profile")["share"].sum().to_numpy() == pytest.approx([1.0, 1.0])
    top = shares.drop_duplicates("profile").set_index("profile")["pathology"]
    assert top.to_dict() == {"qwen-careless": "careless-submit",
                             "qwen-runaway": "thinking-runaway"}
    assert set(shares["family"]) == {"qwen"}


def test_pathology_matching_names_the_first_credited_patch(tmp_path):
    matching = experiments.pathology_matching("tiny", profiles=["qwen-careless"], seeds=[2],
                                              rounds=2, root=tmp_path, progress=False)
    row = matching.iloc[0]
    run = Run.open(next(tmp_path.glob("pathology_matching-*/tiny-qwen-careless-gated-s2")))
    baseline = run.trials(split="train", candidate="baseline")
    top = analysis.pathology_shares(baseline, split="train").iloc[0]
    assert (row["dominant_pathology"], row["dominant_share"]) == (top["pathology"],
                                                                   pytest.approx(top["share"]))
    assert row["selected"] == evolve.selected(run)
    credited = run.decisions().query("decision == 'credit'")
    assert row["winner"] == credited.sort_values(["round", "candidate"])["candidate"].iloc[0]
    cand = run.candidates().set_index("candidate").loc[row["winner"]]
    assert row["winner_why"] == cand["why"]
    assert row["winner_targets"] == sim.CATALOGUE[row["winner_mechanism"]].why
    assert row["matched"] == (row["winner_why"] == row["dominant_pathology"])


def test_aa_noise_compares_reruns_of_one_baseline(tmp_path):
    aa = experiments.aa_noise("tiny", reruns=3, root=tmp_path, progress=False)
    schema.validate(aa, "decisions")
    assert aa["candidate"].tolist() == ["rerun-1", "rerun-2", "rerun-3"]
    assert aa["rerun_seed"].tolist() == [1, 2, 3]
    assert aa["rate_parent"].nunique() == 1 and aa["rate_child"].nunique() > 1
    assert (aa["n_tasks"] == 16).all() and aa["mde_pp"].gt(0).all()
    again = experiments.aa_noise("tiny", reruns=3, root=tmp_path, progress=False)
    pd.testing.assert_series_equal(aa["delta_pp"], again["delta_pp"])
    with pytest.raises(ValueError, match="reruns"):
        experiments.aa_noise("tiny", reruns=0, root=tmp_path)
