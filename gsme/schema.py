"""Every frame gsme passes around, its columns and types, and the vocabulary they use.

(Over 600 lines because one module holds every frame's contract and its checks, the one
place for each name; a third of it is docstrings and examples.)

One place for each name: the frames (trials, candidates, decisions, archive, diagnoses,
proposals, outcomes, history, comparisons, failures, tasks), their column contracts, the id of the
baseline, the split, lever, kind, decision, gate and policy names, and the default failure
modes. The ledger's tables and SQL types are generated from :data:`FRAMES`, and every public
function that takes one of these frames validates it here first, so a bad frame fails at
the boundary with an error that names the column and shows the offending rows.

Names are fixed: later versions add columns, never rename them (see ``CHANGELOG.md``).
Cells hold scalars only; list-valued fields (``beacons`` of a trial, ``parents`` of a
candidate) are comma-separated strings, see :func:`split_ids`. A *repeat* is one of the K
runs of a candidate on a task: ``repeat`` is its index (0..K-1) and ``k`` always a count.

**A trial's value.** ``passed`` is the task's own pass/fail verdict; a trials frame may
also carry an optional float ``score`` (an evaluator's graded score in [0, 1], NaN where a
trial has none). A frame *carries scores* when its ``score`` column holds at least one number; a
frame without the column, or with NaN throughout, carries none (every statistic treats the
two alike). A trial's *value*, what per-task rates, the paired test, the gates and power
average, is its ``score`` when the frame carries scores, else ``passed`` as 0/1
(:func:`trial_values`). In a frame that carries scores every trial that is scored (the
first attempt with ``infra_ok`` of its repeat) needs a score, but for one that did not pass:
without a score, it scores 0 (an agent that crashed or gave no answer earned nothing). Scores that are all 0 or 1 are
pass/fail outcomes; any other score makes the values *graded* (:func:`graded`), and the
statistics that only mean something for pass/fail (pass@k) refuse them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.errors import SchemaErrors

from gsme import _renamed

__all__ = [
    "ARCHIVE_STATUSES", "BASELINE", "CHECKS", "COMPARE_COLUMNS", "DECISIONS", "FAILURE_MODES", "FRAMES", "GATES",
    "KINDS", "LEDGER_TABLES", "LEVERS", "LOOK_COLUMNS", "PAIRED_COLUMNS", "PLAN_COLUMNS",
    "SEALED_ROUND", "SLOT_KEY", "SPLITS", "TRIAL_KEY", "Column",
    "FrameError", "as_trials", "carries_scores", "columns", "conforms", "empty", "graded",
    "join_ids", "require", "split_ids", "task_features", "trial_values", "validate",
]

BASELINE = "baseline"
"""The id of the cold-start harness: every run's root candidate."""
SPLITS = ("train", "test")
SEALED_ROUND = -1
"""The ``round`` of the sealed test's trials (rounds of evolution count from 1, the cold
start is 0): the test split is scored once, after every round, by
:func:`gsme.measure.finalize`."""
LEVERS = ("prompt", "knowledge", "runtime", "config")
KINDS = ("baseline", "mutation", "recombination")
DECISIONS = ("credit", "cull", "inconclusive", "invalid", "inactive")
GATES = ("validity", "activation", "significance")
__getattr__ = _renamed.renamed(__name__, {"OUTCOMES": "ARCHIVE_STATUSES"})
ARCHIVE_STATUSES = ("new_cell", "improved", "not_added")
"""What :func:`gsme.archive.insert` did with a decided candidate (the archive outcomes' ``status``)."""

