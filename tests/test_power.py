"""Power of the paired design, cross-checked against statsmodels and Monte Carlo."""

import doctest
import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.power import TTestPower, normal_power

from gsme import power as power_module
from gsme import stats
from gsme.settings import GateConfig

NORMAL = GateConfig(reference="normal")
STUDENT = GateConfig(reference="t")


def test_docstring_examples_run():
    assert doctest.testmod(power_module, raise_on_error=False).failed == 0


def test_the_power_tools_are_the_same_from_stats():
    assert (stats.power, stats.mde, stats.power_table) == (
        power_module.power, power_module.mde, power_module.power_table)


@pytest.mark.parametrize("n, effect, k", [(26, 5.0, 3), (167, 8.0, 3), (50, 15.0, 1)])
def test_power_matches_statsmodels(n, effect, k):
    repeat_sd, task_sd = 60.0, 10.0
    sd = math.sqrt(task_sd**2 + repeat_sd**2 / k)
    alpha = 2 * sps.norm.sf(1.96)
    got_t = stats.power(n_tasks=n, effect_pp=effect, repeat_sd_pp=repeat_sd, k=k,
                        task_sd_pp=task_sd, gate=STUDENT)
    assert got_t == pytest.approx(TTestPower().power(effect_size=effect / sd, nobs=n,
                                                     alpha=alpha), rel=1e-6)
    got_z = stats.power(n_tasks=n, effect_pp=effect, repeat_sd_pp=repeat_sd, k=k,
                        task_sd_pp=task_sd, gate=NORMAL)
    assert got_z == pytest.approx(normal_power(effect / sd, n, alpha), rel=1e-6)
    mde_t = stats.mde(n_tasks=n, repeat_sd_pp=repeat_sd, k=k, task_sd_pp=task_sd,
                      gate=STUDENT)
    expected = TTestPower().solve_power(nobs=n, alpha=alpha, power=0.8) * sd
    assert mde_t == pytest.approx(expected, rel=1e-4)


def test_power_matches_monte_carlo_of_the_paired_test():
    rng = np.random.default_rng(10)
    n, k, reps = 40, 3, 3000
    base = rng.uniform(0.3, 0.7, n)
    effect = 0.12
    p_c = base + effect
    repeat_sd = 100 * np.sqrt(np.mean(base * (1 - base) + p_c * (1 - p_c)))
    parent = rng.binomial(k, base, size=(reps, n)) / k
    child = rng.binomial(k, p_c, size=(reps, n)) / k
    d = child - parent
    z = d.mean(axis=1) / (d.std(axis=1, ddof=1) / np.sqrt(n))
    simulated = np.mean(np.abs(z) >= 1.96)
    analytic = stats.power(n_tasks=n, effect_pp=100 * effect, repeat_sd_pp=repeat_sd, k=k,
                           gate=NORMAL)
    assert simulated == pytest.approx(analytic, abs=0.04)
    at_mde = stats.power(n_tasks=n, effect_pp=stats.mde(n_tasks=n, repeat_sd_pp=repeat_sd, k=k),
                         repeat_sd_pp=repeat_sd, k=k)  # the default (t) reference
    assert at_mde == pytest.approx(0.8, abs=1e-9)


def test_power_rejects_bad_design():
    with pytest.raises(ValueError, match="n_tasks"):
        stats.power(n_tasks=1, effect_pp=5, repeat_sd_pp=50)
    with pytest.raises(ValueError, match="not both 0"):
        stats.power(n_tasks=10, effect_pp=5, repeat_sd_pp=0)
    with pytest.raises(ValueError, match="power must lie"):
        stats.mde(n_tasks=10, repeat_sd_pp=50, power=0.01)


def test_power_table_is_the_grid_of_power_and_mde():
    table = stats.power_table(n_tasks=[26, 100], effect_pp=[5, 10], k=[1, 3])
    assert len(table) == 8
    row = table[(table["n_tasks"] == 26) & (table["effect_pp"] == 10) & (table["k"] == 3)]
    sd = 100 * np.sqrt(0.5)
    assert row["power"].item() == pytest.approx(
        stats.power(n_tasks=26, effect_pp=10, repeat_sd_pp=sd, k=3))
    assert row["mde_pp"].item() == pytest.approx(stats.mde(n_tasks=26, repeat_sd_pp=sd, k=3))
    more_k = table[(table["n_tasks"] == 100) & (table["effect_pp"] == 5)]
    assert more_k.sort_values("k")["power"].is_monotonic_increasing


def test_power_where_the_noncentral_t_is_nan_is_integrated_instead():
    from scipy import integrate

    from gsme.power import _difference_sd, _power

    config = GateConfig()
    sd = _difference_sd(70.7, 0, 3)
    t_crit, nc = sps.t.isf(config.alpha, 3), 160 / sd * 2
    assert np.isnan(sps.nct.cdf(-t_crit, 3, nc))  # SciPy's gap the power fills
    got = power_module.power(n_tasks=4, effect_pp=160, repeat_sd_pp=70.7, k=3)
    by_hand = integrate.quad(lambda v: sps.chi2.pdf(v, 3) * (
        sps.norm.sf(t_crit * np.sqrt(v / 3) - nc)
        + sps.norm.cdf(-t_crit * np.sqrt(v / 3) - nc)), 0, np.inf)[0]
    assert got == pytest.approx(by_hand, abs=1e-12) and 0.99 < got < 1
    near = 163.27 / sd * 2  # where the nct works, both agree
    assert _power(4, 163.27, sd, config) == pytest.approx(
        sps.nct.sf(t_crit, 3, near) + sps.nct.cdf(-t_crit, 3, near), abs=1e-10)
    assert np.isfinite(power_module.mde(n_tasks=4, repeat_sd_pp=70.7, k=3))
