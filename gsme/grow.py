"""Growing benchmarks: a run's suite gains train tasks and its decisions are re-gated.

A benchmark grows: its authors add tasks (a real suite gains rows in its task table; a
simulated suite has a v2, ``gsme.sim.preset(..., grown=n)``). The run's test split does not
change: it was committed by hash when the run was created, so every new task is a train
task. :func:`grow` adds the new tasks to a run (:meth:`gsme.run.Run.add_tasks`), scores
the run's decided candidates (and their parents) on them and re-gates every decision on the
grown train split (:func:`gsme.gates.credit` with the run's gate settings), saying which
decisions changed.

Borrowing does most of the work. On a new task a candidate behaves exactly as any scored
candidate whose patches acting there (admitted by their env gates) are the same
(:func:`gsme.scoring.behaviour`). Candidates are scored generation by generation, the
baseline first, then its children, then theirs, so on each new task a candidate borrows
an ancestor's trials wherever its own patches' gates reject the task: only candidates
whose gates fire on a new task are run there. The repeats are those of the run's gate
design on the grown split (:func:`gsme.designs.wanted`): the adaptive design replays
its looks there and may extend an old task too (with new repeats, never a slot again).

Guarantees.

* The test split and its commitment never change; a new task in the test split is refused.
* A sealed run stays sealed: growing adds its new task rows and train trials to its ledger
  in place, and never touches its test split, its sealed result or its candidates (no
  candidate can be added, evolution does not go on). The run's decisions table keeps the
  decisions the run made, its record; the re-gated decisions are returned, and
  :func:`regate` recomputes them at any time from the ledger.
* Nothing is scored twice (:func:`gsme.scoring.plan_trials` never re-runs a valid slot), and
  trials reach the ledger as they complete: after a ``kill -9`` during :func:`grow`, calling
  it again with the same tasks continues where it stopped.
* Bad input (a table without ``task_id`` or ``split``, repeated ids, a new task in the test
  split, a row that contradicts the run's, a task the agent does not know) raises
  :class:`~gsme.run.RunError` naming the column, row or task, and nothing is written.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pandas as pd

from gsme import gates, schema
from gsme.measure import settle
from gsme.run import Run, RunError
from gsme.schema import BASELINE

__all__ = ["grow", "grown_tasks", "read_tasks", "regate"]


def read_tasks(path: str | os.PathLike) -> pd.DataFrame:
    """A task table from a CSV file: ``task_id, split`` and feature columns.

    Raises
    ------
    RunError
        The file is missing, empty or not CSV (the message names the path).

    Examples
    --------
    >>> pd.DataFrame({"task_id": ["t1", "t2"], "split": ["train", "test"],
    ...               "hard": [True, False]}).to_csv("tasks.csv", index=False)
    >>> read_tasks("tasks.csv")
      task_id  split   hard
    0      t1  train   True
    1      t2   test  False
    """
    try:
        return pd.read_csv(path, dtype={"task_id": str, "split": str})
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise RunError(f"cannot read the tasks file {os.fspath(path)} ({err})") from None


def grown_tasks(run: Run, tasks: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``tasks`` that are new to ``run``, checked: its task table's rows to add.

    Rows already in the run must agree with it; new rows must be train tasks the run's
    agent knows, with the features the agent gives them. Writes nothing.

    Parameters
    ----------
    run : Run
    tasks : DataFrame
        ``task_id, split`` and every feature column of ``run.tasks()`` (a ``content``
        column is ignored); the whole grown table or only its new rows.

    Returns
    -------
    DataFrame
        The new rows, with the run's task columns and their types (empty: nothing new).

    Raises
    ------
    RunError
        Names the missing or unknown column, the repeated id, or the row (1-based, as in the
        file) and column at fault.

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1, finalize=False)
    >>> len(grown_tasks(run, run.tasks()))
    0
    >>> extra = run.tasks().head(1).assign(task_id="tiny-999", split="train")
    >>> grown_tasks(run, pd.concat([run.tasks(), extra]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gsme.run.RunError: tasks row 25: 'tiny-999' is not a task of the run's agent ...
    >>> run.close()
    """
    if not isinstance(tasks, pd.DataFrame):
        raise RunError(f"tasks must be a DataFrame, got {type(tasks).__name__}")
    known = run.tasks()
    missing = [c for c in known.columns if c not in tasks.columns]
    if missing:
        raise RunError(f"tasks lacks column(s) {missing}; required: {list(known.columns)}")
    extra = [c for c in tasks.columns if c not in known.columns and c != "content"]
    if extra:
        raise RunError(f"tasks has column(s) {extra} the run's tasks do not; the run's "
                       f"columns are {list(known.columns)}")
    table = tasks[list(known.columns)].reset_index(drop=True)
    ids = table["task_id"]
    blank = ids.isna() | (ids.astype(str).str.strip() == "")
    if blank.any():
        raise RunError(f"tasks row {int(np.flatnonzero(blank)[0]) + 1}: task_id is empty")
    table = table.assign(task_id=ids.astype(str))
    repeated = table["task_id"][table["task_id"].duplicated()]
    if len(repeated):
        rows = np.flatnonzero(table["task_id"] == repeated.iloc[0]) + 1
        raise RunError(f"tasks repeats task_id {repeated.iloc[0]!r} (rows {rows.tolist()})")
    _check_split(table)
    _check_agrees(table, known, "the run's task table")
    new = table[~table["task_id"].isin(known["task_id"])]
    test = new[new["split"] != "train"]
    if len(test):
        raise RunError(f"tasks row {int(test.index[0]) + 1}: new task {test['task_id'].iloc[0]!r} "
                       "is in the test split; the test split is sealed (committed when the run "
                       "was created), so new tasks must be train tasks")
    _check_agrees(new, _agent_tasks(run, new), "the run's agent")
    return _typed_like(new, known)