PAIRED_COLUMNS = [
    "child", "parent", "split", "n_tasks", "n_dropped", "n_changed", "k", "looks",
    "rate_parent", "rate_child", "delta_pp", "se_pp", "z", "p_value", "p_one_sided", "decision",
    "reason",
]
"""A paired test's row (:func:`gsme.stats.paired_test`, :func:`gsme.gates.significance_gate`)."""
LOOK_COLUMNS = [
    "child", "parent", "split", "look", "repeats", "n_extended", "child_trials",
    "parent_trials", "n_tasks", "n_dropped", "n_changed", "k", "rate_parent", "rate_child",
    "delta_pp", "se_pp", "z", "p_value", "p_one_sided", "boundary", "level", "decision",
    "reason",
]
"""One look of a gate design (:func:`gsme.designs.looks`)."""
COMPARE_COLUMNS = [
    "parent", "child", "split", "design", "outcome", "n_tasks", "n_dropped", "n_changed", "n_up",
    "n_down", "n_tied", "k", "looks", "n_infra_parent", "n_infra_child", "rate_parent",
    "rate_child", "delta_pp", "se_pp", "z", "p_one_sided", "pass_k", "pass_at_k_parent",
    "pass_at_k_child", "sd_pp", "mde_pp", "power_effect_pp", "power", "gate_failed",
    "decision", "reason", "tasks_up", "tasks_down",
]
"""Two harnesses compared on their logs (:func:`gsme.compare.compare`)."""
PLAN_COLUMNS = [
    "design", "method", "n_tasks", "k", "effect_pp", "repeat_sd_pp", "task_sd_pp", "power",
    "mde_pp", "target_power", "k_needed", "n_tasks_needed", "trials_per_side",
]
"""A design's power and what it needs (:func:`gsme.compare.plan`)."""

FAILURE_MODES = MappingProxyType({
    "thinking-runaway": "Reasoning runs on without converging and exhausts the token or "
                        "thinking budget before an answer is given.",
    "premature-finalization": "The agent commits to a final answer before the work is done "
                              "or checked (stops early, skips remaining steps).",
    "careless-submit": "The agent submits without verifying the result (tests not run, "
                       "output not checked against the task).",
    "tool-misuse": "A tool is called with wrong arguments, the wrong tool is used, or its "
                   "output is misread.",
    "format-error": "The answer is right in substance but breaks the required output format.",
    "looping": "The agent repeats the same action or plan without making progress.",
    "context-overflow": "The context window fills up (long outputs, files, histories) and "
                        "needed information is truncated or lost.",
})
"""The default ``why`` vocabulary: failure mode → definition, in a fixed order."""

_REQUIRED = object()


@dataclass(frozen=True)
class Column:
    """One column of a frame: its ``kind`` (text, int, float or bool) and its checks.

    ``default`` is the value :func:`as_trials` fills in when an optional column is missing;
    a column without one is required.

    Examples
    --------
    >>> attempt = FRAMES["trials"].columns[4]
    >>> attempt.name, attempt.kind, attempt.ge, attempt.default, attempt.required
    ('attempt', 'int', 0, 0, False)
    >>> FRAMES["trials"].columns[0].required
    True
    """

    name: str
    kind: str
    nullable: bool = False
    isin: tuple | None = None
    ge: int | None = None
    le: int | None = None
    unique: bool = False
    default: object = _REQUIRED

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED


def _text(name, nullable=False, isin=None, **kw) -> Column:
    return Column(name, "text", nullable=nullable, isin=isin, **kw)


def _int(name, ge=0, **kw) -> Column:
    return Column(name, "int", ge=ge, **kw)


def _float(name, **kw) -> Column:
    return Column(name, "float", nullable=True, **kw)


def _bool(name, **kw) -> Column:
    return Column(name, "bool", **kw)


@dataclass(frozen=True)
class Frame:
    """A frame's contract: its columns in order, the columns that key a row, and optional
    columns (checked when present, never filled in: a frame may leave them out)."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()
    optional: tuple[Column, ...] = ()

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


_FIRST_LOOK = (_float("first_delta_pp"), _float("first_se_pp"))
"""A decision's Δ and its se over the first ``k`` repeats of every task: what the adaptive
design's early stop does not bias (equal to ``delta_pp``, ``se_pp`` under the fixed design)."""

