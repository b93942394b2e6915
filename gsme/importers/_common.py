"""Shared by the readers: the failure table, what a reader returns, rows → a trials frame."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from os import PathLike
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
import pandas as pd

from gsme import schema
from gsme.importers._harbor_policy import harbor_failure_classes
from gsme.settings import ConfigError

FAILURE_CLASSES = MappingProxyType({
    # Terminal-Bench 1 ``failure_mode`` (terminal_bench.agents.failure_mode.FailureMode)
    "unset": "none",
    "none": "none",
    "agent_timeout": "agent",               # the agent used up its time; tests still ran
    "test_timeout": "agent",                # the tests hung on what the agent left behind
    "parse_error": "agent",                 # test output unreadable: environment left broken
    "fatal_llm_parse_error": "agent",       # the model's replies could not be parsed
    "context_length_exceeded": "agent",
    "output_length_exceeded": "agent",
    "unknown_agent_error": "infra",         # the agent process crashed (API errors, ...)
    "agent_installation_failed": "infra",
    "unknown": "infra",                     # the harness itself failed
    # Harbor ``exception_info.exception_type``: Harbor's own exception policy table (the
    # installed Harbor's, else a copy of 0.25.0's; gsme.importers._harbor_policy)
    **harbor_failure_classes(),
    # SWE-bench outcomes
    "empty_patch": "agent",
    "patch_apply_failed": "agent",
    "evaluation_error": "infra",            # in error_ids without a patch-apply failure
    "infra_failure": "infra",               # infra_failure_ids: the environment broke
    # Inspect AI
    "sample_error": "infra",                # ``sample.error`` (and retried attempts)
    # anything else
    "*": "infra",
})
"""Upstream failure name → ``"infra"``, ``"agent"`` or ``"none"`` (see the module doc)."""

CLASSES = ("infra", "agent", "none")

_DROPPED = ["candidate", "source", "task_id", "reason"]


class LogError(schema.FrameError):
    """An eval log could not be read into trials; the message names the file and field.

    Examples
    --------
    >>> import json
    >>> from gsme.importers import read_swebench
    >>> json.dump({"resolved_ids": "a"}, open("bad.json", "w"))
    >>> try:
    ...     read_swebench("bad.json")
    ... except LogError as err:
    ...     print(err)
    bad.json: 'resolved_ids' must be a list of instance ids, got str
    """


class Imported(NamedTuple):
    """What a reader returns: ``trials, dropped = read_...(...)``.

    Attributes
    ----------
    trials : DataFrame
        A trials frame (:func:`gsme.schema.as_trials`), infrastructure failures included
        with ``infra_ok=False``.
    dropped : DataFrame
        ``candidate, source, task_id, reason``: one row per item of the logs that did not
        become a trial (unscored samples, instances never submitted, ...), or per note on
        a whole log (``task_id`` None).

    Examples
    --------
    >>> import json
    >>> from gsme.importers import read_swebench
    >>> json.dump({"resolved_ids": ["a"], "unresolved_ids": ["b"], "incomplete_ids": ["c"]},
    ...           open("m.r1.json", "w"))
    >>> trials, dropped = read_swebench("m.r1.json")
    >>> trials["passed"].tolist(), dropped["task_id"].tolist()
    ([True, False], ['c'])
    """

    trials: pd.DataFrame
    dropped: pd.DataFrame


class Format:
    """A log format: how its logs are read, and whether a path holds them.

    gsme's formats sit beside their readers (``Inspect`` in
    :mod:`gsme.importers.inspect_logs`, ...). A new format subclasses this and registers
    under a name (:data:`gsme.registry.FORMATS`: entry point group ``gsme.formats``, or
    ``FORMATS.register(name, fmt)``); :func:`gsme.importers.read`, ``read_pair``,
    :func:`~gsme.importers.detect_format` and ``gsme compare --format`` then know it.

    Attributes
    ----------
    summary : str
        One line naming the logs (shown by ``gsme compare --help``).
    scoring : Mapping
        For logs that grade a trial: ``read_pair``'s scoring options (``scorer``,
        ``score_key``, ``threshold``) → the reader's keyword for each (empty: pass/fail).

    Examples
    --------
    A format for trials saved as tab-separated text, registered by name:

    >>> from gsme.importers import detect_format, read
    >>> from gsme.registry import FORMATS
    >>> class TSV(Format):
    ...     summary = "a trials frame saved as tab-separated text"
    ...     def read(self, path, **options):
    ...         trials = schema.as_trials(pd.read_csv(path, sep="\\t"))
    ...         return Imported(trials, pd.DataFrame(columns=["candidate", "source",
    ...                                                       "task_id", "reason"]))
    ...     def guess_can_open(self, path):
    ...         return path.suffix == ".tsv"
    >>> FORMATS.register("tsv", TSV)
    >>> _ = open("base.tsv", "w").write("candidate\\ttask_id\\tsplit\\trepeat\\tpassed\\n"
    ...                                 "base\\tt1\\ttrain\\t0\\t1\\n")
    >>> detect_format("base.tsv"), read("base.tsv").trials.shape
    ('tsv', (1, 16))
    >>> FORMATS.unregister("tsv")
    """

    summary = ""
    scoring: Mapping[str, str] = MappingProxyType({})

    def read(self, path, **options) -> Imported:
        """The trials in ``path`` (``candidate=``, ``split=`` and the reader's options)."""
        raise NotImplementedError

    def guess_can_open(self, path: Path) -> bool:
        """Does ``path`` (a file, perhaps missing, or a folder) hold this format's logs?
        Never raises for a file it cannot read; it answers False."""
        return False

    def candidate_option(self, candidate_from: str) -> dict:
        """The reader's options that name each side's candidate from the logs
        (``read_pair(candidate_from=...)``, anything but ``"path"``)."""
        if candidate_from not in CANDIDATE_FROM:
            raise ConfigError(f"candidate_from must be one of {list(CANDIDATE_FROM)} for "
                              f"{self.summary or type(self).__name__} logs (Inspect logs also "
                              f"take their header fields), got {candidate_from!r}")
        return {}


CANDIDATE_FROM = ("path", "log")
"""Where :func:`gsme.importers.read_pair` names each side's candidate in every format
(Inspect logs also take the header fields of :func:`~gsme.importers.read_inspect`'s
``candidate_from``)."""


def json_object(path: Path) -> Mapping:
    """The JSON object in the file ``path``; empty when it is missing, unreadable or not an
    object (for guessing formats)."""
    path = Path(path)
    try:
        stat = path.stat()
    except OSError:
        return {}
    if not path.is_file():
        return {}
    return _json_object(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _json_object(path: str, mtime_ns: int, size: int) -> Mapping:
    try:
        data = read_json(Path(path))
    except (LogError, OSError):
        return {}
    return MappingProxyType(data) if isinstance(data, dict) else {}


def classify_failure(name: str | None, failure_classes: Mapping[str, str] | None = None) -> str:
    """The class of an upstream failure name: ``"infra"``, ``"agent"`` or ``"none"``.

    Examples
    --------
    >>> classify_failure("agent_timeout"), classify_failure("agent_installation_failed")
    ('agent', 'infra')
    >>> classify_failure("agent_timeout", {"agent_timeout": "infra"})
    'infra'
    >>> classify_failure(None), classify_failure("DaytonaError")
    ('none', 'infra')
    """
    table = classes(failure_classes)
    if name is None:
        return "none"
    return table.get(str(name), table["*"])


def finish(rows: list[dict], dropped: list[dict], split: str, *, what: str,
           numbered: bool = False) -> Imported:
    """Rows → a validated trials frame, repeats numbered run by run unless given.

    Each row names its run (``_run``: an int, in read order) and may carry its start
    (``started``). A task's repeats are numbered 0..K-1 over the runs that hold it, runs in
    order of their start (their earliest trial's; runs with none last), then of ``_run``;
    trials of one task within one run by their own start, then in read order.
    """
    if not rows:
        raise LogError(f"no trials could be read from {what}")
    frame = pd.DataFrame(rows)
    frame["split"] = split
    if not numbered:
        started = (pd.to_datetime(frame["started"], utc=True, errors="coerce", format="ISO8601")
                   if "started" in frame else pd.Series(pd.NaT, index=frame.index))
        run_start = started.groupby([frame["candidate"], frame["_run"]]).transform("min")
        frame = frame.assign(_started=started, _run_start=run_start).sort_values(
            ["_run_start", "_run", "_started"], na_position="last", kind="stable")
        frame["repeat"] = frame.groupby(["candidate", "task_id"], sort=False).cumcount()
        frame = frame.sort_index()
    frame = frame.drop(columns=[c for c in ("started", "_started", "_run", "_run_start")
                                if c in frame])
    if "attempt" not in frame:
        frame["attempt"] = 0
    return Imported(schema.as_trials(frame), dropped_frame(dropped))


def dropped_frame(dropped: list[dict]) -> pd.DataFrame:
    out = pd.DataFrame(dropped, columns=_DROPPED)
    return out.astype(object).where(out.notna(), None)


def as_paths(value, must_exist: bool = True) -> list[Path]:
    items = [value] if isinstance(value, (str, PathLike)) else list(value or [])
    if not items:
        raise ConfigError("no log path given")
    paths = [Path(item) for item in items]
    for path in paths:
        if must_exist and not path.exists():
            raise FileNotFoundError(f"no such file or folder: {path}")
    return paths


def expand(value, patterns: str | tuple[str, ...], what: str) -> list[Path]:
    """Paths with each folder replaced by its files matching ``patterns`` (each sorted)."""
    patterns = (patterns,) if isinstance(patterns, str) else patterns
    files: list[Path] = []
    for path in as_paths(value):
        found = ([f for pattern in patterns for f in sorted(path.glob(pattern))]
                 if path.is_dir() else [path])
        if not found:
            raise LogError(f"no {what} file ({' or '.join(patterns)}) in {path}")
        files.extend(found)
    return files


def result_files(given: Path, patterns: tuple[str, ...], accept) -> list[tuple[Path, dict]]:
    """``given`` if a file, else its files matching ``patterns`` (in that order, each
    sorted), that hold a JSON object ``accept`` takes."""
    candidates = [given] if given.is_file() else [
        file for pattern in patterns for file in sorted(given.glob(pattern))]
    out = []
    for file in candidates:
        if file.is_file():
            data = read_json(file)
            if isinstance(data, Mapping) and accept(data):
                out.append((file, data))
    return out


def read_json(path: Path):
    if Path(path).is_dir():
        raise LogError(f"{path} is a folder; this format reads JSON files")
    try:
        return json.loads(Path(path).read_text())
    except json.JSONDecodeError as err:
        raise LogError(f"{path} is not valid JSON: {err}") from None
    except UnicodeDecodeError:
        raise LogError(f"{path} is not a text (JSON) file") from None


def default_candidate(given: Path, *, trial_file: bool) -> str:
    if given.is_dir():
        return given.resolve().name
    parent = given.resolve().parent
    return (parent.parent if trial_file else parent).name


def label(value) -> str:
    path = as_paths(value, must_exist=False)[0]
    return path.name if path.is_dir() else path.stem


def shown(value) -> str:
    paths = as_paths(value, must_exist=False)
    return str(paths[0]) + (f" (+{len(paths) - 1} more)" if len(paths) > 1 else "")


def classes(failure_classes) -> dict[str, str]:
    table = dict(FAILURE_CLASSES)
    for name, kind in (failure_classes or {}).items():
        if kind not in CLASSES:
            raise ConfigError(f"failure_classes[{name!r}] must be one of {list(CLASSES)}, "
                              f"got {kind!r}")
        table[str(name)] = kind
    return table


def check_split(split: str) -> None:
    if split not in schema.SPLITS:
        raise ConfigError(f"split must be one of {list(schema.SPLITS)}, got {split!r}")


def seconds(start, end) -> float:
    if not start or not end:
        return math.nan
    try:  # ISO 8601, as most logs write it: 100 times faster than pandas
        return (_instant(end) - _instant(start)).total_seconds()
    except (TypeError, ValueError):
        pass
    delta = pd.to_datetime(end, utc=True, errors="coerce") - pd.to_datetime(start, utc=True,
                                                                           errors="coerce")
    return math.nan if pd.isna(delta) else float(delta.total_seconds())


def _instant(text) -> datetime:
    """An ISO 8601 time (no zone: UTC, as ``pd.to_datetime(utc=True)`` reads it)."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def as_number(value) -> float:
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


def token_total(*counts) -> float:
    """The sum of the token counts given, skipping missing ones; NaN when all are missing."""
    known = [float(c) for c in counts if c is not None]
    return float(sum(known)) if known else math.nan


def first_number(*values) -> float:
    for value in values:
        number = as_number(value)
        if not np.isnan(number):
            return number
    return math.nan


def first_line(text) -> str:
    lines = str(text).strip().splitlines()
    return lines[0][:300] if lines else ""
