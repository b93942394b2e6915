"""The checked, encoded trials every gate design and statistic reads.

(Over 600 lines because the chain from a trials frame to paired task differences is one
contract that a third-party design reads whole: each step is public and its doctest shows
the arrays it makes.)

A trials frame is checked against its contract once (:func:`check`, which gives a
:class:`Checked`) and reduced to integer-coded *slots* (:class:`Slots`: one per candidate,
split, task and ``repeat``), then to per-task counts (:class:`TaskCounts`), then paired
child-versus-parent task by task (:class:`Paired`: one entry per paired task of every
pair) and summarised per pair (:func:`describe`). What is averaged is each trial's value
(:func:`gsme.schema.trial_values`): ``passed`` as integer counts, or, when the trials carry
graded scores, their sums. Every step is a NumPy array operation: no Python loop runs per
trial, per task or per pair.

A gate design (:class:`gsme.designs.Design`) receives :class:`Slots` and tests the pairs
with :func:`gsme.designs.significance.significance`; a third-party design needs these
public types only. Every public statistic of gsme takes a trials frame or a
:class:`Checked`; given a :class:`Checked` it checks nothing again, so a chain of calls
checks a frame once.

Examples
--------
>>> t = pd.DataFrame({"candidate": ["p", "p", "c", "c"], "task_id": ["t1", "t2"] * 2,
...                   "split": "train", "repeat": 0, "passed": [0, 1, 1, 1]})
>>> checked = check(t)
>>> check(checked) is checked  # checked once
True
>>> slots = checked.slots
>>> list(slots.candidates), slots.passed.tolist()
(['p', 'c'], [False, True, True, True])
>>> paired = pair_tasks(slots, count_tasks(slots), ["c"], ["p"], "train")
>>> describe(paired)["mean_d"].tolist()
[0.5]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from gsme import _renamed, schema
from gsme._checks import text

__all__ = ["Checked", "Paired", "Slots", "TaskCounts", "check", "checked_slots",
           "checked_trials", "count_tasks", "decode_tasks", "describe", "encode_slots",
           "pair_tasks", "paired_rates", "task_values"]


class Checked:
    """A trials frame checked against its contract once, and its slots.

    Made by :func:`check`. Every public statistic of gsme (:mod:`gsme.stats`,
    :mod:`gsme.gates`, :mod:`gsme.designs`, :mod:`gsme.compare`) takes a Checked wherever
    it takes a trials frame and checks nothing again, so a chain of calls on one frame
    checks it once (:data:`gsme.schema.CHECKS` counts the checks).

    Attributes
    ----------
    frame : DataFrame
        The checked trials frame, in the contracted dtypes (text columns as given: object
        or a pandas string dtype). Read it; never change it in place.
    slots : Slots
        Its slots (:func:`encode_slots`), encoded on first use.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": "a", "task_id": ["t1", "t2"], "split": "train",
    ...                   "repeat": [0, 3], "passed": [True, False]})
    >>> checked = check(t)
    >>> check(checked) is checked, len(checked.rows(checked.frame["repeat"] < 3))
    (True, 1)
    """

    __slots__ = ("_codes", "_slots", "frame")

    def __init__(self, frame: pd.DataFrame, codes: dict[str, tuple[np.ndarray, pd.Index]]):
        """Use :func:`check`: this trusts that ``frame`` conforms and ``codes`` are its
        key's text columns factorized."""
        self.frame = frame
        self._codes = codes
        self._slots = None

    @property
    def slots(self) -> Slots:
        if self._slots is None:
            self._slots = _encode(self.frame, self._codes)
        return self._slots

    def __len__(self) -> int:
        return len(self.frame)

    def __repr__(self) -> str:
        return f"<Checked trials: {len(self.frame):,} rows>"

    def rows(self, keep) -> Checked:
        """The rows where ``keep`` (bools, one per row) holds, numbered from 0: still
        checked, since any rows of a checked frame keep its contract. Nothing is hashed
        again: the text codes are those of the kept rows, renumbered in order of first
        appearance as a fresh check would; all of them: these trials themselves."""
        keep = np.asarray(keep, dtype=bool)
        if keep.all() and self.frame.index.equals(pd.RangeIndex(len(self.frame))):
            return self  # its codes are already in order of first appearance
        codes = {}
        for name, (code, uniques) in self._codes.items():
            kept, seen = pd.factorize(code[keep])
            codes[name] = kept, uniques[seen]
        return Checked(self.frame[keep].reset_index(drop=True), codes)

    def extended(self, added: pd.DataFrame, order=None) -> Checked:
        """These trials and the rows ``added``, checked: only ``added`` is checked against
        the contract (counted in ``gsme.schema.CHECKS["trials_added"]``) and hashed, and
        its keys against those held (integer codes); the text codes are merged, not
        computed again. ``order`` (positions into this frame followed by ``added``; default:
        ``added`` after) orders the rows. The result is what :func:`check` gives on the
        frame (the codes in order of first appearance); added rows that are not in the
        contracted dtypes, or that break the contract, are checked with the whole frame.

        Examples
        --------
        >>> t = pd.DataFrame({"candidate": "a", "task_id": ["t1", "t2"], "split": "train",
        ...                   "repeat": 0, "passed": [True, False]})
        >>> grown = check(t).extended(checked_trials(t.assign(candidate="b")))
        >>> len(grown), list(grown.slots.candidates), grown.slots.passed.tolist()
        (4, ['a', 'b'], [True, False, True, False])
        """
        frame = (pd.concat([self.frame, added], ignore_index=True) if len(self.frame)
                 else added.reset_index(drop=True))
        if order is not None:
            frame = frame.take(np.asarray(order)).reset_index(drop=True)
        new = _text_codes(added)
        if not (_in_contract_dtypes(added) and _in_contract_dtypes(frame)
                and schema.conforms(added, "trials", codes=new, tally="trials_added")):
            return check(frame)
        codes, joined = {}, {}
        for name, (code, uniques) in self._codes.items():
            new_code, new_uniques = new[name]
            at = uniques.get_indexer(new_uniques)
            fresh = np.flatnonzero(at < 0)
            at[fresh] = len(uniques) + np.arange(len(fresh))
            joined[name] = np.concatenate([code, at[new_code]]).astype(np.int64, copy=False)
            names = np.concatenate([uniques.to_numpy(), new_uniques.to_numpy()[fresh]])
            codes[name] = pd.Index(names, dtype=object)  # Index.append would infer str
        if _keys_held(self.frame, added, joined):
            return check(frame)
        for name, uniques in codes.items():
            code = joined[name] if order is None else joined[name][np.asarray(order)]
            renumbered, seen = pd.factorize(code)  # in order of first appearance
            codes[name] = renumbered, uniques[seen]
        return Checked(frame, codes)

    def with_flags(self, **flags) -> Checked:
        """The same trials with the bool columns named (``passed``, ``infra_ok``,
        ``activated``) replaced by ``flags`` (bools, one per row): still checked, since
        any bools keep their contract."""
        allowed = ("passed", "infra_ok", "activated")
        for name in flags:
            if name not in allowed:
                raise ValueError(f"with_flags sets only {list(allowed)}, got {name!r}")
        values = {name: np.asarray(v, dtype=bool) for name, v in flags.items()}
        return Checked(self.frame.assign(**values), self._codes)

    def without_scores(self) -> Checked:
        """The same trials without their ``score`` column (values: ``passed`` as 0/1)."""
        if "score" not in self.frame.columns:
            return self
        return Checked(self.frame.drop(columns="score"), self._codes)


