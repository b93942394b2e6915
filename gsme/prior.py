"""What proposals truly do, learned from the comparisons measured so far (empirical Bayes).

Every gated comparison measures a child against its parent: a difference ``delta_pp`` with
a standard error ``se_pp`` around the child's true effect θ. Over many comparisons of one
evolver on one suite the θ follow a distribution g, the *proposal mix*: mostly helpful
fixes, mostly nothing, mostly harm. Nobody knows g in advance, but every comparison is a
noisy draw from it, so g can be estimated from them (Robbins' empirical Bayes), and each
child judged by its posterior: E[θ | delta, se] under the estimated g.

:func:`fit` estimates g on a fixed grid of effects by the nonparametric maximum likelihood
of Kiefer and Wolfowitz, computed by EM (Jiang and Zhang 2009; Koenker and Mizera 2014),
with a Dirichlet pseudo-count pulling it towards a cautious starting mix (``KeepConfig``:
most proposals do nothing, those that act hurt a little on average) worth ``start_weight``
comparisons. With no comparisons g is that starting mix; with many, the comparisons decide.
:func:`posterior` gives each comparison's posterior mean effect, the probability that it is
positive and its local false sign rate (Stephens 2017).

The model: ``delta_pp ~ Normal(θ, se_pp²)``, θ ~ g. ``se_pp`` below ``KeepConfig.se_floor_pp``
(a comparison in which no task changed has ``se_pp = 0``) is raised to it: such a
comparison says the effect is small, not that it is exactly its measured value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from gsme._renamed import renamed_keywords
from gsme.schema import require
from gsme.settings import KeepConfig

__all__ = ["COMPARISON_COLUMNS", "LEARNED_DECISIONS", "check_history", "fit", "grid", "learned_from",
           "log_predictive", "posterior", "recent_runs", "start"]

COMPARISON_COLUMNS = ["delta_pp", "se_pp"]
"""What a comparison must carry for the prior to learn from it."""
LEARNED_DECISIONS = ("credit", "cull", "inconclusive")
"""Decisions whose ``delta_pp`` measures a patch's effect (invalid and inactive ones do not)."""

_MAX_ITERATIONS = 5_000
_TOLERANCE = 1e-8


@renamed_keywords(config="keep")
def grid(keep: KeepConfig | None = None) -> np.ndarray:
    """The effects (pp) on which g is estimated: a symmetric grid holding 0 exactly.

    Examples
    --------
    >>> g = grid(KeepConfig(grid_step_pp=10.0, grid_max_pp=20.0))
    >>> g.tolist()
    [-20.0, -10.0, 0.0, 10.0, 20.0]
    """
    keep = keep or KeepConfig()
    half = np.arange(keep.grid_step_pp, keep.grid_max_pp + 1e-9, keep.grid_step_pp)
    return np.r_[-half[::-1], 0.0, half]


@renamed_keywords(config="keep")
def start(keep: KeepConfig | None = None) -> pd.DataFrame:
    """The cautious starting mix: ``start_null`` at 0, the rest Normal(start_mean, start_sd).

    Returns
    -------
    DataFrame
        ``effect_pp`` (the grid) and ``weight`` (summing to 1).

    Examples
    --------
    >>> g = start()
    >>> round(float(g["weight"].sum()), 12), float(g.loc[g["effect_pp"] == 0, "weight"].iloc[0]) > 0.5
    (1.0, True)
    """
    keep = keep or KeepConfig()
    effects = grid(keep)
    spread = sps.norm.pdf(effects, keep.start_mean_pp, keep.start_sd_pp)
    weight = (1.0 - keep.start_null) * spread / spread.sum()
    weight[effects == 0.0] += keep.start_null
    return pd.DataFrame({"effect_pp": effects, "weight": weight})


