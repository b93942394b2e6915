"""The proposal mix learned by empirical Bayes, against closed forms and brute force."""

import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from scipy import stats as sps

from gsme import policy, prior
from gsme.settings import KeepConfig

FINE = KeepConfig(grid_step_pp=0.05, grid_max_pp=40.0)


def _comparisons(delta, se):
    return pd.DataFrame({"delta_pp": np.asarray(delta, float), "se_pp": np.asarray(se, float)})


def test_the_posterior_under_a_normal_mix_is_the_conjugate_closed_form():
    config = FINE.model_copy(update={"start_null": 0.0, "start_mean_pp": 1.5,
                                     "start_sd_pp": 4.0})
    mix = prior.start(config)
    delta, se = np.array([-6.0, 0.0, 2.5, 9.0]), np.array([3.5, 2.0, 1.0, 5.0])
    out = prior.posterior(_comparisons(delta, se), mix, config=config)
    tau2, mu = 4.0**2, 1.5
    mean = (tau2 * delta + se**2 * mu) / (tau2 + se**2)
    sd = np.sqrt(tau2 * se**2 / (tau2 + se**2))
    np.testing.assert_allclose(out["expected_delta_pp"], mean, atol=2e-3)
    # P(θ > 0) on the grid leaves out the atom at exactly 0 (at most one cell's mass)
    closed = sps.norm.sf(0, mean, sd)
    assert np.all(out["p_positive"] <= closed + 1e-4)
    assert np.all(closed - out["p_positive"] <= config.grid_step_pp * sps.norm.pdf(0, mean, sd)
                  + 1e-4)


def test_the_posterior_of_a_small_discrete_mix_by_hand():
    mix = pd.DataFrame({"effect_pp": [-5.0, 0.0, 5.0], "weight": [0.2, 0.5, 0.3]})
    out = prior.posterior(_comparisons([3.0, -1.0], [2.0, 4.0]), mix)
    for i, (d, s) in enumerate([(3.0, 2.0), (-1.0, 4.0)]):
        joint = mix["weight"] * sps.norm.pdf(d, mix["effect_pp"], s)
        post = joint / joint.sum()
        assert out["expected_delta_pp"].iloc[i] == pytest.approx(float(post @ mix["effect_pp"]))
        assert out["p_positive"].iloc[i] == pytest.approx(float(post.iloc[2]))
        assert out["lfsr"].iloc[i] == pytest.approx(min(post.iloc[1] + post.iloc[2],
                                                        post.iloc[0] + post.iloc[1]))


def test_fit_maximises_the_penalised_likelihood_found_by_a_general_optimiser():
    config = KeepConfig(grid_step_pp=5.0, grid_max_pp=10.0, start_weight=3.0)
    rng = np.random.default_rng(0)
    data = _comparisons(rng.normal([4.0] * 12 + [0.0] * 8, 3.0), np.full(20, 3.0))
    fitted = prior.fit(data, config=config)["weight"].to_numpy()
    effects = prior.grid(config)
    pseudo = config.start_weight * prior.start(config)["weight"].to_numpy()
    like = sps.norm.pdf(data["delta_pp"].to_numpy()[:, None], effects[None, :], 3.0)

    def objective(w):
        return -(np.log(like @ w).sum() + pseudo @ np.log(w))

    def from_logits(x):
        return np.exp(x - x.max()) / np.exp(x - x.max()).sum()

    best = optimize.minimize(lambda x: objective(from_logits(x)), np.zeros(len(effects)),
                             method="Nelder-Mead", options={"maxiter": 20000, "xatol": 1e-10,
                                                            "fatol": 1e-12})
    np.testing.assert_allclose(fitted, from_logits(best.x), atol=1e-3)
    assert objective(fitted) <= best.fun + 1e-6


def test_with_no_comparisons_the_mix_is_the_cautious_start():
    config = KeepConfig()
    pd.testing.assert_frame_equal(prior.fit(_comparisons([], []), config=config),
                                  prior.start(config))
    start = prior.start(config)
    assert float(start["effect_pp"] @ start["weight"]) < 0  # acting proposals hurt a little


