"""The simulated agent: reproducible, independent across harnesses, true to its ground truth."""

import shutil

import numpy as np
import pandas as pd
import pytest

from gsme import sim
from gsme.agents import TrialSpec, to_trials
from gsme.patches import FileChange, Patch, apply_patch, harness_files
from gsme.resources import SEED_HARNESS
from gsme.sim.suite import PRESET_SPECS
from gsme.stats import paired_test


def harness(tmp_path, name, *patches):
    """A copy of the seed harness with ``patches`` (mechanism, why, env_gate, tasks) applied."""
    root = tmp_path / name
    shutil.copytree(SEED_HARNESS, root)
    for i, (mechanism, why, gate, tasks) in enumerate(patches):
        apply_patch(root, Patch(
            id=f"p{i}", where="knowledge", why=why, mechanism=mechanism, beacon=f"b{i}",
            env_gate=gate, changes=(FileChange(f"knowledge/p{i}.md", f"{mechanism}\n"),),
            predicted_tasks=tuple(tasks)))
    return root


def run_all(agent, harness_dir, *, seeds, split="train", k=3, candidate="c", beacon=None):
    """Every task of ``split`` × ``k`` repeats × ``seeds``, as (spec, trajectory, ref)."""
    rows = agent.tasks().query("split == @split").to_dict("records")
    out = []
    for seed in seeds:
        for row in rows:
            for kk in range(k):
                traj = agent.run(harness_dir, row, repeat=kk, attempt=0, run_seed=seed)
                spec = TrialSpec(f"{candidate}{seed}", row["task_id"], split, kk, beacon=beacon)
                out.append((spec, traj, None))
    return out


def test_presets_have_their_documented_shape():
    for name in sim.PRESETS:
        agent = sim.preset(name)
        tasks = agent.tasks()
        spec = PRESET_SPECS[name]
        assert agent.simulated is True
        assert agent.name == f"simulated:{name}/{spec.profile}"
        assert list(tasks.columns) == ["task_id", "split", "category", "has_tests",
                                       "needs_tools", "long_context", "hard", "content"]
        assert (tasks["split"] == "train").sum() == spec.n_train
        assert (tasks["split"] == "test").sum() == spec.n_test
    assert len(sim.preset("tb2").tasks()) == 89
    assert (sim.preset("swe-bench").tasks()["split"] == "test").sum() == 26
    assert len(sim.preset("tiny").tasks()) == 24


def test_profiles_cover_the_required_pathologies():
    dominant = {name: p.dominant for name, p in sim.PROFILES.items()}
    careless = [n for n, d in dominant.items() if d == "careless-submit"]
    assert len({sim.PROFILES[n].family for n in careless}) >= 2
    assert "thinking-runaway" in dominant.values()
    balanced = sim.PROFILES["balanced"].rates
    assert max(balanced.values()) == pytest.approx(min(balanced.values()))
    assert dominant["balanced"] is None
    assert dominant["qwen-runaway"] == "thinking-runaway"


def test_a_trial_is_reproducible_and_depends_on_its_seed():
    agent = sim.preset("tiny")
    task = agent.tasks().iloc[0]
    first = agent.run(SEED_HARNESS, task, repeat=1, attempt=0, run_seed=7)
    assert agent.run(SEED_HARNESS, task, repeat=1, attempt=0, run_seed=7) == first
    assert sim.preset("tiny").run(SEED_HARNESS, task, repeat=1, attempt=0, run_seed=7) == first
    others = {agent.run(SEED_HARNESS, task, repeat=1, attempt=0, run_seed=s).transcript
              for s in range(20)}
    assert len(others) > 5


