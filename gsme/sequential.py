"""Gate designs: which repeats a comparison needs, and how its looks decide.

``design="fixed"`` (the paper's gate) scores every task ``k`` times on each side and looks
once, at one-sided level ``alpha`` each way (credit / cull).

``design="adaptive"`` is group-sequential. Look 1 uses ``k`` repeats per task and side.
After an interim look that does not stop, every task whose *pooled* child and parent
outcomes at look 1 are mixed (neither all pass nor all fail; for graded scores, not all
equal) gets ``k_step`` more repeats on both sides, up to ``k_max``; a task where the child's trials are the parent's own (borrowed:
same source) is identical on both sides and is never extended. The pooled rule is blind to
which arm is which, so under the null it cannot favour the child. Once mixed a task stays
mixed, so look ℓ uses r_ℓ = min(k + (ℓ − 1)·k_step, k_max) repeats on the extended tasks and
``k`` on the others; per task and side a look reads only the repeats below its count (a
parent's extra repeats made for another child never leak in).

* **Efficacy** — look ℓ credits when its statistic clears b_ℓ, the Lan–DeMets boundary with
  the O'Brien–Fleming-type spending function α(t) = 2 − 2Φ(z_{α/2} / √t) at the planned
  information fraction t_ℓ = r_ℓ / k_max, total one-sided level ``alpha``
  (:func:`boundaries`, computed by recursive numerical integration). With the t reference or
  the exact sign-flip p, a look compares its one-sided p with the nominal level Φ(−b_ℓ).
  The planned fractions are fixed in advance, hence blind to the labels. Under the null the
  extended tasks were chosen for being mixed at look 1, which inflates their look-1
  variance: look 1 holds more of the final information than r_1 / k_max, the looks are
  more correlated than planned and the procedure is conservative. Simulated A/A false
  credit (``benchmarks/aa_designs.py``): 1.05%, 1.6% and 2.05% at n = 26, 45 and 80.
* **Cull** — at look 1 only, exactly as the fixed design culls: when the lower one-sided p
  is at most ``alpha`` (z ≤ −z_crit with the normal reference). Its level is that of one
  look, ``alpha``; later looks never cull (a harmful patch has almost always stopped for
  futility at look 1, and extra repeats are spent to find gains, not harm). The credit and
  the cull are each one-sided at ``alpha``, as in the fixed design.
* **Futility** (non-binding, the boundaries ignore it) — stop at an interim look whose z is
  below ``futility_z`` (None: never). The decision is ``inconclusive`` unless the look also
  crossed a boundary.
* The procedure also stops at look 1 when fewer than ``min_tasks`` tasks are paired or no
  task is left to extend (then every task difference is 0).

Everything is replayed from the trials: :func:`wanted` (the repeats still needed) and
:func:`gsme.gates.credit` (the decision) read the same looks, so a run's scoring loop
(``wanted`` → run → ``wanted`` … until nothing new is wanted) and a later ``credit`` with the
run's ``GateConfig`` agree. :func:`looks` shows every look taken and
:func:`decided_repeats` the repeats of each task the decision read.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, special
from scipy import stats as sps

from gsme import _paired, schema
from gsme import power as power_mod
from gsme.registry import DESIGNS
from gsme.schema import LOOK_COLUMNS
from gsme.settings import MAX_K, MAX_TASKS, GateConfig

__all__ = ["Adaptive", "Design", "Fixed", "boundaries", "decided_repeats", "design_of",
           "look_repeats", "looks", "obf_spending", "spending_boundaries", "wanted"]

_TINY_ALPHA = 1e-12


# ------------------------------------------------------------------------------ boundaries

def look_repeats(config: GateConfig | None = None) -> np.ndarray:
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
    config = _paired.gate_config(config)
    return design_of(config).look_repeats(config)


def boundaries(config: GateConfig | None = None) -> pd.DataFrame:
    """The looks a design plans and the boundary of each.

    Parameters
    ----------
    config : GateConfig, optional
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
    looks : Every look a comparison took.
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
    repeats, bounds, _ = _planned(_paired.gate_config(config))
    fractions = repeats / repeats[-1]
    return pd.DataFrame({
        "look": np.arange(1, len(repeats) + 1, dtype=np.int64),
        "repeats": repeats,
        "fraction": fractions,
        "boundary": bounds,
        "level": sps.norm.sf(bounds),
        "alpha_spent": obf_spending(config.alpha, fractions) if len(repeats) > 1
        else np.array([config.alpha]),
    })


