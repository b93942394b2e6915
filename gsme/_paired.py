"""Vectorised core shared by :mod:`gsme.stats`, :mod:`gsme.gates` and :mod:`gsme.sequential`.

A trials frame is reduced to integer-coded *slots* (one per candidate, split, task and
``repeat``), then to per-task counts, then paired child-versus-parent task by task
(:class:`Paired`: one entry per paired task of every pair), then summarised and tested
per pair. What is averaged is each trial's value (:func:`gsme.schema.trial_values`):
``passed`` as integer counts, or, when the trials carry graded scores, their sums. Every step is a NumPy array operation: no Python loop runs per trial, per task or
per pair (the exact sign-flip test loops over task *ranks*, not tasks, see
:func:`sign_flip_tails`).

The test of one look is one-sided at a nominal level on each side: ``credit`` when the
upper p (``p_one_sided``, the p of a gain) is at most the level, ``cull`` when the lower p
is. The fixed design has one look
at level ``config.alpha``; the adaptive design (:mod:`gsme.sequential`) gives every look its
own level from the group-sequential boundaries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special
from scipy import stats as sps

from gsme import schema
from gsme.schema import PAIRED_COLUMNS
from gsme.settings import MAX_EXACT_REPEATS, GateConfig

REFERENCES = ("normal", "t")
_DP_CELLS = 1 << 24  # float64 cells per chunk of the sign-flip recursion (128 MiB)


def checked_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """Validate ``trials`` at a public boundary, normalising it only when it must.

    A frame already in the contracted dtypes (text as object or a pandas string dtype) is
    checked on the codes of its key's text columns, no column converted, and returned as
    is (no copy); anything else goes through :func:`gsme.schema.as_trials` (defaults,
    dtype coercion).
    """
    return _checked(trials)[0]


def checked_slots(trials: pd.DataFrame) -> Slots:
    """Validate ``trials`` at a public boundary (:func:`checked_trials`) and reduce it to its
    slots (:func:`encode_slots`), factorizing the key's text columns once for both."""
    return _encode(*_checked(trials))


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


def text(values) -> pd.Series:
    """``values`` as an object-dtype Series (pandas would infer its ``str`` dtype)."""
    return pd.Series(np.asarray(values, dtype=object), dtype=object)


def check_choice(name: str, value, allowed) -> None:
    """Raise a ValueError naming ``name`` unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")


def check_int(name: str, value, minimum: int) -> int:
    """Return ``value`` as int, or raise naming ``name`` when it is not a whole number ≥ minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def check_finite(name: str, value) -> np.ndarray:
    """``value`` as a float64 array, or raise naming ``name`` when it holds NaN or ±inf (or
    is no number)."""
    try:
        values = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not np.isfinite(values).all():
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return values


def gate_config(config) -> GateConfig:
    """``config`` when it is a :class:`GateConfig`; the defaults when None; else a TypeError."""
    if config is None:
        return GateConfig()
    if not isinstance(config, GateConfig):
        raise TypeError(f"config must be a gsme.settings.GateConfig, got {type(config).__name__}")
    return config


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
    """

    candidates: pd.Index
    splits: pd.Index
    tasks: pd.Index
    sources: pd.Index
    cand: np.ndarray
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
        keys = np.ravel_multi_index((self.cand, self.split, self.task, self.repeat), dims)
        wanted = np.ravel_multi_index((*(c[known] for c in codes), repeat[known]), dims)
        at = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
        out = np.full(len(repeat), -1, dtype=np.int64)
        if len(keys):  # slots are sorted by their key
            out[known] = np.where(keys[at] == wanted, at, -1)
        return out


def encode_slots(trials: pd.DataFrame) -> Slots:
    """Reduce a validated trials frame to its slots (see :class:`Slots`)."""
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
    source, sources = _sources(trials["borrowed_from"].to_numpy(dtype=object), rows, cand,
                               candidates)
    passed, score = _values(trials, rows, valid)
    return Slots(
        candidates=candidates,
        splits=splits,
        tasks=tasks,
        sources=sources,
        cand=cand[rows],
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
    the ``borrowed_from`` column and the candidate codes); names outside ``candidates``
    appended."""
    source = cand[rows].astype(np.int64)
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
    """

    key: np.ndarray
    n_slots: np.ndarray
    n_valid: np.ndarray
    n_passed: np.ndarray
    total: np.ndarray | None = None


def count_tasks(slots: Slots) -> TaskCounts:
    """Aggregate slots per (candidate, split, task), keyed by :func:`task_key`."""
    key = task_key(slots, slots.cand, slots.split, slots.task)
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
    """Each task's summed values: the graded scores' ``total``, else ``n_passed``."""
    return counts.n_passed if counts.total is None else counts.total


def task_key(slots: Slots, cand, split, task) -> np.ndarray:
    """Integer key ordering (candidate, split, task) codes as :func:`count_tasks` does."""
    cand, split, task = (np.asarray(a, dtype=np.int64) for a in (cand, split, task))
    return (cand * len(slots.splits) + split) * len(slots.tasks) + task


def decode_tasks(slots: Slots, key: np.ndarray) -> pd.DataFrame:
    """The ``candidate, task_id, split`` names behind :func:`task_key` keys."""
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
    """Pair child and parent per task on ``split`` over all their repeats, for many pairs."""
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
    wanted = task_key(slots, parent_code[pair], split_code, task)
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
    first = task_key(slots, codes, split_code, 0)
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
    """
    n_pairs, pair = paired.n_pairs, paired.pair
    rate_child, rate_parent = task_rates(paired)
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


