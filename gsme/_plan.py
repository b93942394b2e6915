"""The scoring plan: which trials candidates still need, as a pure function of frames.

:func:`plan_trials` takes the trials so far, the candidates, the tasks and the slots wanted
(``candidate, task_id, split, repeats``). A slot with a trial is judged by the validity
gate (:func:`gsme.gates.validity_gate`: re-run an infrastructure failure up to
``max_reruns`` times, never re-score a valid slot); a slot never tried is borrowed when a
scored candidate behaves identically on that task (:func:`behaviour`), else run.
:mod:`gsme.scoring` runs the plan's trials and re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from gsme import envgate, pairing, schema
from gsme._renamed import renamed_keywords
from gsme.agents.base import TrialSpec
from gsme.settings import RunConfig

__all__ = ["Plan", "behaviour", "plan_trials", "wanted_slots"]


@dataclass(frozen=True)
class Plan:
    """The trials a scoring pass runs, and the trial rows it borrows (ready to record).

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.run import Run
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> tasks = run.tasks()
    >>> wanted = wanted_slots(tasks, ["baseline"], split="train", k=2)
    >>> todo = plan_trials(run.trials(), run.candidates(), tasks, wanted, run_config=run.config)
    >>> len(todo.specs), len(todo.borrowed)
    (32, 0)
    >>> run.close()
    """

    specs: list[TrialSpec]
    borrowed: pd.DataFrame


def wanted_slots(tasks: pd.DataFrame, candidates, *, split: str, k: int) -> pd.DataFrame:
    """Every task of ``split`` at ``k`` repeats, for each candidate (the fixed design).

    Returns
    -------
    DataFrame
        ``candidate, task_id, split, repeats``.

    Examples
    --------
    >>> tasks = pd.DataFrame({"task_id": ["t1", "t2", "t3"], "split": ["train", "train", "test"]})
    >>> wanted_slots(tasks, ["baseline", "c0001"], split="train", k=3)
      candidate task_id  split  repeats
    0  baseline      t1  train        3
    1  baseline      t2  train        3
    2     c0001      t1  train        3
    3     c0001      t2  train        3
    """
    ids = tasks.loc[tasks["split"] == split, "task_id"].astype(object)
    grid = pd.MultiIndex.from_product([list(candidates), ids], names=["candidate", "task_id"])
    return grid.to_frame(index=False).assign(split=split, repeats=int(k))


def behaviour(candidates: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """What decides each candidate's behaviour on each task: its patches that act there.

    A candidate's patches are those of its lineage: a mutation adds one patch to its
    parent's, a recombination unites its parents'. A patch acts on a task when its env gate
    admits it. Two candidates with the same ``acting`` set on a task behave identically
    there, so one may borrow the other's trials on it.

    Returns
    -------
    DataFrame
        ``candidate, task_id, acting``: one row per candidate and task; ``acting`` is the
        sorted, comma-separated ids of the mutations whose patches act (empty: none).

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.run import Run
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> behaviour(run.candidates(), run.tasks()).head(2).values.tolist()
    [['baseline', 'tiny-000', ''], ['baseline', 'tiny-001', '']]
    >>> run.close()
    """
    schema.validate(candidates, "candidates")
    names = candidates["candidate"].to_numpy(dtype=object)
    mutations, has, acts = _patches(candidates, tasks)
    acting = np.full((len(names), len(tasks)), "", dtype=object)
    for j, m in enumerate(mutations):  # in sorted order, each where it acts
        on = has[:, j][:, None] & acts[j][None, :]
        acting[on] = np.where(acting[on] == "", m, acting[on] + "," + m)
    return pd.DataFrame({
        "candidate": _text(np.repeat(names, len(tasks))),
        "task_id": _text(np.tile(tasks["task_id"].to_numpy(dtype=object), len(names))),
        "acting": _text(acting.ravel()),
    })


def _patches(candidates: pd.DataFrame, tasks: pd.DataFrame):
    """The mutations (sorted), which of them each candidate's lineage holds (a candidates ×
    mutations bool array) and on which tasks each acts (mutations × tasks)."""
    names = candidates["candidate"].tolist()
    kinds = dict(zip(names, candidates["kind"]))
    parents = dict(zip(names, candidates["parents"].map(schema.split_ids)))
    lineage: dict[str, frozenset] = {}

    def patches(name: str) -> frozenset:
        if name not in lineage:
            own = {name} if kinds[name] == "mutation" else set()
            lineage[name] = frozenset(own).union(
                *(patches(p) for p in parents[name] if p in kinds))
        return lineage[name]

    gates = dict(zip(names, candidates["env_gate"]))
    mutations = sorted(name for name in names if kinds[name] == "mutation")
    acts = np.zeros((len(mutations), len(tasks)), dtype=bool)
    for j, m in enumerate(mutations):
        acts[j] = envgate.parse(gates[m] or "").mask(tasks)
    column = {m: j for j, m in enumerate(mutations)}
    has = np.zeros((len(names), len(mutations)), dtype=bool)
    for i, name in enumerate(names):
        has[i, [column[m] for m in patches(name)]] = True
    return mutations, has, acts


def _acting_codes(candidates: pd.DataFrame, tasks: pd.DataFrame) -> np.ndarray:
    """(candidates, tasks) integer codes, equal exactly where :func:`behaviour`'s ``acting``
    sets are equal."""
    _, has, acts = _patches(candidates, tasks)
    if not has.shape[1]:
        return np.zeros((len(has), acts.shape[1]), dtype=np.int64)
    sets = np.packbits(has[:, None, :] & acts.T[None, :, :], axis=2)
    _, codes = np.unique(sets.reshape(-1, sets.shape[2]), axis=0, return_inverse=True)
    return codes.reshape(has.shape[0], acts.shape[1])


@renamed_keywords(config="run_config")
def plan_trials(trials: pd.DataFrame | pairing.Checked, candidates: pd.DataFrame,
                tasks: pd.DataFrame, wanted: pd.DataFrame, *, run_config: RunConfig,
                lenders: pd.DataFrame | None = None) -> Plan:
    """The trials still needed for the ``wanted`` slots, and the rows to borrow.

    Parameters
    ----------
    trials : DataFrame or gsme.pairing.Checked
        The run's trials so far (any candidates; with ``borrowed_from``); a Checked is not
        checked again.
    candidates, tasks : DataFrame
        The run's candidates and tasks (env gates are evaluated on the tasks' features).
    wanted : DataFrame
        ``candidate, task_id, split, repeats`` and optionally ``first`` (default 0): each
        candidate needs repeats ``first .. first + repeats - 1`` of each task listed.
    run_config : RunConfig
        ``gate.max_reruns`` (validity) and ``borrow``.
    lenders : DataFrame, optional
        ``candidate, lender, shift`` (:func:`gsme.parent_trials.lenders`): each listed
        candidate borrows its repeat ``r`` only from ``lender``'s repeat ``r + shift``, and
        waits for that slot when it is wanted too but not scored yet; slots with
        ``first`` > 0 (a parent's fresh block) borrow nothing.

    Returns
    -------
    Plan
        ``specs``: a first attempt of each missing slot nobody can lend, and the next
        attempt of each slot whose attempts all failed for infrastructure reasons and
        that may still be re-run; ``borrowed``: trials rows copied from an identically
        behaving candidate (``borrowed_from`` names the candidate that ran the trial).

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.run import Run
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> tasks = run.tasks()
    >>> wanted = wanted_slots(tasks, ["baseline"], split="train", k=2)
    >>> todo = plan_trials(run.trials(), run.candidates(), tasks, wanted, run_config=run.config)
    >>> todo.specs[0]
    TrialSpec(candidate='baseline', task_id='tiny-001', split='train', repeat=0, attempt=0, beacon=None)
    >>> run.close()
    """
    schema.require(wanted, ["candidate", "task_id", "split", "repeats"], "wanted")
    want = _expand(wanted)
    unknown = sorted(set(want["candidate"]) - set(candidates["candidate"]))
    if unknown:
        raise KeyError(f"unknown candidate(s) {unknown}; the run has "
                       f"{list(candidates['candidate'])}")
    slots = pairing.check(trials).slots
    if isinstance(trials, pairing.Checked):
        trials = trials.frame
    at = slots.locate(want["candidate"], want["split"], want["task_id"], want["repeat"])
    needs = np.zeros(len(at), dtype=bool)  # the validity gate's rule: re-run, or not yet
    needs[at >= 0] = slots.needs_rerun(run_config.gate.max_reruns)[at[at >= 0]]
    attempt = np.zeros(len(at), dtype=np.int64)
    attempt[needs] = slots.last_attempt[at[needs]] + 1
    missing = at < 0
    borrowed = pd.DataFrame()
    if run_config.borrow and missing.any():
        rules = _lending(want, lenders)
        acting = _acting_codes(candidates, tasks)
        if len(trials):
            borrowed, lent = _lend(trials, slots, candidates, tasks, acting,
                                   {k: v[missing] for k, v in {**want, **rules}.items()})
            missing[np.flatnonzero(missing)[lent]] = False
        missing &= ~_waiting(want, rules, missing | needs, candidates, tasks, acting)
    beacons = dict(zip(candidates["candidate"], candidates["beacon"]))
    specs = [TrialSpec(c, t, s, r, a, beacons.get(c) or None)  # Python values: tolist()
             for rows in (missing, needs)
             for c, t, s, r, a in zip(*(want[k][rows].tolist() for k in schema.SLOT_KEY),
                                      attempt[rows].tolist())]
    return Plan(specs=specs, borrowed=borrowed)


def _text(values) -> pd.Series:
    """``values`` as an object-dtype Series (pandas would infer its own string dtype)."""
    return pd.Series(np.asarray(values, dtype=object), dtype=object)


def _expand(wanted: pd.DataFrame) -> dict[str, np.ndarray]:
    """One entry per wanted slot: arrays ``candidate, task_id, split, repeat``."""
    repeats = wanted["repeats"].to_numpy(np.int64)
    rows = np.repeat(np.arange(len(wanted)), repeats)
    out = {c: wanted[c].to_numpy(dtype=object)[rows] for c in schema.SLOT_KEY[:3]}
    first = (wanted["first"].to_numpy(np.int64) if "first" in wanted
             else np.zeros(len(wanted), dtype=np.int64))
    out["first"] = first[rows]
    out["repeat"] = out["first"] + np.arange(repeats.sum()) - np.repeat(
        np.cumsum(repeats) - repeats, repeats)
    return out


def _lending(want: dict, lenders) -> dict[str, np.ndarray]:
    """Per wanted slot: ``only`` (the one candidate that may lend to it, ``""`` for none,
    None for any) and ``shift`` (added to its repeat to find the lender's slot)."""
    n = len(want["candidate"])
    only, shift = np.full(n, None, dtype=object), np.zeros(n, dtype=np.int64)
    only[want["first"] > 0] = ""  # a fresh block is never borrowed
    if lenders is not None and len(lenders):
        rules = lenders.set_index("candidate")
        ruled = pd.Index(rules.index).get_indexer(pd.Index(want["candidate"], dtype=object))
        has = ruled >= 0
        only[has] = rules["lender"].to_numpy(dtype=object)[ruled[has]]
        shift[has] = rules["shift"].to_numpy(np.int64)[ruled[has]]
    return {"only": only, "shift": shift}


def _lend(trials, slots, candidates, tasks, acting, missing) -> tuple[pd.DataFrame, np.ndarray]:
    """Rows lent to ``missing`` slots by candidates that behave identically there, and the
    positions of the slots they are lent to.

    A slot borrows the first valid trial of the same task, split and repeat (plus its
    ``shift``) from a candidate whose acting patches there are the same (``acting``,
    :func:`_acting_codes`), preferring its parents in order, then its other ancestors,
    then any other by name; a slot whose ``only`` names a lender borrows from it alone
    (``""``: from none). Slots and trials are matched on integer keys (the trials'
    ``slots``), not by merging frames.
    """
    names = pd.Index(candidates["candidate"].to_numpy(dtype=object))
    ids = pd.Index(tasks["task_id"].to_numpy(dtype=object))
    shift = missing["shift"]
    size = int(max(slots.repeat.max(initial=0), (missing["repeat"] + shift).max(initial=0))) + 1

    def keyed(cand, task, split, repeat):
        """Entries on known candidates, tasks and splits: their positions, candidate codes
        and (task, split, repeat, acting) keys."""
        at = np.flatnonzero((cand >= 0) & (task >= 0) & (split >= 0))
        cand, task, split, repeat = cand[at], task[at], split[at], repeat[at]
        return at, cand, ((task * len(schema.SPLITS) + split) * size + repeat) * (
            acting.max(initial=0) + 1) + acting[cand, task]

    splits = pd.Index(schema.SPLITS)
    donors, donor, donor_key = keyed(  # every valid slot, by key then candidate
        names.get_indexer(slots.candidates)[slots.candidate],
        ids.get_indexer(slots.tasks)[slots.task],
        splits.get_indexer(slots.splits)[slots.split], slots.repeat)
    valid = slots.valid[donors]
    donors, donor, donor_key = donors[valid], donor[valid], donor_key[valid]
    order = np.lexsort((donor, donor_key))
    donors, donor, donor_key = donors[order], donor[order], donor_key[order]
    wanted, borrower, wanted_key = keyed(
        names.get_indexer(missing["candidate"]), ids.get_indexer(missing["task_id"]),
        splits.get_indexer(missing["split"]), missing["repeat"] + shift)
    lo = np.searchsorted(donor_key, wanted_key, side="left")
    count = np.searchsorted(donor_key, wanted_key, side="right") - lo
    slot = np.repeat(np.arange(len(wanted)), count)  # every (slot, offer) pair
    offer = np.repeat(lo - np.cumsum(count) + count, count) + np.arange(count.sum())
    other = donor[offer] != borrower[slot]
    only = missing["only"][wanted]  # a lender named per slot ("" none, None any)
    named = pd.notna(only) & (only != "")
    allowed = np.full(len(only), -2, dtype=np.int64)  # -2: any lender
    allowed[named] = names.get_indexer(pd.Index(only[named], dtype=object))
    allowed[only == ""] = -3  # -3: none
    rule = allowed[slot]
    other &= (rule == -2) | (rule == donor[offer])
    slot, offer = slot[other], offer[other]
    if not len(slot):
        return pd.DataFrame(), np.zeros(0, dtype=np.int64)
    rank = _donor_rank(candidates, names)[borrower[slot], donor[offer]]
    by_name = np.argsort(np.argsort(names.to_numpy()))[donor[offer]]
    best = np.lexsort((by_name, rank, slot))
    best = best[np.r_[True, slot[best][1:] != slot[best][:-1]]]
    best = best[np.lexsort((slot[best], by_name[best], rank[best]))]
    out = trials.iloc[slots.row[donors[offer[best]]]].reset_index(drop=True)
    lender = out["borrowed_from"].where(out["borrowed_from"].notna(),
                                        names.to_numpy()[donor[offer[best]]])
    out = out.assign(candidate=_text(missing["candidate"][wanted[slot[best]]]),
                     repeat=missing["repeat"][wanted[slot[best]]].astype(np.int64),
                     attempt=0, borrowed_from=lender.astype(object))
    beacons = dict(zip(candidates["candidate"], candidates["beacon"]))
    own = [set(schema.split_ids(beacons.get(c))) for c in out["candidate"]]
    out["activated"] = [bool(mine & set(schema.split_ids(b))) for mine, b in
                        zip(own, out["beacons"])]
    return out, wanted[slot[best]]


def _waiting(want: dict, rules: dict, open_: np.ndarray, candidates: pd.DataFrame,
             tasks: pd.DataFrame, acting: np.ndarray) -> np.ndarray:
    """Slots that wait a pass: their one lender's slot is wanted in this plan and not
    scored yet, and they behave as the lender on the task (so they will borrow it)."""
    named = pd.notna(rules["only"]) & (rules["only"] != "")
    if not named.any():
        return np.zeros(len(named), dtype=bool)
    key = list(zip(want["candidate"], want["task_id"], want["split"], want["repeat"]))
    pending = {k for k, o in zip(key, open_) if o}
    names = pd.Index(candidates["candidate"].to_numpy(dtype=object))
    ids = pd.Index(tasks["task_id"].to_numpy(dtype=object))
    out = np.zeros(len(named), dtype=bool)
    for i in np.flatnonzero(named):
        lender, task = rules["only"][i], want["task_id"][i]
        if (lender, task, want["split"][i], want["repeat"][i] + rules["shift"][i]) in pending:
            t = ids.get_loc(task)
            out[i] = acting[names.get_loc(want["candidate"][i]), t] == acting[
                names.get_loc(lender), t]
    return out


def _donor_rank(candidates: pd.DataFrame, names: pd.Index) -> np.ndarray:
    """Preference of donors per borrower (row: borrower, column: donor, by ``names``): its
    parents in order, then its other ancestors, then every other candidate alike."""
    parents = {c: schema.split_ids(p) for c, p in zip(candidates["candidate"],
                                                      candidates["parents"])}
    rank = np.full((len(names), len(names)), len(names), dtype=np.int64)
    for name, own in parents.items():
        order, queue = [], list(own)
        while queue:
            here = queue.pop(0)
            if here not in order:
                order.append(here)
                queue += parents.get(here, [])
        known = [(i, d) for i, d in enumerate(order) if d in names]
        for i, d in known:
            rank[names.get_loc(name), names.get_loc(d)] = i
    return rank
