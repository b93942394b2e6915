"""Read the eval logs people already have into a trials frame the gates can judge.

One reader per upstream format, each returning :class:`Imported`: a trials frame validated
by :func:`gsme.schema.as_trials` and a ``dropped`` frame saying what was left out and why.

======================  ================================================================
format                  reader
======================  ================================================================
``inspect``             :func:`read_inspect` — Inspect AI ``.eval`` / ``.json`` logs
``harbor``              :func:`read_harbor` — Harbor / Terminal-Bench 2 job folders
``tb``                  :func:`read_terminal_bench` — Terminal-Bench 1 runs, submissions
``swebench``            :func:`read_swebench` — SWE-bench evaluation reports
``hal``                 :func:`read_hal` — HAL ``*_UPLOAD.json`` files, run folders
``gepa``                :func:`~gsme.importers.gepa.read_gepa_trials` — a GEPA ``run_dir``
                        (val scores: selection-biased; see :mod:`gsme.importers.gepa`)
``csv``                 :func:`read_trials_csv` — a trials frame saved as CSV
======================  ================================================================

:func:`read` picks the reader (``format=None`` detects it from the files) and
:func:`read_pair` reads a baseline and a child into one frame, as ``gsme compare`` does.

**Infrastructure or agent?** Every upstream failure name (a Terminal-Bench failure mode, a
Harbor exception type, a SWE-bench outcome, an Inspect sample error) is looked up in
:data:`FAILURE_CLASSES`. ``"infra"`` means the harness, not the agent, failed: the repeat
gets ``infra_ok=False`` and is never scored (the gates exclude it; logs cannot be re-run).
``"agent"`` means the agent failed on its own account: the repeat is scored, passed only
when the verifier still says so. ``"none"`` is no failure. Names not in the table take the
class of ``"*"`` (infrastructure). Every reader takes ``failure_classes={name: class}`` to
override entries; the upstream name is kept at the start of the ``error`` column.

**Scores.** Readers of logs that grade a trial (Inspect scorers, Harbor rewards) keep the
value in ``score`` beside the ``passed`` their ``threshold`` gives; the gates judge the
score when it is graded (not all 0 or 1), see :func:`gsme.compare.compare`'s ``on``.

**Repeats** of a task are numbered 0..K-1 run by run, where the format names its runs (an
Inspect log and its epochs, a Harbor job, a Terminal-Bench 1 results file and its
``i-of-n`` attempts, a SWE-bench report, a HAL upload), never by mixing trials of several
runs in start-time order; start times order the runs, and a task's trials within a run
only where the format numbers them no other way (Harbor). A task may have fewer repeats
than another (unequal K is fine for the paired test).
"""

from __future__ import annotations

import math

import pandas as pd

from gsme import schema
from gsme.importers._common import (
    FAILURE_CLASSES,
    Imported,
    LogError,
    as_paths,
    check_split,
    classify_failure,
    dropped_frame,
    expand,
    label,
    read_json,
    result_files,
    shown,
)
from gsme.importers.gepa import read_gepa_trials
from gsme.importers.hal import UPLOAD_FILES, read_hal
from gsme.importers.inspect_logs import read_inspect
from gsme.importers.swebench import read_swebench
from gsme.importers.terminal_bench import RESULTS_FILES, read_harbor, read_terminal_bench
from gsme.settings import ConfigError

__all__ = [
    "CANDIDATE_FROM", "FAILURE_CLASSES", "FORMATS", "Imported", "LogError", "classify_failure",
    "detect_format", "read", "read_hal", "read_harbor", "read_inspect", "read_pair",
    "read_swebench", "read_terminal_bench", "read_trials_csv",
]

FORMATS = ("inspect", "harbor", "tb", "swebench", "hal", "gepa", "csv")
"""Formats :func:`read` knows, as ``gsme compare --format`` names them."""

CANDIDATE_FROM = ("path", "log")
"""Where :func:`read_pair` names each side's candidate in every format (Inspect logs also
take the header fields of :func:`read_inspect`'s ``candidate_from``)."""

_SCORING = {"inspect": {"scorer": "scorer", "score_key": "score_key", "threshold": "threshold"},
            "harbor": {"scorer": "reward_key", "threshold": "threshold"}}
"""What scores a trial, per format whose logs carry scores: read_pair option → reader's."""


# ------------------------------------------------------------------------------------ CSV

