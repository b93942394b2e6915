import doctest

import numpy as np
import pandas as pd
import pytest

from gsme import gates, schema, stats
from gsme.settings import GateConfig

STORED = GateConfig(parent_trials="stored")  # hand-made trials: no fresh parent blocks
DECISION_COLUMNS = schema.columns("decisions") + ["first_delta_pp", "first_se_pp"]


def make_candidates(rows):
    """rows: (candidate, parents, kind)."""
    frame = pd.DataFrame(rows, columns=["candidate", "parents", "kind"])
    is_base = frame["kind"] == "baseline"
    return frame.assign(
        where=np.where(is_base, None, "prompt"), why=np.where(is_base, None, "careless"),
        patch_id=None, beacon=None, env_gate=None, commit=None, branch=None,
        round=np.arange(len(frame)), rationale=None,
    )


def make_run(rng, effects, *, n_tasks=40, k=3, activation=None, infra_fail=None):
    """Simulated trials: ``effects[name]`` shifts that candidate's pass probability."""
    base = rng.uniform(0.2, 0.8, n_tasks)
    frames = []
    for name, effect in effects.items():
        p = np.clip(base + effect, 0, 1)
        frame = pd.DataFrame({
            "candidate": name,
            "task_id": np.repeat([f"t{i:03d}" for i in range(n_tasks)], k),
            "split": "train",
            "repeat": np.tile(np.arange(k), n_tasks),
            "passed": rng.random(n_tasks * k) < np.repeat(p, k),
            "activated": rng.random(n_tasks * k) < (activation or {}).get(name, 0.5),
            "infra_ok": rng.random(n_tasks * k) >= (infra_fail or {}).get(name, 0.0),
        })
        frame.loc[~frame["infra_ok"], ["passed", "activated"]] = False
        frames.append(frame)
    return schema.as_trials(pd.concat(frames, ignore_index=True))


def test_docstring_examples_run():
    assert doctest.testmod(gates, raise_on_error=False).failed == 0


def test_validity_gate_reruns_then_excludes():
    trials = schema.as_trials(pd.DataFrame({
        "candidate": "a", "task_id": ["t1", "t2", "t2", "t3", "t3", "t3", "t4"],
        "split": "train", "repeat": 0, "attempt": [0, 0, 1, 0, 1, 2, 0],
        "passed": [True, False, True, False, False, False, False],
        "infra_ok": [True, False, True, False, False, False, False],
    }))
    out = gates.validity_gate(trials, gate=GateConfig(max_reruns=2)).set_index("task_id")
    assert out["attempts"].to_dict() == {"t1": 1, "t2": 2, "t3": 3, "t4": 1}
    assert out["valid"].to_dict() == {"t1": True, "t2": True, "t3": False, "t4": False}
    assert out["needs_rerun"].to_dict() == {"t1": False, "t2": False, "t3": False, "t4": True}
    assert out["excluded"].to_dict() == {"t1": False, "t2": False, "t3": True, "t4": False}
    strict = gates.validity_gate(trials, gate=GateConfig(max_reruns=0)).set_index("task_id")
    assert strict.loc["t4", "excluded"] and not strict.loc["t4", "needs_rerun"]
    # the infrastructure failure of t2 is not a task failure: the re-run's pass counts
    assert stats.task_rates(trials).set_index("task_id").loc["t2", "rate"] == 1.0
    with pytest.raises(ValueError, match="max_reruns"):
        GateConfig(max_reruns=-1)