def test_a_rerun_after_a_fault_yields_what_the_faulted_attempt_would_have():
    faulty, clean = sim.preset("tiny", infra_fault_rate=0.5), sim.preset("tiny",
                                                                         infra_fault_rate=0.0)
    reruns = 0
    for _, task in faulty.tasks().iterrows():
        for k in range(3):
            attempt = 0
            while not (traj := faulty.run(SEED_HARNESS, task, repeat=k, attempt=attempt,
                                          run_seed=1)).infra_ok:
                attempt += 1
            reruns += attempt
            assert traj == clean.run(SEED_HARNESS, task, repeat=k, attempt=0, run_seed=1)
    assert reruns > 10


def test_sampled_pass_rates_match_the_true_rates(tmp_path):
    agent = sim.preset("tiny", infra_fault_rate=0.0, profile="qwen-runaway")
    h = harness(tmp_path, "h", ("thinking-off", "thinking-runaway", "", ()),
                ("submit-verify", "careless-submit", "has_tests", ()))
    trials = to_trials(run_all(agent, h, seeds=range(200), k=1))
    observed = trials.groupby("task_id")["passed"].mean()
    truth = agent.true_rates(harness_files(h), "train").set_index("task_id")["rate"]
    se = np.sqrt(truth * (1 - truth) / 200).clip(lower=0.005)
    assert (np.abs(observed[truth.index] - truth) / se).max() < 4.0
    assert observed.mean() == pytest.approx(truth.mean(), abs=0.015)


def test_different_harnesses_draw_independent_random_numbers(tmp_path):
    agent = sim.preset("tiny", infra_fault_rate=0.0)
    cosmetic = harness(tmp_path, "cosmetic", ("polite-tone", "careless-submit", "", ()))
    a = to_trials(run_all(agent, SEED_HARNESS, seeds=range(30)))
    b = to_trials(run_all(agent, cosmetic, seeds=range(30)))
    p = agent.true_rates({}, "train").set_index("task_id")["rate"]
    assert np.allclose(p, agent.true_rates(harness_files(cosmetic), "train")["rate"])
    disagree = (a["passed"] != b["passed"]).mean()
    expected = (2 * p * (1 - p)).mean()  # independent draws with equal rates
    assert disagree == pytest.approx(expected, abs=0.04)


def test_infra_faults_do_not_depend_on_the_harness(tmp_path):
    agent = sim.preset("tiny", infra_fault_rate=0.2)
    patched = harness(tmp_path, "h", ("submit-verify", "careless-submit", "", ()))
    a = to_trials(run_all(agent, SEED_HARNESS, seeds=range(10)))
    b = to_trials(run_all(agent, patched, seeds=range(10)))
    assert a["infra_ok"].tolist() == b["infra_ok"].tolist()
    assert 1 - a["infra_ok"].mean() == pytest.approx(0.2, abs=0.05)
    assert not a.loc[~a["infra_ok"], "passed"].any()
    assert (a["passed"] != b["passed"]).any()


def test_beacons_fire_only_where_the_env_gate_admits_the_task(tmp_path):
    agent = sim.preset("tiny", infra_fault_rate=0.0)
    gate = "has_tests and category != 'math'"
    h = harness(tmp_path, "h", ("submit-verify", "careless-submit", gate, ()),
                ("runaway-recovery", "thinking-runaway", "", ()))
    trials = to_trials(run_all(agent, h, seeds=range(20), beacon="b0"))
    tasks = agent.tasks().set_index("task_id")
    admitted = trials["task_id"].map(tasks["has_tests"] & (tasks["category"] != "math"))
    assert admitted.any() and (~admitted).any()
    assert not trials.loc[~admitted, "activated"].any()
    assert trials.loc[admitted, "activated"].mean() > 0.5
    # submit-verify runs at the submission step: never on a trial that never submitted
    no_submit = trials["pathology"].isin(["looping", "thinking-runaway", "context-overflow"])
    assert not trials.loc[no_submit, "activated"].any()
    # runaway-recovery runs only when a runaway began: on a minority of trials
    recovery = trials["beacons"].str.contains("b1")
    assert 0 < recovery.mean() < 0.5
    assert not trials.loc[recovery, "pathology"].isin(["careless-submit", "looping"]).any()