def grow(run: Run, tasks: pd.DataFrame, *, agent_spec: dict | None = None, executor=None,
         progress: bool = True) -> pd.DataFrame:
    """Add ``tasks`` to ``run``'s train split, score its candidates on them, re-gate.

    Parameters
    ----------
    run : Run
        A run opened for writing (sealed or not), whose agent knows the new tasks.
    tasks : DataFrame
        The grown task table, or only its new rows (see :func:`grown_tasks`).
    agent_spec : dict, optional
        Stored as the run's agent spec, so that :meth:`Run.open` rebuilds an agent that
        knows the new tasks (e.g. the simulated suite's spec with ``grown``).
    executor : gsme.executors.Executor or concurrent.futures.Executor, optional
        Runs the trials (:mod:`gsme.executors.pool`; a plain ``concurrent.futures``
        executor is wrapped). Default: threads of ``config.workers`` (an agent that runs
        many trials at once: in this process).
    progress : bool
        Show progress bars.

    Returns
    -------
    DataFrame
        What :func:`regate` returns: the run's decisions re-gated on the grown train split.

    Examples
    --------
    >>> from gsme import experiments, sim
    >>> run = experiments.simulated_run("tiny", rounds=1, finalize=False)
    >>> grown = sim.preset("tiny", grown=4)
    >>> run.close(); run = Run.open(run.path, agent=grown)
    >>> table = grow(run, grown.tasks(), progress=False)
    >>> len(run.tasks("train")), "changed" in table.columns
    (20, True)
    >>> run.close()
    """
    if run.read_only:
        raise RunError(f"run {run.path} is open read-only; open it for writing to grow it")
    new = grown_tasks(run, tasks)
    run.add_tasks(new, agent_spec=agent_spec)
    _score_generations(run, _decided_lineage(run), executor=executor, progress=progress)
    return regate(run)


def regate(run: Run) -> pd.DataFrame:
    """Every decision of ``run`` re-gated on its current train split (grown or not).

    Returns
    -------
    DataFrame
        One row per decided candidate: the decisions frame of :func:`gsme.gates.credit`
        (``candidate, parent, split, n_tasks, ..., delta_pp, z, p_value, decision, ...``)
        with ``gate=run.config.gate``, then ``decision_before`` (the decision the run
        recorded) and ``changed`` (``decision != decision_before``).

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1, finalize=False)
    >>> regate(run)[["child", "decision", "decision_before", "changed"]]
       child      decision decision_before  changed
    0  c0001  inconclusive    inconclusive    False
    1  c0002  inconclusive    inconclusive    False
    2  c0003  inconclusive    inconclusive    False
    >>> run.close()
    """
    recorded = run.decisions()
    if recorded.empty:
        return schema.empty("decisions").assign(decision_before=pd.Series(dtype=object),
                                                changed=pd.Series(dtype=bool))
    before = recorded.drop_duplicates("child", keep="last").set_index("child")
    candidates = run.candidates()
    decided = candidates[candidates["candidate"].isin(before.index)].reset_index(drop=True)
    now = gates.credit(run.trials(split="train"), decided, split="train",
                       gate=run.config.gate)
    previous = before.loc[now["child"], "decision"].to_numpy(dtype=object)
    return now.assign(decision_before=previous, changed=now["decision"].to_numpy() != previous)


