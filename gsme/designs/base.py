"""Gate designs: which repeats a comparison needs, and how its looks decide.

A design (:class:`Design`) is its looks (``look_repeats``), what it wants next
(``wanted``), how it decides (``decide``, ``looks``, ``decided_repeats``) and its power
(``plan``). gsme's are :class:`~gsme.designs.fixed.Fixed` (the paper's gate: ``k``
repeats of every task on each side, one look) and :class:`~gsme.designs.adaptive.Adaptive`
(group-sequential); others register by name (:data:`gsme.registry.DESIGNS`). A design
receives the checked, encoded trials of :mod:`gsme.pairing` (:class:`~gsme.pairing.Slots`).

Everything is replayed from the trials: :func:`wanted` (the repeats still needed) and
:func:`gsme.gates.credit` (the decision) read the same looks, so a run's scoring loop
(``wanted`` → run → ``wanted`` … until nothing new is wanted) and a later ``credit`` with the
run's ``GateConfig`` agree. :func:`looks` shows every look taken and
:func:`decided_repeats` the repeats of each task the decision read. The per (candidate,
task, look) counts every design may read are its :func:`panel_of`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from gsme import schema
from gsme._checks import check_choice, gate_config, text
from gsme._renamed import call_extension, renamed_keywords
from gsme.pairing import Checked, Slots, check, checked_slots
from gsme.registry import DESIGNS
from gsme.settings import GateConfig

__all__ = ["Design", "Panel", "candidate_codes", "compare", "decided_repeats", "design_of",
           "looks", "looks_of_slots", "panel_of", "wanted"]


@renamed_keywords(config="gate")
def design_of(gate: GateConfig | None = None) -> Design:
    """The registered design ``gate.design`` names (:data:`gsme.registry.DESIGNS`).

    Examples
    --------
    >>> design_of(GateConfig(design="fixed")).summary
    'the paper gate: k repeats of every task on each side, one look'
    """
    return DESIGNS.get(gate_config(gate).design)


class Design:
    """A gate design: its looks, the repeats it wants next, how it decides, its power.

    gsme's designs are :class:`~gsme.designs.fixed.Fixed` and
    :class:`~gsme.designs.adaptive.Adaptive`. A new design subclasses one of them (or this, implementing every method) and registers under a name
    (:data:`gsme.registry.DESIGNS`: entry point group ``gsme.designs``, or
    ``DESIGNS.register(name, design)``); ``GateConfig(design=name)`` then selects it
    everywhere: the run's scoring loop (:func:`wanted`), the gates (:func:`gsme.gates.credit`),
    :func:`looks`, :func:`gsme.compare.plan` and the command line.

    Every method reads its settings from ``gate`` (a :class:`~gsme.settings.GateConfig`)
    and is a pure function of its arguments. (A method written before 0.3.0, taking
    ``config=``, still gets the settings so until 0.4.0, with a DeprecationWarning.)

    Attributes
    ----------
    summary : str
        One line saying what the design does (shown by ``gsme --help``).

    See Also
    --------
    design_of : The registered design a gate names.
    gsme.registry.DESIGNS : The registry of designs by name.

    Examples
    --------
    A design that decides after a single repeat of every task, registered and selected
    by name:

    >>> from gsme.designs import Fixed, look_repeats
    >>> from gsme.registry import DESIGNS
    >>> class Peek(Fixed):
    ...     summary = "one look after a single repeat"
    ...     def look_repeats(self, gate):
    ...         return np.array([1], dtype=np.int64)
    >>> DESIGNS.register("peek", Peek)
    >>> look_repeats(GateConfig(design="peek")).tolist()
    [1]
    >>> DESIGNS.unregister("peek")
    """

    summary = ""

    def look_repeats(self, gate: GateConfig) -> np.ndarray:
        """Repeats per task and side at each planned look (int64, increasing)."""
        raise NotImplementedError

    def decide(self, slots: Slots, pairs: pd.DataFrame, *, split: str,
               gate: GateConfig) -> pd.DataFrame:
        """The significance test of every (``child``, ``parent``) row of ``pairs``:
        :data:`gsme.schema.PAIRED_COLUMNS`, one row per pair in their order."""
        raise NotImplementedError

    def looks(self, slots: Slots, pairs: pd.DataFrame, *, split: str,
              gate: GateConfig) -> pd.DataFrame:
        """Every look taken, :data:`gsme.schema.LOOK_COLUMNS` (see :func:`looks`)."""
        raise NotImplementedError

    def decided_repeats(self, slots: Slots, child, parent, *, split: str,
                        gate: GateConfig) -> tuple[np.ndarray, np.ndarray]:
        """The tasks with trials of either side and, per (pair, task), the repeats below
        which the decision read both sides."""
        raise NotImplementedError

    @renamed_keywords(config="gate")
    def wanted(self, trials: Checked, child, parent, task_ids, *,
               gate: GateConfig) -> np.ndarray:
        """(pairs, tasks): the repeats each child and its parent need on the train split
        so far (``k`` everywhere for a one-look design), from the checked trials so far
        (``trials.slots``)."""
        return np.full((len(child), len(task_ids)), gate.k, dtype=np.int64)

    def plan(self, *, n_tasks: int, effect_pp: float, k: int, repeat_sd_pp: float,
             task_sd_pp: float, power: float, gate: GateConfig, simulations: int,
             rng=None) -> dict:
        """The design's power: a row of :data:`gsme.schema.PLAN_COLUMNS` from ``method``
        on (see :func:`gsme.compare.plan`); ``gate`` has ``design`` and ``k`` set."""
        raise NotImplementedError


# ------------------------------------------------------------------------------ the panel

@dataclass(frozen=True)
class Panel:
    """Dense per (candidate, task, look) prefix counts of the pairs' candidates.

    ``counts[name]`` for name in ``slots, valid, passed, pending`` is a (looks, involved
    candidates + 1, tasks) array counting a candidate's slots (valid, passed, waiting for a
    re-run) with repeat below the look's count; its last row of each look, all zero, stands
    for a candidate without trials. When the trials carry graded scores, ``counts["total"]`` sums the valid slots'
    scores the same way and ``low``, ``high`` (rows, tasks) are the least and greatest
    score among the first ``k`` repeats (±inf without one); else ``low`` and ``high`` are
    None. ``child`` and ``parent`` are each pair's rows; ``identical`` (pairs, tasks) says
    the child's trials there are the parent's own.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": ["p", "p", "c"], "task_id": ["t1", "t2", "t1"],
    ...                   "split": "train", "repeat": 0, "passed": [0, 1, 1]})
    >>> panel = panel_of(check(t).slots, ["c"], ["p"], "train", GateConfig(design="fixed"))
    >>> panel.counts["passed"].shape  # (looks, candidates + 1, tasks)
    (1, 3, 2)
    >>> panel.counts["passed"][0, panel.child].tolist(), list(panel.tasks)
    ([[1, 0]], ['t1', 't2'])
    """

    counts: dict
    child: np.ndarray
    parent: np.ndarray
    identical: np.ndarray
    tasks: np.ndarray
    low: np.ndarray | None = None
    high: np.ndarray | None = None


@renamed_keywords(config="gate")
def panel_of(slots: Slots, child, parent, split: str, gate: GateConfig,
             task_ids=None) -> Panel:
    """The :class:`Panel` of the pairs ``child``, ``parent`` (names) on ``split``: counts
    at each planned look of the design, over ``task_ids`` (default: the tasks with trials
    of the pairs' candidates there).

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c"], 6), "task_id": "t1",
    ...                   "split": "train", "repeat": np.tile(np.arange(6), 2),
    ...                   "passed": [1, 0, 1, 0, 1, 0] + [1] * 6})
    >>> panel = panel_of(check(t).slots, ["c"], ["p"], "train",
    ...                  GateConfig(design="adaptive"))
    >>> panel.counts["passed"][:, panel.parent[0], 0].tolist()  # at looks of 3, 6, 9 repeats
    [2, 3, 3]
    >>> panel.counts["slots"][:, panel.child[0], 0].tolist()
    [3, 6, 6]
    """
    repeats = design_of(gate).look_repeats(gate)
    n_looks = len(repeats)
    split_code = slots.splits.get_indexer([split])[0] if len(slots.splits) else -1
    child_code = candidate_codes(slots, child)
    parent_code = candidate_codes(slots, parent)
    involved = np.unique(np.r_[child_code, parent_code])
    involved = involved[involved >= 0]
    local_cand = np.full(len(slots.candidates) + 1, -1, dtype=np.int64)
    local_cand[involved] = np.arange(len(involved))
    on_split = (slots.split == split_code) & (local_cand[slots.candidate] >= 0)
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
    first = keep & (slots.repeat < gate.k)
    if keep.all():  # every slot counts (the usual case): read the arrays without copying
        keep = slice(None)
    lc, lt, lb = local_cand[slots.candidate[keep]], local_task[slots.task[keep]], band[keep]
    key = (lb * (n_cand + 1) + lc) * n_tasks + lt
    size = n_looks * (n_cand + 1) * n_tasks  # a last all-zero row for absent candidates

    def prefix(counted, weights=None):
        counts = np.bincount(key if counted is None else key[counted[keep]], weights,
                             minlength=size).reshape(n_looks, n_cand + 1, n_tasks)
        for look in range(1, n_looks):  # a cumulative sum over a few looks, a look at a time
            counts[look] += counts[look - 1]
        return counts

    counts = {
        "slots": prefix(None),
        "valid": prefix(slots.valid),
        "passed": prefix(slots.passed),
        "pending": prefix(slots.needs_rerun(gate.max_reruns)),
    }
    c_local = np.where(child_code >= 0, local_cand[child_code], n_cand)
    p_local = np.where(parent_code >= 0, local_cand[parent_code], n_cand)
    identical = _identical(slots, first, local_cand[slots.candidate[first]],
                           local_task[slots.task[first]], c_local, p_local,
                           (n_cand + 1, n_tasks, gate.k))
    spread = {}
    if slots.score is not None:
        counts["total"] = prefix(None, slots.score[keep])
        scored = first & slots.valid
        at = (local_cand[slots.candidate[scored]], local_task[slots.task[scored]])
        spread = {"low": np.full((n_cand + 1, n_tasks), np.inf),
                  "high": np.full((n_cand + 1, n_tasks), -np.inf)}
        np.minimum.at(spread["low"], at, slots.score[scored])
        np.maximum.at(spread["high"], at, slots.score[scored])
    return Panel(counts=counts, child=c_local, parent=p_local, identical=identical,
                  tasks=names, **spread)


def _identical(slots: Slots, first, rows, columns, child, parent, shape) -> np.ndarray:
    """(pairs, tasks): the child has trials among its first ``k`` repeats of the task and
    each is the parent's own trial of that repeat (the same source).

    ``first`` selects those slots, ``rows`` and ``columns`` are their panel rows and task
    columns, ``child`` and ``parent`` each pair's rows; ``shape`` is (rows, tasks, k), its
    last row standing for a candidate without trials. Without a borrowed slot among them
    no child's trial is another candidate's, so no task is identical unless a pair compares
    a candidate with itself.
    """
    n_rows, n_tasks, _ = shape
    lent = slots.source[first] != slots.candidate[first]
    if not lent.any() and not ((child == parent) & (child < n_rows - 1)).any():
        return np.zeros((len(child), n_tasks), dtype=bool)
    source = np.full(shape, -1, dtype=np.int64)
    source[rows, columns, slots.repeat[first]] = slots.source[first]
    c_src, p_src = source[child], source[parent]
    has = c_src >= 0
    return has.any(axis=2) & (~has | (c_src == p_src)).all(axis=2)


def candidate_codes(slots: Slots, names) -> np.ndarray:
    """Each candidate's code in ``slots``, -1 when it has no trials or is missing (None).

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": ["p", "c"], "task_id": "t1", "split": "train",
    ...                   "repeat": 0, "passed": [0, 1]})
    >>> candidate_codes(check(t).slots, ["c", "p", "x", None]).tolist()
    [1, 0, -1, -1]
    """
    names = np.asarray(names, dtype=object)
    codes = slots.candidates.get_indexer(pd.Index(names, dtype=object)).astype(np.int64)
    codes[pd.isna(names)] = -1
    return codes


# ------------------------------------------------------------------------------ public

@renamed_keywords(config="gate")
def compare(slots: Slots, pairs: pd.DataFrame, *, split: str,
            gate: GateConfig) -> pd.DataFrame:
    """The significance test of each pair under ``gate.design``.

    Returns
    -------
    DataFrame
        :data:`gsme.schema.PAIRED_COLUMNS`, one row per pair in the order of ``pairs``:
        the statistics of the look the design stopped at, ``looks`` the looks it took.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c", "d"], 6), "split": "train",
    ...                   "task_id": [f"t{i}" for i in range(6)] * 3, "repeat": 0,
    ...                   "passed": [0] * 6 + [1] * 6 + [1, 1, 1, 1, 1, 0]})
    >>> slots = check(t).slots
    >>> pairs = pd.DataFrame({"child": ["c", "d"], "parent": ["p", "p"]})
    >>> compare(slots, pairs, split="train", gate=GateConfig(design="fixed"))[
    ...     ["child", "n_changed", "p_one_sided", "decision"]].round(4)
      child  n_changed  p_one_sided      decision
    0     c          6       0.0156        credit
    1     d          5       0.0312  inconclusive
    """
    return call_extension(design_of(gate).decide, slots, pairs, split=split, gate=gate)


@renamed_keywords(config="gate")
def looks(trials: pd.DataFrame | Checked, pairs: pd.DataFrame, *, split: str = "train",
          gate: GateConfig | None = None) -> pd.DataFrame:
    """Every look the design took for each (child, parent) pair, with its boundary.

    Parameters
    ----------
    trials : DataFrame or gsme.pairing.Checked
        A trials frame (a :class:`~gsme.pairing.Checked` one is not checked again).
    pairs : DataFrame
        Columns ``child`` and ``parent``.
    split : {"train", "test"}
    gate : GateConfig, optional

    Returns
    -------
    DataFrame
        One row per (pair, look taken), pairs in the order of ``pairs``: ``child,
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
    >>> looks(t, pd.DataFrame({"child": ["c"], "parent": ["p"]}), gate=cfg)[
    ...     ["look", "repeats", "boundary", "decision"]].round(2)
       look  repeats  boundary      decision
    0     1        3      3.71      continue
    1     2        6      2.51      continue
    2     3        9      1.99  inconclusive
    """
    check_choice("split", split, schema.SPLITS)
    gate = gate_config(gate)
    pairs = schema.require(pairs, ["child", "parent"], "pairs")
    slots = checked_slots(trials)
    return looks_of_slots(slots, pairs, split=split, gate=gate)


@renamed_keywords(config="gate")
def looks_of_slots(slots: Slots, pairs: pd.DataFrame, *, split: str,
                   gate: GateConfig) -> pd.DataFrame:
    """:func:`looks` on trials already encoded (for simulations that reuse one frame).

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c", "d"], 6), "split": "train",
    ...                   "task_id": [f"t{i}" for i in range(6)] * 3, "repeat": 0,
    ...                   "passed": [0] * 6 + [1] * 6 + [1, 1, 1, 1, 1, 0]})
    >>> slots = check(t).slots
    >>> pairs = pd.DataFrame({"child": ["c", "d"], "parent": ["p", "p"]})
    >>> looks_of_slots(slots, pairs, split="train", gate=GateConfig(design="fixed"))[
    ...     ["child", "look", "p_one_sided", "level", "decision"]].round(4)
      child  look  p_one_sided  level      decision
    0     c     1       0.0156  0.025        credit
    1     d     1       0.0312  0.025  inconclusive
    """
    return call_extension(design_of(gate).looks, slots, pairs, split=split, gate=gate)


@renamed_keywords(config="gate")
def decided_repeats(trials: pd.DataFrame | Checked, pairs: pd.DataFrame, *,
                    split: str = "train",
                    gate: GateConfig | None = None) -> pd.DataFrame:
    """The repeats each pair's decision read, per task: those below ``repeats``, both sides.

    The adaptive design decides at the look it stopped at (the last row of :func:`looks`),
    which reads the repeats below r_ℓ on the tasks it extended and below ``k`` on the
    others, on both sides (repeats scored later, or for another child of the same parent,
    are not read). The fixed design reads every repeat. Per-task rates over exactly these
    repeats average to the decision's rates and ``delta_pp`` (:func:`gsme.stats.paired_tasks`).

    Parameters
    ----------
    trials, pairs, split, gate
        As in :func:`looks`.

    Returns
    -------
    DataFrame
        ``child, parent, task_id, repeats``: one row per pair (in the order of
        ``pairs``) and task with trials of either side on ``split``; the decision read the
        repeats ``0 .. repeats-1`` of the task on each side.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c"], 12),
    ...                   "task_id": np.tile(np.repeat(["t1", "t2"], 6), 2), "split": "train",
    ...                   "repeat": np.tile(np.arange(6), 4),
    ...                   "passed": np.tile([1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1], 2)})
    >>> pairs = pd.DataFrame({"child": ["c"], "parent": ["p"]})
    >>> decided_repeats(t, pairs, gate=GateConfig(min_tasks=2, futility_z=None))
      child parent task_id  repeats
    0     c      p      t1        6
    1     c      p      t2        3
    >>> decided_repeats(t, pairs, gate=GateConfig(design="fixed"))["repeats"].tolist()
    [6, 6]
    """
    check_choice("split", split, schema.SPLITS)
    gate = gate_config(gate)
    pairs = schema.require(pairs, ["child", "parent"], "pairs")
    slots = checked_slots(trials)
    child = pairs["child"].to_numpy(dtype=object)
    parent = pairs["parent"].to_numpy(dtype=object)
    names, repeats = call_extension(design_of(gate).decided_repeats, slots, child, parent,
                                    split=split, gate=gate)
    n_tasks = len(names)
    return pd.DataFrame({
        "child": text(np.repeat(child, n_tasks)),
        "parent": text(np.repeat(parent, n_tasks)),
        "task_id": text(np.tile(names, len(child))),
        "repeats": repeats.reshape(-1).astype(np.int64),
    })


@renamed_keywords(config="gate")
def wanted(trials: pd.DataFrame | Checked, pairs: pd.DataFrame, tasks: pd.DataFrame, *,
           split: str,
           gate: GateConfig | None = None) -> pd.DataFrame:
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
    trials : DataFrame or gsme.pairing.Checked
        The trials so far (with ``borrowed_from`` where rows were borrowed; a
        :class:`~gsme.pairing.Checked` frame is not checked again).
    pairs : DataFrame
        ``child, parent`` (parent None: the child is scored alone, e.g. the baseline).
    tasks : DataFrame
        ``task_id, split`` of the run (a task id once per split).
    split : {"train", "test"}
    gate : GateConfig, optional

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
    >>> pairs = pd.DataFrame({"child": ["c"], "parent": ["p"]})
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c"], 6), "task_id":
    ...                   np.tile(np.repeat(["t1", "t2"], 3), 2), "split": "train",
    ...                   "repeat": np.tile([0, 1, 2], 4),
    ...                   "passed": [1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1]})
    >>> wanted(t, pairs, tasks, split="train",
    ...        gate=GateConfig(design="adaptive", min_tasks=2, futility_z=None))
      candidate task_id  split  repeats
    0         c      t1  train        6
    1         c      t2  train        3
    2         p      t1  train        6
    3         p      t2  train        3
    """
    check_choice("split", split, schema.SPLITS)
    gate = gate_config(gate)
    pairs = schema.require(pairs, ["child", "parent"], "pairs")
    schema.require(tasks, ["task_id", "split"], "tasks")
    ids = tasks["task_id"].to_numpy(dtype=object)[tasks["split"].to_numpy(dtype=object) == split]
    if not pd.Index(ids).is_unique:
        raise schema.FrameError(f"tasks column 'task_id' repeats ids on split {split!r}: "
                                f"{sorted(pd.Index(ids)[pd.Index(ids).duplicated()])[:10]}")
    child = pairs["child"].to_numpy(dtype=object)
    parent = pairs["parent"].to_numpy(dtype=object)
    has_parent = pd.notna(parent)
    names = np.asarray(list(dict.fromkeys([*child, *parent[has_parent]])), dtype=object)
    repeats = np.full((len(names), len(ids)), gate.k, dtype=np.int64)
    if split == "train" and has_parent.any() and len(ids):
        child, parent = child[has_parent], parent[has_parent]
        extended = call_extension(design_of(gate).wanted, check(trials), child, parent, ids,
                                  gate=gate)
        sides = pd.Index(names, dtype=object).get_indexer(np.r_[child, parent])
        np.maximum.at(repeats, sides, np.tile(extended, (2, 1)))  # a parent: its most wanted
    return pd.DataFrame({
        "candidate": text(np.repeat(names, len(ids))),
        "task_id": text(np.tile(ids, len(names))),
        "split": text([split] * repeats.size),
        "repeats": repeats.ravel(),
    })