def test_activation_gate_counts_valid_trials_and_exempts_baseline():
    trials = schema.as_trials(pd.DataFrame({
        "candidate": ["base"] * 2 + ["c1"] * 4 + ["c2"] * 2,
        "task_id": ["t1", "t2", "t1", "t2", "t3", "t4", "t1", "t2"], "split": "train",
        "repeat": 0,
        "passed": False, "infra_ok": [True, True, True, True, True, False, True, True],
        "activated": [False, False, True, False, True, False, False, False],
    }))
    candidates = make_candidates([("base", "", "baseline"), ("c1", "base", "mutation"),
                                  ("c2", "base", "mutation"), ("c3", "base", "mutation")])
    out = gates.activation_gate(trials, candidates).set_index("candidate")
    assert out.loc["c1", ["trials", "activations"]].tolist() == [3, 2]
    assert out.loc["c1", "activation_rate"] == pytest.approx(2 / 3)
    assert out["active"].to_dict() == {"base": True, "c1": True, "c2": False, "c3": False}
    assert out.loc["c3", "trials"] == 0 and np.isnan(out.loc["c3", "activation_rate"])
    stricter = gates.activation_gate(trials, candidates, gate=GateConfig(min_activations=3))
    assert not stricter.set_index("candidate").loc["c1", "active"]


def test_significance_gate_equals_paired_test_pair_by_pair():
    rng = np.random.default_rng(0)
    names = [f"c{i}" for i in range(8)]
    trials = make_run(rng, dict(zip(names, rng.normal(0, 0.15, 8))))
    pairs = pd.DataFrame({"child": names[1:] + ["ghost"], "parent": names[:-1] + ["c0"]})
    out = gates.significance_gate(trials, pairs, gate=GateConfig(design="fixed"))
    assert out["child"].tolist() == pairs["child"].tolist()
    for i, (child, parent) in enumerate(zip(pairs["child"][:-1], pairs["parent"][:-1])):
        one = stats.paired_test(trials, parent=parent, child=child)
        pd.testing.assert_frame_equal(out.iloc[[i]].reset_index(drop=True),
                                      one, check_exact=False, rtol=1e-12)
    ghost = out.iloc[-1]
    assert ghost["n_tasks"] == 0 and ghost["decision"] == "inconclusive"
    assert ghost["reason"] == "no task has a valid repeat on both sides"
    with pytest.raises(schema.FrameError, match="parent"):
        gates.significance_gate(trials, pairs.drop(columns="parent"))


@pytest.fixture(scope="module")
def scenario():
    rng = np.random.default_rng(1)
    effects = {"base": 0.0, "good": 0.35, "silent": 0.35, "broken": 0.35, "bad": -0.35,
               "flat": 0.0, "merge": 0.35}
    trials = make_run(rng, effects, n_tasks=60,
                      activation={"silent": 0.0}, infra_fail={"broken": 0.9})
    candidates = make_candidates([
        ("base", "", "baseline"), ("good", "base", "mutation"), ("silent", "base", "mutation"),
        ("broken", "base", "mutation"), ("bad", "base", "mutation"), ("flat", "base", "mutation"),
        ("merge", "flat,good", "recombination"),
    ])
    return trials, candidates


def test_credit_names_the_first_gate_that_stopped_each_candidate(scenario):
    trials, candidates = scenario
    out = gates.credit(trials, candidates, gate=STORED).set_index("child")
    assert list(out.index) == ["good", "silent", "broken", "bad", "flat", "merge"]
    assert out["decision"].to_dict() == {
        "good": "credit", "silent": "inactive", "broken": "invalid", "bad": "cull",
        "flat": "inconclusive", "merge": "credit",
    }
    assert out["gate_failed"].to_dict() == {
        "good": None, "silent": "activation", "broken": "validity", "bad": "significance",
        "flat": "significance", "merge": None,
    }
    assert out.loc["merge", "parent"] == "flat"  # the first parent
    assert out.loc["silent", "activation_rate"] == 0.0
    assert "beacon fired in 0 of" in out.loc["silent", "reason"]
    assert "could not be paired" in out.loc["broken", "reason"]
    assert out.loc["broken", "n_dropped"] > 0.1 * (out.loc["broken", ["n_tasks", "n_dropped"]].sum())


def test_credit_statistics_equal_paired_test_and_validate(scenario):
    trials, candidates = scenario
    out = gates.credit(trials, candidates, gate=STORED)
    schema.validate(out, "decisions")
    assert list(out.columns) == DECISION_COLUMNS
    row = out[out["child"] == "silent"]
    one = stats.paired_test(trials, parent="base", child="silent")
    cols = ["n_tasks", "n_dropped", "n_changed", "k", "delta_pp", "se_pp", "z", "p_value"]
    pd.testing.assert_frame_equal(row[cols].reset_index(drop=True), one[cols])