@renamed_keywords(config="keep")
def fit(comparisons: pd.DataFrame, *, keep: KeepConfig | None = None) -> pd.DataFrame:
    """The mix of true effects g that best explains ``comparisons``, from the starting mix.

    The maximum of the likelihood of the comparisons times a Dirichlet prior on the grid
    weights that counts the starting mix (:func:`start`) as ``start_weight`` comparisons,
    found by EM: each step sets a grid point's weight to its pseudo-count plus the
    comparisons' posterior responsibility for it, over the count of both. Without the
    starting mix (``start_weight = 0``) this is the nonparametric maximum likelihood of
    Kiefer and Wolfowitz [1]_ on a grid, computed by EM as in Jiang and Zhang [2]_ (Koenker
    and Mizera [3]_ compute it by convex optimisation).

    Parameters
    ----------
    comparisons : DataFrame
        ``delta_pp, se_pp`` (any other columns are ignored); rows with a NaN in either
        are left out.
    keep : KeepConfig, optional

    Returns
    -------
    DataFrame
        ``effect_pp`` (the grid) and ``weight`` (summing to 1).

    See Also
    --------
    start : The starting mix it is pulled towards.
    grid : The effects the mix lives on.
    posterior : Each comparison's effect under the fitted mix.
    gsme.policy.screen : The keep rule that uses it.

    References
    ----------
    .. [1] J. Kiefer and J. Wolfowitz, "Consistency of the maximum likelihood estimator in
           the presence of infinitely many incidental parameters", *Ann. Math. Statist.*
           27(4), 887–906, 1956.
    .. [2] W. Jiang and C.-H. Zhang, "General maximum likelihood empirical Bayes
           estimation of normal means", *Ann. Statist.* 37(4), 1647–1684, 2009.
    .. [3] R. Koenker and I. Mizera, "Convex optimization, shape constraints, compound
           decisions, and empirical Bayes rules", *J. Amer. Statist. Assoc.* 109(506),
           674–685, 2014.

    Examples
    --------
    >>> helpful = pd.DataFrame({"delta_pp": [6.0, 8.0, 5.0, 7.0] * 10, "se_pp": 3.0})
    >>> g = fit(helpful)
    >>> float((g["effect_pp"] * g["weight"]).sum()) > 4.0
    True
    """
    keep = keep or KeepConfig()
    prior = start(keep)
    delta, se = _observed(comparisons, keep)
    if len(delta) == 0:
        return prior
    likelihood = _likelihood(delta, se, prior["effect_pp"].to_numpy())
    pseudo = keep.start_weight * prior["weight"].to_numpy()
    weight = prior["weight"].to_numpy().copy()
    for _ in range(_MAX_ITERATIONS):
        joint = likelihood * weight
        responsibility = joint / joint.sum(axis=1, keepdims=True)
        new = (pseudo + responsibility.sum(axis=0)) / (keep.start_weight + len(delta))
        if np.max(np.abs(new - weight)) < _TOLERANCE:
            weight = new
            break
        weight = new
    return prior.assign(weight=weight / weight.sum())


@renamed_keywords(config="keep")
def posterior(comparisons: pd.DataFrame, prior: pd.DataFrame, *,
              keep: KeepConfig | None = None) -> pd.DataFrame:
    """Each comparison's true effect as the mix ``prior`` and its measurement see it.

    Parameters
    ----------
    comparisons : DataFrame
        ``delta_pp, se_pp``.
    prior : DataFrame
        ``effect_pp, weight``: a mix from :func:`fit` or :func:`start`.
    keep : KeepConfig, optional
        Its ``se_floor_pp``.

    Returns
    -------
    DataFrame
        One row per comparison, in order: ``expected_delta_pp`` (posterior mean of θ, pp;
        NaN where ``delta_pp`` or ``se_pp`` is NaN), ``p_positive`` (posterior P(θ > 0))
        and ``lfsr`` (local false sign rate: the posterior probability that θ does not
        have the sign of its posterior mean, min(P(θ ≥ 0), P(θ ≤ 0))), as defined by
        Stephens [1]_.

    See Also
    --------
    fit : The mix learned from comparisons.
    gsme.policy.expected_effects : Each decided child's expected effect, by this posterior.

    References
    ----------
    .. [1] M. Stephens, "False discovery rates: a new deal", *Biostatistics* 18(2),
           275–294, 2017.

    Examples
    --------
    >>> null = pd.DataFrame({"effect_pp": [0.0], "weight": [1.0]})
    >>> posterior(pd.DataFrame({"delta_pp": [9.0], "se_pp": [3.0]}), null).round(3)
       expected_delta_pp  p_positive  lfsr
    0                0.0         0.0   1.0
    """
    keep = keep or KeepConfig()
    require(comparisons, COMPARISON_COLUMNS, "comparisons")
    require(prior, ["effect_pp", "weight"], "prior")
    delta = comparisons["delta_pp"].to_numpy(np.float64)
    se = np.maximum(comparisons["se_pp"].to_numpy(np.float64), keep.se_floor_pp)
    known = ~(np.isnan(delta) | np.isnan(se))
    effects = prior["effect_pp"].to_numpy(np.float64)
    out = np.full((len(delta), 3), np.nan)
    if known.any():
        joint = _likelihood(delta[known], se[known], effects) * prior["weight"].to_numpy()
        post = joint / joint.sum(axis=1, keepdims=True)
        positive = post[:, effects > 0].sum(axis=1)
        negative = post[:, effects < 0].sum(axis=1)
        out[known, 0] = post @ effects
        out[known, 1] = positive
        out[known, 2] = np.minimum(1.0 - negative, 1.0 - positive)
    return pd.DataFrame(out, columns=["expected_delta_pp", "p_positive", "lfsr"],
                        index=comparisons.index)


