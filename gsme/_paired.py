"""Vectorised core shared by :mod:`gsme.stats` and :mod:`gsme.gates`.

A trials frame is reduced to integer-coded *slots* (one per candidate, split, task and
``repeat``), then to per-task counts, then paired child-versus-parent task by task. Every
step is a NumPy array operation: no Python loop runs per trial, per task or per pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special
from scipy import stats as sps

from gsme import schema
from gsme.settings import GateConfig

REFERENCES = ("normal", "t")
PAIRED_COLUMNS = [
    "candidate", "parent", "split", "n_tasks", "n_dropped", "n_changed", "k", "looks",
    "rate_parent", "rate_child", "delta_pp", "se_pp", "z", "p_value", "decision", "reason",
]


def checked_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """Validate ``trials`` at a public boundary, normalising it only when it must.

    A frame already in the contracted dtypes is validated and returned as is (no copy);
    anything else goes through :func:`gsme.schema.as_trials` (defaults, dtype coercion).
    """
    if isinstance(trials, pd.DataFrame) and _in_contract_dtypes(trials):
        return schema.validate(trials, "trials")
    return schema.as_trials(trials)


def _in_contract_dtypes(frame: pd.DataFrame) -> bool:
    expected = {"int": "int64", "float": "float64", "bool": "bool"}
    for column in schema.FRAMES["trials"].columns:
        if column.name not in frame.columns:
            return False
        dtype = frame[column.name].dtype
        if column.kind == "text":
            if not (dtype == object or pd.api.types.is_string_dtype(dtype)):
                return False
        elif str(dtype) != expected[column.kind]:
            return False
    return True


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


def gate_config(config) -> GateConfig:
    """``config`` when it is a :class:`GateConfig`; the defaults when None; else a TypeError."""
    if config is None:
        return GateConfig()
    if not isinstance(config, GateConfig):
        raise TypeError(f"config must be a gsme.settings.GateConfig, got {type(config).__name__}")
    return config


@dataclass(frozen=True)
class Slots:
    """One entry per (candidate, split, task, repeat) slot, sorted by that key.

    ``attempts`` counts a slot's attempts and ``last_attempt`` is the highest attempt
    number; ``valid`` says an attempt with ``infra_ok`` exists; ``passed`` and ``activated`` are
    those of the slot's scoring attempt (its first valid one) and False when not valid.
    """

    candidates: pd.Index
    splits: pd.Index
    tasks: pd.Index
    cand: np.ndarray
    split: np.ndarray
    task: np.ndarray
    repeat: np.ndarray
    attempts: np.ndarray
    last_attempt: np.ndarray
    valid: np.ndarray
    passed: np.ndarray
    activated: np.ndarray


def encode_slots(trials: pd.DataFrame) -> Slots:
    """Reduce a validated trials frame to its slots (see :class:`Slots`)."""
    cand, candidates = pd.factorize(trials["candidate"].to_numpy(dtype=object))
    split, splits = pd.factorize(trials["split"].to_numpy(dtype=object))
    task, tasks = pd.factorize(trials["task_id"].to_numpy(dtype=object))
    repeat = trials["repeat"].to_numpy(np.int64)
    attempt = trials["attempt"].to_numpy(np.int64)
    infra_ok = trials["infra_ok"].to_numpy(bool)
    dims = (len(candidates), len(splits), len(tasks), int(repeat.max(initial=-1)) + 1)
    key = np.ravel_multi_index((cand, split, task, repeat), dims) if len(repeat) else repeat
    if attempt.max(initial=0) == 0:
        order = np.argsort(key, kind="stable")
    else:  # the first valid attempt of each slot sorts first within it
        order = np.lexsort((attempt, ~infra_ok, key))
    sorted_key = key[order]
    starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]]) if len(key) else key
    rows = order[starts]
    valid = infra_ok[rows]
    codes = np.unravel_index(sorted_key[starts], dims) if len(key) else (key,) * 4
    return Slots(
        candidates=pd.Index(candidates, dtype=object),
        splits=pd.Index(splits, dtype=object),
        tasks=pd.Index(tasks, dtype=object),
        cand=codes[0],
        split=codes[1],
        task=codes[2],
        repeat=codes[3],
        attempts=np.diff(np.r_[starts, len(key)]),
        last_attempt=(np.maximum.reduceat(attempt[order], starts) if len(key)
                      else np.zeros(0, dtype=np.int64)),
        valid=valid,
        passed=trials["passed"].to_numpy(bool)[rows] & valid,
        activated=trials["activated"].to_numpy(bool)[rows] & valid,
    )


@dataclass(frozen=True)
class TaskCounts:
    """Per (candidate, split, task): repeats scored, valid and passed; sorted by ``key``."""

    key: np.ndarray
    n_slots: np.ndarray
    n_valid: np.ndarray
    n_passed: np.ndarray


def count_tasks(slots: Slots) -> TaskCounts:
    """Aggregate slots per (candidate, split, task), keyed by :func:`task_key`."""
    key = task_key(slots, slots.cand, slots.split, slots.task)
    if not len(key):
        return TaskCounts(key, key, key, key)
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    return TaskCounts(
        key=key[starts],
        n_slots=np.diff(np.r_[starts, len(key)]),
        n_valid=np.add.reduceat(slots.valid.astype(np.int64), starts),
        n_passed=np.add.reduceat(slots.passed.astype(np.int64), starts),
    )


def task_key(slots: Slots, cand, split, task) -> np.ndarray:
    """Integer key ordering (candidate, split, task) codes as :func:`count_tasks` does."""
    cand, split, task = (np.asarray(a, dtype=np.int64) for a in (cand, split, task))
    return (cand * len(slots.splits) + split) * len(slots.tasks) + task


def compare_pairs(slots: Slots, counts: TaskCounts, child, parent, split: str) -> pd.DataFrame:
    """Pair child and parent per task on ``split``, for many pairs at once.

    Returns
    -------
    DataFrame
        One row per pair: ``n_tasks`` (tasks with a valid repeat on both sides),
        ``n_dropped`` (tasks with trials on either side that could not be paired),
        ``n_changed`` (paired tasks whose rate differs), ``k`` (most valid repeats of any
        paired task), ``rate_parent``, ``rate_child`` (mean per-task rates, fractions),
        ``mean_d`` and ``sd_d`` (mean and ddof=1 sd of the per-task differences; sd is
        exactly 0 when all differences are equal).
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
    wanted = task_key(slots, parent_code[pair], split_code, task)
    pos = np.minimum(np.searchsorted(counts.key, wanted), max(len(counts.key) - 1, 0))
    found = np.zeros(len(pair), dtype=bool)
    if len(counts.key):
        found = (parent_code[pair] >= 0) & (counts.key[pos] == wanted)
    paired = found & (counts.n_valid[row] > 0) & (counts.n_valid[pos] > 0)
    n_either = lengths + (parent_hi - parent_lo) - np.bincount(pair[found], minlength=n_pairs)

    pair, row, pos = pair[paired], row[paired], pos[paired]
    rate_child = counts.n_passed[row] / counts.n_valid[row]
    rate_parent = counts.n_passed[pos] / counts.n_valid[pos]
    diff = np.round(rate_child - rate_parent, 12)  # equal differences compare equal
    n = np.bincount(pair, minlength=n_pairs)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_d = np.bincount(pair, diff, minlength=n_pairs) / n
        squares = np.bincount(pair, (diff - mean_d[pair]) ** 2, minlength=n_pairs)
        sd_d = np.where(n >= 2, np.sqrt(squares / (n - 1)), np.nan)
        low = np.full(n_pairs, np.inf)
        high = np.full(n_pairs, -np.inf)
        np.minimum.at(low, pair, diff)
        np.maximum.at(high, pair, diff)
        sd_d = np.where((n >= 2) & (low == high), 0.0, sd_d)
        k = np.zeros(n_pairs, dtype=np.int64)
        np.maximum.at(k, pair, np.maximum(counts.n_valid[row], counts.n_valid[pos]))
        return pd.DataFrame(
            {
                "n_tasks": n.astype(np.int64),
                "n_dropped": (n_either - n).astype(np.int64),
                "n_changed": np.bincount(pair, diff != 0, minlength=n_pairs).astype(np.int64),
                "k": k,
                "looks": np.ones(n_pairs, dtype=np.int64),
                "rate_parent": np.bincount(pair, rate_parent, minlength=n_pairs) / n,
                "rate_child": np.bincount(pair, rate_child, minlength=n_pairs) / n,
                "mean_d": mean_d,
                "sd_d": sd_d,
            }
        )


