"""How a gate design spends its level over its looks: the planned looks and boundaries.

The adaptive design (:mod:`gsme.designs.adaptive`) credits at look ℓ when its statistic
clears b_ℓ, the Lan–DeMets boundary with the O'Brien–Fleming-type spending function
α(t) = 2 − 2Φ(z_{α/2} / √t) (:func:`obf_spending`) at the planned information fraction
t_ℓ = r_ℓ / k_max, total one-sided level ``alpha`` (:func:`spending_boundaries`, computed
by recursive numerical integration); :func:`boundaries` lists a design's planned looks.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
from scipy import optimize, special
from scipy import stats as sps

from gsme._checks import gate_config
from gsme._renamed import renamed_keywords
from gsme.designs.base import design_of
from gsme.settings import GateConfig

__all__ = ["boundaries", "look_repeats", "obf_spending", "planned", "spending_boundaries"]

_TINY_ALPHA = 1e-12


@renamed_keywords(config="gate")
def look_repeats(gate: GateConfig | None = None) -> np.ndarray:
    """Repeats per task and side of the extended tasks at each planned look.

    Examples
    --------
    >>> look_repeats(GateConfig(design="adaptive")).tolist()
    [3, 6, 9]
    >>> look_repeats(GateConfig(design="adaptive", k=2, k_max=7, k_step=3)).tolist()
    [2, 5, 7]
    >>> look_repeats(GateConfig(design="fixed")).tolist()
    [3]
    """
    gate = gate_config(gate)
    return design_of(gate).look_repeats(gate)


@renamed_keywords(config="gate")
def boundaries(gate: GateConfig | None = None) -> pd.DataFrame:
    """The looks a design plans and the boundary of each.

    Parameters
    ----------
    gate : GateConfig, optional
        Its ``design``, ``k``, ``k_step``, ``k_max`` and level ``alpha``.

    Returns
    -------
    DataFrame
        One row per planned look: ``look`` (1-based), ``repeats`` (per task and side of
        the extended tasks), ``fraction`` (planned information fraction repeats / k_max),
        ``boundary`` (z-scale efficacy boundary b), ``level`` (its nominal one-sided level
        Φ(−b)) and ``alpha_spent`` (cumulative one-sided level spent up to the look).
        The fixed design has one look with boundary ``z_crit``.

    See Also
    --------
    spending_boundaries : How each boundary is computed.
    gsme.designs.looks : Every look a comparison took.
    gsme.gates.credit : The gate that decides at these boundaries.

    Notes
    -----
    The adaptive design's boundaries spend the one-sided level by Lan and DeMets [1]_ with
    the O'Brien–Fleming-type function (:func:`obf_spending`) at the planned information
    fractions.

    References
    ----------
    .. [1] K. K. G. Lan and D. L. DeMets, "Discrete sequential boundaries for clinical
           trials", *Biometrika* 70(3), 659–663, 1983.

    Examples
    --------
    >>> boundaries(GateConfig(design="adaptive", z_crit=1.959963984540054))[
    ...     ["look", "repeats", "boundary"]].round(4)
       look  repeats  boundary
    0     1        3    3.7103
    1     2        6    2.5114
    2     3        9    1.9930
    """
    gate = gate_config(gate)
    repeats, bounds, _ = planned(gate)
    fractions = repeats / repeats[-1]
    return pd.DataFrame({
        "look": np.arange(1, len(repeats) + 1, dtype=np.int64),
        "repeats": repeats,
        "fraction": fractions,
        "boundary": bounds,
        "level": sps.norm.sf(bounds),
        "alpha_spent": obf_spending(gate.alpha, fractions) if len(repeats) > 1
        else np.array([gate.alpha]),
    })


@renamed_keywords(config="gate")
@functools.lru_cache(maxsize=128)
def planned(gate: GateConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per planned look: repeats of the extended tasks, efficacy boundary and its nominal
    one-sided level (read-only arrays, computed once per gate).

    Examples
    --------
    >>> repeats, bounds, levels = planned(GateConfig(design="adaptive"))
    >>> repeats.tolist(), bounds.round(2).tolist(), levels.round(4).tolist()
    ([3, 6, 9], [3.71, 2.51, 1.99], [0.0001, 0.006, 0.0231])
    >>> planned(GateConfig(design="fixed"))[1].tolist()
    [1.96]
    """
    repeats = look_repeats(gate)
    if len(repeats) == 1:
        bounds = np.array([gate.z_crit])
    else:
        bounds = np.array(spending_boundaries(gate.z_crit,
                                              tuple((repeats / repeats[-1]).tolist())))
    planned = (repeats, bounds, sps.norm.sf(bounds))
    for a in planned:
        a.flags.writeable = False
    return planned


def obf_spending(alpha: float, fraction):
    """Lan–DeMets O'Brien–Fleming-type spending: α(t) = 2 − 2Φ(z_{α/2} / √t), one-sided α.

    The spending function of Lan and DeMets [1]_ that mimics O'Brien and Fleming's
    boundaries [2]_: almost nothing is spent at early looks, nearly all of α at the last.

    See Also
    --------
    spending_boundaries : The efficacy boundaries this spending implies.
    boundaries : The boundaries of a gate design's planned looks.

    References
    ----------
    .. [1] K. K. G. Lan and D. L. DeMets, "Discrete sequential boundaries for clinical
           trials", *Biometrika* 70(3), 659–663, 1983.
    .. [2] P. C. O'Brien and T. R. Fleming, "A multiple testing procedure for clinical
           trials", *Biometrics* 35(3), 549–556, 1979.

    Examples
    --------
    >>> round(float(obf_spending(0.025, 1.0)), 6)
    0.025
    """
    t = np.asarray(fraction, dtype=np.float64)
    return 2.0 * sps.norm.sf(sps.norm.isf(alpha / 2.0) / np.sqrt(t))