TRIAL_KEY = ["candidate", "task_id", "split", "repeat", "attempt"]
SLOT_KEY = ["candidate", "task_id", "split", "repeat"]

FRAMES = MappingProxyType({f.name: f for f in (
    Frame("trials", (
        _text("candidate"), _text("task_id"), _text("split", isin=SPLITS),
        _int("repeat"), _int("attempt", default=0),
        _bool("passed"), _bool("infra_ok", default=True), _bool("activated", default=False),
        _text("beacons", default=""),
        _float("tokens", default=np.nan), _float("cost_usd", default=np.nan),
        _float("seconds", default=np.nan),
        _text("pathology", nullable=True, default=None),
        _text("trajectory", nullable=True, default=None),
        _text("error", nullable=True, default=None),
        _text("borrowed_from", nullable=True, default=None),
    ), tuple(TRIAL_KEY), (_float("score", default=np.nan, ge=0, le=1),)),
    Frame("candidates", (
        _text("candidate", unique=True), _text("parents"), _text("kind", isin=KINDS),
        _text("where", nullable=True, isin=LEVERS), _text("why", nullable=True),
        _text("patch_id", nullable=True), _text("beacon", nullable=True),
        _text("env_gate", nullable=True), _text("commit", nullable=True),
        _text("branch", nullable=True), _int("round"), _text("rationale", nullable=True),
    ), ("candidate",)),
    Frame("decisions", (
        _text("child"), _text("parent"), _text("split", isin=SPLITS),
        _int("n_tasks"), _int("n_dropped"), _int("n_changed"), _int("k"), _int("looks"),
        _float("rate_parent"), _float("rate_child"), _float("delta_pp"), _float("se_pp"),
        _float("z"), _float("p_value"), _float("p_one_sided"), _float("activation_rate"),
        _text("gate_failed", nullable=True, isin=GATES), _text("decision", isin=DECISIONS),
        _text("reason", nullable=True),
    ), ("child", "parent", "split"), _FIRST_LOOK),
    Frame("archive", (
        _text("where", isin=LEVERS), _text("why"), _text("candidate"), _float("rate"),
        _float("delta_pp"), _float("z"), _int("round"), _bool("credited"),
    ), ("where", "why")),
    Frame("diagnoses", (
        _text("candidate"), _text("task_id"), _int("repeat"), _text("where", isin=LEVERS),
        _text("why"), _text("evidence", nullable=True), _float("confidence"),
    )),
    Frame("proposals", (
        _int("round"), _text("kind", isin=KINDS[1:]), _text("candidate", nullable=True),
        _text("parents"), _bool("ok"), _text("reason", nullable=True),
    )),
    Frame("outcomes", (
        _text("candidate"), _text("where", nullable=True), _text("why", nullable=True),
        _text("status", isin=ARCHIVE_STATUSES), _float("improvement"), _text("reason", nullable=True),
    )),
    Frame("history", (
        _text("candidate"), _text("mechanism"), _text("where", isin=LEVERS), _text("why"),
        _text("decision", isin=DECISIONS), _float("delta_pp"),
    )),
    Frame("comparisons", (
        _text("agent"), _text("evolver"), _text("run"), _int("round"), _text("child"),
        _text("parent"), _int("n_tasks"), _float("delta_pp"), _float("se_pp"),
        _text("decision", isin=DECISIONS),
        _text("world"), _text("harness"), _text("task_model"), _text("suite"),
        _text("evolver_model"), _text("prompt"), _float("first_delta_pp"), _float("first_se_pp"),
    )),
    Frame("failures", (
        _text("candidate"), _text("task_id"), _int("repeat"), _text("transcript"),
    )),
    Frame("tasks", (_text("task_id", unique=True), _text("split", isin=SPLITS))),
)})
"""Every frame's contract, by name. Frames may carry more columns than listed; the trials
frame's optional ``score`` is checked when present (a float in [0, 1], NaN where a trial has
none)."""

