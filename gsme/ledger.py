"""The run ledger: one SQLite file (WAL mode) that every completed trial is committed to.

Its frame tables and their SQL types are generated from :data:`gsme.schema.LEDGER_TABLES`;
besides them it holds transcripts, evolver calls, a key/value ``meta`` table and an
append-only ``events`` table (triggers refuse any change to a written event, and each event
holds the hash of the one before it), from which a run's life cycle (rounds begun and
ended, sealing) is read. Trials and their transcripts are
written in one transaction per batch (:meth:`Ledger.add_trials`), so a run killed at any
moment holds every trial of a batch or none of it, and never half a trial; what was not yet
written is simply run again on resume. Every SQL statement gsme runs is in this module.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import sqlite3
import time
import zlib
from pathlib import Path
from urllib.parse import quote

import pandas as pd

from gsme import pairing, schema
from gsme._ledger_rows import (
    KEYS,
    TABLES,
    KeptTrials,
    as_stored,
    columns_of,
    fetch_frame,
    frame_of,
    sort_rows,
    sql_row,
    to_sql,
)
from gsme._renamed import COLUMNS as RENAMED_COLUMNS
from gsme._renamed import renamed_keywords
from gsme.redact import Redactor

__all__ = ["GENESIS", "Ledger", "LedgerError", "event_hash"]

GENESIS = "0" * 64  # what the first event follows


@renamed_keywords(prev="previous", ts="timestamp")
def event_hash(previous: str, timestamp: str, kind: str, round: int | None,
               payload: str) -> str:
    """The hash an event stores: SHA-256 over the ``previous`` event's hash and its own
    fields (its ``timestamp``, the events frame's ``ts``; ``payload`` as the JSON text stored).

    Examples
    --------
    >>> first = event_hash(GENESIS, "2025-01-01T00:00:00Z", "round", 1, "{}")
    >>> len(first), first == event_hash(GENESIS, "2025-01-01T00:00:00Z", "round", 1, "{}")
    (64, True)
    >>> first == event_hash(GENESIS, "2025-01-01T00:00:00Z", "round", 2, "{}")
    False
    """
    fields = [previous, timestamp, kind, round, payload]
    return hashlib.sha256(json.dumps(fields).encode()).hexdigest()


_SQL_TYPES = {"text": "TEXT", "int": "INTEGER", "float": "REAL", "bool": "INTEGER"}
_COMPRESS_FROM = 1024
_NAMES_OF = frozenset({"candidate", "child", "parent", "parents", "borrowed_from", "task_id",
                       "split", "trajectory", "commit", "branch", "patch_id"})
"""Text columns that name a candidate, task, commit or transcript (and join the tables):
stored as they are. Every other text column is redacted (:mod:`gsme.redact`)."""
_ADDED = frozenset({("trials", "score"), ("decisions", "first_delta_pp"),
                    ("decisions", "first_se_pp")})
"""Columns added since the first hash-chained ledgers (table, column): added, empty, on
open (:meth:`Ledger._migrated`)."""
_REDACTED_AT = {table: [i for i, c in enumerate(cols) if c.kind == "text" and
                        c.name not in _NAMES_OF] for table, cols in TABLES.items()}


class LedgerError(RuntimeError):
    """The ledger file is missing, empty, damaged or not a gsme ledger.

    Examples
    --------
    >>> Ledger(Path("missing.sqlite"), read_only=True)
    Traceback (most recent call last):
    ...
    gsme.ledger.LedgerError: missing.sqlite is missing or empty: not a usable run ledger
    """


class Ledger:
    """A run's SQLite ledger. Frames in, frames out; every write is its own transaction.

    ``read_only`` opens an existing ledger without ever writing to it (a read-only or
    archived run directory works too); ``create`` makes the schema in a new file.
    ``reads`` counts, by table, the SQL queries that read a table's rows into a frame (a
    benchmark's count of how often a loop goes back to the file).

    Examples
    --------
    >>> ledger = Ledger(Path("ledger.sqlite"), create=True)
    >>> ledger.put("note", {"a": 1})
    >>> ledger.get("note")
    {'a': 1}
    >>> ledger.event("hello", round=0, x=1)
    >>> ledger.events()[["kind", "round", "payload"]]
        kind  round   payload
    0  hello      0  {'x': 1}
    >>> ledger.close()
    """

    def __init__(self, path: Path, *, create: bool = False, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        if not create and (not self.path.is_file() or self.path.stat().st_size == 0):
            raise LedgerError(f"{self.path} is missing or empty: not a usable run ledger")
        try:
            self._db = _connect(self.path, read_only)
            if create:
                self._create()
            self._check()
            self._selected = self._migrated()
        except sqlite3.DatabaseError as err:
            raise LedgerError(f"{self.path} is damaged or not a gsme ledger ({err})") from None
        self._trials: KeptTrials | None = None
        self._written: list[tuple] = []  # trial rows this connection wrote since the read
        self._tables: dict[str, tuple[int, pd.DataFrame]] = {}  # table -> (version, rows)
        self.reads: collections.Counter[str] = collections.Counter()
        self._no_events: dict[str | None, tuple] = {}  # kind -> (state, the empty frame)
        self._redact = Redactor()

    def close(self) -> None:
        self._db.close()

    def redact_secrets(self, secrets) -> None:
        """Redact these values (variable name → value) from everything written from now on,
        as well as key-shaped strings (:class:`~gsme.redact.Redactor`): meta values, text
        columns, transcripts and evolver calls. The values are kept in memory only."""
        self._redact = Redactor(secrets)

    # -- meta ---------------------------------------------------------------------------
    def get(self, key: str, default=None):
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    def put(self, key: str, value) -> None:
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                             (key, json.dumps(self._redact.value(value))))

    # -- frames -------------------------------------------------------------------------
    def append(self, table: str, frame: pd.DataFrame) -> None:
        """Append ``frame``'s rows to ``table`` in one transaction (replacing equal keys)."""
        if frame.empty:
            return
        self._tables.pop(table, None)
        columns = [[to_sql(v) for v in frame[c].tolist()] for c in columns_of(table)]
        rows = [self._redacted(table, list(row)) for row in zip(*columns)]
        with self._transaction():
            self._db.executemany(_insert(table), rows)
        if table == "trials":
            self._wrote_trials(rows)

    def add_trials(self, rows: list[tuple[dict, str | None]]) -> None:
        """Commit trial rows (dicts with the trials table's columns) with their transcripts.

        All of ``rows`` go in one transaction: after a crash the ledger holds every one of
        them or none, and never a trial without its transcript. Transcripts are prepared
        (:func:`_stored`) before the transaction begins, so the write lock is held only for
        the inserts.
        """
        cols = columns_of("trials")
        trials = [self._redacted("trials", sql_row(list(map(row.get, cols)))) for row, _ in rows]
        texts = [(row["trajectory"], _stored(self._redact(transcript)))
                 for row, transcript in rows if transcript is not None and row.get("trajectory")]
        with self._transaction():
            self._db.executemany(_insert("trials"), trials)
            self._db.executemany(
                "INSERT OR REPLACE INTO transcripts (ref, text) VALUES (?, ?)", texts)
        self._wrote_trials(trials)

    def _wrote_trials(self, rows: list[tuple]) -> None:
        """Keep trial rows this connection committed for the next read (:meth:`_all_trials`)
        as SQLite stores them; a value SQLite would convert otherwise (a number in a text
        column, say) makes the next read read everything."""
        stored = as_stored(rows) if rows else []
        if self._trials is None or stored is None:
            self._trials = None
            self._written = []
        else:
            self._written.extend(stored)

    def mark_infra_failed(self, keys: list[tuple], error: str) -> None:
        """Turn the trials with these keys into infrastructure failures (with ``error``)."""
        where = " AND ".join(f'"{c}" = ?' for c in schema.TRIAL_KEY)
        self._trials = None  # rows change in place: the next read reads them all
        self._written = []
        with self._transaction():
            self._db.executemany(
                f"UPDATE trials SET infra_ok = 0, passed = 0, error = ? WHERE {where}",
                [(self._redact(error), *key) for key in keys])

    def frame(self, table: str, **equal) -> pd.DataFrame:
        """Rows of ``table`` whose columns equal the given values (None: no filter).

        Trials are kept between reads (:meth:`_all_trials`): the rows this ledger writes
        are added to those read, and the file is read again only when another connection
        committed, so reading a growing trials table pass after pass costs what was added,
        not the whole table. Each answer with the same filter is kept until the trials
        change. Another table read whole is kept until this ledger writes to it or another
        connection commits.
        """
        clauses = _clauses(table, equal)
        if table == "trials":
            return self._all_trials().where(clauses)
        if not clauses:
            return self._whole(table).copy(deep=False)
        return self._select(table, clauses)

    def _whole(self, table: str) -> pd.DataFrame:
        """Every row of ``table`` (not trials), kept until this ledger writes to the table
        or another connection commits (``PRAGMA data_version``)."""
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        known = self._tables.get(table)
        if known is None or known[0] != version:
            known = self._tables[table] = version, self._select(table, {})
        return known[1]

    def _select(self, table: str, clauses: dict) -> pd.DataFrame:
        """The rows of ``table`` whose columns equal ``clauses``' values, read by SQL."""
        cols = columns_of(table)
        sql = f"SELECT {self._selected[table]} FROM {table}"
        if clauses:
            sql += " WHERE " + " AND ".join(f'"{c}" = ?' for c in clauses)
        key = KEYS.get(table)
        sql += "" if key else " ORDER BY rowid"
        data = self._db.execute(sql, tuple(to_sql(v) for v in clauses.values())).fetchall()
        self.reads[table] += 1
        if key:
            sort_rows(data, [cols.index(c) for c in key])
        return frame_of(table, data)

    def _all_trials(self) -> KeptTrials:
        """Every trial in key order (its frames are shared: callers get shallow copies).

        The rows read are kept with the connection's ``PRAGMA data_version``; the rows this
        connection commits afterwards (:meth:`_wrote_trials`) are merged in key order at the
        next read, without SQL. Everything is read again when another connection committed
        since (the version changed), when this one changed rows in place
        (:meth:`mark_infra_failed`) or when a row written replaces a key already held. The
        file stays the only source of truth: nothing is kept across processes.
        """
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        known = self._trials
        if known is not None and known.version == version and self._written:
            known = self._trials = known.merged(self._written)
        self._written = []
        if known is None or known.version != version:
            data = fetch_frame(self._db.execute(f"SELECT {self._selected['trials']} FROM trials"),
                               "trials")
            self.reads["trials"] += 1
            known = self._trials = KeptTrials.of(data, version)
        return known

    def checked_trials(self, **equal) -> pairing.Checked:
        """The trials whose columns equal the given values (None: no filter), checked
        (:class:`gsme.pairing.Checked`; read it, never change it). Kept between reads as
        :meth:`frame` keeps them: the whole table is checked once, and the rows this ledger
        writes afterwards are checked on their own as they are merged in
        (:meth:`gsme.pairing.Checked.extended`)."""
        return self._all_trials().checked(_clauses("trials", equal))

    def recorded(self, keys: list[tuple]) -> list[tuple]:
        """Those of these trial keys (values of :data:`gsme.schema.TRIAL_KEY`) that the
        trials table holds, in key order."""
        held = set(self._all_trials().keys)
        return sorted(key for key in keys if key in held)

    def count_trials(self, *, borrowed: bool | None = None, candidate: str | None = None) -> int:
        """Trials in the ledger: all, only those run (``borrowed=False``) or only borrowed."""
        clauses, params = [], []
        if borrowed is not None:
            clauses.append(f"borrowed_from IS {'NOT ' if borrowed else ''}NULL")
        if candidate is not None:
            clauses.append("candidate = ?")
            params.append(candidate)
        sql = "SELECT COUNT(*) FROM trials" + (" WHERE " + " AND ".join(clauses) if clauses
                                                else "")
        return int(self._db.execute(sql, params).fetchone()[0])

    def delete_round(self, table: str, round: int) -> None:
        """Delete ``table``'s rows of ``round`` (what an interrupted round left)."""
        column = "snapshot" if table == "archive" else "round"
        self._tables.pop(table, None)
        with self._transaction():
            self._db.execute(f'DELETE FROM {table} WHERE "{column}" = ?', (int(round),))

    def delete_candidate(self, candidate: str) -> None:
        """Delete a candidate's row (a candidate discarded before any trial)."""
        self._tables.pop("candidates", None)
        with self._transaction():
            self._db.execute("DELETE FROM candidates WHERE candidate = ?", (candidate,))

    def transcript(self, ref: str) -> str:
        row = self._db.execute("SELECT text FROM transcripts WHERE ref = ?", (ref,)).fetchone()
        if row is None:
            raise KeyError(f"no transcript stored under {ref!r}")
        text = row[0]
        return text if isinstance(text, str) else zlib.decompress(text).decode()

    # -- events and evolver calls -------------------------------------------------------
    def event(self, kind: str, round: int | None = None, **payload) -> None:
        """Append one event (events are never changed or deleted).

        Each event holds the hash of the one before it (:func:`event_hash`), so a changed,
        removed or inserted event breaks the chain (:meth:`chain`). An event is durable
        when this returns (``synchronous=FULL`` for its transaction, which also makes
        every earlier transaction durable): what gsme writes to git or files after an
        event is never ahead of the ledger after a power loss. Other writes (trials in
        their many small batches) stay ``synchronous=NORMAL``: a power loss may take back
        the last of them, which are then run again.
        """
        text = json.dumps(payload, default=str)
        ts = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
        with self._transaction(durable=True):
            last = self._db.execute("SELECT hash FROM events ORDER BY id DESC LIMIT 1").fetchone()
            prev = GENESIS if last is None else last[0]
            digest = event_hash(prev, ts, kind, round, text)
            self._db.execute("INSERT INTO events (ts, kind, round, payload, prev, hash) "
                             "VALUES (?, ?, ?, ?, ?, ?)", (ts, kind, round, text, prev, digest))

    def events(self, kind: str | None = None) -> pd.DataFrame:
        """Events in order: ``id, ts, kind, round, payload`` (a dict).

        Events are never changed or deleted, so a kind found absent stays absent until an
        event is added (the last id grows) or another connection commits: until then the
        answer is the empty frame already made (most questions, such as "is the run
        sealed?", find none).
        """
        state = (self._db.execute("PRAGMA data_version").fetchone()[0],
                 self._db.execute("SELECT max(id) FROM events").fetchone()[0])
        known = self._no_events.get(kind)
        if known is not None and known[0] == state:
            return known[1].copy()
        sql = "SELECT id, ts, kind, round, payload FROM events"
        rows = self._db.execute(sql + (" WHERE kind = ?" if kind else "") + " ORDER BY id",
                                (kind,) if kind else ()).fetchall()
        out = pd.DataFrame(rows, columns=["id", "ts", "kind", "round", "payload"])
        out["payload"] = [json.loads(p) for p in out["payload"]]
        if out.empty:
            self._no_events[kind] = state, out.copy()
        return out

    def chain(self) -> list[tuple]:
        """Every event as stored, in order: ``(id, ts, kind, round, payload, prev, hash)``
        with ``payload`` the JSON text the hash was computed over."""
        return self._db.execute("SELECT id, ts, kind, round, payload, prev, hash FROM events "
                                "ORDER BY id").fetchall()

    def event_sequence(self) -> int:
        """The highest event id ever given (SQLite's ``AUTOINCREMENT`` sequence; 0 before
        the first event): above the last event's id when events were removed from the end.
        """
        row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'"
                               ).fetchone()
        return 0 if row is None else int(row[0])

    def guarded(self) -> bool:
        """True while the triggers that make ``events`` append-only are in place."""
        names = {r[0] for r in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'")}
        return {"events_no_update", "events_no_delete"} <= names

    def digest(self, split: str) -> str:
        """SHA-256 over the split's trials as stored (every column, in key order).

        A row's ``score`` counts only where it holds one, so the digest of trials stored
        before the column existed is unchanged.
        """
        rows = self._db.execute(f"SELECT {self._selected['trials']} FROM trials WHERE split = ? "
                                f"ORDER BY {_quoted(KEYS['trials'])}", (split,))
        at = columns_of("trials").index("score")
        hasher = hashlib.sha256()
        for row in rows:
            hasher.update(json.dumps(row if row[at] is not None else row[:at] + row[at + 1:])
                          .encode())
            hasher.update(b"\n")
        return hasher.hexdigest()

    def add_call(self, record: dict) -> None:
        with self._transaction():
            self._db.execute("INSERT INTO evolver_calls (record) VALUES (?)",
                             (json.dumps(self._redact.value(record), default=str),))

    def calls(self) -> pd.DataFrame:
        rows = self._db.execute("SELECT record FROM evolver_calls ORDER BY id").fetchall()
        return pd.DataFrame([json.loads(r[0]) for r in rows])

    # -- internals ----------------------------------------------------------------------
    def _redacted(self, table: str, values: list) -> tuple:
        """A row of ``table`` with its text columns redacted, except names (:data:`_NAMES_OF`)."""
        for i in _REDACTED_AT[table]:
            if type(values[i]) is str:
                values[i] = self._redact(values[i])
        return tuple(values)

    def _transaction(self, *, durable: bool = False):
        if self.read_only:
            raise LedgerError(f"{self.path} is open read-only")
        return _Transaction(self._db, durable=durable)

    def _create(self) -> None:
        stmts = [
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)",
            "CREATE TABLE transcripts (ref TEXT PRIMARY KEY, text BLOB)",
            ("CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, "
            "ts TEXT, kind TEXT, round INTEGER, payload TEXT, prev TEXT, hash TEXT)"),
            ("CREATE TRIGGER events_no_update BEFORE UPDATE ON events "
            "BEGIN SELECT RAISE(ABORT, 'events are append-only'); END"),
            ("CREATE TRIGGER events_no_delete BEFORE DELETE ON events "
            "BEGIN SELECT RAISE(ABORT, 'events are append-only'); END"),
            "CREATE TABLE evolver_calls (id INTEGER PRIMARY KEY AUTOINCREMENT, record TEXT)",
        ]
        for table, cols in TABLES.items():
            defs = ", ".join(f'"{c.name}" {_SQL_TYPES[c.kind]}' for c in cols)
            key = KEYS.get(table)
            pk = f", PRIMARY KEY ({_quoted(key)})" if key else ""
            stmts.append(f"CREATE TABLE {table} ({defs}{pk})")
        with self._transaction():
            for stmt in stmts:
                self._db.execute(stmt)

    def _migrated(self) -> dict[str, str]:
        """Bring a ledger of an earlier version up to this one's columns; the SQL that
        selects each table's columns.

        A column added since (:data:`_ADDED`: the trials' ``score``) is added empty, so
        nothing stored earlier changes; a column renamed since (``gsme._renamed.COLUMNS``:
        the decisions' ``candidate``, now ``child``) is renamed. A read-only ledger is left as it
        is and reads an added column as NULL, a renamed one under its new name.
        """
        selected = {}
        for table in TABLES:
            found = {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}
            absent = [c for c in TABLES[table] if c.name not in found]
            old = {c.name: RENAMED_COLUMNS[c.name] for c in absent
                   if RENAMED_COLUMNS.get(c.name) in found}
            if absent and not self.read_only:
                with self._transaction():
                    for column in absent:
                        self._db.execute(_brought_up(table, column, old.get(column.name)))
                absent, old = [], {}
            selected[table] = ", ".join(
                f'"{old[c.name]}" AS "{c.name}"' if c.name in old else
                f'NULL AS "{c.name}"' if c in absent else f'"{c.name}"' for c in TABLES[table])
        return selected

    def _check(self) -> None:
        found = {r[0] for r in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        missing = sorted({"meta", "events", "transcripts", "evolver_calls", *TABLES} - found)
        if missing:
            raise LedgerError(f"{self.path} is not a gsme ledger (no table(s) {missing})")
        for table in TABLES:
            found = {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}
            unknown = [c.name for c in TABLES[table] if c.name not in found
                       and (table, c.name) not in _ADDED
                       and RENAMED_COLUMNS.get(c.name) not in found]
            if unknown:
                raise LedgerError(f"{self.path} is not a gsme ledger (table {table} has no "
                                  f"column(s) {unknown})")
        chained = {r[1] for r in self._db.execute("PRAGMA table_info(events)")}
        if "hash" not in chained:
            raise LedgerError(f"{self.path} was written by gsme 0.2, whose events are not "
                              "hash-chained; read it with that version")


def _connect(path: Path, read_only: bool) -> sqlite3.Connection:
    if not read_only:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        return db
    # an archived run may sit in a folder nobody can write: then open it immutable
    writable = _writable(path.parent)
    uri = f"file:{quote(str(path.resolve()))}?{'mode=ro' if writable else 'immutable=1'}"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def _writable(folder: Path) -> bool:
    return os.access(folder, os.W_OK)


class _Transaction:
    """One write transaction; ``durable`` syncs the WAL when it commits
    (``synchronous=FULL`` for it alone, NORMAL again afterwards)."""

    def __init__(self, db: sqlite3.Connection, *, durable: bool = False):
        self.db = db
        self.durable = durable

    def __enter__(self):
        if self.durable:
            self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, exc, tb):
        try:
            self.db.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            if self.durable:
                self.db.execute("PRAGMA synchronous=NORMAL")


