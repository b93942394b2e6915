"""The run ledger: one SQLite file (WAL mode) that every completed trial is committed to.

Tables hold the run's frames (trials, candidates, decisions, diagnoses, archive snapshots per
round), its events, evolver calls, transcripts and a key/value ``meta`` table. A trial and
its transcript are written in one transaction, so a run killed at any moment loses nothing
that completed and never holds half a trial.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from gsme import schema
from gsme.evolvers.base import DIAGNOSIS_COLUMNS

_TEXT, _INT, _REAL = "TEXT", "INTEGER", "REAL"

_FRAME_TABLES = {
    "trials": (schema.columns("trials") + ["borrowed_from", "round"], schema.TRIAL_KEY),
    "candidates": (schema.columns("candidates"), ["candidate"]),
    "decisions": (
        schema.columns("decisions") + ["round", "policy", "kept"],
        ["candidate", "parent", "split"],
    ),
    "diagnoses": (DIAGNOSIS_COLUMNS + ["round"], None),
    "archive": (schema.columns("archive") + ["snapshot"], ["snapshot", "where", "why"]),
    "proposals": (["round", "kind", "candidate", "parents", "ok", "reason"], None),
}

_SQL_TYPES = {
    "k": _INT, "attempt": _INT, "round": _INT, "snapshot": _INT, "n_tasks": _INT,
    "n_dropped": _INT, "n_changed": _INT, "passed": _INT, "infra_ok": _INT,
    "activated": _INT, "ok": _INT, "kept": _INT, "tokens": _REAL, "cost_usd": _REAL, "seconds": _REAL,
    "rate_parent": _REAL, "rate_child": _REAL, "delta_pp": _REAL, "se_pp": _REAL,
    "z": _REAL, "p_value": _REAL, "activation_rate": _REAL, "rate": _REAL,
    "confidence": _REAL,
}


class Ledger:
    """A run's SQLite ledger. Frames in, frames out; every write is its own transaction."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._create()

    def close(self) -> None:
        self._db.close()

    # -- meta ---------------------------------------------------------------------------
    def get(self, key: str, default=None):
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def put(self, key: str, value) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(value))
        )

    # -- frames -------------------------------------------------------------------------
    def append(self, table: str, frame: pd.DataFrame) -> None:
        """Append ``frame``'s rows to ``table`` in one transaction (replacing equal keys)."""
        cols, _ = _FRAME_TABLES[table]
        if frame.empty:
            return
        rows = [tuple(_to_sql(v) for v in row) for row in frame[cols].itertuples(index=False)]
        marks = ",".join("?" * len(cols))
        with self._transaction():
            self._db.executemany(
                f"INSERT OR REPLACE INTO {table} ({_quoted(cols)}) VALUES ({marks})", rows
            )

    def add_trials(self, rows: list[tuple[dict, str | None]]) -> None:
        """Commit trial rows with their transcripts in one transaction."""
        cols, _ = _FRAME_TABLES["trials"]
        insert = (f"INSERT OR REPLACE INTO trials ({_quoted(cols)}) VALUES "
                  f"({','.join('?' * len(cols))})")
        with self._transaction():
            for row, transcript in rows:
                self._db.execute(insert, tuple(_to_sql(row.get(c)) for c in cols))
                if transcript is not None and row.get("trajectory"):
                    self._db.execute(
                        "INSERT OR REPLACE INTO transcripts (ref, text) VALUES (?, ?)",
                        (row["trajectory"], zlib.compress(transcript.encode())),
                    )

    def mark_infra_failed(self, keys: list[tuple]) -> None:
        """Set ``infra_ok`` and ``passed`` to false for the trials with these keys."""
        where = " AND ".join(f'"{c}" = ?' for c in schema.TRIAL_KEY)
        with self._transaction():
            self._db.executemany(
                f"UPDATE trials SET infra_ok = 0, passed = 0 WHERE {where}", keys
            )

    def frame(self, table: str, where: str = "", params: tuple = ()) -> pd.DataFrame:
        """Read ``table`` (optionally filtered by an SQL ``where`` clause) as a frame."""
        cols, key = _FRAME_TABLES[table]
        sql = f"SELECT {_quoted(cols)} FROM {table}" + (f" WHERE {where}" if where else "")
        sql += f" ORDER BY {_quoted(key)}" if key else " ORDER BY rowid"
        data = self._db.execute(sql, params).fetchall()
        out = pd.DataFrame(np.array(data, dtype=object).reshape(len(data), len(cols)),
                           columns=cols, dtype=object)
        return _typed(out, table)

    def count(self, table: str, where: str = "", params: tuple = ()) -> int:
        sql = f"SELECT COUNT(*) FROM {table}" + (f" WHERE {where}" if where else "")
        return int(self._db.execute(sql, params).fetchone()[0])

    def delete(self, table: str, where: str, params: tuple = ()) -> None:
        with self._transaction():
            self._db.execute(f"DELETE FROM {table} WHERE {where}", params)

    def transcript(self, ref: str) -> str:
        row = self._db.execute("SELECT text FROM transcripts WHERE ref = ?", (ref,)).fetchone()
        if row is None:
            raise KeyError(f"no transcript stored under {ref!r}")
        return zlib.decompress(row[0]).decode()

    # -- events and evolver calls -------------------------------------------------------
    def event(self, kind: str, round: int | None = None, **payload) -> None:
        with self._transaction():
            self._db.execute(
                "INSERT INTO events (kind, round, payload) VALUES (?, ?, ?)",
                (kind, round, json.dumps(payload, default=str)),
            )

    def events(self, kind: str | None = None) -> pd.DataFrame:
        sql = "SELECT id, ts, kind, round, payload FROM events"
        rows = self._db.execute(sql + (" WHERE kind = ?" if kind else "") + " ORDER BY id",
                                (kind,) if kind else ()).fetchall()
        out = pd.DataFrame(rows, columns=["id", "ts", "kind", "round", "payload"])
        out["payload"] = [json.loads(p) for p in out["payload"]]
        return out

    def add_call(self, record: dict) -> None:
        with self._transaction():
            self._db.execute(
                "INSERT INTO evolver_calls (record) VALUES (?)", (json.dumps(record, default=str),)
            )

    def calls(self) -> pd.DataFrame:
        rows = self._db.execute("SELECT record FROM evolver_calls ORDER BY id").fetchall()
        return pd.DataFrame([json.loads(r[0]) for r in rows])

    # -- internals ----------------------------------------------------------------------
    def _transaction(self):
        return _Transaction(self._db)

    def _create(self) -> None:
        stmts = [
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)",
            "CREATE TABLE IF NOT EXISTS transcripts (ref TEXT PRIMARY KEY, text BLOB)",
            (
                "CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                "ts TEXT DEFAULT CURRENT_TIMESTAMP, kind TEXT, round INTEGER, payload TEXT)"
            ),
            (
                "CREATE TABLE IF NOT EXISTS evolver_calls "
                "(id INTEGER PRIMARY KEY AUTOINCREMENT, record TEXT)"
            ),
        ]
        for table, (cols, key) in _FRAME_TABLES.items():
            defs = ", ".join(f'"{c}" {_SQL_TYPES.get(c, _TEXT)}' for c in cols)
            pk = f", PRIMARY KEY ({_quoted(key)})" if key else ""
            stmts.append(f"CREATE TABLE IF NOT EXISTS {table} ({defs}{pk})")
        with self._transaction():
            for stmt in stmts:
                self._db.execute(stmt)


class _Transaction:
    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, exc, tb):
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


def _quoted(cols) -> str:
    return ", ".join(f'"{c}"' for c in cols)


def _to_sql(value):
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if np.isnan(value) else float(value)
    if isinstance(value, float) and np.isnan(value):
        return None
    if value is pd.NA:
        return None
    return value


_BOOL = {
    "trials": ("passed", "infra_ok", "activated"),
    "proposals": ("ok",),
    "decisions": ("kept",),
}


def _typed(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    for col in frame.columns:
        kind = _SQL_TYPES.get(col, _TEXT)
        values = frame[col]
        if col in _BOOL.get(table, ()):
            frame[col] = values.astype(bool)
        elif kind == _INT:
            frame[col] = values.astype(np.int64 if values.notna().all() else "Int64")
        elif kind == _REAL:
            frame[col] = values.astype(np.float64)
    if table == "trials":
        frame["beacons"] = frame["beacons"].fillna("")
    return frame