def _keys_held(held: pd.DataFrame, added: pd.DataFrame, codes: dict[str, np.ndarray]) -> bool:
    """True when an ``added`` row has the key of a ``held`` row (``codes``: the key's text
    codes over both, ``held`` first)."""
    n = len(held)
    repeat = np.concatenate([held["repeat"].to_numpy(np.int64), added["repeat"].to_numpy(np.int64)])
    attempt = np.concatenate([held["attempt"].to_numpy(np.int64),
                              added["attempt"].to_numpy(np.int64)])
    parts = (codes["candidate"], codes["task_id"], codes["split"], repeat, attempt)
    dims = tuple(int(p.max(initial=0)) + 1 for p in parts)
    if math.prod(dims) >= 2**62:
        return True  # too many keys for one integer: the whole frame is checked
    key = np.ravel_multi_index(parts, dims)
    return bool(np.isin(key[n:], key[:n]).any())


def check(trials: pd.DataFrame | Checked) -> Checked:
    """Check ``trials`` against its contract once; a :class:`Checked` is returned as is.

    A frame already in the contracted dtypes (text as object or a pandas string dtype) is
    checked on the codes of its key's text columns, no column converted, and kept as is
    (no copy); anything else goes through :func:`gsme.schema.as_trials` (defaults, dtype
    coercion).

    Raises
    ------
    gsme.schema.FrameError
        The frame breaks its contract: names the columns and shows the rows at fault.

    Examples
    --------
    >>> checked = check(pd.DataFrame({"candidate": "a", "task_id": ["t1", "t2"],
    ...                               "split": "train", "repeat": 0, "passed": [1, 0]}))
    >>> checked.frame["passed"].tolist(), checked.frame["attempt"].tolist()  # coerced, defaults
    ([True, False], [0, 0])
    """
    if isinstance(trials, Checked):
        return trials
    return Checked(*_checked(trials))


