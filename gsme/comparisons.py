"""A comparisons file: what earlier runs measured, for the ``learned`` keep rule to learn from.

Every gated comparison of a run (a child against its parent on the train split) is one row
of the comparisons frame (:mod:`gsme.schema`): ``agent, evolver, run, round, candidate,
parent, n_tasks, delta_pp, se_pp, decision``. A run pointed at a file
(``RunConfig(learn_from=...)``, ``[run] learn_from``) reads it once when it is created and
keeps the rows of its own agent and evolver (the same evolver on the same suite: that is
whose proposal mix they measured); when the run is sealed its own comparisons are appended,
so the next run learns from one more. Only train comparisons are written: nothing of the
sealed test split ever reaches the file.

The file is CSV. Appending takes an exclusive lock on the file, so runs sealed at the same
moment do not interleave, and never writes a run's rows twice.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import numpy as np
import pandas as pd

from gsme import schema

__all__ = ["append", "of_run", "read", "relevant"]

_COLUMNS = schema.columns("comparisons")
_TYPES = {c.name: {"text": object, "int": np.int64, "float": np.float64}[c.kind]
          for c in schema.FRAMES["comparisons"].columns}


def read(path) -> pd.DataFrame:
    """The comparisons in ``path`` (an empty frame when the file does not exist yet).

    Raises
    ------
    FrameError
        The file lacks a column of the comparisons frame or holds a bad value (the message
        names the column and the rows).

    See Also
    --------
    append : Add a run's rows to the file.
    relevant : The rows a run learns from.

    Examples
    --------
    >>> d = pd.DataFrame({"candidate": ["c1", "c2"], "parent": "baseline", "split": "train",
    ...                   "round": 1, "n_tasks": 45, "delta_pp": [2.5, -1.0], "se_pp": 3.1,
    ...                   "decision": "inconclusive"})
    >>> append("comparisons.csv", of_run(d, agent="sim", evolver="rule", run="r1"))
    2
    >>> read("comparisons.csv")[["run", "candidate", "delta_pp", "decision"]]
      run candidate  delta_pp      decision
    0  r1        c1       2.5  inconclusive
    1  r1        c2      -1.0  inconclusive
    >>> len(read("no-such-file.csv"))
    0
    """
    path = Path(path)
    if not path.exists():
        return schema.empty("comparisons")
    if path.is_dir():
        raise IsADirectoryError(f"learn_from {path} is a folder; it must be a CSV file")
    frame = pd.read_csv(path, dtype={c: str for c, t in _TYPES.items() if t is object},
                        keep_default_na=False, na_values={"delta_pp": [""], "se_pp": [""]})
    schema.require(frame, _COLUMNS, f"comparisons file {path}")
    try:
        frame = frame[_COLUMNS].astype(_TYPES)
    except (TypeError, ValueError) as err:
        raise schema.FrameError(f"comparisons file {path} holds a value of the wrong type "
                                f"({err})") from None
    return schema.validate(frame.reset_index(drop=True), "comparisons")


def relevant(comparisons: pd.DataFrame, *, agent: str, evolver: str | None) -> pd.DataFrame:
    """The rows measured by the same ``agent`` and ``evolver`` (by name).

    Examples
    --------
    >>> d = pd.DataFrame({"candidate": ["c1", "c2"], "parent": "baseline", "split": "train",
    ...                   "round": 1, "n_tasks": 45, "delta_pp": [2.5, -1.0], "se_pp": 3.1,
    ...                   "decision": "inconclusive"})
    >>> rows = pd.concat([of_run(d, agent="sim", evolver="rule", run="r1"),
    ...                   of_run(d, agent="sim", evolver="claude", run="r2")])
    >>> relevant(rows, agent="sim", evolver="claude")[["run", "candidate"]]
      run candidate
    0  r2        c1
    1  r2        c2
    """
    schema.validate(comparisons, "comparisons")
    mine = (comparisons["agent"] == agent) & (comparisons["evolver"] == str(evolver))
    return comparisons[mine].reset_index(drop=True)


def of_run(decisions: pd.DataFrame, *, agent: str, evolver: str | None,
           run: str) -> pd.DataFrame:
    """A run's train decisions as comparisons rows.

    Parameters
    ----------
    decisions : DataFrame
        The run's decisions (with ``round``), e.g. :meth:`gsme.run.Run.decisions`.
    agent, evolver, run : str
        The names the rows carry (``evolver`` None becomes ``"None"``).

    Returns
    -------
    DataFrame
        The comparisons frame: one row per train decision.

    Examples
    --------
    >>> d = pd.DataFrame({"candidate": ["c1"], "parent": ["baseline"], "split": ["train"],
    ...                   "round": [1], "n_tasks": [45], "delta_pp": [2.5], "se_pp": [3.1],
    ...                   "decision": ["inconclusive"]})
    >>> of_run(d, agent="sim", evolver="rule", run="r1")[["run", "delta_pp"]].values.tolist()
    [['r1', 2.5]]
    """
    schema.require(decisions, ["candidate", "parent", "split", "round", "n_tasks", "delta_pp",
                               "se_pp", "decision"], "decisions")
    train = decisions[decisions["split"] == "train"]
    out = train.assign(agent=agent, evolver=str(evolver), run=run)[_COLUMNS]
    return schema.validate(out.astype(_TYPES).reset_index(drop=True), "comparisons")


def append(path, rows: pd.DataFrame) -> int:
    """Append ``rows`` to the file at ``path`` (created with a header when new).

    Rows of a run already in the file are not written again. Returns how many were written.

    See Also
    --------
    of_run : A run's decisions as comparisons rows.
    read : Read the file back.

    Examples
    --------
    >>> d = pd.DataFrame({"candidate": ["c1", "c2"], "parent": "baseline", "split": "train",
    ...                   "round": 1, "n_tasks": 45, "delta_pp": [2.5, -1.0], "se_pp": 3.1,
    ...                   "decision": "inconclusive"})
    >>> rows = of_run(d, agent="sim", evolver="rule", run="r1")
    >>> append("comparisons.csv", rows), append("comparisons.csv", rows)
    (2, 0)
    """
    schema.validate(rows, "comparisons")
    path = Path(path)
    with open(path, "a+", newline="") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0)
            present = (set(read(path)["run"]) if handle.read(1) else set())
            new = rows[~rows["run"].isin(present)]
            if len(new):
                header = os.fstat(handle.fileno()).st_size == 0
                handle.seek(0, os.SEEK_END)
                new.to_csv(handle, header=header, index=False, lineterminator="\n")
                handle.flush()
                os.fsync(handle.fileno())
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    return len(new)