@pytest.mark.parametrize("true_mean", [-1.5, 0.0, 4.0])
def test_many_comparisons_outweigh_the_start(true_mean):
    rng = np.random.default_rng(1)
    effects = rng.normal(true_mean, 2.0, 400)
    data = _comparisons(effects + rng.normal(0, 3.0, 400), np.full(400, 3.0))
    mix = prior.fit(data)
    # the mix's mean follows the measured mean (0.18 pp of sampling error), not the start's
    assert float(mix["effect_pp"] @ mix["weight"]) == pytest.approx(
        data["delta_pp"].mean(), abs=0.3)


def test_before_evidence_the_learned_rule_keeps_above_the_start_threshold():
    # under the start mix the posterior mean's sign is that of the acting part's:
    # (tau² delta + se² mu) / (tau² + se²) > 0  <=>  delta > -mu se² / tau²
    config = KeepConfig(worth_pp=0.0)
    se = 3.5
    threshold = -config.start_mean_pp * se**2 / config.start_sd_pp**2
    d = pd.DataFrame({"decision": "inconclusive", "delta_pp": [threshold - 0.2,
                                                              threshold + 0.2], "se_pp": se})
    expected = prior.posterior(d, prior.start(config), config=config)["expected_delta_pp"]
    assert (expected > 0).tolist() == [False, True]
    # a start counted as many comparisons is what a run's first child meets
    firm = config.model_copy(update={"start_weight": 1e6})
    assert policy.kept(d, policy="learned", config=firm).tolist() == [False, True]


def test_an_uncredited_child_must_be_expected_to_be_worth_worth_pp():
    firm = KeepConfig(start_weight=1e6)  # the start mix alone decides
    d = pd.DataFrame({"decision": "inconclusive", "delta_pp": np.linspace(0.0, 8.0, 81),
                      "se_pp": 3.5})
    expected = prior.posterior(d, prior.start(firm), config=firm)["expected_delta_pp"]
    kept = policy.kept(d, policy="learned", config=firm)
    assert ((expected > 0) & (expected <= firm.worth_pp)).any()  # the band exists here
    assert kept.tolist() == (expected > firm.worth_pp).tolist()


def test_the_learned_rule_is_lenient_where_proposals_helped_and_strict_where_they_hurt():
    rng = np.random.default_rng(2)
    helped = _comparisons(rng.normal(3.0, 4.0, 80), np.full(80, 3.5))
    hurt = _comparisons(rng.normal(-2.0, 3.6, 80), np.full(80, 3.5))
    child = pd.DataFrame({"decision": ["inconclusive"] * 2, "delta_pp": [0.5, 4.0],
                          "se_pp": [3.5, 3.5]})
    assert policy.kept(child, policy="learned", past=helped).tolist() == [True, True]
    assert policy.kept(child, policy="learned", past=hurt).tolist() == [False, False]
    assert policy.kept(child, policy="greedy").tolist() == [True, True]


def test_credited_children_are_always_kept_and_unmeasured_ones_never():
    hurt = _comparisons(np.full(60, -4.0), np.full(60, 2.0))
    d = pd.DataFrame({"decision": ["credit", "inactive", "invalid", "cull"],
                      "delta_pp": [9.0, 12.0, 12.0, -9.0], "se_pp": [3.0, 3.0, 3.0, 3.0]})
    assert policy.kept(d, policy="learned", past=hurt).tolist() == [True, False, False, False]
    effects = policy.expected_effects(d, past=hurt)
    assert effects["expected_delta_pp"].isna().tolist() == [False, True, True, False]


def test_a_comparison_with_no_spread_is_read_at_the_se_floor():
    mix = prior.start()
    zero = prior.posterior(_comparisons([0.0], [0.0]), mix)
    floor = prior.posterior(_comparisons([0.0], [KeepConfig().se_floor_pp]), mix)
    pd.testing.assert_frame_equal(zero, floor)


def test_bad_input_names_the_missing_column():
    with pytest.raises(Exception, match="se_pp"):
        prior.fit(pd.DataFrame({"delta_pp": [1.0]}))
    with pytest.raises(Exception, match="weight"):
        prior.posterior(_comparisons([1.0], [1.0]), pd.DataFrame({"effect_pp": [0.0]}))