def task_rates(paired: Paired) -> tuple[np.ndarray, np.ndarray]:
    """Per paired task: the child's and the parent's mean value over their valid repeats."""
    if paired.graded:
        return (paired.child_total / paired.child_valid,
                paired.parent_total / paired.parent_valid)
    return (paired.child_passed / paired.child_valid,
            paired.parent_passed / paired.parent_valid)


# ------------------------------------------------------------------------------ the test

def two_sided_p(z, df=None, reference: str = "normal"):
    """Two-sided p of ``z`` against the standard normal, or Student t with ``df``."""
    z = np.abs(np.asarray(z, dtype=np.float64))
    if reference == "t":
        return 2.0 * sps.t.sf(z, df)
    return 2.0 * sps.norm.sf(z)


def significance(described: dict[str, np.ndarray], paired: Paired, *,
                 config: GateConfig) -> dict[str, np.ndarray]:
    """The one-look significance test of every pair of :func:`describe` output.

    The statistic is z = mean(d) / (sd(d) / √n) (Student's paired t). Its one-sided p-values
    come from the reference of ``config`` (normal, or t with n − 1 df), or from the exact
    sign-flip distribution of the task differences when fewer than ``config.exact_below``
    tasks changed (also, whatever ``exact_below``, when every difference is equal and
    non-zero, sd = 0: only the all-plus and all-minus flips reach the observed sum).
    :func:`decide` compares these p-values with the levels of each pair's look.

    Parameters
    ----------
    described : dict of ndarray
        :func:`describe` of ``paired``.
    paired : Paired
    config : GateConfig

    Returns
    -------
    dict of ndarray
        The input's columns except ``mean_d, sd_d``, with ``delta_pp``, ``se_pp``, ``z``,
        ``p_value`` (two-sided), ``p_one_sided`` (upper: the p of a gain), ``p_lower``,
        ``exact`` (bool) and ``reason``.
    """
    n = described["n_tasks"].astype(np.float64)
    changed = described["n_changed"]
    mean, sd = described["mean_d"], described["sd_d"]
    df = np.where(n >= 2, n - 1, np.nan)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        se = sd / np.sqrt(n)
        z = mean / se
        if config.reference == "t":
            p_up, p_low = sps.t.sf(z, df), sps.t.cdf(z, df)
        else:
            p_up, p_low = sps.norm.sf(z), sps.norm.cdf(z)
        p = two_sided_p(z, df, config.reference)
        unchanged = (n >= 1) & (changed == 0)
        flipped = (n >= 2) & (sd == 0) & (mean != 0)
        exact = (changed > 0) & (changed < config.exact_below) & ~flipped
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
               reason=_reasons(n, changed, config, unchanged, flipped, exact))
    return out


def decide(tested: dict[str, np.ndarray], *, level, cull_level=None,
           config: GateConfig) -> np.ndarray:
    """Each pair's decision at its look, from :func:`significance` output.

    ``credit`` exactly when n ≥ ``config.min_tasks``, some task changed and ``p_one_sided``
    is at most ``level``; else ``cull`` when ``p_lower`` is at most ``cull_level`` (default
    ``level``; 0: never cull); else ``inconclusive``. Levels are nominal one-sided levels,
    one per pair or one for all, whichever reference gave the p-values.

    Returns
    -------
    ndarray of object
        ``credit``, ``cull`` or ``inconclusive``, one per pair.
    """
    n = tested["n_tasks"]
    level = np.broadcast_to(np.asarray(level, dtype=np.float64), n.shape)
    cull_level = level if cull_level is None else np.broadcast_to(
        np.asarray(cull_level, dtype=np.float64), n.shape)
    unchanged = (n >= 1) & (tested["n_changed"] == 0)
    tolerance = 1.0 + 1e-12  # exact p-values are dyadic; a level equal to one still passes
    up = (tested["p_one_sided"] <= level * tolerance) & ~unchanged
    down = (tested["p_lower"] <= cull_level * tolerance) & ~unchanged
    enough = n >= config.min_tasks
    decision = np.where(enough & up, "credit", np.where(enough & down, "cull", "inconclusive"))
    return decision.astype(object)


