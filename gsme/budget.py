"""Dollars and hours: what a run spent, whether its next round fits its budget, and what a
planned run costs.

A run's **dollars** are the ``cost_usd`` of its trials actually run (borrowed trials cost
nothing) and of its evolver calls. A trial whose cost is unknown (NaN: an agent that
reports none, a model :mod:`gsme.prices` does not list) counts as the mean of the trials
whose cost is known; an evolver call without a price counts nothing
(:func:`gsme.report.cost_table` shows its sum as NaN).

A run's **hours** are wall hours at its concurrency: the ``seconds`` of its trials actually
run divided by the trials it keeps in flight (:func:`concurrency`). That is the time a
run whose executor keeps its workers busy takes; unlike a clock it counts neither the
time a stopped run waited to be resumed nor the evolver's thinking, and a resumed run
adds up to the same figure, so a run stops where it would stop again.

**The next round** costs the mean trial's dollars and seconds times the trials a round
needs: the mean over the completed rounds of the trials they ran; before any round is
complete, the most a round can take (every candidate at the design's largest number of
repeats on every train task, and the parent's fresh block as far, :mod:`gsme.parent_trials`;
with stored parent trials, the parent extended as far once). A completed round's mean
evolver dollars are added.

**The sealed test** is reserved up front: the baseline and the reported harness on every
test task at the gate's ``k`` (2 × test tasks × k trials) at the mean trial's dollars and
seconds. A round starts only when what was spent, the next round and the sealed test fit
the budget (:func:`over_budget`); the sealed test itself is never skipped.

:func:`run_plan` is the same arithmetic before a run exists, beside each gate design's
power (``gsme plan --cost-per-trial``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gsme import compare
from gsme._renamed import renamed_keywords
from gsme.designs import design_of, look_repeats
from gsme.schema import SEALED_ROUND
from gsme.settings import REPEAT_SD_PP, TARGET_POWER, GateConfig, RunConfig, Schedule

__all__ = ["ACCOUNT_COLUMNS", "CONCURRENCY_KEYS", "RUN_PLAN_COLUMNS", "account", "concurrency",
           "over_budget", "run_plan"]

ACCOUNT_COLUMNS = ["trials", "usd", "hours", "usd_per_trial", "seconds_per_trial",
                   "round_trials", "round_usd", "round_hours", "seal_trials", "seal_usd",
                   "seal_hours"]
"""The columns of :func:`account`."""
RUN_PLAN_COLUMNS = ["design", "method", "n_train", "n_test", "k", "effect_pp", "power",
                    "mde_pp", "child_trials", "round_trials", "round_usd", "round_hours",
                    "run_trials", "run_usd", "run_hours"]
"""The columns of :func:`run_plan`."""


CONCURRENCY_KEYS = ("concurrency", "n_concurrent", "max_samples", "workers")
"""The settings of an ``[executor]`` spec that say how many trials it runs at once, in the
order :func:`concurrency` reads them (a pool's or Dask's ``concurrency``, Harbor's
``n_concurrent``, Inspect's ``max_samples``, a pool's ``workers``)."""


def concurrency(run) -> int:
    """The trials ``run`` keeps in flight: the first of :data:`CONCURRENCY_KEYS` its stored
    ``[executor]`` spec sets, else ``RunConfig.workers`` (the default thread pool).

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.run import Run
    >>> with Run.create("run", agent=sim.preset("tiny"),
    ...                 executor_spec={"kind": "harbor", "n_concurrent": 32}) as run:
    ...     concurrency(run)
    32
    """
    spec = run.executor_spec or {}
    given = [spec[k] for k in CONCURRENCY_KEYS if isinstance(spec.get(k), int)
             and not isinstance(spec[k], bool) and spec[k] >= 1]
    return given[0] if given else run.config.workers


def account(run) -> pd.DataFrame:
    """What a run spent, and what its next round and its sealed test will cost.

    See the module's description for how each figure is counted.

    Returns
    -------
    DataFrame
        One row, :data:`ACCOUNT_COLUMNS`: ``trials`` (actually run), ``usd`` (trials and
        evolver calls), ``hours`` (wall hours at :func:`concurrency`), ``usd_per_trial``
        and ``seconds_per_trial`` (means of the trials whose figure is known; NaN when
        none is), ``round_trials, round_usd, round_hours`` (the next round's estimate) and
        ``seal_trials, seal_usd, seal_hours`` (what the sealed test still needs; 0 once
        it is scored).

    Examples
    --------
    >>> from gsme import experiments
    >>> run = experiments.simulated_run("tiny", rounds=1, finalize=False, progress=False)
    >>> row = account(run).iloc[0]
    >>> int(row["trials"]), int(row["round_trials"]), int(row["seal_trials"])
    (366, 317, 48)
    >>> ran = run.trials().query("borrowed_from.isna()")
    >>> bool(row["usd"] == ran["cost_usd"].sum())
    True
    >>> run.close()
    """
    schedule = run.schedule or Schedule()
    trials = run.trials()
    ran = trials[trials["borrowed_from"].isna()]
    calls = run.calls().reindex(columns=["round", "cost_usd"])
    gate = run.config.gate
    done = run.rounds_done()
    per_trial = {c: _mean(ran[c]) for c in ("cost_usd", "seconds")}
    if done:
        in_rounds = ran["round"].between(1, done)
        round_trials = in_rounds.sum() / done
        evolver = calls["round"].between(1, done)
        round_evolver = float(np.nansum(calls.loc[evolver, "cost_usd"].astype(float))) / done
    else:
        most = int(design_of(gate).look_repeats(gate)[-1])
        candidates = schedule.children_per_round + schedule.recombinations_per_round
        parent = most if gate.parent_trials == "fresh" else most - gate.k
        round_trials = len(run.tasks("train")) * (candidates * most + parent)
        round_evolver = 0.0
    scored = int((ran["round"] == SEALED_ROUND).sum())
    seal_trials = max(0, 2 * len(run.tasks("test")) * gate.k - scored)
    hours = 3600.0 * concurrency(run)
    row = {"trials": len(ran),
           "usd": _total(ran["cost_usd"]) + float(np.nansum(calls["cost_usd"].astype(float))),
           "hours": _total(ran["seconds"]) / hours,
           "usd_per_trial": per_trial["cost_usd"], "seconds_per_trial": per_trial["seconds"],
           "round_trials": float(round_trials),
           "round_usd": round_trials * per_trial["cost_usd"] + round_evolver,
           "round_hours": round_trials * per_trial["seconds"] / hours,
           "seal_trials": seal_trials, "seal_usd": seal_trials * per_trial["cost_usd"],
           "seal_hours": seal_trials * per_trial["seconds"] / hours}
    return pd.DataFrame([row], columns=ACCOUNT_COLUMNS)


def over_budget(run) -> str | None:
    """Why the run's next round may not start under its dollar or hour budget, else None.

    The next round may start when what was spent, the next round's estimate and the sealed
    test's reserve (:func:`account`) fit ``Schedule.budget_usd`` and ``budget_hours``.
    A budget is also reached when no trial of the run reports the figure it counts (no
    round can be shown to fit). The trial budget is checked by :func:`gsme.evolve.evolve`.

    Examples
    --------
    >>> from gsme import experiments
    >>> run = experiments.simulated_run("tiny", rounds=0, finalize=False, progress=False)
    >>> over_budget(run) is None  # no budget
    True
    >>> run.schedule = run.schedule.model_copy(update={"budget_usd": 2.0})
    >>> print(over_budget(run))
    budget_usd 2: spent 0.189 + next round 2.78 + sealed test 0.185 would exceed it
    >>> run.close()
    """
    schedule = run.schedule
    if schedule is None or (schedule.budget_usd is None and schedule.budget_hours is None):
        return None
    row = account(run).iloc[0]
    for name, limit, figure in (("budget_usd", schedule.budget_usd, "usd"),
                                ("budget_hours", schedule.budget_hours, "hours")):
        if limit is None:
            continue
        spent, step, seal = row[figure], row[f"round_{figure}"], row[f"seal_{figure}"]
        if math.isnan(spent + step + seal):
            what = "cost_usd" if figure == "usd" else "seconds"
            return (f"{name} {limit:g}: no trial of the run reports its {what}, so no round "
                    "can be shown to fit")
        if spent + step + seal > limit:
            return (f"{name} {limit:g}: spent {spent:.3g} + next round {step:.3g} + sealed "
                    f"test {seal:.3g} would exceed it")
    return None


@renamed_keywords(config="gate")
def run_plan(*, n_tasks: int, effect_pp: float, cost_per_trial_usd: float = math.nan,
             minutes_per_trial: float = math.nan, concurrency: int | None = None,
             test_tasks: int = 0, test_dataset: bool = False, rounds: int | None = None,
             children: int | None = None, recombinations: int | None = None,
             k: int | None = None, repeat_sd_pp: float = REPEAT_SD_PP,
             task_sd_pp: float = 0.0, power: float = TARGET_POWER,
             gate: GateConfig | None = None, designs=None) -> pd.DataFrame:
    """Trials, dollars and wall hours of a round and of a run for each gate design, beside
    its power on the train split (:func:`gsme.compare.plan`).

    A round scores ``children + recombinations`` candidates of one parent: each takes the
    design's expected child trials at ``effect_pp`` (``trials_per_side`` of
    :func:`gsme.compare.plan`), and an adaptive design extends the parent on the tasks it
    extends a child: as far as all the children's extensions together, or as far as its
    largest number of repeats on every task, whichever is less (an upper bound: children
    share the parent's extra repeats). Under ``parent_trials="fresh"`` (the default) the
    parent's block adds its first look on every train task (:mod:`gsme.parent_trials`). No trial is assumed borrowed. A run is the cold start (the baseline on every
    train task at ``k``), ``rounds`` rounds and the sealed test (baseline and selected
    harness on every test task at ``k``). Wall hours assume ``concurrency`` trials always in
    flight.

    Parameters
    ----------
    n_tasks : int
        Tasks of the suite. With ``test_tasks`` held out of it (``test_dataset=False``)
        the train split has ``n_tasks - test_tasks``; with ``test_dataset=True`` the sealed
        split is another dataset of ``test_tasks`` tasks and all ``n_tasks`` train.
    effect_pp : float
        The true effect to detect, percentage points.
    cost_per_trial_usd, minutes_per_trial : float
        One trial's dollars and minutes (NaN: that column is NaN).
    concurrency : int, optional
        Trials in flight at once (default ``RunConfig().workers``).
    rounds, children, recombinations : int, optional
        The schedule (default :class:`~gsme.settings.Schedule`'s).
    k, repeat_sd_pp, task_sd_pp, power, gate, designs
        As :func:`gsme.compare.plan`.

    Returns
    -------
    DataFrame
        One row per design, :data:`RUN_PLAN_COLUMNS`: ``design, method``, ``n_train,
        n_test``, ``k, effect_pp, power, mde_pp`` (of the train split, as
        :func:`gsme.compare.plan`), ``child_trials`` (expected trials of one child),
        ``round_trials, round_usd, round_hours`` and ``run_trials, run_usd, run_hours``.

    Examples
    --------
    >>> plan = run_plan(n_tasks=89, test_tasks=30, effect_pp=5, cost_per_trial_usd=0.5,
    ...                 minutes_per_trial=5, concurrency=32, designs=["fixed"])
    >>> plan[["n_train", "round_trials", "round_usd", "run_trials", "run_hours"]]
       n_train  round_trials  round_usd  run_trials  run_hours
    0       59         885.0      442.5      4782.0  12.453125
    """
    schedule = Schedule()
    rounds = schedule.rounds if rounds is None else rounds
    children = schedule.children_per_round if children is None else children
    recombinations = (schedule.recombinations_per_round if recombinations is None
                      else recombinations)
    concurrency = RunConfig().workers if concurrency is None else concurrency
    for name, value in (("test_tasks", test_tasks), ("rounds", rounds),
                        ("children", children), ("recombinations", recombinations)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise ValueError(f"concurrency must be an integer >= 1, got {concurrency!r}")
    for name, value in (("cost_per_trial_usd", cost_per_trial_usd),
                        ("minutes_per_trial", minutes_per_trial)):
        if not (math.isnan(value) or 0 <= value < math.inf):
            raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    n_train = n_tasks if test_dataset else n_tasks - test_tasks
    if n_train < 2:
        raise ValueError(f"test_tasks ({test_tasks}) leaves {n_train} of the {n_tasks} "
                         "tasks to train on; a comparison needs 2 or more")
    table = compare.plan(n_tasks=n_train, effect_pp=effect_pp, k=k,
                         repeat_sd_pp=repeat_sd_pp, task_sd_pp=task_sd_pp, power=power,
                         gate=gate, designs=designs)
    gate = GateConfig() if gate is None else gate
    most = [int(look_repeats(gate.model_copy(update={
        "design": d, "k": kk, "k_max": max(gate.k_max, kk)}))[-1])
        for d, kk in zip(table["design"], table["k"], strict=True)]
    first_look = n_train * table["k"]
    child = table["trials_per_side"]
    candidates = children + recombinations
    parent = np.minimum(candidates * (child - first_look), n_train * (np.array(most) - table["k"]))
    if gate.parent_trials == "fresh":  # the parent's block: its first look, then as extended
        parent = parent + first_look
    per_round = candidates * child + parent
    run_trials = first_look + rounds * per_round + 2 * test_tasks * table["k"]
    hours = minutes_per_trial / 60.0 / concurrency  # wall hours a trial adds
    out = table.assign(n_train=n_train, n_test=test_tasks, child_trials=child,
                       round_trials=per_round, round_usd=per_round * cost_per_trial_usd,
                       round_hours=per_round * hours, run_trials=run_trials,
                       run_usd=run_trials * cost_per_trial_usd, run_hours=run_trials * hours)
    return out[RUN_PLAN_COLUMNS]


def _mean(values: pd.Series) -> float:
    known = values.astype(float).dropna()
    return float(known.mean()) if len(known) else math.nan


def _total(values: pd.Series) -> float:
    """The sum, an unknown value counted as the mean of the known ones (NaN if none is)."""
    values = values.astype(float)
    missing = int(values.isna().sum())
    return float(values.sum()) + (missing * _mean(values) if missing else 0.0)