LEDGER_TABLES = MappingProxyType({
    "trials": ("trials", (_int("round"), _float("score"))),
    "candidates": ("candidates", ()),
    "decisions": ("decisions", (_int("round"), _bool("kept"), _float("expected_delta_pp"),
                                *_FIRST_LOOK)),
    "diagnoses": ("diagnoses", (_int("round"),)),
    "archive": ("archive", (_int("snapshot"),)),
    "proposals": ("proposals", ()),
})
"""Ledger table → (the frame it stores, the columns the run adds to it)."""


_BOOKKEEPING = frozenset(
    {c.name for kind in ("trials", "failures", "diagnoses") for c in FRAMES[kind].columns}
    | {"round", "content"})


class FrameError(ValueError):
    """A frame broke its column contract; the message names the columns and rows at fault.

    Examples
    --------
    >>> try:
    ...     require(pd.DataFrame({"x": [1]}), ["x", "y"], "table")
    ... except FrameError as err:
    ...     print(err)
    table frame is missing column(s) ['y']; it has ['x']
    """


def columns(kind: str) -> list[str]:
    """Column names of the frame ``kind`` (one of :data:`FRAMES`).

    Examples
    --------
    >>> columns("archive")
    ['where', 'why', 'candidate', 'rate', 'delta_pp', 'z', 'round', 'credited']
    """
    return _frame(kind).names


def task_features(names) -> list[str]:
    """The task feature columns among ``names``, in order: everything but bookkeeping.

    Bookkeeping is every column of the trials, failures and diagnoses frames, the ledger's
    ``round`` and a task's statement ``content``; what is left (``category``, flags such as
    ``has_tests``) describes the task, which evolvers show and env gates test.

    Examples
    --------
    >>> task_features(["task_id", "category", "repeat", "has_tests", "round", "transcript"])
    ['category', 'has_tests']
    """
    return [name for name in names if name not in _BOOKKEEPING]


def empty(kind: str) -> pd.DataFrame:
    """A valid frame of ``kind`` with no rows and the contracted dtypes.

    Examples
    --------
    >>> e = empty("tasks")
    >>> len(e), e.columns.tolist(), conforms(e, "tasks")
    (0, ['task_id', 'split'], True)
    """
    return pd.DataFrame({c.name: pd.Series(dtype=_DTYPES[c.kind]) for c in _frame(kind).columns})


def require(frame, names, what: str) -> pd.DataFrame:
    """Check that ``frame`` is a DataFrame holding the columns ``names`` (None: no column);
    return it, with a column renamed in 0.3.0 that it holds under its old name (a pairs or
    decisions frame's ``candidate``, now ``child``) renamed, and a DeprecationWarning.

    For inputs that are not whole contracted frames (a plot's table, a pairs frame).

    Raises
    ------
    TypeError
        ``frame`` is not a DataFrame.
    FrameError
        Names the missing columns, the columns ``frame`` has, and ``what`` it is.

    See Also
    --------
    validate : The whole contract of a frame.

    Examples
    --------
    >>> table = pd.DataFrame({"candidate": ["c1"], "z": [2.1]})
    >>> require(table, ["candidate", "z"], "table") is table
    True
    >>> try:
    ...     require(table, ["candidate", "delta_pp"], "table")
    ... except FrameError as err:
    ...     print(err)
    table frame is missing column(s) ['delta_pp']; it has ['candidate', 'z']
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame, got {type(frame).__name__}")
    frame = _renamed.renamed_columns(frame, names, what)
    missing = [c for c in names if c is not None and c not in frame.columns]
    if missing:
        raise FrameError(f"{what} frame is missing column(s) {missing}; it has "
                         f"{list(frame.columns)}")
    return frame


def validate(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Check ``frame`` against the contract of ``kind`` and return it (unchanged but for a
    renamed column, see :func:`require`).

    Raises
    ------
    FrameError
        Names every failing column and check, and shows up to ten offending rows.
    TypeError
        When ``frame`` is not a DataFrame.

    See Also
    --------
    conforms : The same check, as a bool.
    require : Only the columns' presence.

    Examples
    --------
    >>> tasks = pd.DataFrame({"task_id": ["t1", "t2"], "split": ["train", "dev"]})
    >>> try:
    ...     validate(tasks, "tasks")
    ... except FrameError as err:
    ...     print(err)
    tasks frame breaks its contract:
    - column 'split': isin(['train', 'test']) failed in 1 row(s)
      offending rows:
          task_id split
        1      t2   dev
    """
    contract = _frame(kind)
    frame = require(frame, contract.names, kind)
    if conforms(frame, kind):  # the common case, without pandera's per-check overhead
        return frame
    try:
        positional = frame if _has_positional_index(frame) else frame.reset_index(drop=True)
        _PANDERA[kind].validate(_as_object_strings(positional, contract), lazy=True,
                                inplace=True)
    except SchemaErrors as err:
        raise FrameError(_describe(kind, frame, err.failure_cases)) from None
    return frame