def _reasons(n, changed, config: GateConfig, unchanged, flipped, exact) -> np.ndarray:
    reason = np.full(len(n), None, dtype=object)
    count = n.astype(np.int64).astype(str).astype(object)
    moved = changed.astype(str).astype(object)
    reason[exact] = ("exact sign-flip p: only " + moved[exact] + " of " + count[exact]
                     + f" paired tasks changed (exact_below={config.exact_below})")
    reason[flipped] = "all " + count[flipped] + " task differences are equal: exact sign-flip p"
    reason[unchanged] = "no paired task changed its pass rate"
    few = (n < config.min_tasks) & (n > 0)
    reason[few] = (
        "only " + count[few] + f" paired task(s), fewer than min_tasks={config.min_tasks}"
    )
    reason[n == 0] = "no task has a valid repeat on both sides"
    return reason


# ------------------------------------------------------------------------------ exact test

def exact_tails(paired: Paired, pairs: np.ndarray):
    """Exact sign-flip p-values of the summed task differences of the given ``pairs``.

    Under the null, child and parent are exchangeable within a task, so each difference
    d_i is as likely as −d_i. Over the 2^m sign flips of the m non-zero differences, the
    paired t statistic is increasing in S = Σ d_i (Σ d_i² is fixed), so its exact p-values
    are those of S. Differences are turned into integers (a common denominator of the
    pair's valid repeat counts, then divided by their gcd) and the distribution of S is
    built by :func:`sign_flip_tails`; graded scores' differences are not integers, and
    their flips are enumerated (:func:`graded_tails`).

    Returns
    -------
    tuple of ndarray
        ``(p_upper, p_lower, p_two_sided)``: P(S* ≥ S), P(S* ≤ S) and P(|S*| ≥ |S|), one
        per entry of ``pairs``.
    """
    if paired.graded:
        return graded_tails(paired, pairs)
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
"""Most changed tasks whose 2^m sign flips :func:`graded_tails` enumerates."""


def graded_tails(paired: Paired, pairs: np.ndarray):
    """:func:`exact_tails` of graded scores: every sign flip of the m changed tasks' rounded
    differences enumerated (2^m sums, m at most :data:`MAX_GRADED_FLIPS`), pairs with the
    same m at once. Sums within 1e-9 · Σ|d_i| of the observed one count as reaching it.
    """
    mask = np.isin(paired.pair, pairs)
    rate_child, rate_parent = task_rates(paired)
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
        P(|S*| ≥ |S|) with S the observed sum (all 1 for a group with no value).

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


# ------------------------------------------------------------------------------ one look

def compare(slots: Slots, pairs: pd.DataFrame, *, split: str, config: GateConfig) -> pd.DataFrame:
    """The one-look paired test for every (candidate, parent) row of ``pairs``.

    Returns
    -------
    DataFrame
        :data:`gsme.schema.PAIRED_COLUMNS`, one row per pair, in the order of ``pairs``.
    """
    child = pairs["candidate"].to_numpy(dtype=object)
    parent = pairs["parent"].to_numpy(dtype=object)
    paired = pair_tasks(slots, count_tasks(slots), child, parent, split)
    tested = significance(describe(paired), paired, config=config)
    tested["decision"] = decide(tested, level=config.alpha, config=config)
    return paired_frame(child, parent, split, tested)


def paired_frame(child, parent, split: str, tested: dict[str, np.ndarray]) -> pd.DataFrame:
    """The :data:`gsme.schema.PAIRED_COLUMNS` frame of tested pairs: one row per ``child, parent``, the
    statistics from :func:`significance` columns and a ``decision`` (:func:`decide`)."""
    columns = {"candidate": text(child), "parent": text(parent),
               "split": text([split] * len(child))}
    for name in PAIRED_COLUMNS[3:]:
        columns[name] = text(tested[name]) if name in ("decision", "reason") else tested[name]
    return pd.DataFrame(columns)
