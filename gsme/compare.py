"""The paper's row for two harnesses, and how many tasks and repeats a comparison needs.

:func:`compare` judges a child against a parent on any trials frame (one imported with
:mod:`gsme.importers`, say) under a :class:`~gsme.settings.GateConfig`: Δ, se, z, p, the
decision, pass@k on both sides, the tasks that moved, the infrastructure failures left
unscored, and the MDE and power of the comparison at its n and K. :func:`plan` answers the
question before the runs: the power and MDE of a design, and the K or the number of tasks
it needs. :func:`repeat_sd_from_aa` estimates the noise a plan needs from an A/A pair.
``gsme compare`` and ``gsme plan`` print these.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gsme import _checks, gates, pairing, schema, stats
from gsme import power as power_mod
from gsme._renamed import call_extension, renamed, renamed_keywords
from gsme.designs import Fixed
from gsme.registry import DESIGNS
from gsme.schema import COMPARE_COLUMNS, PLAN_COLUMNS
from gsme.settings import (
    EFFECT_PP,
    MAX_K,
    MAX_SIMULATED_TRIALS,
    MAX_TASKS,
    REPEAT_SD_PP,
    SIMULATIONS,
    TARGET_POWER,
    GateConfig,
)

__all__ = ["COMPARED_ON", "COMPARE_COLUMNS", "LOGS_GATE", "MAX_K", "MAX_TASKS", "PLAN_COLUMNS",
           "compare", "outcome", "plan", "repeat_sd_from_aa"]

LOGS_GATE = GateConfig(design="fixed")
"""The gate of :func:`compare` unless told otherwise: one look at every repeat the logs hold
(logs cannot be extended with the repeats an adaptive design would ask for)."""
__getattr__ = renamed(__name__, {"OUTCOMES": "COMPARED_ON"})
COMPARED_ON = ("score", "passed")
"""What :func:`compare` can gate on (its ``on``): the trials' scores, or ``passed`` as 0/1."""


