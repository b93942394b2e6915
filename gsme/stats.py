"""Statistics of trials frames: per-task rates, the paired test, pass@k, retention.

Under the adaptive gate design how many repeats a task gets depends on its outcomes (mixed
tasks are extended), so a rate or pass@k over every repeat of a run's trials is biased.
:func:`first_repeats` keeps the first ``k`` repeats of every task, which every design scores
whatever the outcomes: rates and pass@k reported from a run read those
(:func:`candidate_rates`, :func:`gsme.report.run_table`). What a decision compared is read
by :func:`paired_tasks`: per task and side the repeats up to the look it stopped at.

The power tools of the paired design (:func:`power`, :func:`mde`, :func:`power_table`) live
in :mod:`gsme.power` and are importable from here too.

Every function here is vectorised (no Python loop per trial, task or pair). Rates are
fractions in [0, 1]; differences and standard errors named ``*_pp`` are percentage points.

What is averaged is each trial's value (:func:`gsme.schema.trial_values`): its ``score``
when the trials carry scores, else ``passed`` as 0/1. A *rate* is then a task's (or a
candidate's) mean value, and ``*_pp`` is 100 × a difference of values: percentage points
of score for scores in [0, 1]. pass@k needs pass/fail values and refuses graded scores.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from gsme import _checks, designs, pairing, schema
from gsme._renamed import renamed_keywords
from gsme.designs import significance
from gsme.power import mde, power, power_table
from gsme.settings import TARGET_POWER, GateConfig

__all__ = [
    "aa_test",
    "candidate_rates",
    "first_repeats",
    "mde",
    "p_value",
    "paired_tasks",
    "paired_test",
    "pass_at_k",
    "pass_at_k_estimate",
    "power",
    "power_table",
    "retention",
    "task_rates",
]


def task_rates(trials: pd.DataFrame | pairing.Checked, *,
               split: str | None = None) -> pd.DataFrame:
    """Pass rate (mean value) of every candidate on every task, over the valid repeats only.

    A repeat (slot ``candidate, task_id, split, repeat``) is valid when one of its attempts
    has ``infra_ok``; it is scored by its first valid attempt. Infrastructure failures never
    count as task failures. Every repeat given is read: on a run's trials under the adaptive
    design, pass :func:`first_repeats` for rates the extensions do not bias.

    Parameters
    ----------
    trials : DataFrame or gsme.pairing.Checked
        A trials frame (see :mod:`gsme.schema`).
    split : {"train", "test"} or None
        Keep one split; None keeps all.

    Returns
    -------
    DataFrame
        ``candidate, task_id, split, n_slots, n_valid, n_passed, rate``: repeats seen,
        valid and passed, and ``rate``, the mean value of the valid repeats (NaN when none
        is valid): ``n_passed / n_valid``, or the mean score when the trials carry scores.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": "a", "task_id": "t1", "split": "train",
    ...                   "repeat": [0, 1, 2], "passed": [True, False, True]})
    >>> float(task_rates(t)["rate"].iloc[0])
    0.6666666666666666
    """
    if split is not None:
        _checks.check_choice("split", split, schema.SPLITS)
    slots = pairing.checked_slots(trials)
    counts = pairing.count_tasks(slots)
    out = pairing.decode_tasks(slots, counts.key)
    out["n_slots"] = counts.n_slots.astype(np.int64)
    out["n_valid"] = counts.n_valid.astype(np.int64)
    out["n_passed"] = counts.n_passed.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["rate"] = pairing.task_values(counts) / counts.n_valid
    if split is not None:
        out = out[out["split"] == split].reset_index(drop=True)
    return out


def first_repeats(trials: pd.DataFrame | pairing.Checked, *,
                  k: int) -> pd.DataFrame | pairing.Checked:
    """The rows of every task's first ``k`` repeats (``repeat < k``), every attempt kept.

    Every gate design scores repeats ``0 .. k-1`` of every task on both sides (the
    adaptive design's look 1); the repeats after them are scored only for tasks whose
    look-1 outcomes were mixed, so their number depends on the outcomes and a rate or
    pass@k over them is biased (a task that passes in 2 of 3 repeats gets 6 more, one that
    passes in all 3 gets none). Over the first ``k`` each task's rate is an unbiased
    estimate of its pass probability, and pass@j (j ≤ k) of pass@j. Use the gate's ``k``
    (``GateConfig.k``) for a run's trials; under the fixed design these are all of them.

    A slot whose attempts all failed on infrastructure stays invalid: it is not replaced
    by a later repeat, which may exist only because the task was extended. Every attempt
    of the kept slots is kept, so the validity gate still scores each slot by its first
    valid attempt.

    Parameters
    ----------
    trials : DataFrame or gsme.pairing.Checked
        A trials frame.
    k : int
        Repeats to keep per (candidate, task, split), k ≥ 1.

    Returns
    -------
    DataFrame or gsme.pairing.Checked
        A trials frame: the rows of ``trials`` with ``repeat < k``, in their order (a
        :class:`~gsme.pairing.Checked` when given one: still checked, never again).

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": "a", "task_id": "t1", "split": "train",
    ...                   "repeat": [0, 1, 2, 3, 4, 5], "passed": [1, 0, 1, 1, 1, 0]})
    >>> task_rates(first_repeats(t, k=3))[["n_valid", "rate"]].round(3)
       n_valid   rate
    0        3  0.667
    """
    k = _checks.check_int("k", k, 1)
    checked = pairing.check(trials)
    first = checked.rows(checked.frame["repeat"].to_numpy() < k)
    return first if isinstance(trials, pairing.Checked) else first.frame


def candidate_rates(trials: pd.DataFrame | pairing.Checked, *, k: int,
                    split: str = "train") -> pd.DataFrame:
    """Each candidate's pass rate on ``split`` over the first ``k`` repeats of every task.

    The mean over tasks of :func:`task_rates` of :func:`first_repeats`: every task weighs
    the same, as in the paired test, and the rate is unbiased under every gate design
    (tasks without a valid repeat among the first ``k``, after infrastructure failures or
    with only later repeats scored, are left out and counted).

    Parameters
    ----------
    trials : DataFrame or gsme.pairing.Checked
        A trials frame.
    k : int
        Repeats per task read: the gate's ``k`` (``GateConfig.k``).
    split : {"train", "test"}

    Returns
    -------
    DataFrame
        ``candidate, split, n_tasks, n_dropped, rate``: tasks with a valid repeat among the
        first ``k``, tasks without one, and the mean per-task rate (a fraction; NaN with no
        task), one row per candidate with trials on ``split``, in order of appearance.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": "a", "task_id": ["t1"] * 6 + ["t2"] * 3,
    ...                   "split": "train", "repeat": [0, 1, 2, 3, 4, 5, 0, 1, 2],
    ...                   "passed": [1, 0, 0, 1, 1, 1, 1, 1, 1]})
    >>> candidate_rates(t, k=3)[["candidate", "n_tasks", "rate"]].round(3)
      candidate  n_tasks   rate
    0         a        2  0.667
    """
    _checks.check_choice("split", split, schema.SPLITS)
    trials = pairing.check(trials)
    tasks = task_rates(trials, split=split)[["candidate", "task_id"]]
    rates = tasks.merge(task_rates(first_repeats(trials, k=k), split=split), how="left",
                        on=["candidate", "task_id"])
    valid = rates["n_valid"].fillna(0) > 0
    out = rates.assign(valid=valid).groupby("candidate", sort=False).agg(
        n_tasks=("valid", "sum"), n_all=("valid", "size"), rate=("rate", "mean")).reset_index()
    out.insert(1, "split", _checks.text([split] * len(out)))
    out["n_dropped"] = out.pop("n_all") - out["n_tasks"]
    return out[["candidate", "split", "n_tasks", "n_dropped", "rate"]].astype(
        {"n_tasks": np.int64, "n_dropped": np.int64})


@renamed_keywords(config="gate")
def paired_test(
    trials: pd.DataFrame | pairing.Checked,
    *,
    parent: str,
    child: str,
    split: str = "train",
    gate: GateConfig | None = None,
) -> pd.DataFrame:
    """Per-task paired test of ``child`` against ``parent`` on one split: one look.

    For each task i with a valid repeat on both sides, r_i is the mean value (pass as 0/1,
    or score when the trials carry scores) over all its valid repeats and
    d_i = r_i(child) − r_i(parent); z = mean(d) / (sd(d, ddof=1) / √n)
    (Student's paired t statistic). The test is one-sided at level α = Φ(−z_crit) on each
    side: ``credit`` when the upper p (``p_one_sided``, the p of a gain) is at most α,
    ``cull`` when the lower p is, else ``inconclusive``; ``p_value`` is two-sided (for
    reference: the rule never reads it). The p-values come from
    ``gate.reference`` (normal, or Student t with n − 1 df), or from the exact sign-flip
    distribution of the d_i when fewer than ``gate.exact_below`` tasks changed (for
    graded scores by enumerating the 2^m sign flips, m at most
    :data:`gsme.designs.exact.MAX_GRADED_FLIPS`). On per-task mean scores with the t reference
    and no exact p, z and ``p_one_sided`` are those of ``scipy.stats.ttest_rel``
    (``alternative="greater"``).

    This is always the one-look test over every repeat, whatever ``gate.design``; the
    adaptive design's look-by-look procedure is :func:`gsme.designs.looks` and
    :func:`gsme.gates.significance_gate`. On a run's trials under the adaptive design, test
    :func:`first_repeats` for a one-look test that the extensions do not bias.

    Decided edge cases: repeats may differ in number per task (each task is weighted
    equally); tasks with trials on one side only, or no valid repeat on a side, are
    dropped and counted in ``n_dropped``; fewer than ``min_tasks`` paired tasks is
    ``inconclusive`` whatever z says; all d_i = 0 gives z = 0, p = 1; all d_i equal and
    non-zero (sd = 0) uses the exact sign-flip p = 2^(1−n) and reports the normal
    deviate with that p as z, never ±inf.

    Parameters
    ----------
    trials : DataFrame or gsme.pairing.Checked
        A trials frame holding both candidates.
    parent, child : str
        Candidate ids; both must have trials on ``split``.
    split : {"train", "test"}
    gate : GateConfig, optional
        ``z_crit`` (the level), ``reference``, ``exact_below`` and ``min_tasks``; default
        :class:`~gsme.settings.GateConfig`.

    Returns
    -------
    DataFrame
        One row: ``child``, ``parent``, ``split``, ``n_tasks``,
        ``n_dropped``, ``n_changed`` (tasks whose rate differs), ``k`` (most valid repeats
        of a paired task), ``looks`` (1), ``rate_parent``, ``rate_child``, ``delta_pp``,
        ``se_pp``, ``z``, ``p_value`` (two-sided), ``p_one_sided`` (the upper p, that the
        credit rule compares with α), ``decision`` and ``reason`` (why, when not decided
        by the reference distribution alone: an edge case or the exact p).

    See Also
    --------
    paired_tasks : The same comparison task by task.
    gsme.gates.credit : The three gates over a run's children, this test among them.
    gsme.compare.compare : The paper's row for two harnesses, built on this test.
    gsme.power.mde : The smallest effect the test can credit.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": ["p"] * 3 + ["c"] * 3, "task_id": ["t1", "t2", "t3"] * 2,
    ...                   "split": "train", "repeat": 0, "passed": [0, 1, 0, 1, 1, 0]})
    >>> paired_test(t, parent="p", child="c", gate=GateConfig(min_tasks=2))[
    ...     ["delta_pp", "p_one_sided", "decision"]]
        delta_pp  p_one_sided      decision
    0  33.333333          0.5  inconclusive
    """
    _checks.check_choice("split", split, schema.SPLITS)
    gate = _checks.gate_config(gate)
    if parent == child:
        raise ValueError(f"parent and child must differ, both are {child!r}")
    slots = pairing.checked_slots(trials)
    on_split = slots.candidates[np.unique(
        slots.candidate[slots.split == slots.splits.get_indexer([split])[0]])]
    for role, name in (("parent", parent), ("child", child)):
        if name not in on_split:
            known = sorted(on_split)[:20]
            raise ValueError(
                f"{role} {name!r} has no trials on split {split!r}; candidates there: {known}"
            )
    pairs = pd.DataFrame({"child": [child], "parent": [parent]})
    return significance.one_look(slots, pairs, split=split, gate=gate)


@renamed_keywords(config="gate")
def paired_tasks(
    trials: pd.DataFrame | pairing.Checked,
    *,
    parent: str,
    child: str,
    split: str = "train",
    gate: GateConfig | None = None,
) -> pd.DataFrame:
    """The task-by-task pairing behind the decision of ``child`` against ``parent``.

    Per task and side it reads the repeats the decision of ``gate.design`` read
    (:func:`gsme.designs.decided_repeats`): under the adaptive design those up to the
    look it stopped at (the extended tasks' extra repeats up to that look, the first ``k``
    of the others); under the fixed design every repeat. The mean of ``diff`` is the
    decision's ``delta_pp`` / 100, and the tasks are the ones it paired.

    Parameters
    ----------
    trials : DataFrame or gsme.pairing.Checked
        A trials frame holding both candidates.
    parent, child : str
        Candidate ids.
    split : {"train", "test"}
    gate : GateConfig, optional
        The gate that decided (a run's ``run.config.gate``); default
        :class:`~gsme.settings.GateConfig`.

    Returns
    -------
    DataFrame
        ``task_id, repeats, n_parent, n_child, rate_parent, rate_child, diff``: the
        repeats read per side (``0 .. repeats-1``), the valid ones among them and the pass
        rates on each side, and ``diff = rate_child − rate_parent``, for the tasks with a
        valid repeat read on both sides, in order of first appearance.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": ["p", "p", "c"], "task_id": ["t1", "t2", "t1"],
    ...                   "split": "train", "repeat": 0, "passed": [False, True, True]})
    >>> paired_tasks(t, parent="p", child="c")[["task_id", "diff"]].to_dict("records")
    [{'task_id': 't1', 'diff': 1.0}]
    """
    _checks.check_choice("split", split, schema.SPLITS)
    gate = _checks.gate_config(gate)
    checked = pairing.check(trials)
    pairs = pd.DataFrame({"child": [child], "parent": [parent]})
    read = designs.decided_repeats(checked, pairs, split=split, gate=gate)
    read = pd.Series(read["repeats"].to_numpy(), index=read["task_id"].to_numpy())
    frame = checked.frame
    sides = np.flatnonzero(((frame["split"] == split)
                            & frame["candidate"].isin([parent, child])).to_numpy())
    below = (frame["repeat"].to_numpy()[sides]
             < read.reindex(frame["task_id"].to_numpy()[sides]).to_numpy())
    keep = np.zeros(len(frame), dtype=bool)
    keep[sides[below]] = True
    rates = task_rates(checked.rows(keep), split=split)
    rates = rates[rates["n_valid"] > 0]
    sides = [
        rates.loc[rates["candidate"] == name, ["task_id", "n_valid", "rate"]].rename(
            columns={"n_valid": f"n_{role}", "rate": f"rate_{role}"}
        )
        for role, name in (("parent", parent), ("child", child))
    ]
    out = sides[0].merge(sides[1], on="task_id", how="inner")
    out["repeats"] = read.reindex(out["task_id"].to_numpy()).to_numpy().astype(np.int64)
    out["diff"] = out["rate_child"] - out["rate_parent"]
    return out[["task_id", "repeats", "n_parent", "n_child", "rate_parent", "rate_child",
                "diff"]]


@renamed_keywords(config="gate")
def aa_test(
    trials: pd.DataFrame | pairing.Checked,
    *,
    candidate: str,
    rerun: str,
    split: str = "train",
    gate: GateConfig | None = None,
    power: float = TARGET_POWER,
) -> pd.DataFrame:
    """A/A test: a candidate re-scored against itself, the run's own noise floor.

    ``rerun`` is the id under which the same harness was scored a second time. Any
    ``credit`` or ``cull`` here is a false alarm; ``delta_pp`` is the drift between two
    runs of one harness, and ``mde_pp`` the smallest true effect this design detects with
    probability ``power`` given the observed spread.

    Returns
    -------
    DataFrame
        The columns of :func:`paired_test` (``child`` is ``rerun``, ``parent`` is
        ``candidate``) plus ``sd_pp`` (sd of the per-task differences) and ``mde_pp``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> t = pd.DataFrame({"candidate": np.repeat(["base", "base2"], 60),
    ...                   "task_id": np.tile(np.repeat([f"t{i}" for i in range(20)], 3), 2),
    ...                   "split": "train", "repeat": np.tile([0, 1, 2], 40),
    ...                   "passed": rng.random(120) < 0.5})
    >>> aa_test(t, candidate="base", rerun="base2")["decision"].item()
    'inconclusive'
    """
    gate = _checks.gate_config(gate)
    out = paired_test(trials, parent=candidate, child=rerun, split=split, gate=gate)
    n = int(out["n_tasks"].iloc[0])
    out["sd_pp"] = out["se_pp"] * np.sqrt(n)
    sd = float(out["sd_pp"].iloc[0])
    out["mde_pp"] = (
        mde(n_tasks=n, repeat_sd_pp=sd, k=1, power=power, gate=gate)
        if n >= 2 and sd > 0 else np.nan
    )
    return out


def p_value(z, *, reference: str = "normal", df=None, alternative: str = "two-sided"):
    """p-value of a z statistic: two-sided 2·(1 − Φ(:math:`|z|`)), or one-sided 1 − Φ(z).

    ``alternative="greater"`` is the p of a gain, the one the gate's one-sided credit rule
    compares with its level α = 2.5%; ``"two-sided"`` the one papers usually print.

    Parameters
    ----------
    z : float or array-like
    reference : {"normal", "t"}
        Standard normal, or Student t with ``df`` degrees of freedom.
    df : float or array-like, required when ``reference="t"``
    alternative : {"two-sided", "greater"}

    Returns
    -------
    float or ndarray
        Same shape as ``z``.

    Examples
    --------
    >>> round(p_value(2.13), 4), round(p_value(2.13, alternative="greater"), 4)
    (0.0332, 0.0166)
    """
    _checks.check_choice("reference", reference, significance.REFERENCES)
    _checks.check_choice("alternative", alternative, ("two-sided", "greater"))
    if reference == "t" and df is None:
        raise ValueError("df is required when reference='t'")
    if alternative == "two-sided":
        p = significance.two_sided_p(z, df, reference)
    else:
        z = np.asarray(z, dtype=np.float64)
        p = sps.t.sf(z, df) if reference == "t" else sps.norm.sf(z)
    return float(p) if np.ndim(p) == 0 else p


@renamed_keywords(c="n_passed")
def pass_at_k_estimate(n, n_passed, k: int):
    """Unbiased pass@k of Chen et al. (2021): 1 − C(n−c, k) / C(n, k).

    The estimator of Chen et al. [1]_: the probability that at least one of k samples
    drawn without replacement from the n is correct. Computed in the numerically stable
    product form 1 − ∏_{i=n−c+1}^{n} (1 − k/i), summed as logarithms.

    Parameters
    ----------
    n : int or array-like of int
        Samples drawn per task (n ≥ k).
    n_passed : int or array-like of int
        Samples among them that passed, c in the formula (0 ≤ c ≤ n).
    k : int
        k ≥ 1.

    Returns
    -------
    float or ndarray
        The estimate, shaped like ``n`` and ``n_passed`` broadcast together.

    See Also
    --------
    pass_at_k : The estimate per candidate from a trials frame.
    first_repeats : The first k repeats of every task, unbiased under the adaptive design.

    References
    ----------
    .. [1] M. Chen et al., "Evaluating large language models trained on code",
           arXiv:2107.03374, 2021.

    Examples
    --------
    >>> round(pass_at_k_estimate(3, 1, 2), 4)
    0.6667
    """
    k = _checks.check_int("k", k, 1)
    n_arr, c_arr = np.broadcast_arrays(np.asarray(n), np.asarray(n_passed))
    for name, values in (("n", n_arr), ("n_passed", c_arr)):
        if not np.issubdtype(values.dtype, np.integer) and not np.all(np.mod(values, 1) == 0):
            raise ValueError(f"{name} must hold whole numbers, got {values!r}")
    n_arr, c_arr = n_arr.astype(np.int64), c_arr.astype(np.int64)
    bad = (c_arr < 0) | (c_arr > n_arr) | (n_arr < k)
    if bad.any():
        raise ValueError(
            f"pass_at_k_estimate needs 0 <= n_passed <= n and n >= k={k}; "
            f"violated at n={n_arr[bad][:10].tolist()}, n_passed={c_arr[bad][:10].tolist()}"
        )
    flat_n, flat_c = n_arr.ravel(), c_arr.ravel()
    step = np.arange(flat_c.max(initial=0))
    i = (flat_n - flat_c + 1)[:, None] + step[None, :]
    logs = np.where(i > k, np.log1p(-k / np.maximum(i, k + 1)), -np.inf)
    logs = np.where(step[None, :] < flat_c[:, None], logs, 0.0)
    estimate = (0.0 - np.expm1(logs.sum(axis=1))).reshape(n_arr.shape)  # no -0.0
    return float(estimate) if estimate.ndim == 0 else estimate


def pass_at_k(trials: pd.DataFrame | pairing.Checked, *, k: int,
              split: str | None = None) -> pd.DataFrame:
    """pass@k per candidate and split: the mean over tasks of :func:`pass_at_k_estimate`.

    pass@k is defined for pass/fail outcomes only: trials that carry graded scores (any
    score other than 0 or 1, :func:`gsme.schema.graded`) are refused with a ValueError;
    drop their ``score`` column for pass@k of ``passed``. Scores that are all 0 or 1 are
    the outcomes counted. Each task contributes n = its valid repeats and c = those passed. Tasks with fewer
    than ``k`` valid repeats cannot estimate pass@k: they are left out and counted. The
    estimate is unbiased when n does not depend on the outcomes: on a run's trials under
    the adaptive design, pass :func:`first_repeats` (as :func:`gsme.report.run_table` does).

    Returns
    -------
    DataFrame
        ``candidate, split, n_tasks, n_dropped, k, pass_at_k``: tasks used, tasks left out
        (fewer than k valid repeats), k, and the estimate (a fraction; NaN with no task).

    See Also
    --------
    pass_at_k_estimate : The per-task estimator of Chen et al. [1]_.
    first_repeats : The first k repeats of every task, unbiased under the adaptive design.

    References
    ----------
    .. [1] M. Chen et al., "Evaluating large language models trained on code",
           arXiv:2107.03374, 2021.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": "a", "task_id": ["t1"] * 3 + ["t2"] * 3,
    ...                   "split": "train", "repeat": [0, 1, 2] * 2, "passed": [1, 0, 0, 0, 0, 0]})
    >>> float(pass_at_k(t, k=3)["pass_at_k"].iloc[0])
    0.5
    """
    k = _checks.check_int("k", k, 1)
    trials = pairing.check(trials)
    if schema.graded(trials.frame):
        raise ValueError("pass@k needs pass/fail outcomes, but these trials carry graded "
                         "scores (not all 0 or 1); drop the 'score' column for pass@k of "
                         "'passed'")
    rates = task_rates(trials, split=split)
    usable = (rates["n_valid"] >= k).to_numpy()
    estimate = np.full(len(rates), np.nan)
    estimate[usable] = pass_at_k_estimate(
        rates["n_valid"].to_numpy()[usable], rates["n_passed"].to_numpy()[usable], k
    )
    grouped = rates.assign(usable=usable, estimate=estimate).groupby(
        ["candidate", "split"], sort=False
    )
    out = grouped.agg(n_tasks=("usable", "sum"), n_all=("usable", "size"),
                      pass_at_k=("estimate", "mean")).reset_index()
    out["n_dropped"] = out.pop("n_all") - out["n_tasks"]
    out["k"] = k
    return out[["candidate", "split", "n_tasks", "n_dropped", "k", "pass_at_k"]].astype(
        {"n_tasks": np.int64, "n_dropped": np.int64, "k": np.int64}
    )


def retention(train_delta_pp, sealed_delta_pp):
    """Sealed-test retention of a training lift, in percent: 100 · sealed Δ / train Δ.

    Undefined (NaN) where the training lift is not positive: there is nothing to retain.

    Returns
    -------
    float or ndarray
        Shaped like the inputs broadcast together.

    Examples
    --------
    >>> round(retention(6.3, 9.3), 1)
    147.6
    """
    train = np.asarray(train_delta_pp, dtype=np.float64)
    sealed = np.asarray(sealed_delta_pp, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(train > 0, 100.0 * sealed / train, np.nan)
    return float(out) if out.ndim == 0 else out
