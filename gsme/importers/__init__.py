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
    CANDIDATE_FROM,
    FAILURE_CLASSES,
    Format,
    Imported,
    LogError,
    as_paths,
    classify_failure,
    label,
    shown,
)
from gsme.importers.csv_trials import read_trials_csv
from gsme.importers.hal import read_hal
from gsme.importers.inspect_logs import read_inspect
from gsme.importers.swebench import read_swebench
from gsme.importers.terminal_bench import read_harbor, read_terminal_bench
from gsme.registry import FORMATS
from gsme.settings import ConfigError

__all__ = [
    "CANDIDATE_FROM", "FAILURE_CLASSES", "FORMATS", "Format", "Imported", "LogError",
    "classify_failure", "detect_format", "read", "read_hal", "read_harbor", "read_inspect",
    "read_pair", "read_swebench", "read_terminal_bench", "read_trials_csv",
]


# --------------------------------------------------------------------------- dispatching


def read(path, *, format: str | None = None, **options) -> Imported:
    """Read ``path`` with the reader of ``format`` (see :data:`FORMATS`); None detects it.

    ``options`` go to the reader (``candidate=``, ``split=``, ...).

    See Also
    --------
    detect_format : The format ``format=None`` finds.
    read_pair : Both sides of a comparison in one frame.

    Examples
    --------
    >>> import json
    >>> json.dump({"resolved_ids": ["a"], "unresolved_ids": ["b"]}, open("m.r1.json", "w"))
    >>> read("m.r1.json", split="test").trials[["candidate", "task_id", "split", "passed"]]
      candidate task_id split  passed
    0         m       a  test    True
    1         m       b  test   False
    """
    return _format(detect_format(path) if format is None else format).read(path, **options)


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

    See Also
    --------
    gsme.compare.compare : Judge the child against the baseline on these trials.

    Examples
    --------
    >>> import json
    >>> json.dump({"resolved_ids": ["a", "b"], "unresolved_ids": ["c"], "error_ids": [],
    ...            "empty_patch_ids": ["d"], "incomplete_ids": ["e"], "infra_failure_ids": []},
    ...           open("my-model.run1.json", "w"))
    >>> json.dump({"resolved_ids": ["a"], "unresolved_ids": ["b", "c"], "error_ids": ["d"],
    ...            "empty_patch_ids": [], "incomplete_ids": [], "infra_failure_ids": ["d"],
    ...            "failure_reasons": {"d": "out_of_memory"}}, open("my-model.run2.json", "w"))
    >>> pair = read_pair("my-model.run1.json", "my-model.run2.json", names=("v1", "v2"))
    >>> pair.trials.groupby("candidate").size().to_dict()
    {'v1': 4, 'v2': 4}
    >>> read_pair("my-model.run1.json", "my-model.run2.json").trials["candidate"].unique().tolist()
    ['my-model.run1', 'my-model.run2']
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
        options.update(_format(fmt).candidate_option(candidate_from))
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


def _format(name: str) -> Format:
    """The registered format ``name``, or a ConfigError naming the formats there are."""
    if name not in FORMATS:
        raise ConfigError(f"format must be one of {list(FORMATS)}, got {name!r}")
    return FORMATS.get(name)


def _scoring(fmt: str, **given) -> dict:
    """The reader's options for read_pair's scoring options; refused where they mean nothing."""
    table = _format(fmt).scoring
    out = {}
    for option, value in given.items():
        if value is None:
            continue
        if option not in table:
            takers = " and ".join(name for name in FORMATS if option in FORMATS.get(name).scoring)
            raise ConfigError(f"{option} (--{option.replace('_', '-')}) applies to {takers} "
                              f"logs, not to {fmt} logs (their verdicts are pass/fail)")
        if option == "threshold" and not math.isfinite(float(value)):
            raise ConfigError(f"threshold must be a finite number, got {value!r}")
        out[table[option]] = value
    return out


def detect_format(path) -> str:
    """Guess the format of ``path`` (a file, a folder, or a list: its first element).

    Each registered format (:data:`FORMATS`, in order) is asked whether it can open the
    path (:meth:`Format.guess_can_open`); for a folder none claims, then whether it can
    open each JSON file in it. The first that can names the format.

    Examples
    --------
    >>> detect_format("runs/baseline.eval")
    'inspect'
    """
    first = as_paths(path, must_exist=False)[0]
    files = sorted(first.glob("*.json")) if first.is_dir() else []
    for where in [first, *files]:
        for name in FORMATS:
            if FORMATS.get(name).guess_can_open(where):
                return name
    if not first.exists():
        raise FileNotFoundError(f"no such file or folder: {first}")
    raise ConfigError(f"cannot tell the format of {first}; pass --format/format= "
                      f"(one of {list(FORMATS)})")
