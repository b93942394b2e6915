"""A comparisons file: what earlier runs measured, for the ``learned`` keep rule to learn from.

Every gated comparison of a run (a child against its parent on the train split) is one row
of the comparisons frame (:mod:`gsme.schema`): ``agent, evolver, run, round, child,
parent, n_tasks, delta_pp, se_pp, decision``, the *world* that generated it and the
comparison's first-K measurement. A proposal mix belongs to a world: the task model inside
its harness, the suite, the evolver's model and prompt. So every row carries the run's
:func:`signature` (its parts :data:`PARTS`, readable, and ``world``, a digest of them all),
and a run pointed at a file (``RunConfig(learn_from=...)``, ``[run] learn_from``) learns
from the rows of its own world only (:func:`relevant`; ``[run] learn_match`` widens that on
request). ``first_delta_pp, first_se_pp`` are the paired Δ and its se over the first K
repeats of every task, which the adaptive design's early stop does not bias; the prior
learns from them (:mod:`gsme.policy`). When the run is sealed its own comparisons are
appended, so the next run learns from one more. Only train comparisons are written: nothing
of the sealed test split ever reaches the file.

The file is UTF-8 CSV with a header. Appending takes an exclusive lock on the file, so runs
sealed at the same moment do not interleave; it writes in the order of the file's own
header, never writes a run's rows twice, and refuses a file whose header is not this
contract. A file written before 0.3.0 (without the world and first-K columns) still reads:
its rows carry an empty ``world``, which matches no run by default, and its ``candidate``
column reads as ``child``; appending to it rewrites it once with the full header.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from gsme import _renamed, schema
from gsme.settings import LEARN_MATCHES, WORLD_PARTS, learn_match_parts

__all__ = ["MATCHES", "PARTS", "append", "check_match", "conform", "digest", "of_run", "read",
           "relevant", "signature", "signature_of"]

_COLUMNS = schema.columns("comparisons")
_TYPES = {c.name: {"text": object, "int": np.int64, "float": np.float64}[c.kind]
          for c in schema.FRAMES["comparisons"].columns}
PARTS = WORLD_PARTS
"""What a world is made of (:data:`gsme.settings.WORLD_PARTS`)."""
MATCHES = LEARN_MATCHES
"""``learn_match`` values besides a comma-separated list of :data:`PARTS`."""
_ADDED = ["world", "harness", "task_model", "suite", "evolver_model", "prompt",
          "first_delta_pp", "first_se_pp"]
"""Columns added in 0.3.0: a file without them is read with them filled in."""
_FIRST = {"first_delta_pp": "delta_pp", "first_se_pp": "se_pp"}


def digest(value) -> str:
    """A short stable digest (16 hex digits) of a JSON-able value or a string.

    Examples
    --------
    >>> digest("abc") == digest("abc") != digest("abd"), len(digest({"a": 1}))
    (True, 16)
    """
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def signature(agent, evolver) -> dict[str, str]:
    """The world of a run of ``agent`` and ``evolver``: :data:`PARTS` and their ``world``.

    The parts come from ``agent.signature()`` (``harness, task_model, suite``) and
    ``evolver.signature()`` (``evolver_model, prompt``; empty without an evolver).

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolvers import RuleEvolver
    >>> a = signature(sim.preset("tiny"), RuleEvolver(seed=0))
    >>> a == signature(sim.preset("tiny"), RuleEvolver(seed=5))   # the seed is not the world
    True
    >>> a["world"] == signature(sim.preset("tiny", suite_seed=1), RuleEvolver())["world"]
    False
    """
    parts = {"agent": str(agent.name), "evolver": str(getattr(evolver, "name", None)),
             **agent.signature(),
             **(evolver.signature() if evolver is not None
                else {"evolver_model": "", "prompt": ""})}
    parts = {p: str(parts[p]) for p in PARTS}
    return {**parts, "world": digest(parts)}


def read(path) -> pd.DataFrame:
    """The comparisons in ``path`` (an empty frame when the file does not exist yet).

    Raises
    ------
    FrameError
        The file is empty, not UTF-8, its header is not the comparisons contract (the
        message names the missing and unknown columns), or it holds a bad value (the
        message names the column and the rows).

    See Also
    --------
    append : Add a run's rows to the file.
    relevant : The rows a run learns from.

    Examples
    --------
    >>> d = pd.DataFrame({"child": ["c1", "c2"], "parent": "baseline", "split": "train",
    ...                   "round": 1, "n_tasks": 45, "delta_pp": [2.5, -1.0], "se_pp": 3.1,
    ...                   "decision": "inconclusive"})
    >>> world = {p: "x" for p in PARTS}
    >>> append("comparisons.csv", of_run(d, signature=world, run="r1"))
    2
    >>> read("comparisons.csv")[["run", "child", "delta_pp", "decision"]]
      run child  delta_pp      decision
    0  r1    c1       2.5  inconclusive
    1  r1    c2      -1.0  inconclusive
    >>> len(read("no-such-file.csv"))
    0
    """
    path = Path(path)
    if not path.exists():
        return schema.empty("comparisons")
    if path.is_dir():
        raise IsADirectoryError(f"learn_from {path} is a folder; it must be a CSV file")
    return _parse(_text(path.read_bytes(), path), path)


def conform(frame: pd.DataFrame, *, what: str = "comparisons") -> pd.DataFrame:
    """``frame`` as a valid comparisons frame, the columns added in 0.3.0 filled in.

    A frame (or file) written before 0.3.0 lacks the world columns (filled with ``""``,
    which matches no run by default) and the first-K columns (filled with ``delta_pp`` and
    ``se_pp``). Columns beyond the contract are dropped.

    Examples
    --------
    >>> old = pd.DataFrame({"agent": ["a"], "evolver": "rule", "run": "r1", "round": 1,
    ...                     "child": "c1", "parent": "baseline", "n_tasks": 40,
    ...                     "delta_pp": 2.0, "se_pp": 3.0, "decision": "inconclusive"})
    >>> conform(old)[["world", "first_delta_pp", "first_se_pp"]].values.tolist()
    [['', 2.0, 3.0]]
    """
    frame = schema.require(frame, [c for c in _COLUMNS if c not in _ADDED], what)
    frame = frame.copy()
    for column in _ADDED:
        if column not in frame:
            frame[column] = frame[_FIRST[column]] if column in _FIRST else ""
    frame = frame[_COLUMNS]
    try:
        for column, kind in _TYPES.items():
            if kind is np.float64 and frame[column].dtype == object:
                frame[column] = pd.to_numeric(frame[column].replace("", np.nan))
        frame = frame.astype(_TYPES)
    except (TypeError, ValueError) as err:
        raise schema.FrameError(f"{what} holds a value of the wrong type ({err})") from None
    for column, measured in _FIRST.items():  # no first-K measurement: the comparison's own
        frame[column] = frame[column].fillna(frame[measured])
    return schema.validate(frame.reset_index(drop=True), "comparisons")


def relevant(comparisons: pd.DataFrame, *, signature: Mapping[str, str],
             match: str = "world") -> pd.DataFrame:
    """The rows a run of world ``signature`` learns from.

    ``match`` is ``"world"`` (the default: rows of the same world, its digest and every
    part equal),
    ``"any"`` (every row) or a comma-separated list of :data:`PARTS` that must be equal
    (``"agent,evolver"``: by name, as before 0.3.0). Rows written before 0.3.0 carry no
    world and match no run under ``"world"``; one printed line says so when there are some.

    Examples
    --------
    >>> d = pd.DataFrame({"child": ["c1", "c2"], "parent": "baseline", "split": "train",
    ...                   "round": 1, "n_tasks": 45, "delta_pp": [2.5, -1.0], "se_pp": 3.1,
    ...                   "decision": "inconclusive"})
    >>> mine = {p: "x" for p in PARTS}
    >>> other = {**mine, "task_model": "another-model"}
    >>> rows = pd.concat([of_run(d, signature=mine, run="r1"),
    ...                   of_run(d, signature=other, run="r2")])
    >>> relevant(rows, signature=signature_of(mine))[["run", "child"]]
      run child
    0  r1    c1
    1  r1    c2
    >>> relevant(rows, signature=signature_of(mine), match="agent,evolver")["run"].tolist()
    ['r1', 'r1', 'r2', 'r2']
    """
    parts = learn_match_parts(match)
    comparisons = conform(comparisons)
    if match == "any":
        return comparisons
    if match == "world":
        unsigned = int((comparisons["world"] == "").sum())
        if unsigned:
            print(f"gsme: {unsigned} comparison(s) of the learn_from file were written before "
                  "0.3.0 (no world signature) and match no run; [run] learn_match = "
                  "\"agent,evolver\" learns from them by name", file=sys.stderr, flush=True)
        parts = ["world", *PARTS]  # a row whose parts were edited is not of the world
    mine = np.logical_and.reduce([comparisons[p] == str(signature[p]) for p in parts])
    return comparisons[np.asarray(mine, dtype=bool)].reset_index(drop=True)


def signature_of(parts: Mapping[str, str]) -> dict[str, str]:
    """``parts`` (:data:`PARTS`) with their ``world`` digest, as :func:`signature` makes it.

    Examples
    --------
    >>> len(signature_of({p: "x" for p in PARTS})["world"])
    16
    """
    parts = {p: str(parts[p]) for p in PARTS}
    return {**parts, "world": digest(parts)}


def of_run(decisions: pd.DataFrame, *, signature: Mapping[str, str], run: str) -> pd.DataFrame:
    """A run's train decisions as comparisons rows.

    Parameters
    ----------
    decisions : DataFrame
        The run's decisions (with ``round``), e.g. :meth:`gsme.run.Run.decisions`; its
        ``first_delta_pp, first_se_pp`` when present, else ``delta_pp, se_pp``.
    signature : mapping
        The run's world: :data:`PARTS` (and ``world``, computed when missing).
    run : str
        The run's id.

    Returns
    -------
    DataFrame
        The comparisons frame: one row per train decision.

    Examples
    --------
    >>> d = pd.DataFrame({"child": ["c1"], "parent": ["baseline"], "split": ["train"],
    ...                   "round": [1], "n_tasks": [45], "delta_pp": [2.5], "se_pp": [3.1],
    ...                   "decision": ["inconclusive"]})
    >>> rows = of_run(d, signature={p: "x" for p in PARTS}, run="r1")
    >>> rows[["run", "delta_pp", "first_delta_pp"]].values.tolist()
    [['r1', 2.5, 2.5]]
    """
    decisions = schema.require(decisions, ["child", "parent", "split", "round", "n_tasks",
                                           "delta_pp", "se_pp", "decision"], "decisions")
    train = decisions[decisions["split"] == "train"]
    first = {c: train[c].fillna(train[m]) if c in train else train[m] for c, m in _FIRST.items()}
    return conform(train.assign(**signature_of(signature), **first, run=run))


def append(path, rows: pd.DataFrame) -> int:
    """Append ``rows`` to the file at ``path`` (created with a header when new).

    Rows of a run already in the file are not written again; they are written in the order
    of the file's header, after a line break if its last line lacks one. Returns how many
    were written.

    Raises
    ------
    FrameError
        The file is not UTF-8 or its header is not the comparisons contract (one line
        naming the missing and unknown columns): nothing is written.

    See Also
    --------
    of_run : A run's decisions as comparisons rows.
    read : Read the file back.

    Examples
    --------
    >>> d = pd.DataFrame({"child": ["c1", "c2"], "parent": "baseline", "split": "train",
    ...                   "round": 1, "n_tasks": 45, "delta_pp": [2.5, -1.0], "se_pp": 3.1,
    ...                   "decision": "inconclusive"})
    >>> rows = of_run(d, signature={p: "x" for p in PARTS}, run="r1")
    >>> append("comparisons.csv", rows), append("comparisons.csv", rows)
    (2, 0)
    """
    rows = conform(rows, what="rows to append")
    path = Path(path)
    while True:
        with open(path, "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                if os.fstat(handle.fileno()).st_ino != os.stat(path).st_ino:
                    continue  # rewritten by another append while this one waited
                handle.seek(0)
                return _append_locked(handle, path, rows)
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def _append_locked(handle, path: Path, rows: pd.DataFrame) -> int:
    data = handle.read()
    if not data:
        return _write(handle, rows, header=_COLUMNS, with_header=True)
    existing = _parse(_text(data, path), path)
    new = rows[~rows["run"].isin(set(existing["run"]))]
    if new.empty:
        return 0
    header = _header(_text(data, path))
    if set(header) != set(_COLUMNS):  # written before 0.3.0: rewrite once, in full
        _replace(path, pd.concat([existing, new], ignore_index=True))
        return len(new)
    if not data.endswith(b"\n"):
        handle.write(b"\n")
    return _write(handle, new, header=header, with_header=False)


def _write(handle, rows: pd.DataFrame, *, header: list[str], with_header: bool) -> int:
    text = rows[header].to_csv(header=with_header, index=False, lineterminator="\n")
    handle.write(text.encode())
    handle.flush()
    os.fsync(handle.fileno())
    return len(rows)


def _replace(path: Path, frame: pd.DataFrame) -> None:
    """Write ``frame`` to ``path`` whole, by a rename: a kill leaves the old file or the new."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(frame[_COLUMNS].to_csv(index=False, lineterminator="\n").encode())
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _text(data: bytes, path: Path) -> str:
    if not data.strip():
        raise schema.FrameError(f"comparisons file {path} is empty (no header); delete it and "
                                "the next sealed run writes it anew")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise schema.FrameError(f"comparisons file {path} is not UTF-8 text (byte "
                                f"{data[err.start]:#04x} at offset {err.start})") from None