@renamed_keywords(config="gate")
def compare(
    trials: pd.DataFrame | pairing.Checked,
    *,
    parent: str,
    child: str,
    split: str = "train",
    gate: GateConfig | None = None,
    effect_pp: float = EFFECT_PP,
    power: float = TARGET_POWER,
    on: str | None = None,
) -> pd.DataFrame:
    """The paper's row for ``child`` against ``parent``: the gate's verdict and its reach.

    The significance test is :func:`gsme.gates.significance_gate` under ``gate.design``
    (fixed: the one-look test of :func:`gsme.stats.paired_test`). The validity gate of
    :func:`gsme.gates.credit` applies too (``invalid`` when more than
    ``gate.max_dropped_frac`` of the tasks cannot be paired); the activation gate does
    not, since logs carry no patch beacons. Repeats lost to infrastructure failures are
    counted, never scored: logs cannot be re-run.

    Parameters
    ----------
    trials : DataFrame or gsme.pairing.Checked
        A trials frame holding both candidates (checked once: a
        :class:`~gsme.pairing.Checked` one is not checked again).
    parent, child : str
        Candidate ids.
    split : {"train", "test"}
    gate : GateConfig, optional
        Default: :class:`~gsme.settings.GateConfig` with ``design="fixed"``. Logs cannot be
        extended with more repeats, so the adaptive design can decide only on logs that
        already hold ``k_max`` repeats of every task; ask for it explicitly.
    effect_pp : float
        The true effect ``power`` is reported for.
    power : float
        The power the MDE is reported at.
    on : {"score", "passed"} or None
        What a trial's value is (:func:`outcome`): its ``score`` or ``passed`` as 0/1.
        None: ``score`` when the trials carry graded scores (any score other than 0 or 1),
        else ``passed``.

    Returns
    -------
    DataFrame
        One row, :data:`COMPARE_COLUMNS`:

        * ``parent, child, split, design``, ``outcome`` (``score`` or ``passed``: what was
          gated on; rates, Δ, se and sd below are of it)
        * ``n_tasks`` (paired), ``n_dropped`` (tasks not paired), ``n_changed``, ``n_up``,
          ``n_down``, ``n_tied`` (paired tasks whose pass rate rose, fell, stayed, over the
          repeats the decision read: :func:`gsme.stats.paired_tasks`)
        * ``k`` (most valid repeats of a paired task), ``looks`` (looks the design took)
        * ``n_infra_parent``, ``n_infra_child``: repeats with no valid attempt (an
          infrastructure failure), not scored
        * ``rate_parent, rate_child, delta_pp, se_pp, z`` of the decision, as in
          :func:`gsme.gates.significance_gate`, and ``p_one_sided``: the p of a gain, which
          the one-sided rule compares with its level (α = 2.5% for the fixed design)
        * ``pass_k`` (``gate.k``, or fewer when a side has fewer valid repeats on
          every task), ``pass_at_k_parent``, ``pass_at_k_child``
          (:func:`gsme.stats.pass_at_k` of :func:`gsme.stats.first_repeats`: over the first
          ``gate.k`` repeats of every task, fractions; tasks with fewer than ``pass_k``
          valid repeats among them left out; NaN when gating on graded scores, which have
          no pass@k)
        * ``sd_pp`` (sd of the per-task differences at this K), ``mde_pp`` (the effect
          detected with probability ``power`` at this n, K and spread),
          ``power_effect_pp``, ``power`` (of detecting ``effect_pp``): the one-look test's,
          analytic (:mod:`gsme.power`), whatever the design (:func:`plan` simulates the
          adaptive one); NaN when the spread is 0 or n < 2
        * ``gate_failed`` (``validity``, ``significance`` or None), ``decision``
          (credit / cull / inconclusive / invalid), ``reason``
        * ``tasks_up``, ``tasks_down``: comma-separated ids of the tasks that moved

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> t = pd.DataFrame({"candidate": np.repeat(["base", "v2"], 60),
    ...                   "task_id": np.tile(np.repeat([f"t{i}" for i in range(20)], 3), 2),
    ...                   "split": "train", "repeat": np.tile([0, 1, 2], 40),
    ...                   "passed": rng.random(120) < np.repeat([0.4, 0.7], 60)})
    >>> row = compare(t, parent="base", child="v2")
    >>> row[["n_tasks", "n_up", "n_down", "delta_pp", "decision"]].round(1)
       n_tasks  n_up  n_down  delta_pp decision
    0       20    16       1      41.7   credit
    """
    gate = LOGS_GATE if gate is None else _checks.gate_config(gate)
    _checks.check_choice("split", split, schema.SPLITS)
    _checks.check_finite("effect_pp", effect_pp)
    if not 0 < _checks.check_finite("power", power) < 1:
        raise ValueError(f"power must lie strictly between 0 and 1, got {power!r}")
    if on is not None:
        _checks.check_choice("on", on, COMPARED_ON)
    trials, on = _outcome(pairing.check(trials), on)  # checked once: every step reads it
    frame = trials.frame
    on_split = frame.loc[frame["split"] == split, "candidate"]
    for role, name in (("parent", parent), ("child", child)):
        if not (on_split == name).any():
            raise schema.FrameError(f"{role} {name!r} has no trials on split {split!r}; "
                                    f"candidates there: {sorted(on_split.unique())[:20]}")
    if parent == child:
        raise schema.FrameError(f"parent and child must differ, both are {child!r}")
    theirs = frame["candidate"].isin([parent, child]).to_numpy()
    if not theirs.all():  # every step below reads the two candidates' trials only
        trials = trials.rows(theirs)
        frame = trials.frame
    pairs = pd.DataFrame({"child": [child], "parent": [parent]})
    tested = gates.significance_gate(trials, pairs, split=split, gate=gate).iloc[0]
    verdict = _validity(trials, parent, child, split, gate)
    tasks = stats.paired_tasks(trials, parent=parent, child=child, split=split, gate=gate)
    n, k = int(tested["n_tasks"]), int(tested["k"])
    pass_k = min(gate.k, *(int(tasks[c].to_numpy().max(initial=0))
                             for c in ("n_parent", "n_child")))
    sd = float(tested["se_pp"]) * np.sqrt(n) if n >= 2 else np.nan
    reach = np.isfinite(sd) and sd > 0
    invalid = verdict["gate_failed"] == "validity"
    row = {
        "parent": parent, "child": child, "split": split, "design": gate.design,
        "outcome": on,
        "n_tasks": n, "n_dropped": int(tested["n_dropped"]), "n_changed": int(tested["n_changed"]),
        "n_up": int((tasks["diff"] > 0).sum()), "n_down": int((tasks["diff"] < 0).sum()),
        "n_tied": int((tasks["diff"] == 0).sum()), "k": k, "looks": int(tested["looks"]),
        **_infra_counts(trials, parent, child, split, gate),
        **{c: float(tested[c]) for c in ("rate_parent", "rate_child", "delta_pp", "se_pp", "z",
                                         "p_one_sided")},
        "pass_k": pass_k,
        **_pass_at_k(stats.first_repeats(trials, k=gate.k), parent, child, split,
                     0 if schema.graded(frame) else pass_k),
        "sd_pp": sd,
        "mde_pp": power_mod.mde(n_tasks=n, repeat_sd_pp=sd, k=1, power=power, gate=gate)
        if reach else np.nan,
        "power_effect_pp": float(effect_pp),
        "power": power_mod.power(n_tasks=n, effect_pp=effect_pp, repeat_sd_pp=sd, k=1,
                                 gate=gate) if reach else np.nan,
        "gate_failed": "validity" if invalid else (
            None if tested["decision"] == "credit" else "significance"),
        "decision": "invalid" if invalid else tested["decision"],
        "reason": verdict["reason"] if invalid else tested["reason"],
        "tasks_up": schema.join_ids(sorted(tasks.loc[tasks["diff"] > 0, "task_id"])),
        "tasks_down": schema.join_ids(sorted(tasks.loc[tasks["diff"] < 0, "task_id"])),
    }
    out = pd.DataFrame([row])[COMPARE_COLUMNS]
    for name in ("gate_failed", "reason"):
        out[name] = _checks.text(out[name])
    return out