# ---------------------------------------------------------------------------- internals


def _check_split(table: pd.DataFrame) -> None:
    bad = ~table["split"].isin(schema.SPLITS)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise RunError(f"tasks row {row + 1}: split {table['split'].iloc[row]!r} is not one of "
                       f"{list(schema.SPLITS)}")


def _check_agrees(table: pd.DataFrame, reference: pd.DataFrame, what: str) -> None:
    """Every row of ``table`` whose id ``reference`` holds equals it, column by column."""
    ref = reference.drop_duplicates("task_id").set_index("task_id")
    shared = table[table["task_id"].isin(ref.index)]
    for row, record in shared.iterrows():
        theirs = ref.loc[record["task_id"]]
        for column in (c for c in table.columns if c != "task_id" and c in ref.columns):
            if not _same(record[column], theirs[column]):
                raise RunError(f"tasks row {row + 1} ({record['task_id']!r}): {column} is "
                               f"{record[column]!r}, but {theirs[column]!r} in {what}")


def _agent_tasks(run: Run, new: pd.DataFrame) -> pd.DataFrame:
    """The agent's rows for the new tasks; every new task must be one of them."""
    if new.empty:
        return new
    mine = run.agent.tasks().astype({"task_id": str})
    unknown = new.loc[~new["task_id"].isin(mine["task_id"]), "task_id"]
    if len(unknown):
        raise RunError(f"tasks row {int(unknown.index[0]) + 1}: {unknown.iloc[0]!r} is not a "
                       f"task of the run's agent {run.agent.name}; grow the agent's suite "
                       "first (its task table, or a simulated suite's grown=)")
    return mine


def _same(a, b) -> bool:
    if pd.isna(a) and pd.isna(b):
        return True
    try:
        if a == b:
            return True
    except (TypeError, ValueError):
        pass
    return str(a).strip().lower() == str(b).strip().lower()


def _typed_like(new: pd.DataFrame, known: pd.DataFrame) -> pd.DataFrame:
    """``new`` with each column of the type ``known`` holds it in (a CSV's ``"True"`` a bool)."""
    words = {"true": True, "false": False, "1": True, "0": False}
    out = {}
    for column in known.columns:
        values = new[column]
        if pd.api.types.is_bool_dtype(known[column]):
            values = values.map(lambda v: words.get(str(v).strip().lower(), v))
        out[column] = values.astype(known[column].dtype) if len(values) else values
    return pd.DataFrame(out, index=new.index).reset_index(drop=True)


def _decided_lineage(run: Run) -> list[str]:
    """The baseline, every decided candidate and every parent of one."""
    decided = run.decisions()
    names = {BASELINE, *decided["child"], *decided["parent"].dropna()}
    return [c for c in run.candidates()["candidate"] if c in names]


def _generations(candidates: pd.DataFrame, names: list[str]) -> list[list[str]]:
    """``names`` by depth in the candidate tree: the baseline, its children, theirs, ..."""
    parents = {c: schema.split_ids(p) for c, p in zip(candidates["candidate"],
                                                       candidates["parents"])}

    @functools.cache
    def depth(name: str) -> int:
        return 1 + max((depth(p) for p in parents.get(name, []) if p in parents), default=-1)

    levels: dict[int, list[str]] = {}
    for name in names:
        levels.setdefault(depth(name), []).append(name)
    return [levels[d] for d in sorted(levels)]


def _score_generations(run: Run, names: list[str], *, executor, progress: bool) -> None:
    """Score ``names`` on the run's train split, one generation after the other."""
    recorded_round = run.rounds_done()
    for generation in _generations(run.candidates(), names):
        settle(run, generation, split="train", label="grow: scoring", round=recorded_round,
               executor=executor, progress=progress)