def checked_trials(trials: pd.DataFrame | Checked) -> pd.DataFrame:
    """The checked frame of :func:`check` (``trials`` itself when it was in the contracted
    dtypes).

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": "a", "task_id": ["t1", "t2"], "split": "train",
    ...                   "repeat": 0, "passed": [1, 0]})
    >>> frame = checked_trials(t)
    >>> str(frame["passed"].dtype), checked_trials(frame) is frame
    ('bool', True)
    """
    return check(trials).frame


def checked_slots(trials: pd.DataFrame | Checked) -> Slots:
    """The slots of :func:`check` (:func:`encode_slots`), factorizing the key's text
    columns once for the check and the encoding.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": ["p", "c"], "task_id": "t1", "split": "train",
    ...                   "repeat": 0, "passed": [0, 1]})
    >>> slots = checked_slots(t)
    >>> list(slots.candidates), slots.candidate.tolist(), slots.passed.tolist()
    (['p', 'c'], [0, 1], [False, True])
    """
    return check(trials).slots


def _checked(trials: pd.DataFrame):
    """The checked frame of :func:`checked_trials` and the codes of its key's text columns."""
    if isinstance(trials, pd.DataFrame) and _in_contract_dtypes(trials):
        codes = _text_codes(trials)
        if schema.conforms(trials, "trials", codes=codes):
            return trials, codes
        trials = schema.validate(trials, "trials")
    else:
        trials = schema.as_trials(trials)
    return trials, _text_codes(trials)


def _text_codes(trials: pd.DataFrame) -> dict[str, tuple[np.ndarray, pd.Index]]:
    """``pandas.factorize`` of the key's text columns, as they are (no conversion)."""
    return {name: _factorize(trials[name]) for name in ("candidate", "split", "task_id")}


