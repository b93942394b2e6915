"""Ledger rows as frames, and the trials a ledger keeps between reads.

SQL values become typed frame columns (:func:`frame_of`, an int column with NULLs as
``Int64``) and back (:func:`to_sql`); :class:`KeptTrials` holds the trials read so far in
key order and merges the rows written since (:func:`as_stored`: as SQLite stores them).
No SQL runs here: :mod:`gsme.ledger` reads and writes the file.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import operator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from gsme import pairing, schema

__all__ = ["KEYS", "TABLES", "KeptTrials", "as_stored", "columns_of", "fetch_frame",
           "frame_of", "sort_rows", "sql_row", "to_sql"]

TABLES = {
    table: tuple(schema.FRAMES[frame].columns) + extra
    for table, (frame, extra) in schema.LEDGER_TABLES.items()
}
"""Each ledger table's columns (:data:`gsme.schema.LEDGER_TABLES`)."""
KEYS = {"trials": schema.TRIAL_KEY, "candidates": ["candidate"],
        "decisions": ["child", "parent", "split"], "archive": ["snapshot", "where", "why"]}
"""Each table's key: its rows are read in key order."""


def columns_of(table: str) -> list[str]:
    """The names of ``table``'s columns, in order."""
    return [c.name for c in TABLES[table]]


_NATIVE = frozenset({str, int, float, bool, bytes, type(None)})


def fetch_frame(cursor, table: str, *, block: int = 65_536) -> pd.DataFrame:
    """Every row of ``cursor`` (a query of ``table``'s columns) as a frame, read a block
    at a time so that only a block is ever held as Python rows; each text value that
    recurs across rows is kept once (a million trials name a few hundred candidates and
    tasks, which SQLite returns as a new string per row). Trial references, unique per
    row, are left as read."""
    texts = [i for i, c in enumerate(TABLES[table])
             if c.kind == "text" and c.name != "trajectory"]
    shared, frames = {}, []
    while found := cursor.fetchmany(block):
        columns = list(zip(*found))
        for i in texts:
            columns[i] = [shared.setdefault(v, v) for v in columns[i]]
        frames.append(frame_of(table, list(zip(*columns))))
    if len(frames) < 2:
        return frames[0] if frames else frame_of(table, [])
    return _joined(frames)