def outcome(trials: pd.DataFrame, *, on: str | None = None) -> tuple[pd.DataFrame, str]:
    """The checked trials with the values :func:`compare` gates on, and what they are.

    ``on="passed"`` drops the ``score`` column (the values are ``passed`` as 0/1);
    ``on="score"`` keeps it and needs scores; None picks ``score`` when the trials carry
    graded scores (:func:`gsme.schema.graded`: some score other than 0 or 1), else
    ``passed``, since scores that are all 0 or 1 are pass/fail outcomes.

    Returns
    -------
    tuple
        ``(trials, on)``: the trials frame and ``"score"`` or ``"passed"``.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": "a", "task_id": ["t1", "t2"], "split": "train",
    ...                   "repeat": 0, "passed": [True, False], "score": [0.9, 0.4]})
    >>> outcome(t)[1], outcome(t, on="passed")[1], "score" in outcome(t, on="passed")[0]
    ('score', 'passed', False)
    """
    if on is not None:
        _checks.check_choice("on", on, COMPARED_ON)
    checked, on = _outcome(pairing.check(trials), on)
    return checked.frame, on


def _outcome(trials: pairing.Checked, on: str | None) -> tuple[pairing.Checked, str]:
    """:func:`outcome` of checked trials, still checked."""
    if on == "score" and not schema.carries_scores(trials.frame):
        raise schema.FrameError("on='score', but the trials carry no scores (no 'score' "
                                "column holding a number); use on='passed'")
    if on is None:
        on = "score" if schema.graded(trials.frame) else "passed"
    return (trials.without_scores() if on == "passed" else trials), on


def _validity(trials, parent, child, split, config) -> pd.Series:
    """The validity verdict of :func:`gsme.gates.credit` (activation made moot: no beacons)."""
    candidates = pd.DataFrame({
        "candidate": [parent, child], "parents": ["", parent], "kind": ["baseline", "mutation"],
        "where": [None, None], "why": [None, None], "patch_id": [None, None],
        "beacon": [None, None], "env_gate": [None, None], "commit": [None, None],
        "branch": [None, None], "round": [0, 0], "rationale": [None, None],
    })
    frame = trials.frame
    active = trials.with_flags(activated=frame["activated"] | (frame["candidate"] == child))
    return gates.credit(active, candidates, split=split, gate=config).iloc[0]


def _infra_counts(trials, parent, child, split, config) -> dict:
    slots = gates.validity_gate(trials.rows((trials.frame["split"] == split).to_numpy()),
                                gate=config)
    lost = slots.loc[~slots["valid"], "candidate"]
    return {"n_infra_parent": int((lost == parent).sum()),
            "n_infra_child": int((lost == child).sum())}


