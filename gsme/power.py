"""Power of the per-task paired test: how many tasks and repeats an effect needs.

Per-task differences d_i have a spread made of within-task noise (binomial for pass/fail),
whose variance shrinks as 1/K with the number of repeats, and between-task heterogeneity of
the effect, which repeats do not shrink. ``repeat_sd_pp`` is the sd of one repeat's
child-minus-parent value within a task, ``task_sd_pp`` the heterogeneity.
Also importable from :mod:`gsme.stats`.

**Pass/fail or scores.** The formulas hold for any trial value (:func:`gsme.schema.trial_values`)
whose per-task mean differences are near normal; pp are 100 × the value's units. A value in
[0, 1], pass/fail or a score, has variance at most 1/4 (Popoviciu), so its ``repeat_sd_pp``
is at most 100·√0.5 = 70.7 pp, the default of :func:`power_table` and
:func:`gsme.compare.plan`: for such values that default errs towards too little power.
Scores on any other scale have no such bound: give their repeat sd, measured from the data
(:func:`gsme.compare.repeat_sd_from_aa` on an A/A pair, or the ``sd_pp`` that
:func:`gsme.compare.compare` reports).

These are the power of the fixed, one-look design (``design="fixed"``) with the normal or
t reference, for a smooth (normal) distribution of the differences; they do not model the
exact sign-flip p used when few tasks changed (``exact_below``), which only lowers power.
The adaptive design's power depends on how many tasks are mixed and is measured by
simulation in ``benchmarks/aa_designs.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import integrate, optimize, stats
from statsmodels.stats.power import NormalIndPower, TTestPower

from gsme import _checks
from gsme._renamed import renamed_keywords
from gsme.settings import REPEAT_SD_PP, TARGET_POWER, GateConfig

__all__ = ["mde", "power", "power_table"]


@renamed_keywords(config="gate")
def power(
    *,
    n_tasks,
    effect_pp,
    repeat_sd_pp,
    k: int | None = None,
    task_sd_pp=0.0,
    gate: GateConfig | None = None,
):
    """Probability that the paired test decides (:math:`|z|` ≥ critical value) at a true effect.

    The per-task difference d_i has variance ``task_sd_pp² + repeat_sd_pp² / k``:
    ``repeat_sd_pp`` is the sd of one repeat's child-minus-parent outcome within a task
    (for pass probabilities p_c, p_p it is 100·√(p_c(1−p_c) + p_p(1−p_p))), averaged over
    ``k`` repeats; ``task_sd_pp`` is the spread of the true effect between tasks.
    Analytic: normal reference Φ(λ − c) + Φ(−λ − c) with λ = effect·√n / sd; the t
    reference uses the noncentral t with n − 1 degrees of freedom.

    Parameters
    ----------
    n_tasks : int or array-like
        Paired tasks (≥ 2).
    effect_pp : float or array-like
        True mean difference, percentage points (finite: NaN is refused, never a power).
    repeat_sd_pp, task_sd_pp : float
        See above; their combined sd must be positive.
    k : int, optional
        Repeats per task (≥ 1); default ``gate.k``.
    gate : GateConfig, optional
        Its ``z_crit`` and ``reference``, as in :func:`gsme.stats.paired_test`.

    Returns
    -------
    float or ndarray
        Power, shaped like the inputs broadcast together.

    Examples
    --------
    >>> round(power(n_tasks=100, effect_pp=10, repeat_sd_pp=70.7, k=3), 3)
    0.679
    >>> round(power(n_tasks=100, effect_pp=10, repeat_sd_pp=70.7, k=3,
    ...             gate=GateConfig(reference="normal")), 3)
    0.688
    """
    gate, k = _check_power_args(k, gate)
    n = _checks.check_finite("n_tasks", n_tasks)
    if np.any(n < 2):
        raise ValueError(f"n_tasks must be >= 2, got {n_tasks!r}")
    sd = _difference_sd(repeat_sd_pp, task_sd_pp, k)
    out = _power(n, _checks.check_finite("effect_pp", effect_pp), sd, gate)
    return float(out) if np.ndim(out) == 0 else out


@renamed_keywords(config="gate")
def mde(
    *,
    n_tasks: int,
    repeat_sd_pp: float,
    k: int | None = None,
    task_sd_pp: float = 0.0,
    power: float = TARGET_POWER,
    gate: GateConfig | None = None,
) -> float:
    """Minimum detectable effect (pp): the effect that :func:`power` gives with ``power``.

    Solved exactly (Brent's method) on the analytic power curve; arguments as in
    :func:`power`, all scalars.

    Returns
    -------
    float
        The positive effect, in percentage points.

    Examples
    --------
    >>> round(mde(n_tasks=167, repeat_sd_pp=70.7, k=3), 2)
    8.9
    """
    gate, k = _check_power_args(k, gate)
    n_tasks = _checks.check_int("n_tasks", n_tasks, 2)
    alpha = 2.0 * gate.alpha
    if not alpha < power < 1:
        raise ValueError(f"power must lie strictly between alpha={alpha:.4g} and 1, got {power!r}")
    sd = _difference_sd(repeat_sd_pp, task_sd_pp, k)

    def gap(effect):
        return _power(n_tasks, effect, sd, gate) - power

    high = sd / np.sqrt(n_tasks)
    while gap(high) < 0:
        high *= 2.0
    return float(optimize.brentq(gap, 0.0, high, xtol=1e-12, rtol=1e-12))


@renamed_keywords(config="gate")
def power_table(
    *,
    n_tasks,
    effect_pp,
    k=None,
    repeat_sd_pp: float = REPEAT_SD_PP,
    task_sd_pp: float = 0.0,
    power: float = TARGET_POWER,
    gate: GateConfig | None = None,
) -> pd.DataFrame:
    """:func:`power` and :func:`mde` over every combination of tasks, effects and K.

    The default ``repeat_sd_pp`` (70.7) is the largest a pass/fail outcome, or a score in
    [0, 1], allows (both pass probabilities 0.5), so the table errs towards too little
    power, never too much; scores on another scale need theirs given.
    ``k`` defaults to ``gate.k``.

    Returns
    -------
    DataFrame
        ``n_tasks, effect_pp, k, power, mde_pp``: one row per combination; ``mde_pp`` is
        the effect detected with probability ``power`` at that n and K.

    Examples
    --------
    >>> power_table(n_tasks=[26, 167], effect_pp=[5], k=[3])["mde_pp"].round(1).tolist()
    [23.3, 8.9]
    """
    gate = _checks.gate_config(gate)
    k = gate.k if k is None else k
    grid = pd.MultiIndex.from_product(
        [np.atleast_1d(n_tasks), np.atleast_1d(effect_pp), np.atleast_1d(k)],
        names=["n_tasks", "effect_pp", "k"],
    ).to_frame(index=False)
    for name, values in (("n_tasks", n_tasks), ("effect_pp", effect_pp), ("k", k)):
        _checks.check_finite(name, values)
    grid = grid.astype({"n_tasks": np.int64, "effect_pp": np.float64, "k": np.int64})
    for kk in grid["k"].unique():
        _check_power_args(int(kk), gate)
    if (grid["n_tasks"] < 2).any():
        raise ValueError(f"n_tasks must all be >= 2, got {n_tasks!r}")
    sd = _difference_sd(repeat_sd_pp, task_sd_pp, grid["k"].to_numpy())
    grid["power"] = _power(grid["n_tasks"].to_numpy(np.float64), grid["effect_pp"].to_numpy(),
                           sd, gate)
    designs = grid[["n_tasks", "k"]].drop_duplicates()
    designs["mde_pp"] = [
        mde(n_tasks=int(n), repeat_sd_pp=repeat_sd_pp, k=int(kk), task_sd_pp=task_sd_pp,
            power=power, gate=gate)
        for n, kk in zip(designs["n_tasks"], designs["k"])
    ]
    return grid.merge(designs, on=["n_tasks", "k"], how="left")


def _power(n, effect_pp, sd_pp, config: GateConfig):
    """Two-sided power of the one-sample test of the per-task differences (statsmodels)."""
    effect = np.asarray(effect_pp, dtype=np.float64) / sd_pp
    alpha = 2.0 * config.alpha
    n, effect = np.broadcast_arrays(np.asarray(n, dtype=np.float64), effect)
    if config.reference == "normal":  # ratio=0: the one-sample z test
        out = NormalIndPower().power(effect, n, alpha, ratio=0, alternative="two-sided")
    else:
        out = TTestPower().power(effect, n, alpha, alternative="two-sided")
        out = _fill_nct_gaps(out, effect, n, alpha)
    return out if np.ndim(out) else float(out)


def _fill_nct_gaps(out, effect: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    """``out`` with its NaNs computed again: SciPy's noncentral t tail (which statsmodels
    uses) is NaN for some large noncentralities; there the power is integrated over the
    chi-square of the sd instead (equal to the nct's to ~1e-12 where both exist)."""
    out = np.array(out, dtype=np.float64)
    flat, effects, sizes = out.reshape(-1), effect.reshape(-1), n.reshape(-1)
    for i in np.flatnonzero(np.isnan(flat)):
        df = sizes[i] - 1.0
        t_crit, nc = stats.t.isf(alpha / 2, df), effects[i] * np.sqrt(sizes[i])

        def tails(v, t_crit=t_crit, nc=nc, df=df):
            scale = t_crit * np.sqrt(v / df)
            return stats.chi2.pdf(v, df) * (stats.norm.sf(scale - nc)
                                            + stats.norm.cdf(-scale - nc))

        flat[i] = min(1.0, integrate.quad(tails, 0, np.inf)[0])
    return out


def _difference_sd(repeat_sd_pp, task_sd_pp, k):
    """sd (pp) of a per-task difference averaged over ``k`` repeats (k scalar or array)."""
    repeat_sd, task_sd = float(repeat_sd_pp), float(task_sd_pp)
    if not (np.isfinite(repeat_sd) and np.isfinite(task_sd)) or min(repeat_sd, task_sd) < 0 \
            or repeat_sd == task_sd == 0:
        raise ValueError(
            "repeat_sd_pp and task_sd_pp must be finite, >= 0 and not both 0, got "
            f"repeat_sd_pp={repeat_sd_pp!r}, task_sd_pp={task_sd_pp!r}"
        )
    return np.sqrt(task_sd**2 + repeat_sd**2 / np.asarray(k, dtype=np.float64))


def _check_power_args(k, config) -> tuple[GateConfig, int]:
    config = _checks.gate_config(config)
    k = config.k if k is None else k
    return config, _checks.check_int("k", k, 1)