def _joined(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Blocks of one table as one frame, each column in the dtype one read would give it
    (an int column with a NULL in any block: ``Int64``)."""
    out = pd.concat(frames, ignore_index=True)
    for name in out.columns:
        kinds = {str(f[name].dtype) for f in frames}
        if kinds == {"int64", "Int64"}:
            out[name] = out[name].astype("Int64")
    return out


def sort_rows(rows: list[tuple], positions: list[int]) -> None:
    """Sort ``rows`` in place as SQLite's ``ORDER BY`` those columns would (NULL first).

    Sorting in Python is several times faster than SQLite's ordered scan of a wide table.
    """
    try:
        rows.sort(key=operator.itemgetter(*positions))
    except TypeError:  # a NULL among the key's values
        rows.sort(key=lambda row: [(row[i] is not None, row[i]) for i in positions])


_TRIAL_KEY_AT = [columns_of("trials").index(c) for c in KEYS["trials"]]
_TRIAL_KEY = operator.itemgetter(*_TRIAL_KEY_AT)


@dataclass(frozen=True)
class KeptTrials:
    """Trials read so far: the frame in key order, the ``data_version`` of the connection
    when they were read, the answers given per filter and, once a write needs them, the
    keys (sorted; a run only read never lists a million of them)."""

    frame: pd.DataFrame
    version: int
    answers: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)

    @classmethod
    def of(cls, frame: pd.DataFrame, version: int) -> KeptTrials:
        """From a frame of the trials table (:func:`fetch_frame`), put in key order (a frame
        of fewer than two rows, a new run's, is in key order)."""
        if len(frame) < 2:
            return cls(frame, version)
        return cls(frame.sort_values(KEYS["trials"], kind="stable", ignore_index=True),
                   version)

    @functools.cached_property
    def keys(self) -> list[tuple]:
        """Each row's key (:data:`gsme.schema.TRIAL_KEY`), in the frame's (sorted) order."""
        return list(zip(*(self.frame[c].tolist() for c in KEYS["trials"])))

    def where(self, equal: dict) -> pd.DataFrame:
        """The rows whose columns equal the given values (a shallow copy of the answer
        kept for this filter)."""
        asked = tuple(sorted(equal.items()))
        if asked not in self.answers:
            checked = self.checks.get(asked)
            self.answers[asked] = (_where(self.frame, equal) if checked is None
                                   else checked.frame)
        return self.answers[asked].copy(deep=False)

    def checked(self, equal: dict) -> pairing.Checked:
        """The rows whose columns equal the given values, checked (kept for this filter
        in ``checks``: read it, never change it). The whole frame is checked once; a
        filter takes its rows (:meth:`gsme.pairing.Checked.rows`), and the rows
        :meth:`merged` adds extend the whole frame's check."""
        asked = tuple(sorted(equal.items()))
        if asked not in self.checks:
            whole = self.checks.get(())
            if whole is None:
                whole = self.checks[()] = pairing.check(self.frame)
            self.checks[asked] = whole.rows(_matching(whole.frame, equal)) if asked else whole
        return self.checks[asked]

    def merged(self, data: list[tuple]) -> KeptTrials | None:
        """These rows and ``data`` (rows written since) in key order; None when a row
        written replaced a key already held or written twice (or a key holds a NULL, which
        only a full read orders)."""
        try:
            data = sorted(data, key=_TRIAL_KEY)
            keys = [_TRIAL_KEY(row) for row in data]
            at = np.array([bisect.bisect_left(self.keys, key) for key in keys], dtype=np.int64)
            every = sorted(self.keys + keys)
        except TypeError:  # None beside a value
            return None
        if (any(i < len(self.keys) and self.keys[i] == key for i, key in zip(at, keys))
                or any(a == b for a, b in itertools.pairwise(keys))):
            return None
        old, new = len(self.keys), len(keys)
        fresh = np.zeros(old + new, dtype=bool)
        fresh[at + np.arange(new)] = True
        order = np.empty(old + new, dtype=np.int64)
        order[fresh] = old + np.arange(new)
        order[~fresh] = np.arange(old)
        added = frame_of("trials", data)
        whole = self.checks.get(())
        if whole is not None and whole.frame is self.frame:  # check the added rows only
            whole = whole.extended(added, order)
            kept = KeptTrials(whole.frame, self.version, checks={(): whole})
            kept.__dict__["keys"] = every  # known: no need to list them again
            return kept
        frame = added if not old else pd.concat([self.frame, added], ignore_index=True).take(
            order).reset_index(drop=True)
        kept = KeptTrials(frame, self.version)
        kept.__dict__["keys"] = every  # known: no need to list them again
        return kept


_STORED_AS = {"text": {str}, "int": {int, bool}, "bool": {int, bool},
              "float": {float, int, bool}}


def as_stored(rows: list[tuple]) -> list[tuple] | None:
    """Trials rows (SQL values) as SQLite returns them once stored: NaN as NULL, a bool
    as 0/1, an int in a float column as a float; None when a value would be converted
    some other way (SQLite's type affinity: a number in a text column, say)."""
    columns = []
    for values, column in zip(zip(*rows), TABLES["trials"]):
        kinds = set(map(type, values))
        if float in kinds and column.kind != "float":  # NaN stored as NULL
            values = [None if type(v) is float and math.isnan(v) else v for v in values]
            kinds = set(map(type, values))
        kinds.discard(type(None))
        if not kinds <= _STORED_AS[column.kind]:
            return None
        if column.kind == "float" and kinds != {float}:
            values = [None if v is None else float(v) for v in values]
        elif bool in kinds and column.kind != "float":
            values = [None if v is None else int(v) for v in values]
        columns.append(values)
    return list(zip(*columns))


def frame_of(table: str, data: list[tuple]) -> pd.DataFrame:
    """A frame of ``table`` from rows of its columns (any further item of a row ignored)."""
    values = list(zip(*data)) if data else [()] * len(TABLES[table])
    return pd.DataFrame({col.name: _typed(column, col, table)
                         for col, column in zip(TABLES[table], values)})


def _where(frame: pd.DataFrame, equal: dict) -> pd.DataFrame:
    """The rows of ``frame`` whose columns equal the given values, as a new frame."""
    if not equal:
        return frame.copy(deep=False)
    return frame[_matching(frame, equal)].reset_index(drop=True)


def _matching(frame: pd.DataFrame, equal: dict) -> np.ndarray:
    """Whether each row's columns equal the given values."""
    keep = np.ones(len(frame), dtype=bool)
    for name, value in equal.items():
        keep &= frame[name].to_numpy() == to_sql(value)
    return keep


def sql_row(values: list) -> list:
    """A row's values as SQL values (:func:`to_sql`): the list itself when every value is
    one already (a trial's row as the loop writes it), which skips a call per value."""
    if _NATIVE.issuperset(map(type, values)):
        return values
    return list(map(to_sql, values))


def to_sql(value):
    if type(value) in _NATIVE:  # SQLite stores a float NaN as NULL, a bool as 0/1
        return value
    if value is pd.NA:
        return None
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if np.isnan(value) else float(value)
    return value


def _typed(values: tuple, column: schema.Column, table: str):
    """One column read from SQL in its frame dtype (an int column with NULLs: ``Int64``)."""
    if column.kind == "bool":
        return np.array(values, dtype=bool)
    if column.kind == "int":
        return pd.array(values, dtype="Int64") if None in values else np.array(
            values, dtype=np.int64)
    if column.kind == "float":
        return np.array(values, dtype=np.float64)
    if table == "trials" and column.name == "beacons":
        values = ["" if v is None else v for v in values]
    return pd.Series(np.array(values, dtype=object), dtype=object)  # not pandas' str dtype