def as_trials(frame: pd.DataFrame) -> pd.DataFrame:
    """Return a validated copy of a trials frame, filling optional columns and fixing dtypes.

    Required columns: ``candidate, task_id, split, repeat, passed``. Missing optional
    columns take defaults (``attempt`` 0, ``infra_ok`` True, ``activated`` False,
    ``beacons`` "", numbers NaN, ``pathology``/``trajectory``/``error``/``borrowed_from``
    None). ``passed``, ``infra_ok`` and ``activated`` may be given as bools, 0/1 or
    "true"/"false"; anything else (NaN included) is rejected, never guessed. ``score`` is
    kept when given (as float64, after the contracted columns) and left out when not: a
    frame with or without it is accepted (see the module doc for what it means).

    Examples
    --------
    >>> t = as_trials(pd.DataFrame({"candidate": ["a"], "task_id": ["t1"],
    ...                             "split": ["train"], "repeat": [0], "passed": [1]}))
    >>> bool(t.loc[0, "passed"]), int(t.loc[0, "attempt"])
    (True, 0)
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"trials must be a pandas DataFrame, got {type(frame).__name__}")
    contract = _frame("trials")
    out = frame.copy()
    required = [c.name for c in contract.columns if c.required]
    missing = [c for c in required if c not in out.columns]
    if missing:
        raise FrameError(
            f"trials frame is missing required column(s) {missing}; it has {list(out.columns)}"
        )
    for col in contract.columns:
        if col.name not in out.columns:
            out[col.name] = col.default
        if col.kind == "bool":
            out[col.name] = _as_bool(out, col.name)
        elif col.kind == "int":
            out[col.name] = _as_int(out, col.name)
        elif col.kind == "float":
            out[col.name] = pd.to_numeric(out[col.name], errors="coerce").astype(np.float64)
        else:
            out[col.name] = out[col.name].astype(object).where(out[col.name].notna(), None)
    for col in contract.optional:
        if col.name in out.columns:
            out[col.name] = _as_float(out, col.name)
    out["beacons"] = out["beacons"].fillna("")
    front = contract.names + [c.name for c in contract.optional if c.name in out.columns]
    out = out[front + [c for c in out.columns if c not in front]]
    return validate(out.reset_index(drop=True), "trials")


def split_ids(value: str | None) -> list[str]:
    """Split a comma-separated id cell (``beacons``, ``parents``) into a list.

    Examples
    --------
    >>> split_ids("c1, c2,"), split_ids(""), split_ids(None)
    (['c1', 'c2'], [], [])
    """
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    return [part for part in (p.strip() for p in str(value).split(",")) if part]


def join_ids(values) -> str:
    """Inverse of :func:`split_ids`.

    Examples
    --------
    >>> join_ids(["c1", "c2"])
    'c1,c2'
    >>> split_ids(join_ids(["c1", "c2"]))
    ['c1', 'c2']
    """
    return ",".join(str(v) for v in values)


def carries_scores(trials: pd.DataFrame) -> bool:
    """True when the trials frame carries scores: a ``score`` column holding a number.

    See Also
    --------
    trial_values : What a trial's value is, with scores or without.
    graded : Whether the scores are more than pass/fail.

    Examples
    --------
    >>> t = pd.DataFrame({"passed": [True, False]})
    >>> carries_scores(t), carries_scores(t.assign(score=np.nan))
    (False, False)
    >>> carries_scores(t.assign(score=[0.5, np.nan]))
    True
    """
    return "score" in trials.columns and bool(trials["score"].notna().any())


def trial_values(trials: pd.DataFrame) -> np.ndarray:
    """Each trial's value (float64): its ``score`` when the frame carries scores (0 for a
    trial that did not pass and has none), else ``passed`` as 0/1. NaN only where a frame
    with scores gives a trial that passed none.

    Examples
    --------
    >>> t = pd.DataFrame({"passed": [True, False]})
    >>> trial_values(t).tolist(), trial_values(t.assign(score=[0.9, 0.25])).tolist()
    ([1.0, 0.0], [0.9, 0.25])
    >>> trial_values(t.assign(score=[0.9, np.nan])).tolist()  # a failure without a score
    [0.9, 0.0]
    """
    if carries_scores(trials):
        score = trials["score"].to_numpy(np.float64)
        return np.where(np.isnan(score) & ~trials["passed"].to_numpy(bool), 0.0, score)
    return trials["passed"].to_numpy(bool).astype(np.float64)


def graded(trials: pd.DataFrame) -> bool:
    """True when the trials carry a score other than 0 or 1 (values are not pass/fail).

    Examples
    --------
    >>> t = pd.DataFrame({"passed": [True, False]})
    >>> graded(t), graded(t.assign(score=[1.0, 0.0])), graded(t.assign(score=[1.0, 0.5]))
    (False, False, True)
    """
    if not carries_scores(trials):
        return False
    scores = trials["score"].to_numpy(np.float64)
    scores = scores[~np.isnan(scores)]
    return bool(((scores != 0.0) & (scores != 1.0)).any())


CHECKS: Counter = Counter()
"""How many times a frame was checked against its contract, by kind (``CHECKS["trials"]``):
every :func:`conforms` counts one, and every :func:`validate` and :func:`as_trials` runs one
(a frame that fails the fast check is counted again by the full one). Rows added to a
checked frame and checked on their own (:meth:`gsme.pairing.Checked.extended`) count in
``CHECKS["trials_added"]``. Benchmarks read it to
count a call's checks (``benchmarks/bench_gates.py``); a :class:`gsme.pairing.Checked` is
never checked again."""


# ---------------------------------------------------------------------------- internals

_DTYPES = {"text": object, "int": np.int64, "float": np.float64, "bool": bool}


def _pandera(frame: Frame) -> pa.DataFrameSchema:
    def column(c: Column, required: bool = True) -> pa.Column:
        checks = []
        if c.isin is not None:
            checks.append(pa.Check.isin(list(c.isin)))
        if c.ge is not None:
            checks.append(pa.Check.ge(c.ge))
        if c.le is not None:
            checks.append(pa.Check.le(c.le))
        return pa.Column(_DTYPES[c.kind], checks=checks, nullable=c.nullable,
                         unique=c.unique, coerce=False, required=required)

    unique = list(frame.key) if len(frame.key) > 1 else None
    columns = {c.name: column(c) for c in frame.columns}
    columns.update({c.name: column(c, required=False) for c in frame.optional})
    return pa.DataFrameSchema(columns, unique=unique, name=frame.name)


_PANDERA = {name: _pandera(frame) for name, frame in FRAMES.items()}


def conforms(frame: pd.DataFrame, kind: str, *,
             codes: Mapping[str, tuple[np.ndarray, pd.Index]] | None = None,
             tally: str | None = None) -> bool:
    """True when ``frame`` meets every check of the contract of ``kind`` (no message).

    The fast path of :func:`validate`, in NumPy, and never more lenient than it: a frame
    it refuses goes to :func:`validate`, which decides and names the rows at fault. Text
    columns may hold object or a pandas string dtype (Arrow-backed included) and are
    checked as they are, never converted. ``codes`` maps text columns the caller has
    already factorized to ``pandas.factorize``'s ``(codes, uniques)`` (code -1: missing),
    so that they are not hashed again. ``tally`` names the :data:`CHECKS` entry the check
    counts in (default ``kind``).

    Examples
    --------
    >>> t = pd.DataFrame({"task_id": ["t1", "t2"], "split": ["train", "dev"]})
    >>> conforms(t, "tasks"), conforms(t.assign(split="test"), "tasks")
    (False, True)
    """
    contract = _frame(kind)
    CHECKS[tally or kind] += 1
    codes = codes or {}
    if not frame.columns.is_unique:
        return False
    dtypes = dict(zip(frame.columns.tolist(), frame.dtypes.tolist()))
    present = [*contract.columns, *(c for c in contract.optional if c.name in dtypes)]
    return (all(c.name in dtypes for c in contract.columns)
            and all(_column_conforms(frame, c, dtypes[c.name], codes.get(c.name))
                    for c in present)
            and _key_unique(frame, list(contract.key), codes))


def _column_conforms(frame: pd.DataFrame, column: Column, dtype, coded) -> bool:
    """One column's checks; its values are read only by a check that needs them."""
    if not _holds(dtype, column.kind):
        return False
    if column.kind == "text" and not _text_conforms(frame, column, coded):
        return False
    if column.kind == "int" and column.ge is not None and len(frame) and (
            frame[column.name].to_numpy().min() < column.ge):
        return False
    if column.kind == "float" and not column.nullable and frame[column.name].isna().any():
        return False
    if column.kind == "float" and (column.ge is not None or column.le is not None):
        values = frame[column.name].to_numpy()
        values = values[~np.isnan(values)]
        if (column.ge is not None and (values < column.ge).any()) or (
                column.le is not None and (values > column.le).any()):
            return False
    return not (column.unique and frame[column.name].duplicated().any())