def test_a_targeted_fix_raises_the_true_train_and_test_rates_alike(tmp_path):
    agent = sim.preset("appworld")
    fix = harness(tmp_path, "fix", ("submit-verify", "careless-submit", "", ()))
    train = agent.true_effect(harness_files(fix), {}, "train")
    test = agent.true_effect(harness_files(fix), {}, "test")
    print(f"submit-verify on {agent.name}: true train {train:+.1f} pp, test {test:+.1f} pp")
    assert train > 8 and test > 8
    assert abs(train - test) < 3


def test_an_overfit_patch_raises_the_train_rate_only(tmp_path):
    agent = sim.preset("tb2")
    named = tuple(agent.tasks().query("split == 'train'")["task_id"][:15])
    hints = harness(tmp_path, "hints", ("train-task-hints", "careless-submit", "", named))
    hints = harness_files(hints)
    assert agent.true_effect(hints, {}, "train") > 2
    assert agent.true_effect(hints, {}, "test") == 0.0
    rates = agent.true_rates(hints, "train").set_index("task_id")["rate"]
    base = agent.true_rates({}, "train").set_index("task_id")["rate"]
    assert (rates[list(named)] > base[list(named)]).all()
    assert np.allclose(rates.drop(list(named)), base.drop(list(named)))


def test_selective_recovery_beats_blanket_toggles_and_thinking_off_breaks_solved_tasks(
        tmp_path):
    agent = sim.preset("livecode")
    effect = {m: agent.true_effect(
        harness_files(harness(tmp_path, m, (m, "thinking-runaway", "", ()))), {}, "train")
              for m in ("runaway-recovery", "thinking-off", "token-budget-16x", "polite-tone")}
    assert effect["runaway-recovery"] > effect["thinking-off"] + 5
    assert effect["runaway-recovery"] > effect["token-budget-16x"] + 5
    assert effect["polite-tone"] == 0.0
    off = agent.true_rates(harness_files(tmp_path / "thinking-off"), "train")["rate"]
    recovery = agent.true_rates(harness_files(tmp_path / "runaway-recovery"), "train")["rate"]
    base = agent.true_rates({}, "train")["rate"]
    # the blanket toggle breaks tasks the model already solves; selective recovery does not.
    # (Calibration changed this check: in the bimodal suites the `hard` tasks almost never
    # pass, so a harm on them no longer shows; it shows on the solved ones.)
    solved = (base >= 0.9).to_numpy()
    assert solved.sum() >= 10
    assert (off - base)[solved].mean() < -0.03
    assert (recovery - base)[solved].min() >= 0.0
    budget = to_trials(run_all(agent, tmp_path / "token-budget-16x", seeds=[0], k=1))
    plain = to_trials(run_all(agent, SEED_HARNESS, seeds=[0], k=1))
    assert budget["cost_usd"].sum() > 2.5 * plain["cost_usd"].sum()


def test_two_fixes_for_one_pathology_have_diminishing_returns(tmp_path):
    agent = sim.preset("appworld")
    one = {m: agent.true_effect(
        harness_files(harness(tmp_path, m, (m, "careless-submit", "", ()))), {}, "train")
           for m in ("submit-verify", "verify-reminder")}
    both = harness(tmp_path, "both", ("submit-verify", "careless-submit", "", ()),
                   ("verify-reminder", "careless-submit", "", ()))
    together = agent.true_effect(harness_files(both), {}, "train")
    assert one["submit-verify"] < together < one["submit-verify"] + one["verify-reminder"]


