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
    out = prior.posterior(_comparisons(delta, se), mix, keep=config)
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
    fitted = prior.fit(data, keep=config)["weight"].to_numpy()
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
    pd.testing.assert_frame_equal(prior.fit(_comparisons([], []), keep=config),
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
    expected = prior.posterior(d, prior.start(config), keep=config)["expected_delta_pp"]
    assert (expected > 0).tolist() == [False, True]
    # a start counted as many comparisons is what a run's first child meets
    firm = config.model_copy(update={"start_weight": 1e6})
    assert policy.kept(d, policy="learned", keep=firm).tolist() == [False, True]


def test_an_uncredited_child_must_be_expected_to_be_worth_worth_pp():
    firm = KeepConfig(start_weight=1e6)  # the start mix alone decides
    d = pd.DataFrame({"decision": "inconclusive", "delta_pp": np.linspace(0.0, 8.0, 81),
                      "se_pp": 3.5})
    expected = prior.posterior(d, prior.start(firm), keep=firm)["expected_delta_pp"]
    kept = policy.kept(d, policy="learned", keep=firm)
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


# -- history: capped by runs, checked against the run's own comparisons ------------------

KNOWN = pd.DataFrame({"effect_pp": [-3.0, 0.0, 6.0], "weight": [0.3, 0.5, 0.2]})
"""A known proposal mix on grid points (KeepConfig's grid holds them)."""


def _draw(mix, se, rng):
    theta = rng.choice(mix["effect_pp"], size=len(se), p=mix["weight"])
    return _comparisons(theta + rng.normal(0, se), se)


def test_the_log_predictive_density_is_the_mix_convolved_with_each_se():
    c = _comparisons([-4.0, 0.5, 9.0], [2.0, 3.5, 0.1])  # 0.1 is read at the floor, 0.5
    se = np.maximum(c["se_pp"], KeepConfig().se_floor_pp).to_numpy()
    brute = np.log([sum(w * sps.norm.pdf(d, t, s) for t, w in zip(KNOWN["effect_pp"],
                                                                   KNOWN["weight"]))
                    for d, s in zip(c["delta_pp"], se)])
    np.testing.assert_allclose(prior.log_predictive(c, KNOWN), brute, rtol=1e-12)


def test_the_history_check_has_its_level_when_the_mix_is_known(monkeypatch):
    """Current comparisons drawn from the history's own (known) mix are flagged at the level:
    300 seeded runs of 10 comparisons at α = 5% (binomial 99.9% range 1.6%-9.7%)."""
    monkeypatch.setattr(prior, "fit", lambda history, keep=None: KNOWN)
    rng = np.random.default_rng(11)
    history = _comparisons([0.0], [3.0])
    flagged = [not prior.check_history(history, _draw(KNOWN, rng.uniform(2, 5, 10), rng))["used"]
               for _ in range(300)]
    assert 0.016 <= np.mean(flagged) <= 0.097


def test_the_history_check_p_value_agrees_with_a_brute_force_simulation(monkeypatch):
    monkeypatch.setattr(prior, "fit", lambda history, keep=None: KNOWN)
    rng = np.random.default_rng(5)
    se = rng.uniform(2, 5, 12)
    current = _comparisons(rng.normal(-5.0, 3.0, 12), se)  # a harsher world than KNOWN's
    check = prior.check_history(_comparisons([0.0], [3.0]), current)
    cautious = prior.start()

    def gain(delta):  # log f_KNOWN - log f_start, summed per row, by scipy densities
        def log_f(mix):
            return np.log(sum(w * sps.norm.pdf(delta, t, se)
                              for t, w in zip(mix["effect_pp"], mix["weight"])))
        return (log_f(KNOWN) - log_f(cautious)).sum(axis=-1)

    draws = np.random.default_rng(99)
    theta = draws.choice(KNOWN["effect_pp"], size=(20_000, 12), p=KNOWN["weight"])
    observed = gain(current["delta_pp"].to_numpy())
    brute = np.mean(gain(theta + draws.normal(0, 1, theta.shape) * se) <= observed)
    assert abs(check["p_value"] - brute) < 0.01 and check["p_value"] < 0.05
    assert check["log_score_gain"] == pytest.approx(observed / 12)


def test_a_kind_history_is_dropped_by_a_harmful_run_and_kept_by_its_own_world():
    """The known answer: five runs of a kind world (40% of proposals +6 pp) checked against
    15 comparisons of a harmful one (70% at -3 pp) and of the kind one itself."""
    rng = np.random.default_rng(3)
    kind = pd.DataFrame({"effect_pp": [0.0, 6.0], "weight": [0.6, 0.4]})
    harmful = pd.DataFrame({"effect_pp": [-3.0, 0.0], "weight": [0.7, 0.3]})
    history = pd.concat([_draw(kind, np.full(15, 3.5), rng).assign(run=f"r{i}")
                         for i in range(5)], ignore_index=True)
    drop = prior.check_history(history, _draw(harmful, np.full(15, 3.5), rng))
    keep = prior.check_history(history, _draw(kind, np.full(15, 3.5), rng))
    assert (drop["used"], drop["runs"], drop["comparisons"], drop["current"]) == (False, 5, 75,
                                                                                  15)
    assert drop["p_value"] < 0.01 < keep["p_value"] and keep["used"]


def test_history_counts_by_runs_the_latest_ones():
    rows = pd.concat([_comparisons(np.full(4, float(i)), np.full(4, 3.0)).assign(run=f"r{i}")
                      for i in range(8)], ignore_index=True)
    capped = prior.recent_runs(rows, KeepConfig().history_runs)
    assert capped["run"].unique().tolist() == ["r3", "r4", "r5", "r6", "r7"]
    check = prior.check_history(rows, _comparisons([5.0], [3.0]))
    assert (check["runs"], check["comparisons"]) == (5, 20)
    none = prior.check_history(rows, _comparisons([5.0], [3.0]),
                               keep=KeepConfig(history_runs=0))
    assert (none["runs"], none["used"]) == (0, False)


def test_a_dropped_history_is_not_learned_from():
    rng = np.random.default_rng(4)
    kind = _comparisons(rng.normal(8.0, 2.0, 60), np.full(60, 2.0)).assign(run="r1", own=False)
    harm = pd.DataFrame({"decision": "inconclusive", "delta_pp": rng.normal(-4.0, 1.0, 12),
                         "se_pp": 2.0})
    assert not policy.history_check(harm, past=kind)["used"]
    alone = policy.expected_effects(harm)
    pd.testing.assert_frame_equal(policy.expected_effects(harm, past=kind), alone)


def test_the_mix_learns_from_first_k_deltas_where_a_comparison_has_them():
    rng = np.random.default_rng(6)
    past = _comparisons(rng.normal(4.0, 3.0, 30), np.full(30, 3.0)).assign(
        first_delta_pp=rng.normal(-1.0, 3.0, 30), first_se_pp=3.5)
    as_first = past[["first_delta_pp", "first_se_pp"]].set_axis(["delta_pp", "se_pp"], axis=1)
    child = pd.DataFrame({"decision": ["inconclusive"], "delta_pp": [2.0], "se_pp": [3.0]})
    pd.testing.assert_frame_equal(policy.expected_effects(child, past=past),
                                  policy.expected_effects(child, past=as_first))
    older = past.assign(first_delta_pp=np.nan, first_se_pp=np.nan)  # no first-K: its own
    pd.testing.assert_frame_equal(policy.expected_effects(child, past=older),
                                  policy.expected_effects(child, past=past[["delta_pp",
                                                                            "se_pp"]]))


def test_a_child_that_measured_no_gain_is_kept_only_when_credited():
    helped = _comparisons(np.random.default_rng(7).normal(2.0, 3.5, 80), np.full(80, 3.5))
    d = pd.DataFrame({"decision": ["inconclusive", "inconclusive", "inconclusive"],
                      "delta_pp": [0.0, -0.5, 0.5], "se_pp": 3.5})
    expected = policy.expected_effects(d, past=helped)["expected_delta_pp"]
    assert (expected > KeepConfig().worth_pp).all()  # the mix alone would keep all three
    assert policy.kept(d, policy="learned", past=helped).tolist() == [False, False, True]