def _holds(dtype, kind: str) -> bool:
    """True when a column of ``dtype`` holds the contract's ``kind`` as it is."""
    if kind == "text":
        return dtype == object or isinstance(dtype, pd.StringDtype)
    return dtype == _DTYPES[kind]


def _text_conforms(frame: pd.DataFrame, column: Column, coded) -> bool:
    if coded is not None:
        code, uniques = coded
        return ((column.nullable or not len(code) or code.min() >= 0)
                and (column.isin is None or all(u in column.isin for u in uniques)))
    if column.nullable and column.isin is None:
        return True
    values = frame[column.name]
    if column.isin is not None:
        allowed = values.isin(column.isin)
        return bool((allowed | values.isna() if column.nullable else allowed).all())
    return _all_strings(values) or not values.isna().any()


def _all_strings(values: pd.Series) -> bool:
    """True when every value is a str (so none is missing): a quicker test than ``isna``."""
    return values.dtype == object and pd.api.types.infer_dtype(values, skipna=False) == "string"


def _key_unique(frame: pd.DataFrame, key: list[str], codes) -> bool:
    """True when no two rows share the values of the ``key`` columns (one int per row)."""
    if len(key) < 2 or len(frame) < 2:
        return True
    parts, sizes = zip(*(_key_part(frame, name, codes) for name in key))
    cells = math.prod(sizes)
    if cells >= 2**62:
        return not frame.duplicated(key).any()
    flat = np.ravel_multi_index(parts, sizes)
    if cells <= 8 * len(flat) + 2**20:
        return int(np.bincount(flat).max()) <= 1
    flat = np.sort(flat)
    return not (flat[1:] == flat[:-1]).any()


