"""Read the eval logs people already have into a trials frame the gates can judge.

One reader per upstream format, each returning :class:`Imported`: a trials frame validated
by :func:`gsme.schema.as_trials` and a ``dropped`` frame saying what was left out and why.

======================  ================================================================
format                  reader
======================  ================================================================
``inspect``             :func:`read_inspect` — Inspect AI ``.eval`` / ``.json`` logs
``harbor``              :func:`read_harbor` — Harbor / Terminal-Bench 2 job folders
``tb``                  :func:`read_terminal_bench` — Terminal-Bench 1 run folders
``swebench``            :func:`read_swebench` — SWE-bench evaluation reports
``hal``                 :func:`read_hal` — HAL harness ``*_UPLOAD.json`` files
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

Repeats of a task are numbered 0..K-1 in order of their start time (Inspect: by epoch);
a task may have fewer repeats than another (unequal K is fine for the paired test).
"""

from __future__ import annotations

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
)
from gsme.importers.hal import read_hal
from gsme.importers.inspect_logs import read_inspect
from gsme.importers.swebench import read_swebench
from gsme.importers.terminal_bench import read_harbor, read_terminal_bench
from gsme.settings import ConfigError

__all__ = [
    "FAILURE_CLASSES", "FORMATS", "Imported", "LogError", "classify_failure", "detect_format",
    "read", "read_hal", "read_harbor", "read_inspect", "read_pair", "read_swebench",
    "read_terminal_bench", "read_trials_csv",
]

FORMATS = ("inspect", "harbor", "tb", "swebench", "hal", "csv")
"""Formats :func:`read` knows, as ``gsme compare --format`` names them."""


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
        frame = pd.read_csv(file)
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
            "swebench": read_swebench, "hal": read_hal, "csv": read_trials_csv}


def read(path, *, format: str | None = None, **options) -> Imported:
    """Read ``path`` with the reader of ``format`` (see :data:`FORMATS`); None detects it.

    ``options`` go to the reader (``candidate=``, ``split=``, ...).
    """
    fmt = detect_format(path) if format is None else format
    if fmt not in _READERS:
        raise ConfigError(f"format must be one of {list(FORMATS)}, got {fmt!r}")
    return _READERS[fmt](path, **options)


def read_pair(baseline, child, *, format: str | None = None,
              names: tuple[str, str] | None = None, **options) -> Imported:
    """Read a baseline's and a child's logs into one trials frame, as ``gsme compare`` does.

    The candidates are named ``names`` or after the paths (file name without suffix;
    ``"baseline"`` and ``"child"`` when those are equal). ``format`` applies to both
    (None: detected from the baseline's files).

    Returns
    -------
    Imported
        Both sides' trials and dropped rows.
    """
    fmt = detect_format(baseline) if format is None else format
    if names is None:
        names = (label(baseline), label(child))
        if names[0] == names[1]:
            names = ("baseline", "child")
    if names[0] == names[1]:
        raise ConfigError(f"the two sides need different names, both are {names[0]!r}")
    sides = [read(p, format=fmt, candidate=n, **options) for p, n in zip((baseline, child), names)]
    trials = pd.concat([s.trials for s in sides], ignore_index=True)
    dropped = pd.concat([s.dropped for s in sides], ignore_index=True)
    return Imported(schema.as_trials(trials), dropped)


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
        for file in [first / "results.json", *sorted(first.glob("*/results.json"))]:
            if file.is_file():
                return "tb"
        for file in [first / "result.json", *sorted(first.glob("*/result.json")),
                     *sorted(first.glob("*/*/result.json"))]:
            if file.is_file() and "task_name" in read_json(file):
                return "harbor"
        if any(first.glob("*/run_instance.log")):
            return "swebench"
        if any(first.glob("*.csv")):
            return "csv"
        jsons = sorted(first.glob("*.json"))
        if not jsons:
            raise ConfigError(f"cannot tell the format of {first}; pass --format/format=")
        first = jsons[0]
    if not first.exists():
        raise FileNotFoundError(f"no such file or folder: {first}")
    data = read_json(first)
    data = data if isinstance(data, dict) else {}
    for fmt, keys in (("inspect", ("eval", "version")), ("tb", ("results",)),
                      ("swebench", ("resolved_ids",)), ("harbor", ("task_name", "trial_name")),
                      ("hal", ("config", "results"))):
        if all(k in data for k in keys) and (fmt != "tb" or isinstance(data["results"], list)):
            return fmt
    raise ConfigError(f"cannot tell the format of {first}; pass --format/format= "
                      f"(one of {list(FORMATS)})")