def read_trials_csv(path, *, candidate: str | None = None, split: str = "train") -> Imported:
    """A trials frame saved as CSV (columns of :data:`gsme.schema.FRAMES` ``["trials"]``).

    ``candidate`` renames the file's one candidate (a file holding several is refused);
    a missing ``candidate`` column needs it. A missing ``split`` column is filled with
    ``split``.
    """
    check_split(split)
    frames = []
    for file in expand(path, "*.csv", "trials CSV"):
        try:
            frame = pd.read_csv(file, encoding="utf-8")
        except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as err:
            reason = ("not UTF-8 text" if isinstance(err, UnicodeDecodeError)
                      else str(err).strip().splitlines()[0])
            raise ConfigError(f"{file} is not a readable trials CSV ({reason})") from None
        if "split" not in frame.columns:
            frame["split"] = split
        if candidate is not None:
            names = frame["candidate"].dropna().unique() if "candidate" in frame else []
            if len(names) > 1:
                raise ConfigError(f"{file} holds several candidates {sorted(names)[:10]}; "
                                  "it cannot be renamed to one")
            frame["candidate"] = candidate
        frames.append(frame)
    return Imported(schema.as_trials(pd.concat(frames, ignore_index=True)), dropped_frame([]))


# --------------------------------------------------------------------------- dispatching

_READERS = {"inspect": read_inspect, "harbor": read_harbor, "tb": read_terminal_bench,
            "swebench": read_swebench, "hal": read_hal, "gepa": read_gepa_trials,
            "csv": read_trials_csv}


def read(path, *, format: str | None = None, **options) -> Imported:
    """Read ``path`` with the reader of ``format`` (see :data:`FORMATS`); None detects it.

    ``options`` go to the reader (``candidate=``, ``split=``, ...).
    """
    fmt = detect_format(path) if format is None else format
    if fmt not in _READERS:
        raise ConfigError(f"format must be one of {list(FORMATS)}, got {fmt!r}")
    return _READERS[fmt](path, **options)


def read_pair(baseline, child, *, format: str | None = None,
              names: tuple[str, str] | None = None, candidate_from: str = "path",
              scorer: str | None = None, score_key: str | None = None,
              threshold: float | None = None, **options) -> Imported:
    """Read a baseline's and a child's logs into one trials frame, as ``gsme compare`` does.

    Parameters
    ----------
    baseline, child : path or list of paths
    format : str, optional
        One of :data:`FORMATS` for both sides (None: detected from the baseline's files).
    names : (str, str), optional
        The two candidate ids (with ``candidate_from="path"`` only).
    candidate_from : str
        Where each side's candidate id comes from. ``"path"`` (default): ``names``, else
        the side's path (file name without suffix, or folder name; ``"baseline"`` and
        ``"child"`` when those are equal); all trials under it are that candidate.
        ``"log"``: the name the logs record, each reader's default ``candidate`` (Inspect
        ``eval.model``, the Harbor job or Terminal-Bench 1 run folder, the SWE-bench
        report's model, HAL ``config.agent_name``). Inspect logs also take
        :func:`read_inspect`'s ``"model"``, ``"task"``, ``"tag"``, ``"metadata:FIELD"``,
        ``"task_arg:NAME"``. Read from the logs, each side must hold one candidate and the
        two must differ.
    scorer, score_key, threshold : optional
        What scores a trial, for the formats whose logs carry scores: ``scorer`` is the
        Inspect scorer or the Harbor reward key (``reward_key``), ``score_key`` the key of
        a dict-valued Inspect score, ``threshold`` the value that passes (the readers'
        default: 1). Refused for the other formats, whose verdicts are pass/fail. The
        score itself is kept in the ``score`` column beside ``passed``;
        :func:`gsme.compare.compare` gates on it when it is graded (not all 0 or 1).
    **options
        Passed to the reader (``split=``, ``failure_classes=``, ...).

    Returns
    -------
    Imported
        Both sides' trials and dropped rows, the baseline's first.
    """
    fmt = detect_format(baseline) if format is None else format
    options.update(_scoring(fmt, scorer=scorer, score_key=score_key, threshold=threshold))
    paths = (baseline, child)
    if candidate_from == "path":
        if names is None:
            names = (label(baseline), label(child))
            if names[0] == names[1]:
                names = ("baseline", "child")
        sides = [read(p, format=fmt, candidate=n, **options) for p, n in zip(paths, names)]
    else:
        if names is not None:
            raise ConfigError(f"names are given, so candidate_from must be 'path', got "
                              f"{candidate_from!r}")
        if fmt == "inspect":
            options["candidate_from"] = "model" if candidate_from == "log" else candidate_from
        elif candidate_from not in CANDIDATE_FROM:
            raise ConfigError(f"candidate_from must be one of {list(CANDIDATE_FROM)} for {fmt} "
                              f"logs (Inspect logs also take their header fields), got "
                              f"{candidate_from!r}")
        sides = [read(p, format=fmt, **options) for p in paths]
        names = tuple(_one_candidate(side, p, candidate_from) for side, p in zip(sides, paths))
    if names[0] == names[1]:
        raise ConfigError(f"the two sides need different names, both are {names[0]!r} "
                          f"(candidate_from={candidate_from!r})")
    empty = [shown(p) for p, side in zip(paths, sides) if side.trials.empty]
    if empty:
        raise ConfigError(f"no trials in {' and '.join(empty)}: nothing to compare")
    trials = pd.concat([s.trials for s in sides], ignore_index=True)
    dropped = pd.concat([s.dropped for s in sides], ignore_index=True)
    return Imported(schema.as_trials(trials), dropped)