def learned_from(comparisons: pd.DataFrame) -> pd.DataFrame:
    """What the mix learns from each comparison: ``delta_pp, se_pp`` over its first K repeats.

    The adaptive design reads more repeats of some tasks and stops others early on what it
    saw, which biases the Δ it ends with; its first-K Δ (``first_delta_pp, first_se_pp``,
    equal to ``delta_pp, se_pp`` under the fixed design) is unbiased. Rows without them
    (older frames, NaN) keep their own ``delta_pp, se_pp``.

    Returns
    -------
    DataFrame
        ``delta_pp, se_pp``, one row per comparison, same index.

    Examples
    --------
    >>> c = pd.DataFrame({"delta_pp": [-0.5, 2.0], "se_pp": [2.0, 3.0],
    ...                   "first_delta_pp": [0.4, np.nan], "first_se_pp": [3.0, np.nan]})
    >>> learned_from(c).values.tolist()
    [[0.4, 3.0], [2.0, 3.0]]
    """
    require(comparisons, COMPARISON_COLUMNS, "comparisons")
    out = comparisons[COMPARISON_COLUMNS].astype(np.float64)
    for column, first in (("delta_pp", "first_delta_pp"), ("se_pp", "first_se_pp")):
        if first in comparisons:
            out[column] = comparisons[first].astype(np.float64).fillna(out[column])
    return out


def recent_runs(comparisons: pd.DataFrame, runs: int) -> pd.DataFrame:
    """The rows of the latest ``runs`` runs (by the ``run`` column, in order of appearance).

    A frame without ``run`` counts as one run.

    Examples
    --------
    >>> c = pd.DataFrame({"run": ["a", "a", "b", "c"], "delta_pp": [1.0, 2.0, 3.0, 4.0]})
    >>> recent_runs(c, 2)["run"].tolist(), len(recent_runs(c, 0))
    (['b', 'c'], 0)
    """
    if runs <= 0:
        return comparisons.iloc[:0]
    if "run" not in comparisons:
        return comparisons
    latest = list(dict.fromkeys(comparisons["run"]))[-runs:]
    return comparisons[comparisons["run"].isin(latest)]


@renamed_keywords(config="keep")
def log_predictive(comparisons: pd.DataFrame, mix: pd.DataFrame, *,
                   keep: KeepConfig | None = None) -> np.ndarray:
    """Each comparison's log density under the mix's predictive law.

    A comparison's Δ is predicted by ``mix`` convolved with its own standard error:
    f(Δ) = Σ_j w_j φ((Δ − θ_j) / se) / se.

    Examples
    --------
    >>> null = pd.DataFrame({"effect_pp": [0.0], "weight": [1.0]})
    >>> c = pd.DataFrame({"delta_pp": [0.0, 3.0], "se_pp": 3.0})
    >>> bool(np.allclose(log_predictive(c, null), sps.norm.logpdf([0.0, 3.0], 0.0, 3.0)))
    True
    """
    keep = keep or KeepConfig()
    delta, se = _observed(comparisons, keep)
    return _log_predictive(delta, se, mix)


