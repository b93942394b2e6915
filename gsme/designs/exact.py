"""The exact sign-flip p-values of the paired test, for many pairs at once.

Under the null, child and parent are exchangeable within a task, so each task difference
is as likely as its negative: the exact p of the summed differences counts the sign flips
that reach it (:func:`exact_tails`). The significance test (:mod:`gsme.designs.significance`)
uses it when few tasks changed (``GateConfig.exact_below``) or all differences are equal.
Pass/fail differences become integers and their distribution is built by a recursion
over task *ranks*, never a loop per task (:func:`sign_flip_tails`); graded scores' flips are
enumerated (at most :data:`MAX_GRADED_FLIPS` changed tasks).
"""

from __future__ import annotations

import numpy as np

from gsme.pairing import Paired, paired_rates
from gsme.settings import MAX_EXACT_REPEATS

__all__ = ["MAX_GRADED_FLIPS", "exact_tails", "sign_flip_tails"]

_DP_CELLS = 1 << 24  # float64 cells per chunk of the sign-flip recursion (128 MiB)


def exact_tails(paired: Paired, pairs: np.ndarray):
    """Exact sign-flip p-values of the summed task differences of the given ``pairs``.

    Under the null, child and parent are exchangeable within a task, so each difference
    d_i is as likely as −d_i. Over the 2^m sign flips of the m non-zero differences, the
    paired t statistic is increasing in S = Σ d_i (Σ d_i² is fixed), so its exact p-values
    are those of S. Differences are turned into integers (a common denominator of the
    pair's valid repeat counts, then divided by their gcd) and the distribution of S is
    built by :func:`sign_flip_tails`; graded scores' differences are not integers, and
    their flips are enumerated (at most :data:`MAX_GRADED_FLIPS` changed tasks).

    Returns
    -------
    tuple of ndarray
        ``(p_upper, p_lower, p_two_sided)``: P(S* ≥ S), P(S* ≤ S) and ``P(|S*| ≥ |S|)``, one
        per entry of ``pairs``.

    Examples
    --------
    Child d passes five more tasks than its parent p (one of 2^5 flips reaches that):

    >>> import pandas as pd
    >>> from gsme.pairing import check, count_tasks, pair_tasks
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c", "d"], 6), "split": "train",
    ...                   "task_id": [f"t{i}" for i in range(6)] * 3, "repeat": 0,
    ...                   "passed": [0] * 6 + [1] * 6 + [1, 1, 1, 1, 1, 0]})
    >>> slots = check(t).slots
    >>> paired = pair_tasks(slots, count_tasks(slots), ["c", "d"], ["p", "p"], "train")
    >>> up, low, two = exact_tails(paired, np.array([1]))
    >>> float(up[0]), float(low[0]), float(two[0])
    (0.03125, 1.0, 0.0625)
    """
    if paired.graded:
        return _graded_tails(paired, pairs)
    mask = np.isin(paired.pair, pairs)
    pair = paired.pair[mask]
    cv, cp = paired.child_valid[mask], paired.child_passed[mask]
    pv, pp = paired.parent_valid[mask], paired.parent_passed[mask]
    changed = cp * pv != pp * cv
    pair, cv, cp, pv, pp = (a[changed] for a in (pair, cv, cp, pv, pp))
    if max(cv.max(initial=0), pv.max(initial=0)) > MAX_EXACT_REPEATS:
        raise ValueError(f"the exact sign-flip test supports at most {MAX_EXACT_REPEATS} valid "
                         "repeats per task and side; set exact_below=0 for these trials")
    local = np.searchsorted(pairs, pair)
    starts = np.flatnonzero(np.r_[True, local[1:] != local[:-1]])
    denom = np.lcm.reduceat(np.lcm(cv, pv), starts)[np.repeat(np.arange(len(starts)),
                                                              np.diff(np.r_[starts, len(pair)]))]
    numer = cp * (denom // cv) - pp * (denom // pv)
    unit = np.gcd.reduceat(np.abs(numer), starts)
    values = numer // np.repeat(unit, np.diff(np.r_[starts, len(pair)]))
    return sign_flip_tails(local, values, len(pairs))


MAX_GRADED_FLIPS = 20
"""Most changed tasks whose 2^m sign flips :func:`exact_tails` enumerates for graded scores."""


def _graded_tails(paired: Paired, pairs: np.ndarray):
    """:func:`exact_tails` of graded scores: every sign flip of the m changed tasks' rounded
    differences enumerated (2^m sums, m at most :data:`MAX_GRADED_FLIPS`), pairs with the
    same m at once. Sums within 1e-9 · Σ|d_i| of the observed one count as reaching it.
    """
    mask = np.isin(paired.pair, pairs)
    rate_child, rate_parent = paired_rates(paired)
    diff = np.round(rate_child - rate_parent, 12)[mask]
    local = np.searchsorted(pairs, paired.pair[mask])
    local, diff = local[diff != 0], diff[diff != 0]
    counts = np.bincount(local, minlength=len(pairs))
    if counts.max(initial=0) > MAX_GRADED_FLIPS:
        raise ValueError(f"the exact sign-flip test of graded scores enumerates at most "
                         f"{MAX_GRADED_FLIPS} changed tasks, got {int(counts.max())}; set "
                         f"exact_below to at most {MAX_GRADED_FLIPS + 1}")
    rank = np.arange(len(local)) - np.repeat(np.cumsum(counts) - counts, counts)
    observed = np.bincount(local, diff, minlength=len(pairs))
    out = np.ones((3, len(pairs)))
    for m in np.unique(counts[counts > 0]):
        signs = 1.0 - 2.0 * ((np.arange(2**m)[:, None] >> np.arange(m)) & 1)  # (2^m, m)
        groups = np.flatnonzero(counts == m)
        at = np.searchsorted(groups, local)
        ours = (at < len(groups)) & (groups[np.minimum(at, len(groups) - 1)] == local)
        grid = np.zeros((len(groups), m))
        grid[at[ours], rank[ours]] = np.abs(diff[ours])
        for chunk in np.array_split(np.arange(len(groups)),
                                    max(1, len(groups) * 2**m // _DP_CELLS + 1)):
            sums = grid[chunk] @ signs.T
            seen = observed[groups[chunk]][:, None]
            tol = 1e-9 * grid[chunk].sum(axis=1)[:, None]
            out[:, groups[chunk]] = ((sums >= seen - tol).mean(axis=1),
                                     (sums <= seen + tol).mean(axis=1),
                                     (np.abs(sums) >= np.abs(seen) - tol).mean(axis=1))
    return out[0], out[1], out[2]


def sign_flip_tails(group: np.ndarray, values: np.ndarray, n_groups: int):
    """Exact tails of S = Σ v_i under independent random signs, for many groups at once.

    ``group`` (sorted) assigns each non-zero integer ``values`` entry to a group. The
    distribution of S* = Σ ±v_i is built by the recursion f_j(s) = ½ f_{j−1}(s − v_j) +
    ½ f_{j−1}(s + v_j) over the j-th value of every group at once (groups with fewer values
    skip with v = 0), in chunks of groups that fit :data:`_DP_CELLS`. It equals full
    enumeration of the 2^m flips, in O(m · Σ|v|) instead of O(m · 2^m).

    Returns
    -------
    tuple of ndarray
        ``(p_upper, p_lower, p_two_sided)`` per group: P(S* ≥ S), P(S* ≤ S),
        ``P(|S*| ≥ |S|)`` with S the observed sum (all 1 for a group with no value).

    Examples
    --------
    >>> up, low, two = sign_flip_tails(np.array([0, 0, 0]), np.array([1, 1, 2]), 1)
    >>> float(up[0]), float(low[0]), float(two[0])
    (0.125, 1.0, 0.25)
    """
    values = np.asarray(values, dtype=np.int64)
    counts = np.bincount(group, minlength=n_groups)
    observed = np.bincount(group, values, minlength=n_groups).astype(np.int64)
    total = np.bincount(group, np.abs(values), minlength=n_groups).astype(np.int64)
    rank = np.arange(len(group)) - np.repeat(np.cumsum(counts) - counts, counts)
    grid = np.zeros((n_groups, int(counts.max(initial=0))), dtype=np.int64)
    grid[group, rank] = np.abs(values)
    out = np.ones((3, n_groups))
    order = np.argsort(total, kind="stable")
    start = 0
    while start < n_groups:
        # groups sorted by size: a chunk's widest group is its last one
        size = np.arange(1, n_groups - start + 1) * (2 * total[order[start:]] + 1)
        stop = start + max(1, int(np.searchsorted(size, _DP_CELLS, side="right")))
        chunk = order[start:stop]
        out[:, chunk] = _flip_chunk(grid[chunk], observed[chunk], int(total[chunk].max()))
        start = stop
    return out[0], out[1], out[2]


def _flip_chunk(grid: np.ndarray, observed: np.ndarray, half: int):
    width = 2 * half + 1
    dist = np.zeros((len(grid), width))
    dist[:, half] = 1.0
    span = np.arange(width)
    rows = np.arange(len(grid))[:, None]
    for j in range(grid.shape[1]):
        v = grid[:, j][:, None]
        low, high = span - v, span + v
        new = np.where(low >= 0, dist[rows, np.clip(low, 0, width - 1)], 0.0)
        new += np.where(high < width, dist[rows, np.clip(high, 0, width - 1)], 0.0)
        dist = 0.5 * new
    at_least = np.cumsum(dist[:, ::-1], axis=1)[:, ::-1]  # P(S* >= s)
    at_most = np.cumsum(dist, axis=1)  # P(S* <= s)
    r = np.arange(len(grid))
    idx = observed + half
    p_up = at_least[r, idx]
    p_low = at_most[r, idx]
    magnitude = np.abs(observed)
    p_two = np.minimum(1.0, at_least[r, magnitude + half] + at_most[r, half - magnitude]
                       - np.where(magnitude == 0, dist[r, half], 0.0))
    return p_up, p_low, p_two

