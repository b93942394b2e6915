"""Multi-run experiments on the tiny simulated preset, checked against the runs they made."""


import numpy as np
import pandas as pd
import pytest

from gsme import analysis, experiments, policy, report, schema, sim
from gsme.evolvers.mechanism import MechanismEvolver
from gsme.run import Run
from gsme.schema import BASELINE
from gsme.settings import GateConfig
from gsme.sim.audit import audit_decisions


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


def _read(path):
    return Run.open(path, read_only=True)



def test_ablation_gates_one_child_per_mechanism_and_seed(runaway):
    assert len(runaway) == 6
    for _, one_run in runaway.groupby("seed"):
        schema.validate(one_run.reset_index(drop=True), "decisions")
    assert runaway.groupby("seed")["mechanism"].apply(list).tolist() == [
        ["runaway-recovery", "token-budget-16x", "thinking-off"]] * 2
    assert (runaway["parent"] == "baseline").all()
    kinds = dict(zip(runaway["mechanism"], runaway["kind"]))
    assert kinds == {"runaway-recovery": "targeted", "token-budget-16x": "costly",
                     "thinking-off": "harmful"}
    ratio = runaway.groupby("mechanism")["tokens_ratio"].mean()
    assert ratio["token-budget-16x"] > 2.0 and ratio["thinking-off"] < 1.0
    credited = runaway["decision"] == "credit"
    assert (runaway.loc[credited, "p_value"] <= 2 * 0.025).all()


def test_ablation_true_effects_are_the_simulators(runaway):
    row = runaway.iloc[0]
    agent = sim.preset("tiny", suite_seed=int(row["seed"]), profile="qwen-runaway")
    with Run.open(row["run_dir"], read_only=True) as run:
        for split, column in (("train", "true_delta_pp"), ("test", "true_sealed_delta_pp")):
            child = agent.true_rates(run.harness(row["child"]), split)["rate"]
            base = agent.true_rates(run.harness(BASELINE), split)["rate"]
            assert row[column] == pytest.approx(100 * (child - base).mean())
        assert row[["rate_parent", "rate_child"]].tolist() == pytest.approx(
            run.decisions().iloc[0][["rate_parent", "rate_child"]].tolist())


def test_compare_policies_runs_every_policy_on_the_same_seeds(policies):
    assert policies[["policy", "seed"]].values.tolist() == [
        ["gated", 0], ["gated", 2], ["greedy", 0], ["greedy", 2], ["peak", 0], ["peak", 2],
        ["learned", 0], ["learned", 2]]
    assert policies["run"].tolist() == [f"{p}/s{s}" for p, s in
                                        zip(policies["policy"], policies["seed"])]
    names = [_read(d).agent.name for d in policies["run_dir"]]
    assert set(names) == {"simulated:tiny/qwen-careless"}
    assert set(policies["design"]) == {"fixed"}


def test_compare_policies_counts_agree_with_an_audit_of_each_run(policies):
    for row in policies.itertuples():
        run = Run.open(row.run_dir, agent=sim.preset("tiny", suite_seed=row.seed))
        assert run.config.policy == row.policy and run.config.run_seed == row.seed
        audit = audit_decisions(run)
        decisions = run.decisions()
        if row.policy == "gated":
            assert row.kept == int((decisions["decision"] == "credit").sum())
        elif row.policy == "learned":
            worth = decisions["expected_delta_pp"] > run.config.keep.worth_pp
            assert row.kept == int(((decisions["decision"] == "credit")
                                    | (worth & (decisions["delta_pp"] > 0))).sum())
        else:
            assert row.kept == int((decisions["delta_pp"].round(9) > 0).sum())
        assert row.false_keeps == int((audit["kept"] & (audit["true_delta_pp"] <= 0)).sum())
        credited = decisions["decision"] == "credit"
        assert row.credited == int(credited.sum())
        assert row.false_credits == int((credited.to_numpy()
                                         & (audit["true_delta_pp"] <= 0).to_numpy()).sum())
        table = report.run_table(run).iloc[0]
        assert row.selected == table["selected"]
        assert row.sealed_delta_pp == pytest.approx(table["sealed_delta_pp"])
        assert row.true_train_delta_pp == pytest.approx(table["true_train_delta_pp"])
        assert row.real_keeps == int((audit["kept"] & (audit["true_delta_pp"] > 0)).sum())
        run.close()