def _factorize(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """``pandas.factorize`` of a text column (codes in order of first appearance, -1 for a
    missing value), unique values as an object Index; a column holding one string
    throughout (the split of a frame read for one split) is not hashed."""
    if values.dtype != object:
        code, uniques = pd.factorize(values)
    else:
        array = values.to_numpy()
        if (len(array) and isinstance(array[0], str) and array[-1] == array[0]
                and (array == array[0]).all()):
            return np.zeros(len(array), dtype=np.intp), pd.Index(array[:1], dtype=object)
        code, uniques = pd.factorize(array)
    return code, pd.Index(np.asarray(uniques, dtype=object), dtype=object)


_CONTRACT_DTYPES = {"int": np.dtype("int64"), "float": np.dtype("float64"),
                    "bool": np.dtype("bool")}


def _in_contract_dtypes(frame: pd.DataFrame) -> bool:
    dtypes = frame.dtypes
    if not dtypes.index.is_unique:
        return False
    dtypes = dtypes.to_dict()
    for column in schema.FRAMES["trials"].columns:
        dtype = dtypes.get(column.name)
        if dtype is None:
            return False
        if column.kind == "text":
            if not (dtype == object or pd.api.types.is_string_dtype(dtype)):
                return False
        elif dtype != _CONTRACT_DTYPES[column.kind]:
            return False
    return all(dtypes.get(column.name, _CONTRACT_DTYPES["float"]) == _CONTRACT_DTYPES["float"]
               for column in schema.FRAMES["trials"].optional)



# ------------------------------------------------------------------------------ slots

@dataclass(frozen=True)
class Slots:
    """One entry per (candidate, split, task, repeat) slot, sorted by that key.

    ``attempts`` counts a slot's attempts and ``last_attempt`` is the highest attempt
    number; ``valid`` says an attempt with ``infra_ok`` exists; ``passed`` and ``activated`` are
    those of the slot's scoring attempt (its first valid one) and False when not valid;
    when the trials carry scores that are all 0 or 1, ``passed`` is the score's. ``score``
    is the scoring attempt's score (0 when not valid) when the trials carry graded scores
    (:func:`gsme.schema.graded`), else None: the values are ``passed``.
    ``source`` codes (into ``sources``, which starts with ``candidates``) the candidate that
    really ran the scoring attempt: ``borrowed_from`` when the row was borrowed, else the
    slot's own candidate. Two slots with the same source and repeat are the same trial.
    ``row`` is the position in the trials frame of the row shown (the scoring attempt).

    Examples
    --------
    Task t1's first attempt failed its infrastructure and was re-run:

    >>> slots = check(pd.DataFrame({"candidate": "a", "task_id": ["t1", "t1", "t2"],
    ...                             "split": "train", "repeat": 0, "attempt": [0, 1, 0],
    ...                             "infra_ok": [False, True, True],
    ...                             "passed": [False, True, False]})).slots
    >>> list(slots.tasks), slots.attempts.tolist(), slots.passed.tolist(), slots.row.tolist()
    (['t1', 't2'], [2, 1], [True, False], [1, 2])
    """

    candidates: pd.Index
    splits: pd.Index
    tasks: pd.Index
    sources: pd.Index
    candidate: np.ndarray
    split: np.ndarray
    task: np.ndarray
    repeat: np.ndarray
    attempts: np.ndarray
    last_attempt: np.ndarray
    valid: np.ndarray
    passed: np.ndarray
    activated: np.ndarray
    source: np.ndarray
    row: np.ndarray
    score: np.ndarray | None = None

    cand = _renamed.renamed_attribute("Slots", "cand", "candidate")

    def needs_rerun(self, max_reruns: int) -> np.ndarray:
        """Slots without a valid attempt that may still be re-run (the validity gate's rule)."""
        return ~self.valid & (self.attempts <= max_reruns)

    def locate(self, candidate, split, task_id, repeat) -> np.ndarray:
        """Index of the slot of each (candidate, split, task_id, repeat) given by name (arrays
        of one length), -1 where the trials have none."""
        codes = [names.get_indexer(pd.Index(np.asarray(values, dtype=object), dtype=object))
                 for names, values in ((self.candidates, candidate), (self.splits, split),
                                       (self.tasks, task_id))]
        repeat = np.asarray(repeat, dtype=np.int64)
        dims = (len(self.candidates), len(self.splits), len(self.tasks),
                int(self.repeat.max(initial=-1)) + 1)
        known = np.flatnonzero(np.logical_and.reduce([c >= 0 for c in codes])
                               & (repeat >= 0) & (repeat < dims[3]))
        keys = np.ravel_multi_index((self.candidate, self.split, self.task, self.repeat), dims)
        wanted = np.ravel_multi_index((*(c[known] for c in codes), repeat[known]), dims)
        at = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
        out = np.full(len(repeat), -1, dtype=np.int64)
        if len(keys):  # slots are sorted by their key
            out[known] = np.where(keys[at] == wanted, at, -1)
        return out


def encode_slots(trials: pd.DataFrame) -> Slots:
    """Reduce a validated trials frame to its slots (see :class:`Slots`).

    Examples
    --------
    >>> t = checked_trials(pd.DataFrame({"candidate": "a", "task_id": ["t2", "t1", "t2"],
    ...                                  "split": "train", "repeat": [1, 0, 0],
    ...                                  "passed": [1, 1, 0]}))
    >>> slots = encode_slots(t)  # sorted by slot; task codes in order of first appearance
    >>> list(slots.tasks), slots.task.tolist(), slots.repeat.tolist(), slots.row.tolist()
    (['t2', 't1'], [0, 0, 1], [0, 1, 0], [2, 0, 1])
    """
    return _encode(trials, _text_codes(trials))


def _encode(trials: pd.DataFrame, text: dict[str, tuple[np.ndarray, pd.Index]]) -> Slots:
    (cand, candidates), (split, splits), (task, tasks) = (
        text[name] for name in ("candidate", "split", "task_id"))
    repeat = trials["repeat"].to_numpy(np.int64)
    attempt = trials["attempt"].to_numpy(np.int64)
    infra_ok = trials["infra_ok"].to_numpy(bool)
    dims = (len(candidates), len(splits), len(tasks), int(repeat.max(initial=-1)) + 1)
    key = np.ravel_multi_index((cand, split, task, repeat), dims) if len(repeat) else repeat
    order = _by_slot_and_attempt(key, attempt, math.prod(dims))
    sorted_key = key[order]
    starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]]) if len(key) else key
    ends = np.r_[starts, len(key)][1:]
    first_valid = _first_valid(infra_ok[order], starts)
    valid = first_valid < ends
    rows = order[np.where(valid, first_valid, starts)]
    slot_cand = cand[rows]
    source, sources = _sources(trials["borrowed_from"].to_numpy(dtype=object), rows,
                               slot_cand, candidates)
    passed, score = _values(trials, rows, valid)
    return Slots(
        candidates=candidates,
        splits=splits,
        tasks=tasks,
        sources=sources,
        candidate=slot_cand,
        split=split[rows],
        task=task[rows],
        repeat=repeat[rows],
        attempts=ends - starts,
        last_attempt=attempt[order[ends - 1]],
        valid=valid,
        passed=passed,
        activated=trials["activated"].to_numpy(bool)[rows] & valid,
        source=source,
        row=rows,
        score=score,
    )