@functools.lru_cache(maxsize=128)
def _planned(config: GateConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per planned look: repeats of the extended tasks, efficacy boundary and its nominal
    one-sided level (read-only arrays, computed once per config)."""
    repeats = look_repeats(config)
    if len(repeats) == 1:
        bounds = np.array([config.z_crit])
    else:
        bounds = np.array(spending_boundaries(config.z_crit,
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


# ------------------------------------------------------------------------------ the panel

_COUNTS = ("slots", "valid", "passed", "pending")


@dataclass(frozen=True)
class _Panel:
    """Dense per (candidate, task, look) prefix counts of the pairs' candidates.

    ``counts[name]`` for name in :data:`_COUNTS` is an (involved candidates + 1, tasks,
    looks) array counting a candidate's slots (valid, passed, waiting for a re-run) with
    repeat below the look's count; its last row, all zero, stands for a candidate without
    trials. When the trials carry graded scores, ``counts["total"]`` sums the valid slots'
    scores the same way and ``low``, ``high`` (rows, tasks) are the least and greatest
    score among the first ``k`` repeats (±inf without one); else ``low`` and ``high`` are
    None. ``child`` and ``parent`` are each pair's rows; ``identical`` (pairs, tasks) says
    the child's trials there are the parent's own.
    """

    counts: dict
    child: np.ndarray
    parent: np.ndarray
    identical: np.ndarray
    tasks: np.ndarray
    low: np.ndarray | None = None
    high: np.ndarray | None = None


def _panel(slots: _paired.Slots, child, parent, split: str, config: GateConfig,
           task_ids=None) -> _Panel:
    repeats = look_repeats(config)
    n_looks = len(repeats)
    split_code = slots.splits.get_indexer([split])[0] if len(slots.splits) else -1
    child_code = _codes(slots, child)
    parent_code = _codes(slots, parent)
    involved = np.unique(np.r_[child_code, parent_code])
    involved = involved[involved >= 0]
    local_cand = np.full(len(slots.candidates) + 1, -1, dtype=np.int64)
    local_cand[involved] = np.arange(len(involved))
    on_split = (slots.split == split_code) & (local_cand[slots.cand] >= 0)
    if task_ids is None:
        task_codes = np.flatnonzero(np.bincount(slots.task[on_split],
                                                minlength=len(slots.tasks)))
        names = slots.tasks.to_numpy()[task_codes]
    else:
        names = np.asarray(task_ids, dtype=object)
        task_codes = slots.tasks.get_indexer(pd.Index(names, dtype=object))
    n_cand, n_tasks = len(involved), len(task_codes)
    local_task = np.full(len(slots.tasks) + 1, -1, dtype=np.int64)
    local_task[task_codes[task_codes >= 0]] = np.flatnonzero(task_codes >= 0)
    band = np.searchsorted(repeats, slots.repeat, side="right")
    keep = on_split & (local_task[slots.task] >= 0) & (band < n_looks)
    lc, lt, lb = local_cand[slots.cand[keep]], local_task[slots.task[keep]], band[keep]
    key = (lc * n_tasks + lt) * n_looks + lb
    size = (n_cand + 1) * n_tasks * n_looks  # a last all-zero row for absent candidates

    def prefix(counted, weights=None):
        counts = np.bincount(key if counted is None else key[counted[keep]], weights,
                             minlength=size)
        return np.cumsum(counts.reshape(n_cand + 1, n_tasks, n_looks), axis=2)

    counts = {
        "slots": prefix(None),
        "valid": prefix(slots.valid),
        "passed": prefix(slots.passed),
        "pending": prefix(slots.needs_rerun(config.max_reruns)),
    }
    c_local = np.where(child_code >= 0, local_cand[child_code], n_cand)
    p_local = np.where(parent_code >= 0, local_cand[parent_code], n_cand)
    first = keep & (slots.repeat < config.k)
    identical = _identical(slots, first, local_cand[slots.cand[first]],
                           local_task[slots.task[first]], c_local, p_local,
                           (n_cand + 1, n_tasks, config.k))
    spread = {}
    if slots.score is not None:
        counts["total"] = prefix(None, slots.score[keep])
        scored = first & slots.valid
        at = (local_cand[slots.cand[scored]], local_task[slots.task[scored]])
        spread = {"low": np.full((n_cand + 1, n_tasks), np.inf),
                  "high": np.full((n_cand + 1, n_tasks), -np.inf)}
        np.minimum.at(spread["low"], at, slots.score[scored])
        np.maximum.at(spread["high"], at, slots.score[scored])
    return _Panel(counts=counts, child=c_local, parent=p_local, identical=identical,
                  tasks=names, **spread)


def _identical(slots: _paired.Slots, first, rows, columns, child, parent, shape) -> np.ndarray:
    """(pairs, tasks): the child has trials among its first ``k`` repeats of the task and
    each is the parent's own trial of that repeat (the same source).

    ``first`` selects those slots, ``rows`` and ``columns`` are their panel rows and task
    columns, ``child`` and ``parent`` each pair's rows; ``shape`` is (rows, tasks, k), its
    last row standing for a candidate without trials. Without a borrowed slot among them
    no child's trial is another candidate's, so no task is identical unless a pair compares
    a candidate with itself.
    """
    n_rows, n_tasks, _ = shape
    lent = slots.source[first] != slots.cand[first]
    if not lent.any() and not ((child == parent) & (child < n_rows - 1)).any():
        return np.zeros((len(child), n_tasks), dtype=bool)
    source = np.full(shape, -1, dtype=np.int64)
    source[rows, columns, slots.repeat[first]] = slots.source[first]
    c_src, p_src = source[child], source[parent]
    has = c_src >= 0
    return has.any(axis=2) & (~has | (c_src == p_src)).all(axis=2)


def _codes(slots: _paired.Slots, names) -> np.ndarray:
    """Each candidate's code in ``slots``, -1 when it has no trials or is missing (None)."""
    names = np.asarray(names, dtype=object)
    codes = slots.candidates.get_indexer(pd.Index(names, dtype=object)).astype(np.int64)
    codes[pd.isna(names)] = -1
    return codes


@dataclass(frozen=True)
class _Replay:
    """Every planned look of every pair (arrays are (pairs, looks) unless noted)."""

    tested: dict  # significance and decision columns, look-major: look * n_pairs + pair
    extended: np.ndarray  # (pairs, tasks)
    complete: np.ndarray  # all wanted slots present and settled (for wanted)
    available: np.ndarray  # the look's extended repeats are all present (for credit)
    stop: np.ndarray
    futile: np.ndarray
    child_trials: np.ndarray
    parent_trials: np.ndarray
    repeats: np.ndarray  # (looks,)
    bounds: np.ndarray  # (looks,)


class _Reader:
    """Each pair's counts per task at a given look level, for the child or the parent."""

    def __init__(self, panel: _Panel):
        n_tasks, n_looks = panel.counts["slots"].shape[1:]
        self._flat = {name: a.reshape(-1) for name, a in panel.counts.items()}
        cells = np.arange(n_tasks) * n_looks
        self._first = {side: rows[:, None] * (n_tasks * n_looks) + cells
                       for side, rows in (("child", panel.child), ("parent", panel.parent))}

    def at(self, side: str, level) -> dict[str, np.ndarray]:
        """(pairs, tasks) counts of ``side`` at look ``level`` (0-based, per pair and task)."""
        index = self._first[side] + level
        return {name: a[index] for name, a in self._flat.items()}


def _replay(panel: _Panel, config: GateConfig) -> _Replay:
    """Replay every planned look of every pair from the panel.

    A look whose counts equal look 1's on every task of a pair (none of its extended tasks
    has more repeats yet) has look 1's statistics: they are computed once and only its
    decision is taken at its own level.
    """
    repeats, bounds, levels = _planned(config)
    n_looks = len(repeats)
    n_pairs, n_tasks = panel.identical.shape
    reader = _Reader(panel)
    first = reader.at("child", 0), reader.at("parent", 0)
    c, p = first
    extended = ((c["valid"] > 0) & (p["valid"] > 0) & _mixed(panel, c, p)
                & ~panel.identical & (n_looks > 1))
    parts, n_either = [], []
    complete = np.zeros((n_pairs, n_looks), dtype=bool)
    available = np.ones((n_pairs, n_looks), dtype=bool)
    child_trials = np.zeros((n_pairs, n_looks), dtype=np.int64)
    parent_trials = np.zeros((n_pairs, n_looks), dtype=np.int64)
    tested_row = np.tile(np.arange(n_pairs), n_looks)  # each (look, pair): its test's row
    n_tested = 0
    for j in range(n_looks):  # a handful of looks; everything inside is vectorised
        moved = np.ones(n_pairs, dtype=bool)
        if j:
            level = np.where(extended, j, 0)
            c, p = reader.at("child", level), reader.at("parent", level)
            moved = _moved(c, first[0]) | _moved(p, first[1])
        need = repeats[j] if j == 0 else repeats[level]
        present = (c["slots"] == need) & (p["slots"] == need)
        complete[:, j] = (present & (c["pending"] + p["pending"] == 0)).all(axis=1)
        if j:
            available[:, j] = (~extended | present).all(axis=1)
        child_trials[:, j] = c["slots"].sum(axis=1)
        parent_trials[:, j] = p["slots"].sum(axis=1)
        rank = n_tested + np.cumsum(moved) - 1  # the test row of each moved pair
        tested_row[j * n_pairs + np.flatnonzero(moved)] = rank[moved]
        n_tested += int(moved.sum())
        n_either.append(((c["slots"] + p["slots"]) > 0).sum(axis=1)[moved])
        at = np.flatnonzero((c["valid"] > 0) & (p["valid"] > 0) & moved[:, None])
        parts.append((rank[at // max(n_tasks, 1)], c["valid"].ravel()[at],
                      c["passed"].ravel()[at], p["valid"].ravel()[at], p["passed"].ravel()[at],
                      *((c["total"].ravel()[at], p["total"].ravel()[at])
                        if "total" in c else ())))
    columns = [np.concatenate(a) for a in zip(*parts)]
    paired = _paired.Paired(n_tested, *columns[:5],
                            n_either=np.concatenate(n_either).astype(np.int64),
                            **dict(zip(("child_total", "parent_total"), columns[5:])))
    stats = _paired.significance(_paired.describe(paired), paired, config=config)
    tested = {name: a[tested_row] for name, a in stats.items()}
    cull_level = np.r_[np.full(n_pairs, config.alpha), np.zeros((n_looks - 1) * n_pairs)]
    tested["decision"] = _paired.decide(tested, level=np.repeat(levels, n_pairs),
                                        cull_level=cull_level, config=config)
    tested["looks"] = np.repeat(np.arange(1, n_looks + 1), n_pairs).astype(np.int64)
    z = tested["z"].reshape(n_looks, n_pairs).T
    decided = (tested["decision"] != "inconclusive").reshape(n_looks, n_pairs).T
    n = tested["n_tasks"].reshape(n_looks, n_pairs).T
    last = np.arange(n_looks)[None, :] == n_looks - 1
    final = last | ~extended.any(axis=1)[:, None] | (n < config.min_tasks)
    futile = np.zeros_like(final)
    if config.futility_z is not None:
        with np.errstate(invalid="ignore"):
            futile = ~final & (z < config.futility_z)
    return _Replay(tested, extended, complete, available, decided | final | futile,
                   futile & ~decided, child_trials, parent_trials, repeats, bounds)


def _mixed(panel: _Panel, child: dict, parent: dict) -> np.ndarray:
    """(pairs, tasks): are the pooled child and parent values at look 1 not all equal?

    For pass/fail values: some pass and some fail among the valid repeats (``child`` and
    ``parent`` are look 1's counts); for graded scores: the least and greatest differ.
    """
    if panel.low is None:
        pooled_passed = child["passed"] + parent["passed"]
        return (pooled_passed > 0) & (pooled_passed < child["valid"] + parent["valid"])
    low = np.minimum(panel.low[panel.child], panel.low[panel.parent])
    high = np.maximum(panel.high[panel.child], panel.high[panel.parent])
    return low < high


def _moved(counts: dict, first: dict) -> np.ndarray:
    """Per pair: do a side's slot, valid, passed counts (or score sums) differ from look 1's
    on any task?"""
    names = [name for name in ("slots", "valid", "passed", "total") if name in counts]
    return np.logical_or.reduce([counts[name] != first[name] for name in names]).any(axis=1)


def _stopping_look(replay: _Replay) -> np.ndarray:
    """Per pair, the 0-based look the procedure decides at (or awaits data after)."""
    awaiting = np.c_[~replay.available[:, 1:], np.zeros(len(replay.stop), dtype=bool)]
    return np.argmax(replay.stop | awaiting, axis=1)


def _look_reasons(replay: _Replay, look: np.ndarray, pairs_index: np.ndarray,
                  config: GateConfig) -> tuple[np.ndarray, np.ndarray]:
    """Decision and reason of the given (pair, look) rows."""
    n_pairs = len(replay.stop)
    n_looks = len(replay.repeats)
    row = look * n_pairs + pairs_index
    decision = replay.tested["decision"][row]
    stat_reason = replay.tested["reason"][row]
    stopped = replay.stop[pairs_index, look]
    futile = replay.futile[pairs_index, look]
    of = (look + 1).astype(str).astype(object) + f" of {n_looks}"
    what = np.select(
        [decision == "credit", decision == "cull", futile, ~stopped,
         look == n_looks - 1],
        ["credited at look " + of, "culled at look " + of,
         "stopped for futility at look " + of + f" (z < futility_z={config.futility_z})",
         "awaiting look " + (look + 2).astype(str).astype(object) + f" of {n_looks}: "
         "its repeats are not all scored",
         "no boundary crossed by look " + of],
        "stopped at look " + of,
    ).astype(object)
    decision[~stopped] = "inconclusive"
    has = pd.notna(stat_reason)
    reason = np.where(has, what + "; " + np.where(has, stat_reason, "").astype(object), what)
    return decision, reason.astype(object)


def compare(slots: _paired.Slots, pairs: pd.DataFrame, *, split: str,
            config: GateConfig) -> pd.DataFrame:
    """The significance test of each pair under ``config.design``.

    Returns
    -------
    DataFrame
        :data:`gsme.schema.PAIRED_COLUMNS`, one row per pair in the order of ``pairs``:
        the statistics of the look the design stopped at, ``looks`` the looks it took.
    """
    return design_of(config).decide(slots, pairs, split=split, config=config)


def _adaptive_decide(slots: _paired.Slots, pairs: pd.DataFrame, *, split: str,
                     config: GateConfig) -> pd.DataFrame:
    child = pairs["candidate"].to_numpy(dtype=object)
    parent = pairs["parent"].to_numpy(dtype=object)
    replay = _replay(_panel(slots, child, parent, split, config), config)
    look = _stopping_look(replay)
    index = np.arange(len(child))
    row = look * len(child) + index
    tested = {name: a[row] for name, a in replay.tested.items()}
    tested["decision"], tested["reason"] = _look_reasons(replay, look, index, config)
    return _paired.paired_frame(child, parent, split, tested)


# ------------------------------------------------------------------------------ public

def looks(trials: pd.DataFrame, pairs: pd.DataFrame, *, split: str = "train",
          config: GateConfig | None = None) -> pd.DataFrame:
    """Every look the design took for each (candidate, parent) pair, with its boundary.

    Parameters
    ----------
    trials : DataFrame
        A trials frame.
    pairs : DataFrame
        Columns ``candidate`` (the child) and ``parent``.
    split : {"train", "test"}
    config : GateConfig, optional

    Returns
    -------
    DataFrame
        One row per (pair, look taken), pairs in the order of ``pairs``: ``candidate,
        parent, split, look`` (1-based), ``repeats`` (per side on the extended tasks),
        ``n_extended`` (tasks at those repeats; 0 at look 1), ``child_trials``,
        ``parent_trials`` (slots the look reads on each side), ``n_tasks, n_dropped,
        n_changed, k, rate_parent, rate_child, delta_pp, se_pp, z, p_value, p_one_sided``
        (as in :func:`gsme.stats.paired_test`, at this look), ``boundary`` (z-scale efficacy
        boundary), ``level`` (its nominal one-sided level Φ(−boundary); a look credits when
        its ``p_one_sided`` is at most this, and look 1 culls when its lower p is at most
        ``alpha``),
        ``decision`` (``continue`` at a look that did not stop, else credit / cull /
        inconclusive; ``continue`` too at a last look whose successor is not scored yet)
        and ``reason``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c"], 90),
    ...                   "task_id": np.tile(np.repeat([f"t{i}" for i in range(10)], 9), 2),
    ...                   "split": "train", "repeat": np.tile(np.arange(9), 20),
    ...                   "passed": rng.random(180) < 0.5})
    >>> cfg = GateConfig(design="adaptive", futility_z=None)
    >>> looks(t, pd.DataFrame({"candidate": ["c"], "parent": ["p"]}), config=cfg)[
    ...     ["look", "repeats", "boundary", "decision"]].round(2)
       look  repeats  boundary      decision
    0     1        3      3.71      continue
    1     2        6      2.51      continue
    2     3        9      1.99  inconclusive
    """
    _paired.check_choice("split", split, schema.SPLITS)
    config = _paired.gate_config(config)
    schema.require(pairs, ["candidate", "parent"], "pairs")
    slots = _paired.checked_slots(trials)
    return looks_of_slots(slots, pairs, split=split, config=config)


def looks_of_slots(slots: _paired.Slots, pairs: pd.DataFrame, *, split: str,
                   config: GateConfig) -> pd.DataFrame:
    """:func:`looks` on trials already encoded (for simulations that reuse one frame)."""
    return design_of(config).looks(slots, pairs, split=split, config=config)


def _one_look(slots: _paired.Slots, pairs: pd.DataFrame, *, split: str,
              config: GateConfig) -> pd.DataFrame:
    """The fixed design's one look over every repeat, as its gate reads it."""
    child = pairs["candidate"].to_numpy(dtype=object)
    parent = pairs["parent"].to_numpy(dtype=object)
    out = _paired.compare(slots, pairs, split=split, config=config)
    out.insert(3, "look", np.ones(len(out), dtype=np.int64))
    out.insert(4, "repeats", np.full(len(out), config.k, dtype=np.int64))
    out.insert(5, "n_extended", np.zeros(len(out), dtype=np.int64))
    out.insert(6, "child_trials", _all_slots(slots, child, split))
    out.insert(7, "parent_trials", _all_slots(slots, parent, split))
    out["boundary"] = config.z_crit
    out["level"] = config.alpha
    return out[LOOK_COLUMNS]


def _adaptive_looks(slots: _paired.Slots, pairs: pd.DataFrame, *, split: str,
                    config: GateConfig) -> pd.DataFrame:
    child = pairs["candidate"].to_numpy(dtype=object)
    parent = pairs["parent"].to_numpy(dtype=object)
    replay = _replay(_panel(slots, child, parent, split, config), config)
    stop = _stopping_look(replay)
    n_pairs = len(child)
    index = np.repeat(np.arange(n_pairs), stop + 1)
    look = np.arange(len(index)) - np.repeat(np.cumsum(stop + 1) - (stop + 1), stop + 1)
    decision, reason = _look_reasons(replay, look, index, config)
    last = look == stop[index]
    decision = np.where(last & replay.stop[index, look], decision, "continue").astype(object)
    reason = np.where(last, reason, None).astype(object)
    row = look * n_pairs + index
    out = pd.DataFrame({
        "candidate": _paired.text(child[index]),
        "parent": _paired.text(parent[index]),
        "split": _paired.text([split] * len(index)),
        "look": (look + 1).astype(np.int64),
        "repeats": replay.repeats[look].astype(np.int64),
        "n_extended": np.where(look > 0, replay.extended.sum(axis=1)[index], 0).astype(np.int64),
        "child_trials": replay.child_trials[index, look],
        "parent_trials": replay.parent_trials[index, look],
    })
    for name in LOOK_COLUMNS[8:LOOK_COLUMNS.index("boundary")]:
        out[name] = replay.tested[name][row]
    out["boundary"] = replay.bounds[look]
    out["level"] = _planned(config)[2][look]
    out["decision"] = _paired.text(decision)
    out["reason"] = _paired.text(reason)
    return out[LOOK_COLUMNS]


def decided_repeats(trials: pd.DataFrame, pairs: pd.DataFrame, *, split: str = "train",
                    config: GateConfig | None = None) -> pd.DataFrame:
    """The repeats each pair's decision read, per task: those below ``repeats``, both sides.

    The adaptive design decides at the look it stopped at (the last row of :func:`looks`),
    which reads the repeats below r_ℓ on the tasks it extended and below ``k`` on the
    others, on both sides (repeats scored later, or for another child of the same parent,
    are not read). The fixed design reads every repeat. Per-task rates over exactly these
    repeats average to the decision's rates and ``delta_pp`` (:func:`gsme.stats.paired_tasks`).

    Parameters
    ----------
    trials, pairs, split, config
        As in :func:`looks`.

    Returns
    -------
    DataFrame
        ``candidate, parent, task_id, repeats``: one row per pair (in the order of
        ``pairs``) and task with trials of either side on ``split``; the decision read the
        repeats ``0 .. repeats-1`` of the task on each side.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c"], 12),
    ...                   "task_id": np.tile(np.repeat(["t1", "t2"], 6), 2), "split": "train",
    ...                   "repeat": np.tile(np.arange(6), 4),
    ...                   "passed": np.tile([1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1], 2)})
    >>> pairs = pd.DataFrame({"candidate": ["c"], "parent": ["p"]})
    >>> decided_repeats(t, pairs, config=GateConfig(min_tasks=2, futility_z=None))
      candidate parent task_id  repeats
    0         c      p      t1        6
    1         c      p      t2        3
    >>> decided_repeats(t, pairs, config=GateConfig(design="fixed"))["repeats"].tolist()
    [6, 6]
    """
    _paired.check_choice("split", split, schema.SPLITS)
    config = _paired.gate_config(config)
    schema.require(pairs, ["candidate", "parent"], "pairs")
    slots = _paired.checked_slots(trials)
    child = pairs["candidate"].to_numpy(dtype=object)
    parent = pairs["parent"].to_numpy(dtype=object)
    names, repeats = design_of(config).decided_repeats(slots, child, parent, split=split,
                                                       config=config)
    n_tasks = len(names)
    return pd.DataFrame({
        "candidate": _paired.text(np.repeat(child, n_tasks)),
        "parent": _paired.text(np.repeat(parent, n_tasks)),
        "task_id": _paired.text(np.tile(names, len(child))),
        "repeats": repeats.reshape(-1).astype(np.int64),
    })


def _all_slots(slots: _paired.Slots, names, split: str) -> np.ndarray:
    split_code = slots.splits.get_indexer([split])[0] if len(slots.splits) else -1
    per = np.bincount(slots.cand[slots.split == split_code], minlength=len(slots.candidates) + 1)
    codes = _codes(slots, names)
    return np.where(codes >= 0, per[codes], 0).astype(np.int64)


def wanted(trials: pd.DataFrame, pairs: pd.DataFrame, tasks: pd.DataFrame, *, split: str,
           config: GateConfig | None = None) -> pd.DataFrame:
    """The repeats each candidate of ``pairs`` (and its parent) needs on ``split``.

    A pure function of the trials so far: the run's scoring loop calls it, runs (or
    borrows, or re-runs) what is missing, and calls it again until nothing new is wanted.
    The fixed design, the test split and a candidate without a parent want ``k`` repeats of
    every task. The adaptive design replays its looks: while a look's slots are missing or
    an infrastructure failure there may still be re-run, that look's repeats are wanted;
    once the look is complete and does not stop, the next look's repeats are wanted on the
    extended tasks, on both sides. A parent shared by several pairs gets the most any of
    them wants.

    Parameters
    ----------
    trials : DataFrame
        The trials so far (with ``borrowed_from`` where rows were borrowed).
    pairs : DataFrame
        ``candidate, parent`` (parent None: the candidate is scored alone, e.g. the
        baseline).
    tasks : DataFrame
        ``task_id, split`` of the run (a task id once per split).
    split : {"train", "test"}
    config : GateConfig, optional

    Returns
    -------
    DataFrame
        ``candidate, task_id, split, repeats``: repeats ``0 .. repeats-1`` are wanted, one
        row per candidate (children first, then parents) and task of ``split``.

    Raises
    ------
    gsme.schema.FrameError
        ``tasks`` repeats a task id on ``split``.

    Examples
    --------
    >>> tasks = pd.DataFrame({"task_id": ["t1", "t2"], "split": "train"})
    >>> pairs = pd.DataFrame({"candidate": ["c"], "parent": ["p"]})
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c"], 6), "task_id":
    ...                   np.tile(np.repeat(["t1", "t2"], 3), 2), "split": "train",
    ...                   "repeat": np.tile([0, 1, 2], 4),
    ...                   "passed": [1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1]})
    >>> wanted(t, pairs, tasks, split="train",
    ...        config=GateConfig(design="adaptive", min_tasks=2, futility_z=None))
      candidate task_id  split  repeats
    0         c      t1  train        6
    1         c      t2  train        3
    2         p      t1  train        6
    3         p      t2  train        3
    """
    _paired.check_choice("split", split, schema.SPLITS)
    config = _paired.gate_config(config)
    schema.require(pairs, ["candidate", "parent"], "pairs")
    schema.require(tasks, ["task_id", "split"], "tasks")
    ids = tasks["task_id"].to_numpy(dtype=object)[tasks["split"].to_numpy(dtype=object) == split]
    if not pd.Index(ids).is_unique:
        raise schema.FrameError(f"tasks column 'task_id' repeats ids on split {split!r}: "
                                f"{sorted(pd.Index(ids)[pd.Index(ids).duplicated()])[:10]}")
    child = pairs["candidate"].to_numpy(dtype=object)
    parent = pairs["parent"].to_numpy(dtype=object)
    has_parent = pd.notna(parent)
    names = np.asarray(list(dict.fromkeys([*child, *parent[has_parent]])), dtype=object)
    repeats = np.full((len(names), len(ids)), config.k, dtype=np.int64)
    if split == "train" and has_parent.any() and len(ids):
        child, parent = child[has_parent], parent[has_parent]
        extended = design_of(config).wanted(trials, child, parent, ids, config=config)
        sides = pd.Index(names, dtype=object).get_indexer(np.r_[child, parent])
        np.maximum.at(repeats, sides, np.tile(extended, (2, 1)))  # a parent: its most wanted
    return pd.DataFrame({
        "candidate": _paired.text(np.repeat(names, len(ids))),
        "task_id": _paired.text(np.tile(ids, len(names))),
        "split": _paired.text([split] * repeats.size),
        "repeats": repeats.ravel(),
    })


# ------------------------------------------------------------------------------ designs

def design_of(config: GateConfig | None = None) -> Design:
    """The registered design ``config.design`` names (:data:`gsme.registry.DESIGNS`).

    Examples
    --------
    >>> design_of(GateConfig(design="fixed")).summary
    'the paper gate: k repeats of every task on each side, one look'
    """
    return DESIGNS.get(_paired.gate_config(config).design)


class Design:
    """A gate design: its looks, the repeats it wants next, how it decides, its power.

    gsme's designs are :class:`Fixed` and :class:`Adaptive`. A new design subclasses one of
    them (or this, implementing every method) and registers under a name
    (:data:`gsme.registry.DESIGNS`: entry point group ``gsme.designs``, or
    ``DESIGNS.register(name, design)``); ``GateConfig(design=name)`` then selects it
    everywhere: the run's scoring loop (:func:`wanted`), the gates (:func:`gsme.gates.credit`),
    :func:`looks`, :func:`gsme.compare.plan` and the command line.

    Every method reads its settings from ``config`` (a :class:`~gsme.settings.GateConfig`)
    and is a pure function of its arguments.

    Attributes
    ----------
    summary : str
        One line saying what the design does (shown by ``gsme --help``).

    See Also
    --------
    design_of : The registered design a config names.
    gsme.registry.DESIGNS : The registry of designs by name.

    Examples
    --------
    A design that decides after a single repeat of every task, registered and selected
    by name:

    >>> from gsme.registry import DESIGNS
    >>> from gsme.settings import GateConfig
    >>> class Peek(Fixed):
    ...     summary = "one look after a single repeat"
    ...     def look_repeats(self, config):
    ...         return np.array([1], dtype=np.int64)
    >>> DESIGNS.register("peek", Peek)
    >>> look_repeats(GateConfig(design="peek")).tolist()
    [1]
    >>> DESIGNS.unregister("peek")
    """

    summary = ""

    def look_repeats(self, config: GateConfig) -> np.ndarray:
        """Repeats per task and side at each planned look (int64, increasing)."""
        raise NotImplementedError

    def decide(self, slots: _paired.Slots, pairs: pd.DataFrame, *, split: str,
               config: GateConfig) -> pd.DataFrame:
        """The significance test of every (``candidate``, ``parent``) row of ``pairs``:
        :data:`gsme.schema.PAIRED_COLUMNS`, one row per pair in their order."""
        raise NotImplementedError

    def looks(self, slots: _paired.Slots, pairs: pd.DataFrame, *, split: str,
              config: GateConfig) -> pd.DataFrame:
        """Every look taken, :data:`gsme.schema.LOOK_COLUMNS` (see :func:`looks`)."""
        raise NotImplementedError

    def decided_repeats(self, slots: _paired.Slots, child, parent, *, split: str,
                        config: GateConfig) -> tuple[np.ndarray, np.ndarray]:
        """The tasks with trials of either side and, per (pair, task), the repeats below
        which the decision read both sides."""
        raise NotImplementedError

    def wanted(self, trials: pd.DataFrame, child, parent, task_ids, *,
               config: GateConfig) -> np.ndarray:
        """(pairs, tasks): the repeats each child and its parent need on the train split
        so far (``k`` everywhere for a one-look design)."""
        return np.full((len(child), len(task_ids)), config.k, dtype=np.int64)

    def plan(self, *, n_tasks: int, effect_pp: float, k: int, repeat_sd_pp: float,
             task_sd_pp: float, power: float, config: GateConfig, simulations: int,
             rng=None) -> dict:
        """The design's power: a row of :data:`gsme.schema.PLAN_COLUMNS` from ``method``
        on (see :func:`gsme.compare.plan`); ``config`` has ``design`` and ``k`` set."""
        raise NotImplementedError


class Fixed(Design):
    """The paper's gate: ``k`` repeats of every task on each side, one look at ``alpha``.

    See Also
    --------
    Adaptive : The group-sequential design.

    Examples
    --------
    >>> from gsme.settings import GateConfig
    >>> Fixed().look_repeats(GateConfig(k=5)).tolist()
    [5]
    >>> plan = Fixed().plan(n_tasks=50, effect_pp=10.0, k=3, repeat_sd_pp=40.0,
    ...                     task_sd_pp=10.0, power=0.8, config=GateConfig(), simulations=0)
    >>> round(plan["power"], 3), plan["k_needed"], plan["n_tasks_needed"]
    (0.786, 4.0, 52.0)
    """

    summary = "the paper gate: k repeats of every task on each side, one look"

    def look_repeats(self, config):
        return np.array([config.k], dtype=np.int64)

    def decide(self, slots, pairs, *, split, config):
        return _paired.compare(slots, pairs, split=split, config=config)

    def looks(self, slots, pairs, *, split, config):
        return _one_look(slots, pairs, split=split, config=config)

    def decided_repeats(self, slots, child, parent, *, split, config):
        panel = _panel(slots, child, parent, split, config)
        split_code = slots.splits.get_indexer([split])[0] if len(slots.splits) else -1
        on = slots.split == split_code
        top = np.zeros((len(slots.candidates) + 1, len(slots.tasks)), dtype=np.int64)
        np.maximum.at(top, (slots.cand[on], slots.task[on]), slots.repeat[on] + 1)
        top = top[:, slots.tasks.get_indexer(pd.Index(panel.tasks, dtype=object))]
        return panel.tasks, np.maximum(top[_codes(slots, child)], top[_codes(slots, parent)])

    def plan(self, *, n_tasks, effect_pp, k, repeat_sd_pp, task_sd_pp, power, config,
             simulations, rng=None):
        """Analytic (:mod:`gsme.power`), with the fewest K and tasks reaching ``power``."""
        def reach(n, kk):
            return power_mod.power(n_tasks=n, effect_pp=effect_pp, repeat_sd_pp=repeat_sd_pp,
                                   task_sd_pp=task_sd_pp, k=kk, config=config)

        ks = np.arange(1, MAX_K + 1)
        enough = np.array([reach(n_tasks, int(kk)) for kk in ks]) >= power
        n_needed = np.nan
        if effect_pp != 0:
            high = 2
            while reach(high, k) < power and high < MAX_TASKS:
                high *= 2
            if reach(high, k) >= power:
                low = max(2, high // 2)
                while low < high:  # fewest n reaching the target (power grows with n)
                    mid = (low + high) // 2
                    low, high = (mid + 1, high) if reach(mid, k) < power else (low, mid)
                n_needed = float(high)
        return {"method": "analytic", "power": reach(n_tasks, k),
                "mde_pp": power_mod.mde(n_tasks=n_tasks, repeat_sd_pp=repeat_sd_pp,
                                        task_sd_pp=task_sd_pp, k=k, power=power,
                                        config=config),
                "k_needed": float(ks[enough][0]) if enough.any() else np.nan,
                "n_tasks_needed": n_needed, "trials_per_side": float(n_tasks * k)}


class Adaptive(Design):
    """Group-sequential: ``k`` repeats, then ``k_step`` more on the mixed tasks up to
    ``k_max``, looking after each step (see the module's description).

    See Also
    --------
    Fixed : The paper's one-look design.
    boundaries : The boundary of each look.

    Examples
    --------
    >>> from gsme.settings import GateConfig
    >>> Adaptive().look_repeats(GateConfig(design="adaptive", k=3, k_step=3, k_max=9)).tolist()
    [3, 6, 9]
    >>> isinstance(design_of(GateConfig(design="adaptive")), Adaptive)
    True
    """

    summary = ("group-sequential: k repeats, then k_step more on tasks with mixed outcomes "
               "up to k_max, a look after each step")

    def look_repeats(self, config):
        if config.k_max == config.k:
            return np.array([config.k], dtype=np.int64)
        steps = np.arange(config.k, config.k_max, config.k_step, dtype=np.int64)
        return np.r_[steps, config.k_max].astype(np.int64)

    def decide(self, slots, pairs, *, split, config):
        return _adaptive_decide(slots, pairs, split=split, config=config)

    def looks(self, slots, pairs, *, split, config):
        return _adaptive_looks(slots, pairs, split=split, config=config)

    def decided_repeats(self, slots, child, parent, *, split, config):
        panel = _panel(slots, child, parent, split, config)
        replay = _replay(panel, config)
        stopped = _stopping_look(replay)[:, None]
        return panel.tasks, replay.repeats[np.where(replay.extended, stopped, 0)]

    def wanted(self, trials, child, parent, task_ids, *, config):
        slots = _paired.checked_slots(trials)
        replay = _replay(_panel(slots, child, parent, "train", config, task_ids=task_ids),
                         config)
        look = np.argmax(~replay.complete | replay.stop, axis=1)
        return replay.repeats[np.where(replay.extended, look[:, None], 0)]

    def plan(self, *, n_tasks, effect_pp, k, repeat_sd_pp, task_sd_pp, power, config,
             simulations, rng=None):
        """Simulated through the gate: ``simulations`` comparisons of pass/fail outcomes
        (see :func:`gsme.compare.plan`), the MDE solved with the same draws at every
        effect."""
        rng = np.random.default_rng(0 if rng is None else rng)
        draws = (rng.random((simulations, n_tasks, config.k_max, 2)),
                 rng.standard_normal((simulations, n_tasks)))
        trials, pairs = _simulated_pairs(draws, effect_pp, repeat_sd_pp, task_sd_pp)
        taken = self.looks(_paired.checked_slots(trials), pairs, split="train", config=config)
        last = taken.groupby("candidate", sort=False).tail(1)
        detected = float(last["decision"].isin(["credit", "cull"]).mean())
        per_side = float(last["child_trials"].mean())

        def gap(eff):  # the same draws at every effect, so power grows with it
            trials, pairs = _simulated_pairs(draws, eff, repeat_sd_pp, task_sd_pp)
            decided = self.decide(_paired.checked_slots(trials), pairs, split="train",
                                  config=config)
            return float(decided["decision"].isin(["credit", "cull"]).mean()) - power

        mde = np.nan
        if gap(100.0) >= 0:
            mde = float(optimize.brentq(gap, 0.0, 100.0, xtol=0.5))
        return {"method": "simulated", "power": detected, "mde_pp": mde, "k_needed": np.nan,
                "n_tasks_needed": np.nan, "trials_per_side": per_side}


def _simulated_pairs(draws, effect, repeat_sd, task_sd):
    """Every repeat (up to ``k_max``) of ``sims`` simulated parent/child pairs, as trials."""
    uniforms, spread = draws
    sims, n = uniforms.shape[:2]
    p_parent = np.full((sims, n), _base_rate(effect / 100, repeat_sd / 100))
    p_child = np.clip(p_parent + effect / 100 + task_sd / 100 * spread, 0, 1)
    passed = uniforms < np.stack([p_parent, p_child], axis=-1)[:, :, None, :]
    sim, task, repeat, side = (a.ravel() for a in np.indices(passed.shape))
    names = np.array([f"p{i}" for i in range(sims)] + [f"c{i}" for i in range(sims)],
                     dtype=object)
    size = passed.size
    trials = pd.DataFrame({
        "candidate": names[side * sims + sim],
        "task_id": np.array([f"t{i}" for i in range(n)], dtype=object)[task],
        "split": np.full(size, "train", dtype=object), "repeat": repeat.astype(np.int64),
        "attempt": np.zeros(size, np.int64), "passed": passed.ravel(),
        "infra_ok": np.ones(size, bool), "activated": np.zeros(size, bool),
        "beacons": np.full(size, "", dtype=object),
        **{c: np.full(size, np.nan) for c in ("tokens", "cost_usd", "seconds")},
        **{c: np.full(size, None, dtype=object)
           for c in ("pathology", "trajectory", "error", "borrowed_from")},
    })
    pairs = pd.DataFrame({"candidate": names[sims:], "parent": names[:sims]})
    return trials, pairs


def _base_rate(effect: float, repeat_sd: float) -> float:
    """Parent pass probability p with p(1−p) + q(1−q) = repeat_sd², q = p + effect."""
    effect = min(max(effect, -1.0), 1.0)
    low, high = max(0.0, -effect), min(1.0, 1.0 - effect)
    centre = (low + high) / 2

    def gap(p):
        q = p + effect
        return p * (1 - p) + q * (1 - q) - repeat_sd**2

    if gap(centre) <= 0:  # the largest spread these rates allow
        return centre
    return float(optimize.brentq(gap, low, centre)) if gap(low) < 0 else low