def _one_candidate(side: Imported, path, candidate_from: str) -> str:
    found = list(side.trials["candidate"].unique())
    if len(found) != 1:
        raise ConfigError(f"{shown(path)} holds {len(found)} candidates by candidate_from="
                          f"{candidate_from!r} ({sorted(found)[:10]}); each side of a "
                          "comparison is one")
    return str(found[0])


def _scoring(fmt: str, **given) -> dict:
    """The reader's options for read_pair's scoring options; refused where they mean nothing."""
    table = _SCORING.get(fmt, {})
    out = {}
    for option, value in given.items():
        if value is None:
            continue
        if option not in table:
            takers = " and ".join(f for f, names in _SCORING.items() if option in names)
            raise ConfigError(f"{option} (--{option.replace('_', '-')}) applies to {takers} "
                              f"logs, not to {fmt} logs (their verdicts are pass/fail)")
        if option == "threshold" and not math.isfinite(float(value)):
            raise ConfigError(f"threshold must be a finite number, got {value!r}")
        out[table[option]] = value
    return out


def detect_format(path) -> str:
    """Guess the format of ``path`` (a file, a folder, or a list: its first element).

    Examples
    --------
    >>> detect_format("runs/baseline.eval")
    'inspect'
    """
    first = as_paths(path, must_exist=False)[0]
    suffix = first.suffix.lower()
    if suffix == ".eval":
        return "inspect"
    if suffix == ".csv":
        return "csv"
    if first.is_dir():
        if any(first.rglob("*.eval")):
            return "inspect"
        if result_files(first, RESULTS_FILES, lambda d: isinstance(d.get("results"), list)):
            return "tb"
        for file in [first / "result.json", *sorted(first.glob("*/result.json")),
                     *sorted(first.glob("*/*/result.json"))]:
            if file.is_file() and "task_name" in read_json(file):
                return "harbor"
        if any(first.glob("*/run_instance.log")):
            return "swebench"
        if any(f for pattern in UPLOAD_FILES for f in first.glob(pattern)):
            return "hal"
        if (first / "candidates.json").is_file() and (first / "run_log.json").is_file():
            return "gepa"
        if any(first.glob("*.csv")):
            return "csv"
        for file in sorted(first.glob("*.json")):
            fmt = _format_of(read_json(file))
            if fmt is not None:
                return fmt
        raise ConfigError(f"cannot tell the format of {first}; pass --format/format= "
                          f"(one of {list(FORMATS)})")
    if not first.exists():
        raise FileNotFoundError(f"no such file or folder: {first}")
    fmt = _format_of(read_json(first))
    if fmt is None:
        raise ConfigError(f"cannot tell the format of {first}; pass --format/format= "
                          f"(one of {list(FORMATS)})")
    return fmt


def _format_of(data) -> str | None:
    """The format whose top-level keys a JSON file has, or None."""
    data = data if isinstance(data, dict) else {}
    for fmt, keys in (("inspect", ("eval", "version")), ("tb", ("results",)),
                      ("swebench", ("resolved_ids",)), ("harbor", ("task_name", "trial_name")),
                      ("hal", ("config", "results"))):
        if all(k in data for k in keys) and (fmt != "tb" or isinstance(data["results"], list)):
            return fmt
    return None
