"""Read and write trials frames as CSV or Parquet, round-trip exact.

A frame is validated before anything is written, so a bad frame leaves no file behind.
Reading returns the normalised frame of :func:`gsme.schema.as_trials`; writing that frame
and reading it back gives an equal frame (values, dtypes, column order). Columns beyond
the contract are kept: Parquet keeps their dtypes, CSV lets pandas infer them.
"""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from gsme import _renamed, schema

__all__ = ["FILE_FORMATS", "read_columns", "read_trials", "write_trials"]

FILE_FORMATS = ("csv", "parquet")
"""The file formats of a trials table (log formats are :data:`gsme.registry.FORMATS`)."""
__getattr__ = _renamed.renamed(__name__, {"FORMATS": "FILE_FORMATS"})
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
    return schema.as_trials(read_columns(path, format=format))


def read_columns(path, *, format: str | None = None) -> pd.DataFrame:
    """The columns of a trials file as :func:`read_trials` reads them, before the contract.

    The one reader of trials files (``gsme compare``'s CSV format reads through it too):
    in CSV the text columns stay text (a task id ``001`` or ``1.10`` is never a number),
    a missing value of a nullable text column is an empty field, and floats read back bit
    for bit.

    Returns
    -------
    DataFrame
        The file's columns, unchecked (columns may be missing).

    Raises
    ------
    FrameError
        The file cannot be read as a table (empty, not UTF-8, a broken row, a column named
        twice, not Parquet), or a float column holds something else; the message names the
        file and what is wrong.

    Examples
    --------
    >>> _ = open("ids.csv", "w").write("candidate,task_id,passed\\na,001,1\\na,1.10,0\\n")
    >>> read_columns("ids.csv")["task_id"].tolist()
    ['001', '1.10']
    """
    path = Path(path)
    kind = _format(path, format)
    if not path.is_file():
        raise FileNotFoundError(f"no trials file at {path}")
    if kind == "parquet":
        try:
            return pd.read_parquet(path)
        except (ValueError, OSError) as err:  # pyarrow's ArrowInvalid is a ValueError
            raise schema.FrameError(f"{path} is not a readable Parquet file "
                                    f"({_first_line(err)})") from None
    frame = _read_csv(path)
    for name in [name for name in _FLOATS if name in frame.columns]:
        frame[name] = _exact_floats(frame, name, path)
    return frame


def _read_csv(path: Path) -> pd.DataFrame:
    """A CSV's cells as text (numbers parsed only in the contract's int and bool columns)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame = pd.read_csv(
                path, encoding="utf-8", index_col=False,
                dtype={name: object for name in _TEXT + _FLOATS},
                keep_default_na=False,
                na_values={name: [""] for name in _MISSING_AS_EMPTY},
            )
    except UnicodeDecodeError as err:
        raise schema.FrameError(f"{path} is not a readable trials CSV (not UTF-8 text: byte "
                                f"{err.object[err.start:err.start + 1].hex()} at offset "
                                f"{err.start})") from None
    except pd.errors.ParserWarning:
        raise schema.FrameError(f"{path} is not a readable trials CSV (a row has more fields "
                                "than the header)") from None
    except (pd.errors.EmptyDataError, pd.errors.ParserError) as err:
        raise schema.FrameError(f"{path} is not a readable trials CSV "
                                f"({_first_line(err)})") from None
    with path.open(newline="", encoding="utf-8") as handle:
        header = next(csv.reader(handle), [])
    twice = sorted({name for name in header if header.count(name) > 1})
    if twice:
        raise schema.FrameError(f"{path} names column(s) {twice} more than once in its header")
    return frame


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


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
                f"one of {list(FILE_FORMATS)} or use a suffix in {list(_SUFFIXES)}"
            ) from None
    if format not in FILE_FORMATS:
        raise ValueError(f"format must be one of {list(FILE_FORMATS)}, got {format!r}")
    return format