@functools.lru_cache(maxsize=128)
def spending_boundaries(z_crit: float, fractions: tuple[float, ...],
                        points: int = 1201) -> tuple[float, ...]:
    """One-sided group-sequential efficacy boundaries for O'Brien–Fleming-type spending.

    The total one-sided level is α = Φ(−z_crit) (given as ``z_crit`` so that levels too
    small for a float stay exact).

    Z_ℓ is a standardised Brownian motion observed at information fractions ``fractions``
    (corr(Z_i, Z_j) = √(t_i / t_j)). b_1 = Φ^{-1}(1 − α(t_1)); each later b_ℓ solves
    P(Z_1 < b_1, …, Z_{ℓ−1} < b_{ℓ−1}, Z_ℓ ≥ b_ℓ) = α(t_ℓ) − α(t_{ℓ−1}), the probability
    computed by recursive numerical integration of the score S = Z√t over the continuation
    region (Armitage, McPherson & Rowe; Jennison & Turnbull 2000, ch. 19) with Simpson's
    rule on ``points`` nodes, and the equation by Brent's method. No lower boundary is
    used: futility is non-binding. Below α = 1e-12 (z_crit > 7) the integration loses
    precision and the boundaries are the Bonferroni split of the spending instead
    (conservative; in that far tail it is nearly exact). The spending is Lan and DeMets'
    [1]_ (:func:`obf_spending`); the recursion is that of Armitage, McPherson and Rowe [2]_
    as given by Jennison and Turnbull [3]_.

    See Also
    --------
    obf_spending : The spending function α(t).
    boundaries : These boundaries at a gate design's planned looks.

    References
    ----------
    .. [1] K. K. G. Lan and D. L. DeMets, "Discrete sequential boundaries for clinical
           trials", *Biometrika* 70(3), 659–663, 1983.
    .. [2] P. Armitage, C. K. McPherson and B. C. Rowe, "Repeated significance tests on
           accumulating data", *J. R. Stat. Soc. A* 132(2), 235–244, 1969.
    .. [3] C. Jennison and B. W. Turnbull, *Group Sequential Methods with Applications to
           Clinical Trials*, Chapman & Hall/CRC, 2000, ch. 19.

    Examples
    --------
    >>> [round(b, 4) for b in spending_boundaries(1.959963984540054, (0.5, 1.0))]
    [2.9626, 1.9686]
    """
    t = np.asarray(fractions, dtype=np.float64)
    if not (np.all(np.diff(t) > 0) and t[0] > 0 and abs(t[-1] - 1.0) < 1e-12):
        raise ValueError(f"fractions must increase strictly from >0 to 1, got {fractions!r}")
    log_alpha = float(sps.norm.logsf(z_crit))
    if log_alpha < np.log(_TINY_ALPHA):  # far tail: the Bonferroni split, in logs
        half = -special.ndtri_exp(log_alpha - np.log(2.0))  # z_{α/2}
        log_spent = np.log(2.0) + sps.norm.logsf(half / np.sqrt(t))
        step = log_spent[1:] + np.log(-np.expm1(log_spent[:-1] - log_spent[1:]))
        return tuple(float(b) for b in -special.ndtri_exp(np.r_[log_spent[0], step]))
    spent = np.diff(np.r_[0.0, obf_spending(np.exp(log_alpha), t)])
    bounds = [float(sps.norm.isf(spent[0]))]
    nodes, density = _continuation(-9.0 * np.sqrt(t[0]), bounds[0] * np.sqrt(t[0]), points,
                                   lambda s: sps.norm.pdf(s / np.sqrt(t[0])) / np.sqrt(t[0]))
    for j in range(1, len(t)):
        step = np.sqrt(t[j] - t[j - 1])

        def crossing(b, nodes=nodes, density=density, step=step, j=j):
            return float(density @ sps.norm.sf((b * np.sqrt(t[j]) - nodes) / step)) - spent[j]

        b = optimize.brentq(crossing, -10.0, 40.0, xtol=1e-12)
        bounds.append(float(b))
        if j < len(t) - 1:
            def next_density(s, nodes=nodes, density=density, step=step):
                gap = (s[:, None] - nodes[None, :]) / step
                return np.exp(-0.5 * gap * gap) @ density / (step * np.sqrt(2.0 * np.pi))

            nodes, density = _continuation(-9.0 * np.sqrt(t[j]), b * np.sqrt(t[j]), points,
                                           next_density)
    return tuple(bounds)


def _continuation(low: float, high: float, points: int, density):
    """Simpson nodes on [low, high] and density × weight at each (a quadrature rule)."""
    points += 1 - points % 2
    nodes = np.linspace(low, high, points)
    weights = np.ones(points)
    weights[1:-1:2], weights[2:-1:2] = 4.0, 2.0
    return nodes, density(nodes) * weights * (high - low) / (3.0 * (points - 1))
