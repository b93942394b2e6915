"""The three gates a candidate passes before it is credited, cheapest first.

1. validity — an infrastructure failure is never a task failure: the slot is re-run, and a
   comparison with too many tasks that could not be paired is ``invalid``;
2. activation — the candidate's own patch beacon must have fired, else ``inactive``;
3. significance — the per-task paired test of :func:`gsme.stats.paired_test` under the
   gate's design: one look (``fixed``) or group-sequential looks (``adaptive``, see
   :mod:`gsme.designs`), on each trial's value: its ``score`` when the trials carry
   scores, else ``passed`` as 0/1 (:func:`gsme.schema.trial_values`).

:func:`credit` chains them into a decisions frame. Everything runs on whole frames at once.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gsme import _checks, designs, pairing, parent_trials, schema
from gsme._renamed import renamed_keywords
from gsme.settings import GateConfig

__all__ = ["activation_gate", "credit", "significance_gate", "silent", "validity_gate"]


@renamed_keywords(config="gate")
def validity_gate(trials: pd.DataFrame | pairing.Checked, *,
                  gate: GateConfig | None = None) -> pd.DataFrame:
    """State of every (candidate, task_id, split, repeat) slot after its attempts so far.

    A slot is valid when one of its attempts held ``infra_ok`` (it is scored by the first
    such attempt). An invalid slot needs a re-run while it has made at most
    ``gate.max_reruns`` re-runs (``attempts <= max_reruns``); after that it is excluded
    from comparisons. Attempts beyond the budget that did succeed still make the slot valid.
    This is the rule the loop's scoring plan runs (:func:`gsme.scoring.plan_trials`).

    Parameters
    ----------
    trials : DataFrame or gsme.pairing.Checked
        A trials frame (a :class:`~gsme.pairing.Checked` one is not checked again).
    gate : GateConfig, optional
        Its ``max_reruns``: re-runs allowed after the first attempt.

    Returns
    -------
    DataFrame
        ``candidate, task_id, split, repeat, attempts, next_attempt, valid, needs_rerun,
        excluded``, one row per slot, in order of first appearance of candidate, split and
        task; ``next_attempt`` is the attempt number a re-run would get.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": "a", "task_id": "t1", "split": "train", "repeat": 0,
    ...                   "attempt": [0, 1], "passed": False, "infra_ok": [False, False]})
    >>> validity_gate(t)[["attempts", "valid", "needs_rerun"]].to_dict("records")
    [{'attempts': 2, 'valid': False, 'needs_rerun': True}]
    """
    gate = _checks.gate_config(gate)
    slots = pairing.checked_slots(trials)
    needs_rerun = slots.needs_rerun(gate.max_reruns)
    return pd.DataFrame(
        {
            "candidate": _checks.text(slots.candidates.to_numpy()[slots.candidate]),
            "task_id": _checks.text(slots.tasks.to_numpy()[slots.task]),
            "split": _checks.text(slots.splits.to_numpy()[slots.split]),
            "repeat": slots.repeat.astype(np.int64),
            "attempts": slots.attempts.astype(np.int64),
            "next_attempt": slots.last_attempt.astype(np.int64) + 1,
            "valid": slots.valid,
            "needs_rerun": needs_rerun,
            "excluded": ~slots.valid & ~needs_rerun,
        }
    )


@renamed_keywords(config="gate")
def activation_gate(
    trials: pd.DataFrame | pairing.Checked,
    candidates: pd.DataFrame,
    *,
    split: str = "train",
    gate: GateConfig | None = None,
) -> pd.DataFrame:
    """Did each candidate's own patch fire? Counted over its valid trials on ``split``.

    A candidate is active when its beacon fired (``activated``) in at least
    ``gate.min_activations`` valid trials. The baseline has no patch and is exempt. Trials on
    tasks its env gate does not admit count in ``trials`` (they cannot fire), so
    ``activation_rate`` is a share of all its valid trials.

    Parameters
    ----------
    trials : DataFrame or gsme.pairing.Checked
        A trials frame (a :class:`~gsme.pairing.Checked` one is not checked again).
    candidates : DataFrame
        A candidates frame; one output row per candidate in it.
    split : {"train", "test"}
    gate : GateConfig, optional
        Its ``min_activations``: activations needed.

    Returns
    -------
    DataFrame
        ``candidate, kind, trials, activations, activation_rate, active``
        (``activation_rate`` is NaN without valid trials).

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": "c1", "task_id": ["t1", "t2"], "split": "train",
    ...                   "repeat": 0, "passed": True, "activated": [True, False]})
    >>> c = pd.DataFrame({"candidate": ["c1"], "parents": ["base"], "kind": ["mutation"],
    ...                   "where": ["prompt"], "why": ["x"], "patch_id": ["p"], "beacon": ["b"],
    ...                   "env_gate": [None], "commit": [None], "branch": [None], "round": [1],
    ...                   "rationale": [None]})
    >>> activation_gate(t, c)[["trials", "activations", "active"]].to_dict("records")
    [{'trials': 2, 'activations': 1, 'active': True}]
    """
    _checks.check_choice("split", split, schema.SPLITS)
    gate = _checks.gate_config(gate)
    slots = pairing.checked_slots(trials)
    schema.validate(candidates, "candidates")
    return _activation(slots, candidates, split, gate.min_activations)


@renamed_keywords(config="gate")
def silent(
    trials: pd.DataFrame | pairing.Checked,
    pairs: pd.DataFrame,
    tasks: pd.DataFrame,
    *,
    split: str = "train",
    gate: GateConfig | None = None,
) -> np.ndarray:
    """Which pairs' children are already ``inactive``: the activation gate, first.

    A child whose beacon fired in none of its trials once its first look is complete
    (``gate.k`` repeats of every task of ``split`` resolved: valid, or excluded after
    its re-runs) is inactive whatever more repeats would show, so the scoring loop asks
    nothing more for it (the adaptive design's later looks included). A child scored
    alone (``parent`` None, the baseline) is never silent.

    Parameters
    ----------
    trials : DataFrame or gsme.pairing.Checked
        A trials frame (a :class:`~gsme.pairing.Checked` one is not checked again).
    pairs : DataFrame
        ``child, parent`` (as :func:`gsme.designs.wanted` takes them).
    tasks : DataFrame
        ``task_id, split``: the tasks a first look covers.
    split : {"train", "test"}
    gate : GateConfig, optional
        Its ``k`` (the first look's repeats) and ``max_reruns``.

    Returns
    -------
    ndarray of bool
        One per row of ``pairs``.

    Examples
    --------
    >>> tasks = pd.DataFrame({"task_id": ["t1", "t2"], "split": "train"})
    >>> t = pd.DataFrame({"candidate": "c", "task_id": np.repeat(["t1", "t2"], 3),
    ...                   "split": "train", "repeat": np.tile([0, 1, 2], 2),
    ...                   "passed": False, "activated": False})
    >>> pairs = pd.DataFrame({"child": ["c", "baseline"], "parent": ["baseline", None]})
    >>> silent(t, pairs, tasks).tolist()
    [True, False]
    >>> silent(t.iloc[:5], pairs, tasks).tolist()  # the first look is not complete yet
    [False, False]
    """
    _checks.check_choice("split", split, schema.SPLITS)
    gate = _checks.gate_config(gate)
    pairs = schema.require(pairs, ["child", "parent"], "pairs")
    schema.require(tasks, ["task_id", "split"], "tasks")
    slots = pairing.checked_slots(trials)
    first = (slots.split == slots.splits.get_indexer([split])[0]) & (slots.repeat < gate.k)
    resolved = first & ~slots.needs_rerun(gate.max_reruns)
    size = len(slots.candidates) + 1  # the last bin: candidates without trials (code -1)
    done = np.bincount(slots.candidate[resolved], minlength=size)
    fired = np.bincount(slots.candidate[first & slots.activated], minlength=size)
    code = slots.candidates.get_indexer(pd.Index(pairs["child"].to_numpy(dtype=object),
                                                 dtype=object))
    n_tasks = int((tasks["split"].to_numpy(dtype=object) == split).sum())
    return (pairs["parent"].notna().to_numpy() & (done[code] >= n_tasks * gate.k)
            & (fired[code] == 0) & (n_tasks > 0))


@renamed_keywords(config="gate")
def significance_gate(
    trials: pd.DataFrame | pairing.Checked,
    pairs: pd.DataFrame,
    *,
    split: str = "train",
    gate: GateConfig | None = None,
) -> pd.DataFrame:
    """The significance test of ``gate.design`` for many pairs in one pass.

    ``fixed``: the one-look test of :func:`gsme.stats.paired_test` on every repeat.
    ``adaptive``: the group-sequential procedure of :mod:`gsme.designs`, replayed from
    the trials; the row holds the statistics of the look it stopped at
    (:func:`gsme.designs.looks` lists every look).

    Parameters
    ----------
    trials : DataFrame or gsme.pairing.Checked
        A trials frame (a :class:`~gsme.pairing.Checked` one is not checked again).
    pairs : DataFrame
        Columns ``child`` and ``parent``, one row per comparison. A pair
        whose candidates have no trials on ``split`` comes out ``inconclusive`` with
        ``n_tasks`` 0 and a reason.
    split, gate
        As in :func:`gsme.stats.paired_test`.

    Returns
    -------
    DataFrame
        The columns of :func:`gsme.stats.paired_test` (``looks``: looks taken; ``reason``
        names the look and why it stopped under the adaptive design), one row per pair in
        the order of ``pairs``.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c"], 45),
    ...                   "task_id": np.tile(np.repeat([f"t{i}" for i in range(15)], 3), 2),
    ...                   "split": "train", "repeat": np.tile([0, 1, 2], 30),
    ...                   "passed": np.r_[np.zeros(45), np.ones(45)].astype(bool)})
    >>> pairs = pd.DataFrame({"child": ["c"], "parent": ["p"]})
    >>> significance_gate(t, pairs)[["n_tasks", "delta_pp", "decision"]]
       n_tasks  delta_pp decision
    0       15     100.0   credit
    >>> significance_gate(t, pairs, gate=GateConfig(design="adaptive"))["reason"].item()
    'credited at look 1 of 3; all 15 task differences are equal: exact sign-flip p'
    """
    _checks.check_choice("split", split, schema.SPLITS)
    gate = _checks.gate_config(gate)
    pairs = _checked_pairs(pairs)
    slots = pairing.checked_slots(trials)
    return designs.compare(slots, pairs, split=split, gate=gate)


@renamed_keywords(config="gate")
def credit(
    trials: pd.DataFrame | pairing.Checked,
    candidates: pd.DataFrame,
    *,
    split: str = "train",
    gate: GateConfig | None = None,
) -> pd.DataFrame:
    """Decide every non-baseline candidate against its parent: validity, activation, z.

    Each candidate is compared with the first id in its ``parents`` (for a recombination,
    the elite its patches were stacked onto): on the train split with the block of the
    parent's trials scored alongside it when ``gate.parent_trials`` is ``"fresh"`` (the
    default; :mod:`gsme.parent_trials`), else with the parent's stored trials. Gates run cheapest first and the first that
    stops a candidate is named in ``gate_failed``:

    * validity → ``invalid`` when no task pairs, or more than ``gate.max_dropped_frac`` of the
      tasks either side was scored on could not be paired (infrastructure failures still
      unresolved after re-runs, tasks scored on one side only);
    * activation → ``inactive`` (see :func:`activation_gate`);
    * significance → ``cull`` or ``inconclusive``; ``credit`` passes all three. Under the
      adaptive design this is the decision of the look the procedure stopped at, replayed
      from the trials (:mod:`gsme.designs`), so ``gate=run.config.gate`` gives the
      run's decisions.

    The statistics are reported for every pair, also those stopped by an earlier gate;
    only the decision depends on the gate order.

    Parameters
    ----------
    trials : DataFrame or gsme.pairing.Checked
        A trials frame holding the candidates and their parents (a
        :class:`~gsme.pairing.Checked` one is not checked again).
    candidates : DataFrame
        A candidates frame; every non-baseline row needs a parent.
    split : {"train", "test"}
    gate : GateConfig, optional
        Every gate setting; default :class:`~gsme.settings.GateConfig`. A run's
        ``run.config.gate`` reproduces the run's own decisions. Trials scored outside
        gsme's loop have no fresh blocks: gate them with ``parent_trials="stored"``.

    Returns
    -------
    DataFrame
        A decisions frame (:mod:`gsme.schema`): ``child, parent, split, n_tasks,
        n_dropped, n_changed, k, looks, rate_parent, rate_child, delta_pp, se_pp, z, p_value,
        p_one_sided, activation_rate, gate_failed, decision, reason, first_delta_pp,
        first_se_pp``, one row per non-baseline candidate in the order of ``candidates``
        (``p_value`` two-sided, ``p_one_sided`` the p of a gain that the credit rule
        compares with the level of the look it stopped at; ``first_delta_pp`` and
        ``first_se_pp`` over the first ``k`` repeats of every task, which the adaptive
        design's early stop does not bias).

    See Also
    --------
    validity_gate, activation_gate, significance_gate : The three gates, one at a time.
    gsme.stats.paired_test : The paired test of one child against its parent.
    gsme.designs.looks : Every look a comparison took under an adaptive design.
    gsme.policy.screen : Which of the decided children a run keeps.

    Examples
    --------
    Re-gating a run's trials reproduces its decisions:

    >>> from gsme import experiments
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> again = credit(run.trials(split="train"), run.candidates(), gate=run.config.gate)
    >>> again["decision"].tolist() == run.decisions()["decision"].tolist()
    True
    >>> run.close()
    """
    _checks.check_choice("split", split, schema.SPLITS)
    gate = _checks.gate_config(gate)
    min_activations, max_dropped_frac = gate.min_activations, gate.max_dropped_frac
    schema.validate(candidates, "candidates")
    _check_parents(candidates)
    paired = parent_trials.pairs(candidates, split=split, gate=gate)
    view = parent_trials.view(trials, paired, gate=gate)
    if not isinstance(view, pairing.Checked):  # a frame: blocks may be missing
        parent_trials.require_blocks(view, paired)
    seen = pairing.check(view)  # checked once: nothing below checks it again
    slots = seen.slots
    pairs = paired[["child", "reference"]].rename(columns={"reference": "parent"})
    tested = designs.compare(slots, pairs, split=split, gate=gate)
    tested["parent"] = _checks.text(paired["parent"])
    tested["first_delta_pp"], tested["first_se_pp"] = _first_look(seen, tested, pairs, split,
                                                                  gate)
    active = _activation(slots, candidates, split, min_activations).set_index("candidate")
    active = active.loc[pairs["child"]]

    n_tasks, n_dropped = tested["n_tasks"].to_numpy(), tested["n_dropped"].to_numpy()
    invalid = (n_tasks == 0) | (n_dropped > max_dropped_frac * (n_tasks + n_dropped))
    inactive = ~invalid & ~active["active"].to_numpy()
    decided = ~invalid & ~inactive
    stopped = decided & (tested["decision"].to_numpy() != "credit")

    out = tested.copy()
    out["activation_rate"] = active["activation_rate"].to_numpy()
    out["gate_failed"] = _checks.text(np.select(
        [invalid, inactive, stopped], ["validity", "activation", "significance"], None
    ))
    out["decision"] = _checks.text(np.select(
        [invalid, inactive], ["invalid", "inactive"], out["decision"].to_numpy(dtype=object)
    ))
    out["reason"] = _checks.text(_stop_reasons(out, invalid, inactive, active, max_dropped_frac,
                                  min_activations))
    columns = schema.columns("decisions") + ["first_delta_pp", "first_se_pp"]
    return schema.validate(out[columns], "decisions")


def _first_look(seen: pairing.Checked, tested: pd.DataFrame, pairs: pd.DataFrame,
                split: str, config: GateConfig) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's Δ and se over the first ``k`` repeats of every task (the decision's own
    under the fixed design, which reads just those, and under the adaptive design when it
    stopped at look 1, which reads just those too; the others are tested again)."""
    delta, se = tested["delta_pp"].to_numpy().copy(), tested["se_pp"].to_numpy().copy()
    if config.design == "fixed":
        return delta, se
    again = np.ones(len(tested), dtype=bool)
    if isinstance(designs.design_of(config), designs.Adaptive):
        again = tested["looks"].to_numpy() != 1
    if again.any():
        first = seen.rows(seen.frame["repeat"].to_numpy() < config.k).slots
        look = designs.compare(first, pairs[again], split=split,
                               gate=config.model_copy(update={"design": "fixed"}))
        delta[again], se[again] = look["delta_pp"].to_numpy(), look["se_pp"].to_numpy()
    return delta, se


def _activation(slots, candidates: pd.DataFrame, split: str, min_activations: int):
    names = candidates["candidate"].to_numpy(dtype=object)
    split_code = slots.splits.get_indexer([split])[0]
    counted = slots.valid & (slots.split == split_code)
    size = len(slots.candidates)
    # one extra bin at the end, where candidates without trials (code -1) land
    n_trials = np.bincount(slots.candidate[counted], minlength=size + 1)
    n_active = np.bincount(slots.candidate[counted & slots.activated], minlength=size + 1)
    code = slots.candidates.get_indexer(pd.Index(names, dtype=object))
    trials = n_trials[code].astype(np.int64)
    activations = n_active[code].astype(np.int64)
    kind = candidates["kind"].to_numpy(dtype=object)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = activations / trials
    return pd.DataFrame(
        {
            "candidate": _checks.text(names),
            "kind": _checks.text(kind),
            "trials": trials,
            "activations": activations,
            "activation_rate": rate,
            "active": (kind == "baseline") | (activations >= min_activations),
        }
    )


def _check_parents(candidates: pd.DataFrame) -> None:
    children = candidates[candidates["kind"] != "baseline"]
    orphan = children["parents"].map(schema.split_ids).map(len) == 0
    if orphan.any():
        raise schema.FrameError(
            "candidates column 'parents' is empty for non-baseline row(s); every mutation "
            f"or recombination needs a parent:\n{children.loc[orphan].head(10)}"
        )


def _stop_reasons(out, invalid, inactive, active, max_dropped_frac, min_activations):
    reason = out["reason"].to_numpy(dtype=object).copy()
    total = (out["n_tasks"] + out["n_dropped"]).astype(str)
    dropped = (
        out["n_dropped"].astype(str) + " of " + total
        + f" tasks could not be paired (max_dropped_frac={max_dropped_frac})"
    ).to_numpy(dtype=object)
    no_tasks = (out["n_tasks"] == 0).to_numpy()
    reason[invalid] = np.where(
        no_tasks[invalid], "no task has a valid repeat on both sides", dropped[invalid]
    )
    fired = (
        "beacon fired in " + active["activations"].astype(str) + " of "
        + active["trials"].astype(str) + f" valid trials (min_activations={min_activations})"
    ).to_numpy(dtype=object)
    reason[inactive] = fired[inactive]
    return reason


def _checked_pairs(pairs: pd.DataFrame) -> pd.DataFrame:
    pairs = schema.require(pairs, ["child", "parent"], "pairs")
    bad = pairs["child"].isna() | pairs["parent"].isna()
    if bad.any():
        raise schema.FrameError(
            f"pairs columns 'child' and 'parent' must not be empty:\n{pairs.loc[bad].head(10)}"
        )
    return pairs