def test_audit_flags_kept_and_credited_children_without_a_true_gain(tmp_path):
    from gsme import evolve

    agent = sim.preset("tiny", suite_seed=0)
    run = Run.create(tmp_path / "r", agent=agent, run_config={"run_seed": 0, "policy": "greedy"},
                     evolver=MechanismEvolver(
                         ["submit-verify", "thinking-off", "concise-reasoning"]))
    evolve.run_round(run, children=3, recombinations=0, progress=False)
    audit = audit_decisions(run)
    assert audit["mechanism"].tolist() == ["submit-verify", "thinking-off", "concise-reasoning"]
    truth = [agent.true_effect(run.harness(c), run.harness(BASELINE), "train")
             for c in audit["child"]]
    np.testing.assert_allclose(audit["true_delta_pp"], truth)
    assert audit["false_keep"].tolist() == (audit["kept"] & (np.array(truth) <= 0)).tolist()
    credited = (audit["decision"] == "credit").to_numpy()
    assert audit["false_credit"].tolist() == (credited & (np.array(truth) <= 0)).tolist()
    sealed = [agent.true_effect(run.harness(c), run.harness(BASELINE), "test")
              for c in audit["child"]]
    np.testing.assert_allclose(audit["true_sealed_delta_pp"], sealed)
    expected = audit["kept"] & (np.array(truth) > 0) & (np.array(sealed) <= 0)
    assert audit["overfit"].tolist() == expected.tolist()


def test_audit_needs_ground_truth(tmp_path):
    run = Run.create(tmp_path / "r", agent=sim.preset("tiny"))

    class Real:
        name, simulated = "real", False

    run.agent = Real()
    with pytest.raises(TypeError, match="no ground truth"):
        audit_decisions(run)


def test_preset_table_rows_are_the_run_tables(tmp_path):
    table = experiments.preset_table(["tiny"], rounds=1, root=tmp_path, progress=False)
    assert table["preset"].tolist() == ["tiny"]
    again = report.run_table(_read(table["run_dir"].iloc[0]))
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
    run = _read(next(tmp_path.glob("pathology_matching-*/tiny-qwen-careless-gated-*-s2")))
    baseline = run.trials(split="train", candidate=BASELINE)
    cold_start = baseline[baseline["repeat"] < run.config.gate.k]
    assert len(cold_start) < len(baseline)  # the adaptive design extended some tasks
    top = analysis.pathology_shares(cold_start, split="train").iloc[0]
    assert (row["dominant_pathology"], row["dominant_share"]) == (top["pathology"],
                                                                   pytest.approx(top["share"]))
    assert row["selected"] == policy.reported(run.archive(), run.trials(split="train"),
                                              policy="gated", k=run.config.gate.k)
    credited = run.decisions().query("decision == 'credit'")
    if credited.empty:
        assert row["winner"] is None and not row["matched"]
        return
    assert row["winner"] == credited.sort_values(["round", "candidate"])["candidate"].iloc[0]
    cand = run.candidates().set_index("candidate").loc[row["winner"]]
    assert row["winner_why"] == cand["why"]
    assert row["winner_targets"] == sim.CATALOGUE[row["winner_mechanism"]].why
    assert row["matched"] == (row["winner_why"] == row["dominant_pathology"])


def test_aa_noise_compares_reruns_of_one_baseline(tmp_path):
    aa = experiments.aa_noise("tiny", reruns=3, root=tmp_path, progress=False)
    schema.validate(aa, "decisions")
    assert aa["child"].tolist() == ["rerun-1", "rerun-2", "rerun-3"]
    assert aa["rerun_seed"].tolist() == [1, 2, 3]
    assert aa["rate_parent"].nunique() == 1 and aa["rate_child"].nunique() > 1
    assert (aa["n_tasks"] == 16).all() and aa["mde_pp"].gt(0).all()
    again = experiments.aa_noise("tiny", reruns=3, root=tmp_path, progress=False)
    pd.testing.assert_series_equal(aa["delta_pp"], again["delta_pp"])
    with pytest.raises(ValueError, match="reruns"):
        experiments.aa_noise("tiny", reruns=0, root=tmp_path)


def test_experiments_run_the_gate_they_are_given(tmp_path):
    fixed = GateConfig(design="fixed")
    ablated = experiments.ablation("tiny", mechanisms=["submit-verify"], gate=fixed,
                                   root=tmp_path / "a", progress=False)
    experiments.pathology_matching("tiny", profiles=["qwen-careless"], rounds=1, gate=fixed,
                                   root=tmp_path / "m", progress=False)
    default = experiments.ablation("tiny", mechanisms=["submit-verify"],
                                   root=tmp_path / "d", progress=False)
    runs = [ablated["run_dir"].iloc[0], *tmp_path.glob("m/*/*-s0"), default["run_dir"].iloc[0]]
    designs = []
    for path in runs:
        with _read(path) as run:
            designs.append(run.config.gate.design)
    assert designs == ["fixed", "fixed", GateConfig().design] and GateConfig().design != "fixed"