def test_failures_show_their_pathology_in_the_transcript():
    agent = sim.preset("tiny", infra_fault_rate=0.0, profile="qwen-runaway")
    results = run_all(agent, SEED_HARNESS, seeds=range(10))
    runaway = [t for _, t, _ in results if t.pathology == "thinking-runaway"]
    passed = [t for _, t, _ in results if t.passed]
    assert runaway and passed
    assert np.median([t.tokens for t in runaway]) > 3 * np.median([t.tokens for t in passed])
    shows = np.mean(["reasoning budget exhausted" in t.transcript
                     or "thinking exceeded the budget" in t.transcript for t in runaway])
    assert 0.8 < shows < 1.0  # a few runaway transcripts are ambiguous
    assert all(t.pathology is None and "grader: pass" in t.transcript for t in passed)


def test_a_test_canary_is_planted_in_every_test_task_and_nowhere_else():
    agent = sim.preset("tiny", test_canary="CANARY-0xBEEF")
    tasks = agent.tasks()
    test = tasks["split"] == "test"
    assert tasks.loc[test, "content"].str.contains("CANARY-0xBEEF").all()
    assert not tasks.loc[~test, "content"].str.contains("CANARY-0xBEEF").any()
    for _, row in tasks.iterrows():
        text = agent.run(SEED_HARNESS, row, repeat=0, attempt=0, run_seed=0).transcript
        assert ("CANARY-0xBEEF" in text) == (row["split"] == "test")


def test_an_aa_comparison_is_credited_in_about_2_5_percent_of_seeds():
    agent = sim.preset("tb2")
    seeds = range(120)
    runs = run_all(agent, SEED_HARNESS, seeds=seeds, candidate="a")
    runs += run_all(agent, SEED_HARNESS, seeds=[s + 10_000 for s in seeds], candidate="b")
    trials = to_trials(runs)
    by_candidate = dict(tuple(trials.groupby("candidate")))
    z = []
    for seed in seeds:
        pair = pd.concat([by_candidate[f"a{seed}"], by_candidate[f"b{seed + 10_000}"]])
        z.append(paired_test(pair, parent=f"a{seed}", child=f"b{seed + 10_000}")["z"].iloc[0])
    z = np.asarray(z)
    credited, flagged = np.mean(z >= 1.96), np.mean(np.abs(z) >= 1.96)
    print(f"A/A on {agent.name}, {len(z)} seeds: credited {credited:.1%}, "
          f"|z| >= 1.96 {flagged:.1%}, sd(z) {z.std(ddof=1):.2f}")
    assert credited <= 0.05
    assert flagged <= 0.09
    assert abs(z.mean()) < 0.25 and 0.75 < z.std(ddof=1) < 1.2  # calibrated, not inflated


def test_errors_name_the_argument_and_allowed_values():
    with pytest.raises(ValueError, match="name must be one of .*tb2"):
        sim.preset("nope")
    with pytest.raises(ValueError, match="profile must be one of .*balanced"):
        sim.preset("tiny", profile="nope")
    with pytest.raises(ValueError, match="infra_fault_rate"):
        sim.preset("tiny", infra_fault_rate=1.5)
    agent = sim.preset("tiny")
    with pytest.raises(ValueError, match="task_id 'nope'"):
        agent.run(SEED_HARNESS, {"task_id": "nope"}, repeat=0, attempt=0, run_seed=0)
    with pytest.raises(ValueError, match="split must be one of"):
        agent.true_rates({}, "dev")


def test_an_agent_pickles_small_and_runs_the_same_after():
    import pickle

    agent = sim.preset("tiny", suite_seed=3, infra_fault_rate=0.3, test_canary="CANARY")
    copy = pickle.loads(pickle.dumps(agent))
    assert len(pickle.dumps(agent)) < 1000
    assert copy.name == agent.name and copy.tasks().equals(agent.tasks())
    for _, task in agent.tasks().iterrows():
        assert copy.run(SEED_HARNESS, task, repeat=2, attempt=1, run_seed=9) == agent.run(
            SEED_HARNESS, task, repeat=2, attempt=1, run_seed=9)
