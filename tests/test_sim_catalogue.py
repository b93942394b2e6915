"""The hidden catalogue and the outcome model it drives."""

import numpy as np
import pandas as pd
import pytest

from gsme.patches import FileChange, Patch
from gsme.sim.catalogue import CATALOGUE, TRIGGERS, effect_of
from gsme.sim.model import WHY_INDEX, base_onset, compile_harness
from gsme.sim.profiles import PROFILES
from gsme.sim.suite import PRESET_SPECS, build_suite


def patch(mechanism, why="looping", gate="", tasks=(), text="x"):
    return Patch(id="p", where="knowledge", why=why, mechanism=mechanism, beacon="b",
                 env_gate=gate, changes=(FileChange("knowledge/x.md", text),),
                 predicted_tasks=tasks)


@pytest.fixture(scope="module")
def bench():
    return build_suite(PRESET_SPECS["tiny"], suite_seed=0)


def compiled(bench, *patches, admit=None):
    onset = base_onset(bench, PROFILES["qwen-careless"])
    n = len(bench.tasks)
    mask = (lambda expr: np.ones(n, bool)) if admit is None else admit
    return compile_harness(patches, bench, onset, mask)


def test_the_catalogue_mixes_every_kind_of_mechanism():
    kinds = {e.kind for e in CATALOGUE.values()}
    assert {"targeted", "weak", "cosmetic", "harmful", "costly", "overfit"} <= kinds
    assert all(e.trigger in TRIGGERS for e in CATALOGUE.values())


def test_unknown_mechanisms_have_a_small_deterministic_effect():
    a, b = effect_of("reflect twice", "looping"), effect_of("reflect twice", "looping")
    assert a == b and a.kind == "unknown" and a.why == "looping"
    assert 0.9 <= a.factor <= 1.0
    assert effect_of("another idea", "looping").factor != a.factor


def test_the_exact_pass_probability_follows_the_documented_formula(bench):
    model = compiled(bench, patch("submit-verify"), patch("thinking-off"))
    fail = (model.onset * model.fail_given_onset).sum(axis=1)
    assert np.allclose(model.pass_prob, (1 - fail) * (1 - model.harm))
    hard = bench.tasks["hard"].to_numpy()
    assert np.allclose(model.harm[hard], 0.7) and np.allclose(model.harm[~hard], 0.05)
    col = WHY_INDEX["careless-submit"]
    gap = bench.out_of_reach
    assert gap.any() and (~gap).any()
    assert np.allclose(model.fail_given_onset[~gap, col], 0.3)
    # out of reach: every onset ends in failure whatever the patches (changed with the
    # calibration: no fix moves a capability gap)
    assert np.allclose(model.fail_given_onset[gap], 1.0)
    assert np.allclose(model.onset[gap].sum(axis=1), 1.0)
    assert (model.pass_prob[gap] == 0.0).all()


def test_an_effect_acts_only_where_the_gate_admits(bench):
    admitted = bench.tasks["has_tests"].to_numpy()
    model = compiled(bench, patch("submit-verify", gate="has_tests"),
                     admit=lambda expr: admitted if expr else np.ones(len(admitted), bool))
    base = compiled(bench)
    reach = ~bench.out_of_reach
    assert np.allclose(model.pass_prob[~admitted], base.pass_prob[~admitted])
    assert (model.pass_prob[admitted & reach] > base.pass_prob[admitted & reach]).all()
    assert (model.pass_prob[~reach] == 0.0).all()
    assert np.array_equal(model.beacons[0].admitted, admitted)


def test_hints_help_only_the_tasks_they_name(bench):
    ids = bench.tasks["task_id"]
    named = compiled(bench, patch("train-task-hints", tasks=(ids[0],), text=f"see {ids[1]}"))
    base = compiled(bench)
    better = named.pass_prob > base.pass_prob + 1e-12
    assert better.tolist() == [i in (0, 1) for i in range(len(ids))]


def test_stacked_fixes_have_diminishing_returns(bench):
    col = WHY_INDEX["careless-submit"]
    both = compiled(bench, patch("submit-verify"), patch("verify-reminder"))
    reach = ~bench.out_of_reach
    assert np.allclose(both.fail_given_onset[reach, col], 0.3 * 0.85 ** 0.5)


def test_most_proposable_fixes_do_not_really_help():
    from gsme.evolvers.templates import TEMPLATES

    mechanisms = {t.mechanism for options in TEMPLATES.values() for t in options}
    assert mechanisms <= set(CATALOGUE)
    kinds = pd.Series([CATALOGUE[m].kind for m in mechanisms]).value_counts()
    no_gain_on_test = kinds.reindex(["cosmetic", "harmful", "overfit"]).fillna(0).sum()
    assert no_gain_on_test / kinds.sum() >= 0.4
    assert kinds["targeted"] / kinds.sum() <= 0.3
