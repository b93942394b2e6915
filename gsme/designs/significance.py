"""The significance test of one look, for many pairs at once.

The statistic is the paired t of the per-task differences (:func:`significance`); its
one-sided p-values come from the normal or t reference, or from the exact sign-flip
distribution (:mod:`gsme.designs.exact`). The test of one look is one-sided at a nominal
level on each side (:func:`decide`): ``credit`` when the upper p (``p_one_sided``, the p of
a gain) is at most the level, ``cull`` when the lower p is. The fixed design has one look at
level ``gate.alpha`` (:func:`one_look`); the adaptive design
(:mod:`gsme.designs.adaptive`) gives every look its own level from the group-sequential
boundaries.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special
from scipy import stats as sps

from gsme._checks import text
from gsme._renamed import renamed_keywords
from gsme.designs.exact import exact_tails
from gsme.pairing import Paired, Slots, count_tasks, describe, pair_tasks
from gsme.schema import PAIRED_COLUMNS
from gsme.settings import GateConfig

__all__ = ["REFERENCES", "decide", "one_look", "paired_frame", "significance", "two_sided_p"]

REFERENCES = ("normal", "t")


def two_sided_p(z, df=None, reference: str = "normal"):
    """Two-sided p of ``z`` against the standard normal, or Student t with ``df``.

    Examples
    --------
    >>> two_sided_p([1.96, -1.96]).round(4).tolist()
    [0.05, 0.05]
    >>> float(two_sided_p(1.96, df=5, reference="t").round(4))
    0.1073
    """
    z = np.abs(np.asarray(z, dtype=np.float64))
    if reference == "t":
        return 2.0 * sps.t.sf(z, df)
    return 2.0 * sps.norm.sf(z)


@renamed_keywords(config="gate")
def significance(described: dict[str, np.ndarray], paired: Paired, *,
                 gate: GateConfig) -> dict[str, np.ndarray]:
    """The one-look significance test of every pair of :func:`describe` output.

    The statistic is z = mean(d) / (sd(d) / √n) (Student's paired t). Its one-sided p-values
    come from the reference of ``gate`` (normal, or t with n − 1 df), or from the exact
    sign-flip distribution of the task differences when fewer than ``gate.exact_below``
    tasks changed (also, whatever ``exact_below``, when every difference is equal and
    non-zero, sd = 0: only the all-plus and all-minus flips reach the observed sum).
    :func:`decide` compares these p-values with the levels of each pair's look.

    Parameters
    ----------
    described : dict of ndarray
        :func:`describe` of ``paired``.
    paired : Paired
    gate : GateConfig

    Returns
    -------
    dict of ndarray
        The input's columns except ``mean_d, sd_d``, with ``delta_pp``, ``se_pp``, ``z``,
        ``p_value`` (two-sided), ``p_one_sided`` (upper: the p of a gain), ``p_lower``,
        ``exact`` (bool) and ``reason``.

    Examples
    --------
    >>> from gsme.pairing import check, count_tasks, pair_tasks
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c", "d"], 6), "split": "train",
    ...                   "task_id": [f"t{i}" for i in range(6)] * 3, "repeat": 0,
    ...                   "passed": [0] * 6 + [1] * 6 + [1, 1, 1, 1, 1, 0]})
    >>> slots = check(t).slots
    >>> paired = pair_tasks(slots, count_tasks(slots), ["c", "d"], ["p", "p"], "train")
    >>> tested = significance(describe(paired), paired, gate=GateConfig())
    >>> tested["delta_pp"].round(1).tolist(), tested["p_one_sided"].tolist()
    ([100.0, 83.3], [0.015625, 0.03125])
    >>> tested["exact"].tolist()  # few tasks changed: exact sign-flip p-values
    [True, True]
    """
    n = described["n_tasks"].astype(np.float64)
    changed = described["n_changed"]
    mean, sd = described["mean_d"], described["sd_d"]
    df = np.where(n >= 2, n - 1, np.nan)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        se = sd / np.sqrt(n)
        z = mean / se
        if gate.reference == "t":
            p_up, p_low = sps.t.sf(z, df), sps.t.cdf(z, df)
        else:
            p_up, p_low = sps.norm.sf(z), sps.norm.cdf(z)
        p = two_sided_p(z, df, gate.reference)
        unchanged = (n >= 1) & (changed == 0)
        flipped = (n >= 2) & (sd == 0) & (mean != 0)
        exact = (changed > 0) & (changed < gate.exact_below) & ~flipped
        # all |d_i| equal: only the all-plus and all-minus sign flips reach |sum d|
        tail = np.exp2(-n)
        z = np.where(flipped, np.sign(mean) * -special.ndtri_exp((-n) * np.log(2.0)), z)
        p_up = np.where(flipped, np.where(mean > 0, tail, 1.0), p_up)
        p_low = np.where(flipped, np.where(mean < 0, tail, 1.0), p_low)
        p = np.where(flipped, 2.0 * tail, p)
    if exact.any():
        e_up, e_low, e_two = exact_tails(paired, np.flatnonzero(exact))
        p_up[exact], p_low[exact], p[exact] = e_up, e_low, e_two
    z = np.where(unchanged, 0.0, z)
    p, p_up, p_low = (np.where(unchanged, 1.0, a) for a in (p, p_up, p_low))
    out = {name: a for name, a in described.items() if name not in ("mean_d", "sd_d")}
    out.update(delta_pp=100.0 * mean, se_pp=100.0 * se, z=z, p_value=p, p_one_sided=p_up,
               p_lower=p_low, exact=exact | flipped,
               reason=_reasons(n, changed, gate, unchanged, flipped, exact))
    return out


@renamed_keywords(config="gate")
def decide(tested: dict[str, np.ndarray], *, level, cull_level=None,
           gate: GateConfig) -> np.ndarray:
    """Each pair's decision at its look, from :func:`significance` output.

    ``credit`` exactly when n ≥ ``gate.min_tasks``, some task changed and ``p_one_sided``
    is at most ``level``; else ``cull`` when ``p_lower`` is at most ``cull_level`` (default
    ``level``; 0: never cull); else ``inconclusive``. Levels are nominal one-sided levels,
    one per pair or one for all, whichever reference gave the p-values.

    Returns
    -------
    ndarray of object
        ``credit``, ``cull`` or ``inconclusive``, one per pair.

    Examples
    --------
    >>> tested = {"n_tasks": np.array([6, 6, 6, 3]), "n_changed": np.array([6, 5, 4, 3]),
    ...           "p_one_sided": np.array([0.01, 0.2, 0.99, 0.01]),
    ...           "p_lower": np.array([0.99, 0.8, 0.01, 0.99])}
    >>> decide(tested, level=0.025, gate=GateConfig()).tolist()  # min_tasks=5
    ['credit', 'inconclusive', 'cull', 'inconclusive']
    """
    n = tested["n_tasks"]
    level = np.broadcast_to(np.asarray(level, dtype=np.float64), n.shape)
    cull_level = level if cull_level is None else np.broadcast_to(
        np.asarray(cull_level, dtype=np.float64), n.shape)
    unchanged = (n >= 1) & (tested["n_changed"] == 0)
    tolerance = 1.0 + 1e-12  # exact p-values are dyadic; a level equal to one still passes
    up = (tested["p_one_sided"] <= level * tolerance) & ~unchanged
    down = (tested["p_lower"] <= cull_level * tolerance) & ~unchanged
    enough = n >= gate.min_tasks
    decision = np.where(enough & up, "credit", np.where(enough & down, "cull", "inconclusive"))
    return decision.astype(object)


def _reasons(n, changed, gate: GateConfig, unchanged, flipped, exact) -> np.ndarray:
    reason = np.full(len(n), None, dtype=object)
    count = n.astype(np.int64).astype(str).astype(object)
    moved = changed.astype(str).astype(object)
    reason[exact] = ("exact sign-flip p: only " + moved[exact] + " of " + count[exact]
                     + f" paired tasks changed (exact_below={gate.exact_below})")
    reason[flipped] = "all " + count[flipped] + " task differences are equal: exact sign-flip p"
    reason[unchanged] = "no paired task changed its pass rate"
    few = (n < gate.min_tasks) & (n > 0)
    reason[few] = (
        "only " + count[few] + f" paired task(s), fewer than min_tasks={gate.min_tasks}"
    )
    reason[n == 0] = "no task has a valid repeat on both sides"
    return reason



@renamed_keywords(config="gate")
def one_look(slots: Slots, pairs: pd.DataFrame, *, split: str,
             gate: GateConfig) -> pd.DataFrame:
    """The one-look paired test for every (child, parent) row of ``pairs``.

    Returns
    -------
    DataFrame
        :data:`gsme.schema.PAIRED_COLUMNS`, one row per pair, in the order of ``pairs``.

    Examples
    --------
    >>> from gsme.pairing import check
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c", "d"], 6), "split": "train",
    ...                   "task_id": [f"t{i}" for i in range(6)] * 3, "repeat": 0,
    ...                   "passed": [0] * 6 + [1] * 6 + [1, 1, 1, 1, 1, 0]})
    >>> pairs = pd.DataFrame({"child": ["c", "d"], "parent": ["p", "p"]})
    >>> one_look(check(t).slots, pairs, split="train", gate=GateConfig())[
    ...     ["child", "delta_pp", "p_one_sided", "decision"]].round(4)
      child  delta_pp  p_one_sided      decision
    0     c  100.0000       0.0156        credit
    1     d   83.3333       0.0312  inconclusive
    """
    child = pairs["child"].to_numpy(dtype=object)
    parent = pairs["parent"].to_numpy(dtype=object)
    paired = pair_tasks(slots, count_tasks(slots), child, parent, split)
    tested = significance(describe(paired), paired, gate=gate)
    tested["decision"] = decide(tested, level=gate.alpha, gate=gate)
    return paired_frame(child, parent, split, tested)


def paired_frame(child, parent, split: str, tested: dict[str, np.ndarray]) -> pd.DataFrame:
    """The :data:`gsme.schema.PAIRED_COLUMNS` frame of tested pairs: one row per ``child, parent``, the
    statistics from :func:`significance` columns and a ``decision`` (:func:`decide`).

    Examples
    --------
    >>> from gsme.pairing import check, count_tasks, pair_tasks
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c", "d"], 6), "split": "train",
    ...                   "task_id": [f"t{i}" for i in range(6)] * 3, "repeat": 0,
    ...                   "passed": [0] * 6 + [1] * 6 + [1, 1, 1, 1, 1, 0]})
    >>> slots = check(t).slots
    >>> paired = pair_tasks(slots, count_tasks(slots), ["c", "d"], ["p", "p"], "train")
    >>> tested = significance(describe(paired), paired, gate=GateConfig())
    >>> tested["decision"] = decide(tested, level=0.025, gate=GateConfig())
    >>> paired_frame(["c", "d"], ["p", "p"], "train", tested)[
    ...     ["child", "parent", "split", "n_tasks", "decision"]]
      child parent  split  n_tasks      decision
    0     c      p  train        6        credit
    1     d      p  train        6  inconclusive
    """
    columns = {"child": text(child), "parent": text(parent),
               "split": text([split] * len(child))}
    for name in PAIRED_COLUMNS[3:]:
        columns[name] = text(tested[name]) if name in ("decision", "reason") else tested[name]
    return pd.DataFrame(columns)