def _header(text: str) -> list[str]:
    return next(csv.reader(io.StringIO(text)), [])


def _parse(text: str, path: Path) -> pd.DataFrame:
    header = [_renamed.new_name(c) for c in _header(text)]  # before 0.3.0: candidate
    missing = [c for c in _COLUMNS if c not in header and c not in _ADDED]
    unknown = sorted({c for c in header if c not in _COLUMNS}
                     | {c for c in header if header.count(c) > 1})
    if missing or unknown:
        raise schema.FrameError(
            f"comparisons file {path} does not have the comparisons header: "
            + "; ".join(s for s in (f"missing {missing}" if missing else "",
                                    f"unknown or repeated {unknown}" if unknown else "") if s)
            + f" (expected {_COLUMNS})")
    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
        frame = frame.rename(columns=_renamed.new_name)
    except (pd.errors.ParserError, ValueError) as err:
        raise schema.FrameError(f"comparisons file {path} is not a readable CSV "
                                f"({str(err).strip()})") from None
    return conform(frame, what=f"comparisons file {path}")


def check_match(match: str) -> str:
    """``match`` if it is a ``learn_match`` value (see :func:`relevant`), else ValueError.

    Examples
    --------
    >>> check_match("task_model, suite")
    'task_model, suite'
    """
    learn_match_parts(match)
    return match