def _values(trials: pd.DataFrame, rows: np.ndarray, valid: np.ndarray):
    """The slots' ``passed`` and ``score`` (see :class:`Slots`) from their scoring ``rows``."""
    passed = trials["passed"].to_numpy(bool)[rows] & valid
    if not schema.carries_scores(trials):
        return passed, None
    value = schema.trial_values(trials)[rows]
    missing = valid & ~np.isfinite(value)
    if missing.any():
        raise schema.FrameError(
            f"trials carry scores, but {int(missing.sum())} scored trial(s) that passed have "
            "none (or a non-finite one); give every valid trial that passed a score, or drop "
            f"the 'score' column to judge 'passed':\n{trials.iloc[rows[missing][:10]]}")
    value = np.where(valid, value, 0.0)
    if not ((value == 0.0) | (value == 1.0)).all():
        return passed, value
    return value == 1.0, None


def _first_valid(ok: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Position of each slot's first valid attempt in rows sorted by slot and attempt (``ok``:
    the sorted rows' ``infra_ok``; ``starts``: each slot's first row), past the end when
    none is. A slot is scored by it; one without shows its first attempt."""
    first = starts.copy()
    late = ~ok[starts]  # the first attempt failed: look further (rare)
    if late.any():
        valid_at = np.flatnonzero(ok)
        first[late] = np.r_[valid_at, len(ok)][np.searchsorted(valid_at, starts[late])]
    return first


def _by_slot_and_attempt(key: np.ndarray, attempt: np.ndarray, n_keys: int) -> np.ndarray:
    """The order of rows by slot ``key``, then by attempt (one stable sort when it fits)."""
    n_attempts = int(attempt.max(initial=0)) + 1
    if n_keys * n_attempts < 2**62:
        return np.argsort(key * n_attempts + attempt, kind="stable")
    return np.lexsort((attempt, key))


def _sources(borrowed: np.ndarray, rows: np.ndarray, cand: np.ndarray, candidates: pd.Index):
    """Codes of the candidate that ran the trial of each slot (``rows``: the slots' rows of
    the ``borrowed_from`` column; ``cand``: the slots' candidate codes); names outside
    ``candidates`` appended."""
    source = cand.astype(np.int64)
    lent = pd.notna(borrowed)[rows]
    if not lent.any():
        return source, candidates
    lenders = borrowed[rows[lent]]
    code = candidates.get_indexer(pd.Index(lenders, dtype=object))
    source[lent] = code
    if (code >= 0).all():
        return source, candidates
    extra, others = pd.factorize(lenders[code < 0])
    source[np.flatnonzero(lent)[code < 0]] = len(candidates) + extra
    return source, candidates.append(pd.Index(others, dtype=object))


@dataclass(frozen=True)
class TaskCounts:
    """Per (candidate, split, task): repeats scored, valid and passed; sorted by ``key``.

    ``total`` sums the valid repeats' scores when the trials carry graded scores, else None.
    ``key`` orders the (candidate, split, task) codes of :class:`Slots`:
    (candidate · splits + split) · tasks + task.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": "a", "task_id": ["t1", "t1", "t2"], "split": "train",
    ...                   "repeat": [0, 1, 0], "passed": [1, 0, 1]})
    >>> counts = count_tasks(check(t).slots)
    >>> counts.key.tolist(), counts.n_valid.tolist(), counts.n_passed.tolist()
    ([0, 1], [2, 1], [1, 1])
    """

    key: np.ndarray
    n_slots: np.ndarray
    n_valid: np.ndarray
    n_passed: np.ndarray
    total: np.ndarray | None = None


def count_tasks(slots: Slots) -> TaskCounts:
    """Aggregate slots per (candidate, split, task) (see :class:`TaskCounts`).

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": ["p", "p", "c"], "task_id": ["t1", "t2", "t1"],
    ...                   "split": "train", "repeat": 0, "passed": [1, 0, 1]})
    >>> counts = count_tasks(check(t).slots)
    >>> counts.key.tolist(), counts.n_passed.tolist()  # p: t1, t2; c: t1
    ([0, 1, 2], [1, 0, 1])
    """
    key = _task_key(slots, slots.candidate, slots.split, slots.task)
    if not len(key):
        return TaskCounts(key, key, key, key, None if slots.score is None else key * 0.0)
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    return TaskCounts(
        key=key[starts],
        n_slots=np.diff(np.r_[starts, len(key)]),
        n_valid=np.add.reduceat(slots.valid.astype(np.int64), starts),
        n_passed=np.add.reduceat(slots.passed.astype(np.int64), starts),
        total=None if slots.score is None else np.add.reduceat(slots.score, starts),
    )


def task_values(counts: TaskCounts) -> np.ndarray:
    """Each task's summed values: the graded scores' ``total``, else ``n_passed``.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": "a", "task_id": ["t1", "t1", "t2"], "split": "train",
    ...                   "repeat": [0, 1, 0], "passed": [1, 1, 1], "score": [0.5, 1.0, 0.25]})
    >>> task_values(count_tasks(check(t).slots)).tolist()
    [1.5, 0.25]
    >>> task_values(count_tasks(check(t.drop(columns="score")).slots)).tolist()
    [2, 1]
    """
    return counts.n_passed if counts.total is None else counts.total


def _task_key(slots: Slots, cand, split, task) -> np.ndarray:
    """Integer key ordering (candidate, split, task) codes: a :class:`TaskCounts` ``key``."""
    cand, split, task = (np.asarray(a, dtype=np.int64) for a in (cand, split, task))
    return (cand * len(slots.splits) + split) * len(slots.tasks) + task


def decode_tasks(slots: Slots, key: np.ndarray) -> pd.DataFrame:
    """The ``candidate, task_id, split`` names behind :class:`TaskCounts` keys.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": ["p", "c"], "task_id": ["t1", "t2"], "split": "train",
    ...                   "repeat": 0, "passed": [1, 0]})
    >>> slots = check(t).slots
    >>> decode_tasks(slots, count_tasks(slots).key)
      candidate task_id  split
    0         p      t1  train
    1         c      t2  train
    """
    n_tasks, n_splits = len(slots.tasks), len(slots.splits)
    return pd.DataFrame(
        {
            "candidate": text(slots.candidates.to_numpy()[key // (n_splits * n_tasks)]),
            "task_id": text(slots.tasks.to_numpy()[key % n_tasks]),
            "split": text(slots.splits.to_numpy()[(key // n_tasks) % n_splits]),
        }
    )


# ------------------------------------------------------------------------------ pairing

@dataclass(frozen=True)
class Paired:
    """The paired tasks of many pairs: one entry per (pair, paired task), sorted by pair.

    ``n_either`` (one per pair) counts the tasks with trials on either side, paired or not.
    ``child_total`` and ``parent_total`` sum the valid repeats' graded scores (None when
    the values are ``passed``: then the ``*_passed`` counts are summed).

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": ["p", "p", "c", "c"], "task_id": ["t1", "t2"] * 2,
    ...                   "split": "train", "repeat": 0, "passed": [0, 1, 1, 1]})
    >>> slots = check(t).slots
    >>> paired = pair_tasks(slots, count_tasks(slots), ["c"], ["p"], "train")
    >>> paired.pair.tolist(), paired.child_passed.tolist(), paired.parent_passed.tolist()
    ([0, 0], [1, 1], [0, 1])
    >>> paired.graded
    False
    """

    n_pairs: int
    pair: np.ndarray
    child_valid: np.ndarray
    child_passed: np.ndarray
    parent_valid: np.ndarray
    parent_passed: np.ndarray
    n_either: np.ndarray
    child_total: np.ndarray | None = None
    parent_total: np.ndarray | None = None

    @property
    def graded(self) -> bool:
        return self.child_total is not None


def pair_tasks(slots: Slots, counts: TaskCounts, child, parent, split: str) -> Paired:
    """Pair child and parent per task on ``split`` over all their repeats, for many pairs.

    ``child`` and ``parent`` are candidate names, one per pair; a task is paired when both
    have a valid repeat of it.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": ["p", "p", "c", "d"], "task_id": ["t1", "t2", "t1", "t3"],
    ...                   "split": "train", "repeat": 0, "passed": [0, 1, 1, 1]})
    >>> slots = check(t).slots
    >>> paired = pair_tasks(slots, count_tasks(slots), ["c", "d"], ["p", "p"], "train")
    >>> paired.pair.tolist(), paired.n_either.tolist()  # d shares no task with p
    ([0], [2, 3])
    """
    n_pairs = len(child)
    split_code = slots.splits.get_indexer([split])[0]
    child_code = slots.candidates.get_indexer(pd.Index(child, dtype=object))
    parent_code = slots.candidates.get_indexer(pd.Index(parent, dtype=object))
    child_lo, child_hi = _task_block(slots, counts, child_code, split_code)
    parent_lo, parent_hi = _task_block(slots, counts, parent_code, split_code)

    lengths = child_hi - child_lo
    pair = np.repeat(np.arange(n_pairs), lengths)
    row = np.repeat(child_lo - (np.cumsum(lengths) - lengths), lengths) + np.arange(len(pair))
    task = counts.key[row] % max(len(slots.tasks), 1)
    wanted = _task_key(slots, parent_code[pair], split_code, task)
    pos = np.minimum(np.searchsorted(counts.key, wanted), max(len(counts.key) - 1, 0))
    found = np.zeros(len(pair), dtype=bool)
    if len(counts.key):
        found = (parent_code[pair] >= 0) & (counts.key[pos] == wanted)
    paired = found & (counts.n_valid[row] > 0) & (counts.n_valid[pos] > 0)
    n_either = lengths + (parent_hi - parent_lo) - np.bincount(pair[found], minlength=n_pairs)
    pair, row, pos = pair[paired], row[paired], pos[paired]
    totals = {} if counts.total is None else {"child_total": counts.total[row],
                                               "parent_total": counts.total[pos]}
    return Paired(n_pairs, pair, counts.n_valid[row], counts.n_passed[row],
                  counts.n_valid[pos], counts.n_passed[pos], n_either.astype(np.int64),
                  **totals)


def _task_block(slots: Slots, counts: TaskCounts, codes: np.ndarray, split_code: int):
    """Row range [lo, hi) of ``counts`` holding each candidate's tasks on the split."""
    first = _task_key(slots, codes, split_code, 0)
    lo = np.searchsorted(counts.key, first)
    hi = np.searchsorted(counts.key, first + len(slots.tasks))
    absent = (codes < 0) | (split_code < 0)
    return np.where(absent, 0, lo), np.where(absent, 0, hi)