def test_credit_thresholds_move_decisions(scenario):
    trials, candidates = scenario
    lenient = gates.credit(trials, candidates,
                           gate=STORED.model_copy(update={"max_dropped_frac": 0.99})
                           ).set_index("child")
    assert lenient.loc["broken", "decision"] != "invalid"
    strict = gates.credit(trials, candidates,
                          gate=STORED.model_copy(update={"z_crit": 50.0})).set_index("child")
    assert strict.loc["good", "decision"] == "inconclusive"
    assert strict.loc["good", "gate_failed"] == "significance"


def test_hand_made_trials_without_fresh_blocks_are_refused_in_one_line(scenario):
    trials, candidates = scenario
    with pytest.raises(schema.FrameError, match="parent_trials='stored'") as err:
        gates.credit(trials, candidates)  # the default: fresh blocks, which these lack
    assert "'base' has no trials in the fresh block" in str(err.value)
    assert "\n" not in str(err.value)


def test_credit_does_not_mutate_inputs(scenario):
    trials, candidates = scenario
    before_t, before_c = trials.copy(), candidates.copy()
    gates.credit(trials, candidates, gate=STORED)
    pd.testing.assert_frame_equal(trials, before_t)
    pd.testing.assert_frame_equal(candidates, before_c)


def test_credit_edge_inputs(scenario):
    trials, candidates = scenario
    only_base = gates.credit(trials, candidates.iloc[:1])
    assert only_base.empty and list(only_base.columns) == DECISION_COLUMNS
    orphan = candidates.copy()
    orphan.loc[1, "parents"] = ""
    with pytest.raises(schema.FrameError, match="parents"):
        gates.credit(trials, orphan)
    with pytest.raises(ValueError, match="max_dropped_frac"):
        GateConfig(max_dropped_frac=1.0)
    with pytest.raises(schema.FrameError, match="kind"):
        gates.credit(trials, candidates.assign(kind="hybrid"))


def test_normal_reference_over_credits_null_pairs_at_small_n():
    rng = np.random.default_rng(2)
    n_pairs, n_tasks = 2000, 26
    # a null per-task difference: child and parent share each task's pass probability
    p = rng.uniform(0.2, 0.8, (n_pairs, n_tasks))
    rows = []
    for side in ("p", "c"):
        rows.append(pd.DataFrame({
            "candidate": np.repeat([f"{side}{i}" for i in range(n_pairs)], n_tasks * 3),
            "task_id": np.tile(np.repeat(np.arange(n_tasks).astype(str), 3), n_pairs),
            "split": "train", "repeat": np.tile([0, 1, 2], n_pairs * n_tasks),
            "passed": rng.random(n_pairs * n_tasks * 3) < np.repeat(p.ravel(), 3),
        }))
    trials = schema.as_trials(pd.concat(rows, ignore_index=True))
    pairs = pd.DataFrame({"child": [f"c{i}" for i in range(n_pairs)],
                          "parent": [f"p{i}" for i in range(n_pairs)]})
    fixed = GateConfig(design="fixed", exact_below=0)
    normal = gates.significance_gate(trials, pairs,
                                     gate=fixed.model_copy(update={"reference": "normal"}))
    student = gates.significance_gate(trials, pairs, gate=fixed)
    false_normal = (normal["decision"] == "credit").mean()
    false_t = (student["decision"] == "credit").mean()
    assert false_t <= false_normal
    assert 0.01 < false_normal < 0.05 and false_t < 0.04


def test_credit_on_a_run_without_trials_is_invalid_not_an_error():
    candidates = make_candidates([("base", "", "baseline"), ("c1", "base", "mutation")])
    out = gates.credit(schema.empty("trials"), candidates)
    assert out[["decision", "gate_failed", "n_tasks"]].values.tolist() == [
        ["invalid", "validity", 0]]
    assert gates.validity_gate(schema.empty("trials")).empty
    assert gates.activation_gate(schema.empty("trials"), candidates)["trials"].tolist() == [0, 0]