@renamed_keywords(config="keep")
def check_history(history: pd.DataFrame, current: pd.DataFrame, *,
                  keep: KeepConfig | None = None) -> dict:
    """Is ``current`` drawn from the world ``history`` describes? A predictive test.

    The mix g is fitted on the history (its latest ``keep.history_runs`` runs,
    :func:`recent_runs`). The statistic is how much better g predicts the current
    comparisons than the cautious starting mix g₀ does (:func:`start`): the predictive
    log-score gain T = Σ_i [log f_g(Δ_i) − log f_g₀(Δ_i)] (:func:`log_predictive`, each Δ
    with its own se). Its law when the current comparisons do come from g is simulated
    (``_NULL_DRAWS`` draws of θ_i ~ g, Δ_i ~ N(θ_i, se_i²), seeded: the same inputs give
    the same p), and p = P(T_null ≤ T), a Monte-Carlo test of level ``history_alpha`` for a
    known g. A history kinder (or harsher) than the run's own comparisons predicts them
    worse than it predicts its own draws; the history is ``used`` when p ≥
    ``keep.history_alpha``.

    Parameters
    ----------
    history, current : DataFrame
        Comparisons (``delta_pp, se_pp``, optionally ``run``, ``decision`` and the first-K
        columns, :func:`learned_from`); rows whose decision measured nothing are left out.

    Returns
    -------
    dict
        ``runs, comparisons`` (of the capped history), ``current`` (comparisons checked),
        ``log_score_gain`` (T per current comparison), ``p_value`` (1.0 with nothing to
        check) and ``used`` (bool).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> kind = pd.DataFrame({"delta_pp": rng.normal(6.0, 4.0, 60), "se_pp": 3.5})
    >>> harmful = pd.DataFrame({"delta_pp": rng.normal(-3.0, 3.5, 8), "se_pp": 3.5})
    >>> check_history(kind, harmful)["used"], check_history(kind, kind.iloc[:8])["used"]
    (False, True)
    """
    keep = keep or KeepConfig()
    history = recent_runs(_measured(history), keep.history_runs)
    current = _measured(current)
    runs = history["run"].nunique() if "run" in history else int(len(history) > 0)
    out = {"runs": int(runs), "comparisons": len(history), "current": len(current),
           "log_score_gain": float("nan"), "p_value": 1.0, "used": len(history) > 0}
    if history.empty or current.empty:
        return out
    mix, cautious = fit(history, keep=keep), start(keep)
    delta, se = _observed(current, keep)
    gain = _log_predictive(delta, se, mix) - _log_predictive(delta, se, cautious)
    null = _null_gains(se, mix, cautious)
    p_value = float((1 + np.sum(null <= gain.sum())) / (1 + len(null)))
    return {**out, "log_score_gain": float(gain.mean()), "p_value": p_value,
            "used": bool(p_value >= keep.history_alpha)}


_NULL_DRAWS = 999
"""Draws of the check's null law (:func:`check_history`): p has a resolution of 1/1000."""


def _null_gains(se: np.ndarray, mix: pd.DataFrame, cautious: pd.DataFrame) -> np.ndarray:
    """T of ``_NULL_DRAWS`` sets of comparisons drawn from ``mix`` with standard errors ``se``."""
    rng = np.random.default_rng(0)
    effects, weight = mix["effect_pp"].to_numpy(np.float64), mix["weight"].to_numpy(np.float64)
    theta = rng.choice(effects, size=(_NULL_DRAWS, len(se)), p=weight / weight.sum())
    delta = theta + rng.standard_normal(theta.shape) * se
    rows = max(1, 20_000 // len(se))  # draws per block: bounded memory for a long run
    return np.concatenate([
        (_log_predictive(block.ravel(), np.tile(se, len(block)), mix)
         - _log_predictive(block.ravel(), np.tile(se, len(block)), cautious))
        .reshape(len(block), len(se)).sum(axis=1)
        for block in np.array_split(delta, range(rows, _NULL_DRAWS, rows))])


def _log_predictive(delta: np.ndarray, se: np.ndarray, mix: pd.DataFrame) -> np.ndarray:
    effects = mix["effect_pp"].to_numpy(np.float64)
    gap = (delta[:, None] - effects[None, :]) / se[:, None]
    log = -0.5 * gap * gap
    top = log.max(axis=1, keepdims=True)
    density = np.exp(log - top) @ mix["weight"].to_numpy(np.float64)
    return np.log(density) + top[:, 0] - np.log(se) - 0.5 * np.log(2 * np.pi)


def _measured(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Rows whose decision measured an effect, as :func:`learned_from` sees them (other
    columns kept)."""
    if "decision" in comparisons:
        comparisons = comparisons[comparisons["decision"].isin(LEARNED_DECISIONS)]
    rows = comparisons.assign(**learned_from(comparisons))
    return rows[rows[COMPARISON_COLUMNS].notna().all(axis=1)]


def _observed(comparisons: pd.DataFrame, config: KeepConfig) -> tuple[np.ndarray, np.ndarray]:
    require(comparisons, COMPARISON_COLUMNS, "comparisons")
    delta = comparisons["delta_pp"].to_numpy(np.float64)
    se = comparisons["se_pp"].to_numpy(np.float64)
    known = ~(np.isnan(delta) | np.isnan(se))
    return delta[known], np.maximum(se[known], config.se_floor_pp)


def _likelihood(delta: np.ndarray, se: np.ndarray, effects: np.ndarray) -> np.ndarray:
    """N(delta_i; θ_j, se_i²) for every comparison i and grid point j, scaled per row."""
    gap = (delta[:, None] - effects[None, :]) / se[:, None]
    log = -0.5 * gap * gap
    return np.exp(log - log.max(axis=1, keepdims=True))