def _pass_at_k(trials, parent, child, split, k) -> dict:
    out = {"pass_at_k_parent": np.nan, "pass_at_k_child": np.nan}
    if k < 1:
        return out
    table = stats.pass_at_k(trials, k=k, split=split).set_index("candidate")["pass_at_k"]
    for role, name in (("parent", parent), ("child", child)):
        if name in table.index:
            out[f"pass_at_k_{role}"] = float(table[name])
    return out


# ---------------------------------------------------------------------------------- plan

@renamed_keywords(config="gate")
def plan(
    *,
    n_tasks: int,
    effect_pp: float,
    k: int | None = None,
    repeat_sd_pp: float = REPEAT_SD_PP,
    task_sd_pp: float = 0.0,
    power: float = TARGET_POWER,
    gate: GateConfig | None = None,
    designs=None,
    simulations: int = SIMULATIONS,
    rng=None,
) -> pd.DataFrame:
    """Power and MDE of each gate design at ``n_tasks`` and K, and what 80% power needs.

    The fixed design is analytic (:mod:`gsme.power`). The adaptive design
    (:mod:`gsme.designs`) is simulated through the real gate: ``simulations``
    comparisons of pass/fail outcomes drawn from the same noise model (per task a parent pass probability and a
    child one ``effect_pp`` higher, plus between-task spread ``task_sd_pp``; the rates are
    fitted to ``repeat_sd_pp``, or to the largest spread pass/fail outcomes allow at that
    effect when it asks for more), replayed look by look by :func:`gsme.designs.looks`
    (its last look is the decision of :func:`gsme.gates.significance_gate`), the MDE
    solved on the gate's decisions with the same draws at every effect.

    Parameters
    ----------
    n_tasks : int
        Paired tasks.
    effect_pp : float
        The true effect to detect, percentage points.
    k : int, optional
        Repeats per task and side (the adaptive design's first look); default ``gate.k``.
    repeat_sd_pp, task_sd_pp : float
        The noise model of :func:`gsme.power.power` (default: the largest repeat sd a
        pass/fail outcome or a score in [0, 1] allows, 70.7, which errs towards too little
        power; for scores on another scale give it, e.g. :func:`repeat_sd_from_aa`). For
        graded scores the fixed design's figures hold as for pass/fail; the adaptive
        design's are simulated with pass/fail outcomes of that spread, an approximation.
    power : float
        The target power (default 0.8).
    gate : GateConfig, optional
        Its ``z_crit``, ``reference`` and, for the adaptive design, ``k_max``, ``k_step``
        and ``futility_z``.
    designs : str or sequence of str, optional
        Registered designs (:data:`gsme.registry.DESIGNS`; default: every one), each
        planned by its :meth:`~gsme.designs.Design.plan`.
    simulations : int
        Simulated comparisons per adaptive estimate; a plan that would draw more than
        :data:`~gsme.settings.MAX_SIMULATED_TRIALS` trials is refused.
    rng : numpy Generator or int, optional
        Seeds the simulation (default 0: a plan is reproducible).

    Returns
    -------
    DataFrame
        One row per design, :data:`PLAN_COLUMNS`: ``design``, ``method`` (analytic or
        simulated), ``n_tasks, k, effect_pp, repeat_sd_pp, task_sd_pp``, ``power`` (of
        detecting ``effect_pp``), ``mde_pp`` (detected with the target power),
        ``target_power``, ``k_needed`` (fewest repeats per task reaching the target at
        ``n_tasks``; NaN when even :data:`MAX_K` does not, or for the adaptive design),
        ``n_tasks_needed`` (fewest tasks reaching it at ``k``; NaN for the adaptive
        design) and ``trials_per_side`` (expected trials per candidate).

    Examples
    --------
    >>> plan(n_tasks=45, effect_pp=5, designs=["fixed"])[
    ...     ["power", "mde_pp", "k_needed", "n_tasks_needed"]].round(3)
       power  mde_pp  k_needed  n_tasks_needed
    0  0.127  17.434      37.0           526.0
    """
    gate = _checks.gate_config(gate)
    k = gate.k if k is None else _checks.check_int("k", k, 1)
    if k > MAX_K:
        raise ValueError(f"k must be at most {MAX_K} repeats per task, got {k}")
    n_tasks = _checks.check_int("n_tasks", n_tasks, 2)
    if n_tasks > MAX_TASKS:
        raise ValueError(f"n_tasks must be at most {MAX_TASKS:,} tasks, got {n_tasks:,}")
    simulations = _checks.check_int("simulations", simulations, 1)
    if not 0 <= float(effect_pp) <= 100:
        raise ValueError("effect_pp must be a difference of pass rates in percentage points, "
                         f"between 0 and 100, got {effect_pp!r}")
    designs = DESIGNS.names() if designs is None else _names(designs)
    rows = []
    for design in designs:
        _checks.check_choice("design", design, DESIGNS.names())
        cfg = gate.model_copy(update={"design": design, "k": k,
                                        "k_max": max(gate.k_max, k)})
        _check_simulation_size(design, simulations * n_tasks * cfg.k_max * 2)
        common = {"design": design, "n_tasks": n_tasks, "k": k, "effect_pp": float(effect_pp),
                  "repeat_sd_pp": float(repeat_sd_pp), "task_sd_pp": float(task_sd_pp),
                  "target_power": float(power)}
        rows.append({**common, **call_extension(
            DESIGNS.get(design).plan, n_tasks=n_tasks, effect_pp=effect_pp, k=k,
            repeat_sd_pp=repeat_sd_pp, task_sd_pp=task_sd_pp, power=power, gate=cfg,
            simulations=simulations, rng=rng)})
    return pd.DataFrame(rows)[PLAN_COLUMNS]


