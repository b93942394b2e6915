"""Graded scores beside pass/fail: a trial's value is its score when the trials carry scores.

The paired test on per-task mean scores is SciPy's paired t; the gates decide as it says;
an Inspect float scorer imports as scores; pass@k refuses graded scores; frames without
scores (or with NaN throughout) give exactly what pass/fail gives.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from gsme import compare, designs, gates, io, schema, stats
from gsme.cli import main
from gsme.importers import read_harbor, read_inspect, read_pair
from gsme.settings import GateConfig

DATA = Path(__file__).parent / "data" / "importers"
PAIR = pd.DataFrame({"child": ["c"], "parent": ["p"]})


def scored(n=30, k=3, effect=0.08, noise=0.2, seed=3):
    """Parent and child trials with graded scores in [0, 1] (``passed``: score ≥ 0.5)."""
    rng = np.random.default_rng(seed)
    base = np.repeat(rng.random(n), k)
    parent = np.clip(base + rng.normal(0, noise, n * k), 0, 1)
    child = np.clip(base + effect + rng.normal(0, noise, n * k), 0, 1)
    tasks = np.tile(np.repeat([f"t{i:02d}" for i in range(n)], k), 2)
    score = np.r_[parent, child]
    return pd.DataFrame({"candidate": np.repeat(["p", "c"], n * k), "task_id": tasks,
                         "split": "train", "repeat": np.tile(np.arange(k), 2 * n),
                         "passed": score >= 0.5, "score": score})


def task_means(trials):
    means = trials.groupby(["candidate", "task_id"])["score"].mean()
    return means["c"].to_numpy(), means["p"].to_numpy()


@pytest.mark.parametrize("effect", [0.08, 0.0, -0.05])
def test_paired_test_on_scores_is_scipys_paired_t_on_per_task_mean_scores(effect):
    trials = scored(effect=effect)
    child, parent = task_means(trials)
    reference = sps.ttest_rel(child, parent, alternative="greater")
    row = stats.paired_test(trials, parent="p", child="c").iloc[0]
    assert row["n_tasks"] == 30 and row["n_changed"] == 30 and row["reason"] is None
    assert row["z"] == pytest.approx(reference.statistic, rel=1e-10, abs=1e-10)
    assert row["p_one_sided"] == pytest.approx(reference.pvalue, rel=1e-10, abs=1e-12)
    assert row["p_value"] == pytest.approx(sps.ttest_rel(child, parent).pvalue, rel=1e-10)
    assert row["delta_pp"] == pytest.approx(100 * np.mean(child - parent), abs=1e-9)
    assert row["rate_child"] == pytest.approx(child.mean(), abs=1e-12)
    normal = stats.paired_test(trials, parent="p", child="c",
                               gate=GateConfig(reference="normal")).iloc[0]
    assert normal["p_one_sided"] == pytest.approx(sps.norm.sf(reference.statistic), rel=1e-9)


def test_scores_are_judged_not_passed():
    trials = scored()
    by_score = stats.paired_test(trials, parent="p", child="c")
    by_pass = stats.paired_test(trials.drop(columns="score"), parent="p", child="c")
    assert by_score["z"].item() != pytest.approx(by_pass["z"].item())
    rates = stats.task_rates(trials)
    means = trials.groupby(["candidate", "task_id"], sort=False)["score"].mean().to_numpy()
    np.testing.assert_allclose(rates["rate"], means, rtol=1e-15)
    assert (rates["n_passed"] == trials.groupby(["candidate", "task_id"], sort=False)
            ["passed"].sum().to_numpy()).all()


@pytest.mark.parametrize("design", ["fixed", "adaptive"])
def test_credit_on_scores_decides_as_the_paired_test_says(design):
    config = GateConfig(design=design, parent_trials="stored")  # made here: no fresh blocks
    candidates = pd.DataFrame({
        "candidate": ["p", "c"], "parents": ["", "p"], "kind": ["baseline", "mutation"],
        "where": [None, "prompt"], "why": [None, "x"], "patch_id": None, "beacon": [None, "b"],
        "env_gate": None, "commit": None, "branch": None, "round": [0, 1], "rationale": None})
    for effect, expected in ((0.15, "credit"), (-0.15, "cull"), (0.0, "inconclusive")):
        trials = scored(effect=effect, seed=5).assign(activated=True)
        decided = gates.credit(trials, candidates, gate=config).iloc[0]
        tested = stats.paired_test(trials, parent="p", child="c", gate=config).iloc[0]
        child, parent = task_means(trials)
        assert decided["decision"] == tested["decision"] == expected
        assert decided["z"] == pytest.approx(sps.ttest_rel(child, parent).statistic, rel=1e-10)


def test_adaptive_design_extends_tasks_whose_pooled_scores_differ():
    trials = scored(n=12, k=9, effect=0.0, seed=2)
    constant = trials["task_id"].isin(["t00", "t01"])
    trials.loc[constant, "score"] = 0.7  # all equal at look 1 on both sides: not extended
    config = GateConfig(design="adaptive", min_tasks=5, futility_z=None)
    read = designs.decided_repeats(trials, PAIR, gate=config).set_index("task_id")
    taken = designs.looks(trials, PAIR, gate=config)
    assert len(taken) > 1 and (read.loc[["t00", "t01"], "repeats"] == 3).all()
    assert (read.drop(index=["t00", "t01"])["repeats"] == taken["repeats"].iloc[-1]).all()
    last = taken.iloc[-1]
    first = stats.first_repeats(trials, k=int(last["repeats"]))
    kept = first[(first["repeat"] < 3) | ~first["task_id"].isin(["t00", "t01"])]
    child, parent = task_means(kept)
    assert last["z"] == pytest.approx(sps.ttest_rel(child, parent).statistic, rel=1e-10)


def test_exact_sign_flip_p_of_few_changed_scores_enumerates_every_flip():
    trials = scored(n=5, k=2, effect=0.1, seed=7)
    row = stats.paired_test(trials, parent="p", child="c").iloc[0]
    child, parent = task_means(trials)
    d = child - parent
    flips = np.array([np.dot(s, np.abs(d)) for s in itertools.product([1, -1], repeat=5)])
    assert row["n_changed"] == 5 and "exact sign-flip" in row["reason"]
    assert row["p_one_sided"] == pytest.approx(np.mean(flips >= d.sum() - 1e-12))
    permuted = sps.permutation_test((child, parent), lambda x, y: np.mean(x - y),
                                    permutation_type="samples", alternative="greater")
    assert row["p_one_sided"] == pytest.approx(permuted.pvalue)
    with pytest.raises(ValueError, match="at most 20 changed tasks"):
        stats.paired_test(scored(n=25, k=1, seed=1), parent="p", child="c",
                          gate=GateConfig(exact_below=30))


def test_pass_at_k_refuses_graded_scores_and_counts_binary_ones():
    trials = scored()
    with pytest.raises(ValueError, match="pass@k needs pass/fail outcomes"):
        stats.pass_at_k(trials, k=2)
    as_passed = stats.pass_at_k(trials.drop(columns="score"), k=2)
    binary = trials.assign(score=trials["passed"].astype(float))
    pd.testing.assert_frame_equal(stats.pass_at_k(binary, k=2), as_passed)
    row = compare.compare(trials, parent="p", child="c").iloc[0]
    assert row["outcome"] == "score" and np.isnan(row["pass_at_k_child"])


def test_frames_without_scores_give_what_pass_fail_gives():
    trials = scored().drop(columns="score")
    config = GateConfig(design="adaptive", min_tasks=5)
    blank = trials.assign(score=np.nan)
    binary = trials.assign(score=trials["passed"].astype(float))
    for other in (blank, binary):
        for fn in (lambda t: stats.paired_test(t, parent="p", child="c", gate=config),
                   lambda t: gates.significance_gate(t, PAIR, gate=config),
                   lambda t: designs.looks(t, PAIR, gate=config),
                   lambda t: stats.task_rates(t)):
            pd.testing.assert_frame_equal(fn(other), fn(trials))
    assert "score" not in schema.as_trials(trials).columns


def test_a_scored_frame_needs_a_score_on_every_scored_trial_that_passed():
    trials = scored().assign(infra_ok=True)
    trials.loc[[4, 7], "score"] = np.nan
    failed = trials.assign(passed=trials["passed"].where(~trials.index.isin([4, 7]), False))
    zeroed = failed.assign(score=failed["score"].fillna(0.0))  # a failure without one: 0
    pd.testing.assert_frame_equal(stats.paired_test(failed, parent="p", child="c"),
                                  stats.paired_test(zeroed, parent="p", child="c"))
    trials.loc[[4, 7], "passed"] = True
    with pytest.raises(schema.FrameError, match="2 scored trial.* that passed have none"):
        stats.paired_test(trials, parent="p", child="c")
    trials.loc[[4, 7], "infra_ok"] = False  # not scored: no score needed
    stats.paired_test(trials, parent="p", child="c")
    with pytest.raises(schema.FrameError, match="'score' must hold finite numbers"):
        schema.as_trials(trials.assign(score=trials["score"].astype(object).where(
            trials.index != 0, "high")))


def test_compare_gates_on_graded_scores_unless_told_and_on_passed_otherwise():
    trials = scored()
    assert compare.compare(trials, parent="p", child="c")["outcome"].item() == "score"
    on_passed = compare.compare(trials, parent="p", child="c", on="passed")
    plain = compare.compare(trials.drop(columns="score"), parent="p", child="c")
    pd.testing.assert_frame_equal(on_passed, plain)
    assert plain["outcome"].item() == "passed"
    with pytest.raises(schema.FrameError, match="carry no scores"):
        compare.compare(trials.drop(columns="score"), parent="p", child="c", on="score")
    with pytest.raises(ValueError, match="on must be one of"):
        compare.compare(trials, parent="p", child="c", on="reward")


def test_scores_round_trip_through_csv_and_parquet_bit_for_bit(tmp_path):
    trials = scored(n=4).assign(score=lambda t: t["score"].where(t.index % 5 != 0) / 3)
    for name in ("t.csv", "t.parquet"):
        back = io.read_trials(io.write_trials(trials, tmp_path / name))
        np.testing.assert_array_equal(back["score"].to_numpy(), trials["score"].to_numpy())
        assert back.columns[len(schema.columns("trials"))] == "score"
    plain = io.read_trials(io.write_trials(trials.drop(columns="score"), tmp_path / "p.csv"))
    assert "score" not in plain.columns


def _inspect_writer():
    spec = importlib.util.spec_from_file_location("inspect_logs", DATA / "inspect_logs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_inspect_log


def test_an_inspect_float_scorer_imports_as_scores_and_compare_gates_on_them(tmp_path, capsys):
    pytest.importorskip("inspect_ai")
    write = _inspect_writer()
    rng = np.random.default_rng(11)
    tasks = [f"t{i}" for i in range(10)]
    base = {t: np.round(rng.random(3), 3).tolist() for t in tasks}
    child = {t: np.round(np.clip(np.array(base[t]) + rng.normal(0.1, 0.1, 3), 0, 1),
                         3).tolist() for t in tasks}
    outcomes = {t: [True, False, True] for t in tasks}
    log = write(tmp_path / "a", outcomes, graded=base)
    write(tmp_path / "b", outcomes, graded=child)
    trials = read_inspect(log, candidate="a", threshold=0.5).trials
    ordered = trials.sort_values(["task_id", "repeat"])
    expected = [base[t.split("/")[-1]][r] for t, r in zip(ordered["task_id"], ordered["repeat"])]
    assert ordered["score"].tolist() == expected
    assert (ordered["passed"] == (ordered["score"] >= 0.5)).all()
    pair = read_pair(tmp_path / "a", tmp_path / "b").trials
    means = pair.groupby(["candidate", "task_id"])["score"].mean()
    reference = sps.ttest_rel(means["b"], means["a"], alternative="greater")
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["outcome"] == "score" and row["n_tasks"] == 10
    assert row["z"] == pytest.approx(reference.statistic, rel=1e-10)
    assert row["p_one_sided"] == pytest.approx(reference.pvalue, rel=1e-9)
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json",
                 "--on", "passed"]) == 0
    assert json.loads(capsys.readouterr().out)["outcome"] == "passed"


def test_harbor_rewards_are_kept_as_scores(tmp_path):
    job = tmp_path / "job"
    for i, reward in enumerate([0.25, 1.0, None]):
        trial = job / f"task{i}__x"
        trial.mkdir(parents=True)
        (trial / "result.json").write_text(json.dumps({
            "task_name": f"task{i}", "trial_name": f"task{i}__x",
            "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
            "exception_info": None if reward is not None else {
                "exception_type": "AgentTimeoutError", "exception_message": "slow"}}))
    trials = read_harbor(job).trials.sort_values("task_id")
    assert trials["score"].tolist() == [0.25, 1.0, 0.0]
    assert trials["passed"].tolist() == [False, True, False]
    assert schema.graded(trials)