def _task_block(slots: Slots, counts: TaskCounts, codes: np.ndarray, split_code: int):
    """Row range [lo, hi) of ``counts`` holding each candidate's tasks on the split."""
    first = task_key(slots, codes, split_code, 0)
    lo = np.searchsorted(counts.key, first)
    hi = np.searchsorted(counts.key, first + len(slots.tasks))
    absent = (codes < 0) | (split_code < 0)
    return np.where(absent, 0, lo), np.where(absent, 0, hi)


def two_sided_p(z, df=None, reference: str = "normal"):
    """Two-sided p of ``z`` against the standard normal, or Student t with ``df``."""
    z = np.abs(np.asarray(z, dtype=np.float64))
    if reference == "t":
        return 2.0 * sps.t.sf(z, df)
    return 2.0 * sps.norm.sf(z)


def add_significance(pairs: pd.DataFrame, *, config: GateConfig) -> pd.DataFrame:
    """Add the significance test to :func:`compare_pairs` output.

    Returns
    -------
    DataFrame
        The input's columns except ``mean_d, sd_d``, with ``delta_pp``, ``se_pp``, ``z``,
        ``p_value``, ``decision`` (credit / cull / inconclusive) and ``reason``.
    """
    n = pairs["n_tasks"].to_numpy(np.float64)
    mean, sd = pairs["mean_d"].to_numpy(), pairs["sd_d"].to_numpy()
    z_crit, reference, min_tasks = config.z_crit, config.reference, config.min_tasks
    alpha = 2.0 * sps.norm.sf(z_crit)
    df = np.where(n >= 2, n - 1, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = sd / np.sqrt(n)
        z = mean / se
        p = two_sided_p(z, df, reference)
        crit = z_crit if reference == "normal" else sps.t.isf(alpha / 2.0, df)
        constant = (n >= 2) & (sd == 0)
        unchanged = constant & (mean == 0)
        flipped = constant & (mean != 0)
        # all |d_i| equal: only the all-plus and all-minus sign flips reach |sum d|
        exact_p = np.exp2(1.0 - n)
        z = np.where(unchanged, 0.0, z)
        p = np.where(unchanged, 1.0, p)
        z = np.where(flipped, np.sign(mean) * -special.ndtri_exp((-n) * np.log(2.0)), z)
        p = np.where(flipped, exact_p, p)
        significant = np.where(flipped, exact_p <= alpha, np.abs(z) >= crit)
    enough = n >= min_tasks
    decision = np.where(
        enough & significant & (mean > 0), "credit",
        np.where(enough & significant & (mean < 0), "cull", "inconclusive"),
    )
    reason = _reasons(n, min_tasks, unchanged, flipped)
    out = pairs.drop(columns=["mean_d", "sd_d"])
    out["delta_pp"] = 100.0 * mean
    out["se_pp"] = 100.0 * se
    out["z"] = z
    out["p_value"] = p
    out["decision"] = text(decision)
    out["reason"] = text(reason)
    return out


def _reasons(n, min_tasks, unchanged, flipped) -> np.ndarray:
    reason = np.full(len(n), None, dtype=object)
    count = n.astype(np.int64).astype(str).astype(object)
    reason[flipped] = "all " + count[flipped] + " task differences are equal: exact sign-flip p"
    reason[unchanged] = "no paired task changed its pass rate"
    few = (n < min_tasks) & (n > 0)
    reason[few] = (
        "only " + count[few] + f" paired task(s), fewer than min_tasks={min_tasks}"
    )
    reason[n == 0] = "no task has a valid repeat on both sides"
    return reason


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


def compare(slots: Slots, pairs: pd.DataFrame, *, split: str, config: GateConfig) -> pd.DataFrame:
    """The paired test for every (candidate, parent) row of ``pairs``.

    Returns
    -------
    DataFrame
        :data:`PAIRED_COLUMNS`, one row per pair, in the order of ``pairs``.
    """
    child = pairs["candidate"].to_numpy(dtype=object)
    parent = pairs["parent"].to_numpy(dtype=object)
    described = compare_pairs(slots, count_tasks(slots), child, parent, split)
    tested = add_significance(described, config=config)
    tested.insert(0, "candidate", text(child))
    tested.insert(1, "parent", text(parent))
    tested.insert(2, "split", text([split] * len(child)))
    return tested[PAIRED_COLUMNS]