def _names(designs) -> list[str]:
    """``designs`` as a list of names: one name alone, or a sequence of at least one."""
    names = [designs] if isinstance(designs, str) else list(designs)
    if not names:
        raise ValueError("designs must name at least one design, got none; registered: "
                         f"{list(DESIGNS.names())}")
    return names


def _check_simulation_size(design: str, trials: int) -> None:
    """Refuse a simulated plan of more than :data:`~gsme.settings.MAX_SIMULATED_TRIALS`
    trials (the fixed design is analytic and draws none)."""
    if trials > MAX_SIMULATED_TRIALS and not isinstance(DESIGNS.get(design), Fixed):
        raise ValueError(f"the {design} design's plan would simulate {trials:,} trials "
                         f"(simulations x n_tasks x k_max x 2), more than "
                         f"{MAX_SIMULATED_TRIALS:,}; plan fewer tasks, or the fixed design "
                         "alone (analytic: gsme plan --design fixed)")


# ------------------------------------------------------------------------------ noise

def repeat_sd_from_aa(trials: pd.DataFrame, *, candidate: str, rerun: str,
                      split: str = "train") -> float:
    """The repeat sd (pp) of :func:`gsme.power.power`, estimated from an A/A pair.

    ``candidate`` and ``rerun`` are the same harness scored twice; the values are those
    the trials carry (their scores, else ``passed``: :func:`gsme.schema.trial_values`),
    so graded scores get their own spread. With no true effect a task's difference d_i = r_i(rerun) − r_i(candidate) has variance σ²/k_i, σ the repeat
    sd and k_i = 2 / (1/n_i + 1/m_i) for n_i, m_i valid repeats on each side, so
    σ² = Σ k_i (d_i − d̄)² / (n − 1).

    Returns
    -------
    float
        σ in percentage points.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> t = pd.DataFrame({"candidate": np.repeat(["a", "a2"], 3000),
    ...                   "task_id": np.tile(np.repeat([f"t{i}" for i in range(1000)], 3), 2),
    ...                   "split": "train", "repeat": np.tile([0, 1, 2], 2000),
    ...                   "passed": rng.random(6000) < 0.5})
    >>> round(repeat_sd_from_aa(t, candidate="a", rerun="a2"), 1)  # true: 100·√0.5 = 70.7
    70.4
    """
    if candidate == rerun:
        raise ValueError(f"an A/A estimate needs two runs of the harness; candidate and rerun "
                         f"are both {candidate!r}")
    tasks = stats.paired_tasks(trials, parent=candidate, child=rerun, split=split,
                               gate=LOGS_GATE)  # every repeat
    if len(tasks) < 2:
        raise schema.FrameError(f"an A/A estimate needs two or more tasks scored on both "
                                f"{candidate!r} and {rerun!r} on split {split!r}; "
                                f"{len(tasks)} are")
    k = 2.0 / (1.0 / tasks["n_parent"] + 1.0 / tasks["n_child"])
    d = tasks["diff"].to_numpy(np.float64)
    return float(100.0 * np.sqrt(np.sum(k * (d - d.mean()) ** 2) / (len(d) - 1)))