def _key_part(frame: pd.DataFrame, name: str, codes) -> tuple[np.ndarray, int]:
    """A key column as integer codes and their count (a missing value is a value here)."""
    if name in codes:
        code, uniques = codes[name]
        return code + 1, len(uniques) + 1
    values = frame[name]
    if values.dtype == np.int64 and values.to_numpy().min() >= 0:
        code = values.to_numpy()
        return code, int(code.max()) + 1
    code, uniques = pd.factorize(values, use_na_sentinel=False)
    return code, len(uniques)


def _frame(kind: str) -> Frame:
    try:
        return FRAMES[kind]
    except KeyError:
        raise ValueError(f"unknown frame kind {kind!r}; expected one of {list(FRAMES)}") from None


def _has_positional_index(frame: pd.DataFrame) -> bool:
    index = frame.index
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1


def _as_object_strings(frame: pd.DataFrame, contract: Frame) -> pd.DataFrame:
    """Accept pandas' string dtypes where the contract says text (object)."""
    text = [c.name for c in contract.columns
            if c.kind == "text" and frame[c.name].dtype != object
            and pd.api.types.is_string_dtype(frame[c.name].dtype)]
    if not text:
        return frame
    out = frame.copy()
    for name in text:
        out[name] = out[name].astype(object).where(out[name].notna(), None)
    return out


