"""Read and write trials frames as CSV or Parquet, round-trip exact.

A frame is validated before anything is written, so a bad frame leaves no file behind.
Reading returns the normalised frame of :func:`gsme.schema.as_trials`; writing that frame
and reading it back gives an equal frame (values, dtypes, column order). Columns beyond
the contract are kept: Parquet keeps their dtypes, CSV lets pandas infer them.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

from gsme import schema

__all__ = ["FORMATS", "read_trials", "write_trials"]

FORMATS = ("csv", "parquet")
_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
_COLUMNS = schema.FRAMES["trials"].columns + schema.FRAMES["trials"].optional
_TEXT = [c.name for c in _COLUMNS if c.kind == "text"]
_FLOATS = [c.name for c in _COLUMNS if c.kind == "float"]
_MISSING_AS_EMPTY = [c.name for c in _COLUMNS if c.nullable]


def write_trials(trials: pd.DataFrame, path, *, format: str | None = None) -> Path:
    """Validate ``trials`` and write it to ``path`` as CSV or Parquet.

    In CSV a missing value is an empty field, and floats are written with enough digits
    to read back bit for bit. The nullable text columns (``pathology``, ``trajectory``,
    ``error``, ``borrowed_from``) therefore cannot hold an empty string in CSV (it would
    read back as missing): such rows are refused, not altered; use None, or Parquet.

    Parameters
    ----------
    trials : DataFrame
        A trials frame; it is checked with :func:`gsme.schema.as_trials` first.
    path : str or Path
        Target file; its parent directory must exist.
    format : {"csv", "parquet"} or None
        None infers it from the suffix (``.csv``, ``.parquet`` or ``.pq``).

    Returns
    -------
    Path
        The path written.

    Examples
    --------
    >>> import tempfile, os
    >>> t = pd.DataFrame({"candidate": ["a"], "task_id": ["t1"], "split": ["train"],
    ...                   "repeat": [0], "passed": [True]})
    >>> target = write_trials(t, os.path.join(tempfile.mkdtemp(), "trials.csv"))
    >>> read_trials(target)["passed"].tolist()
    [True]
    """
    path = Path(path)
    kind = _format(path, format)
    frame = schema.as_trials(trials)
    if kind == "csv":
        text = [c for c in _MISSING_AS_EMPTY if c in _TEXT]
        empty = (frame[text] == "").any(axis=1)
        if empty.any():
            raise ValueError(
                f"columns {text} hold an empty string, which CSV cannot "
                "tell from a missing value; use None or write Parquet. Offending rows:\n"
                f"{frame.loc[empty].head(10)}"
            )
        # "\r\n" rows: a field holding a bare "\r" or "\n" is then quoted, so it reads back
        frame.to_csv(path, index=False, na_rep="", quoting=csv.QUOTE_MINIMAL,
                     lineterminator="\r\n")
    else:
        frame.to_parquet(path, index=False)
    return path


def read_trials(path, *, format: str | None = None) -> pd.DataFrame:
    """Read a trials frame written by :func:`write_trials` (or any conforming file).

    Parameters
    ----------
    path : str or Path
    format : {"csv", "parquet"} or None
        None infers it from the suffix.

    Returns
    -------
    DataFrame
        The validated trials columns of :mod:`gsme.schema` (``candidate, task_id, split,
        repeat, attempt, passed, infra_ok, activated, beacons, tokens, cost_usd, seconds,
        pathology, trajectory, error, borrowed_from``), then ``score`` when the file has
        it (floats, NaN where a trial has none; bit for bit in CSV too), then any extra
        columns in the file.

    See Also
    --------
    write_trials : Its inverse.
    gsme.schema.as_trials : The normalisation a read applies.

    Examples
    --------
    Optional columns are filled in, and a frame read back writes and reads back equal,
    in either format:

    >>> t = pd.DataFrame({"candidate": "a", "task_id": ["t1", "t2"], "split": "train",
    ...                   "repeat": 0, "passed": [True, False], "score": [1.0, 0.25]})
    >>> back = read_trials(write_trials(t, "trials.parquet"))
    >>> back.shape, back.columns[:6].tolist()
    ((2, 17), ['candidate', 'task_id', 'split', 'repeat', 'attempt', 'passed'])
    >>> back.equals(read_trials(write_trials(back, "trials.csv")))
    True
    """
    path = Path(path)
    kind = _format(path, format)
    if not path.is_file():
        raise FileNotFoundError(f"no trials file at {path}")
    if kind == "csv":
        frame = pd.read_csv(
            path,
            dtype={name: object for name in _TEXT + _FLOATS},
            keep_default_na=False,
            na_values={name: [""] for name in _MISSING_AS_EMPTY},
        )
        for name in [name for name in _FLOATS if name in frame.columns]:
            frame[name] = _exact_floats(frame, name, path)
    else:
        frame = pd.read_parquet(path)
    return schema.as_trials(frame)


def _exact_floats(frame: pd.DataFrame, name: str, path: Path) -> pd.Series:
    """Parse a text column as float64; Python's float() reads a repr back bit for bit."""
    column = frame[name]
    bad = pd.to_numeric(column, errors="coerce").isna() & column.notna()
    if bad.any():
        raise schema.FrameError(
            f"column {name!r} of {path} must hold numbers; {int(bad.sum())} row(s) do not:\n"
            f"{frame.loc[bad].head(10)}"
        )
    return column.astype(np.float64)


def _format(path: Path, format: str | None) -> str:
    if format is None:
        try:
            return _SUFFIXES[path.suffix.lower()]
        except KeyError:
            raise ValueError(
                f"cannot tell the format of {path.name!r} from its suffix; pass format= "
                f"one of {list(FORMATS)} or use a suffix in {list(_SUFFIXES)}"
            ) from None
    if format not in FORMATS:
        raise ValueError(f"format must be one of {list(FORMATS)}, got {format!r}")
    return format