def describe(paired: Paired) -> dict[str, np.ndarray]:
    """Per pair: the paired-task summary the significance test needs.

    Returns
    -------
    dict of ndarray
        Columns by name, one entry per pair: ``n_tasks`` (tasks with a valid repeat on both
        sides), ``n_dropped`` (tasks with trials on either side that could not be paired),
        ``n_changed`` (paired tasks whose rate differs), ``k`` (most valid repeats of any
        paired task), ``looks`` (1), ``rate_parent``, ``rate_child`` (mean per-task rates,
        fractions; mean per-task scores when graded), ``mean_d`` and ``sd_d`` (mean and
        ddof=1 sd of the per-task differences, rounded to 12 decimals so that equal ones
        compare equal; sd is exactly 0 when all differences are equal).

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c"], 3), "task_id": ["t1", "t2", "t3"] * 2,
    ...                   "split": "train", "repeat": 0, "passed": [0, 1, 1, 1, 1, 0]})
    >>> slots = check(t).slots
    >>> d = describe(pair_tasks(slots, count_tasks(slots), ["c"], ["p"], "train"))
    >>> int(d["n_tasks"][0]), int(d["n_changed"][0]), float(d["mean_d"][0]), float(d["sd_d"][0])
    (3, 2, 0.0, 1.0)
    """
    n_pairs, pair = paired.n_pairs, paired.pair
    rate_child, rate_parent = paired_rates(paired)
    diff = np.round(rate_child - rate_parent, 12)  # equal differences compare equal
    n = np.bincount(pair, minlength=n_pairs)
    equal = np.zeros(n_pairs, dtype=bool)  # all of a pair's differences are equal
    k = np.zeros(n_pairs, dtype=np.int64)
    if len(pair):  # ``pair`` is sorted: each pair's entries are one block
        starts = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
        present = pair[starts]
        equal[present] = np.minimum.reduceat(diff, starts) == np.maximum.reduceat(diff, starts)
        k[present] = np.maximum.reduceat(np.maximum(paired.child_valid, paired.parent_valid),
                                         starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_d = np.bincount(pair, diff, minlength=n_pairs) / n
        squares = np.bincount(pair, (diff - mean_d[pair]) ** 2, minlength=n_pairs)
        sd_d = np.where(n >= 2, np.sqrt(squares / (n - 1)), np.nan)
        sd_d = np.where((n >= 2) & equal, 0.0, sd_d)
        return {
            "n_tasks": n.astype(np.int64),
            "n_dropped": (paired.n_either - n).astype(np.int64),
            "n_changed": np.bincount(pair, diff != 0, minlength=n_pairs).astype(np.int64),
            "k": k,
            "looks": np.ones(n_pairs, dtype=np.int64),
            "rate_parent": np.bincount(pair, rate_parent, minlength=n_pairs) / n,
            "rate_child": np.bincount(pair, rate_child, minlength=n_pairs) / n,
            "mean_d": mean_d,
            "sd_d": sd_d,
        }


def paired_rates(paired: Paired) -> tuple[np.ndarray, np.ndarray]:
    """Per paired task: the child's and the parent's mean value over their valid repeats.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": np.repeat(["p", "c"], 4), "split": "train",
    ...                   "task_id": ["t1", "t1", "t2", "t2"] * 2, "repeat": [0, 1] * 4,
    ...                   "passed": [0, 1, 1, 1, 1, 1, 0, 1]})
    >>> slots = check(t).slots
    >>> child, parent = paired_rates(pair_tasks(slots, count_tasks(slots), ["c"], ["p"], "train"))
    >>> child.tolist(), parent.tolist()
    ([1.0, 0.5], [0.5, 1.0])
    """
    if paired.graded:
        return (paired.child_total / paired.child_valid,
                paired.parent_total / paired.parent_valid)
    return (paired.child_passed / paired.child_valid,
            paired.parent_passed / paired.parent_valid)