def _as_bool(frame: pd.DataFrame, name: str) -> pd.Series:
    col = frame[name]
    if col.dtype == bool:
        return col
    mapping = {1: True, 0: False, "true": True, "false": False,  # 1/0 also cover True/False
               "True": True, "False": False, "1": True, "0": False}
    mapped = col.map(lambda v: mapping.get(v, None) if not _isna(v) else None)
    bad = mapped.isna()
    if bad.any():
        raise FrameError(
            f"trials column {name!r} must be bool (or 0/1, 'true'/'false'); "
            f"{int(bad.sum())} row(s) hold something else:\n{frame.loc[bad].head(10)}"
        )
    return mapped.astype(bool)


def _as_float(frame: pd.DataFrame, name: str) -> pd.Series:
    col = pd.to_numeric(frame[name], errors="coerce").astype(np.float64)
    bad = col.isna() & frame[name].notna() | np.isinf(col)
    if bad.any():
        raise FrameError(
            f"trials column {name!r} must hold finite numbers (NaN where a trial has none); "
            f"{int(bad.sum())} row(s) do not:\n{frame.loc[bad].head(10)}"
        )
    return col


def _as_int(frame: pd.DataFrame, name: str) -> pd.Series:
    col = pd.to_numeric(frame[name], errors="coerce")
    bad = col.isna() | (col % 1 != 0)
    if bad.any():
        raise FrameError(
            f"trials column {name!r} must hold whole numbers; "
            f"{int(bad.sum())} row(s) do not:\n{frame.loc[bad].head(10)}"
        )
    return col.astype(np.int64)


def _isna(value) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _describe(kind: str, frame: pd.DataFrame, cases: pd.DataFrame) -> str:
    lines = [f"{kind} frame breaks its contract:"]
    is_unique_check = cases["check"].astype(str).str.contains("unique")
    for (column, check), group in cases[~is_unique_check].groupby(
        ["column", "check"], dropna=False, sort=False
    ):
        index = group["index"].dropna()
        lines.append(f"- column {column!r}: {check} failed in {len(index) or len(group)} row(s)")
        if len(index):
            positions = sorted(int(i) for i in index.unique())[:10]
            lines.append("  offending rows:\n" + _indent(frame.iloc[positions].to_string()))
        else:
            values = group["failure_case"].astype(str).unique()[:10]
            lines.append(f"  got: {', '.join(values)}")
    if is_unique_check.any():
        contract = _frame(kind)
        key = list(contract.key) or [c.name for c in contract.columns if c.unique]
        dup = frame.reset_index(drop=True).duplicated(key, keep=False).to_numpy()
        lines.append(f"- columns {key} must be unique; {int(dup.sum())} rows share a key")
        lines.append("  offending rows:\n" + _indent(frame.iloc[dup.nonzero()[0][:10]].to_string()))
    return "\n".join(lines)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