def _brought_up(table: str, column, old: str | None) -> str:
    """The SQL that gives ``table`` the ``column`` it lacks: renamed from ``old``, else added
    empty."""
    if old is not None:
        return f'ALTER TABLE {table} RENAME COLUMN "{old}" TO "{column.name}"'
    return f'ALTER TABLE {table} ADD COLUMN "{column.name}" {_SQL_TYPES[column.kind]}'


def _insert(table: str) -> str:
    cols = columns_of(table)
    return (f"INSERT OR REPLACE INTO {table} ({_quoted(cols)}) "
            f"VALUES ({','.join('?' * len(cols))})")


def _quoted(cols) -> str:
    return ", ".join(f'"{c}"' for c in cols)


def _clauses(table: str, equal: dict) -> dict:
    """The filters of ``equal`` that are set (None: no filter), each a column of ``table``."""
    clauses = {k: v for k, v in equal.items() if v is not None}
    unknown = sorted(set(clauses) - set(columns_of(table)))
    if unknown:
        raise ValueError(f"table {table} has no column(s) {unknown}")
    return clauses


def _stored(transcript: str) -> str | bytes:
    """A transcript as the ledger keeps it: zlib-compressed bytes, or the text itself when
    shorter than :data:`_COMPRESS_FROM` characters (zlib's fixed cost, about 10 µs a call,
    is most of a fast trial's and saves a few hundred bytes there). The compressor's state
    is a quarter of zlib's default (``memLevel`` 4, an 8 KiB window: setting up the default
    one took most of a call), which gives transcripts of a few KiB the same size, and its
    level is the fastest (1: about a quarter less CPU than the default level, 5% more bytes);
    any ``zlib.decompress`` reads it."""
    if len(transcript) < _COMPRESS_FROM:
        return transcript
    compressor = zlib.compressobj(1, zlib.DEFLATED, 13, 4)
    return compressor.compress(transcript.encode()) + compressor.flush()
