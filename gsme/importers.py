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

import json
import math
from collections.abc import Mapping
from os import PathLike
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
import pandas as pd

from gsme import schema
from gsme.settings import ConfigError

__all__ = [
    "FAILURE_CLASSES", "FORMATS", "Imported", "LogError", "classify_failure", "detect_format",
    "read", "read_hal", "read_harbor", "read_inspect", "read_pair", "read_swebench",
    "read_terminal_bench", "read_trials_csv",
]

FORMATS = ("inspect", "harbor", "tb", "swebench", "hal", "csv")
"""Formats :func:`read` knows, as ``gsme compare --format`` names them."""

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
    # Harbor ``exception_info.exception_type``
    "AgentTimeoutError": "agent",
    "VerifierTimeoutError": "agent",
    "ContextLengthExceededError": "agent",
    "OutputLengthExceededError": "agent",
    "RewardFileNotFoundError": "agent",
    "RewardFileEmptyError": "agent",
    "VerifierOutputParseError": "agent",
    "AgentSetupTimeoutError": "infra",
    "EnvironmentBuildTimeoutError": "infra",
    "EnvironmentStartTimeoutError": "infra",
    # SWE-bench outcomes
    "empty_patch": "agent",
    "patch_apply_failed": "agent",
    "evaluation_error": "infra",            # in error_ids without a patch-apply failure
    # Inspect AI
    "sample_error": "infra",                # ``sample.error`` (and retried attempts)
    # anything else
    "*": "infra",
})
"""Upstream failure name → ``"infra"``, ``"agent"`` or ``"none"`` (see the module doc)."""

CLASSES = ("infra", "agent", "none")
APPLY_PATCH_FAIL = ">>>>> Patch Apply Failed"
"""The marker SWE-bench writes to ``run_instance.log`` when a patch does not apply."""

_DROPPED = ["candidate", "source", "task_id", "reason"]


class LogError(schema.FrameError):
    """An eval log could not be read into trials; the message names the file and field."""


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
    """

    trials: pd.DataFrame
    dropped: pd.DataFrame


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
    table = _classes(failure_classes)
    if name is None:
        return "none"
    return table.get(str(name), table["*"])


# --------------------------------------------------------------------------- Inspect AI

def read_inspect(
    logs,
    *,
    candidate: str | None = None,
    candidate_from: str = "model",
    scorer: str | None = None,
    score_key: str | None = None,
    threshold: float = 1.0,
    split: str = "train",
    failure_classes: Mapping[str, str] | None = None,
) -> Imported:
    """Inspect AI logs, read with Inspect's own log API (needs ``pip install inspect_ai``).

    Accepts a ``.eval`` or ``.json`` log file, a folder of them (searched recursively with
    ``inspect_ai.log.list_eval_logs``), or a list of either. Each sample summary
    (``read_eval_log_sample_summaries``) becomes one repeat:

    ===================  ==============================================================
    trials column        from
    ===================  ==============================================================
    ``candidate``        ``candidate``, else ``candidate_from`` (below)
    ``task_id``          ``sample.id``
    ``repeat``           ``sample.epoch - 1`` (later logs of the same candidate continue
                         after the epochs of earlier ones, by ``eval.created``)
    ``attempt``          ``sample.retries`` (earlier attempts that errored and were
                         retried become attempts 0..retries-1 with ``infra_ok=False``)
    ``passed``           the scorer's value as a float (``C``/``I``/``P``/``N``, booleans,
                         numbers: ``inspect_ai.scorer.value_to_float``) ``>= threshold``
    ``infra_ok``         False when ``sample.error`` is set (class ``"sample_error"``)
    ``error``            ``"sample_error: "`` + ``sample.error``
    ``tokens``           sum of ``total_tokens`` over ``sample.model_usage``
    ``cost_usd``         sum of ``total_cost`` when every model reports one, else NaN
    ``seconds``          ``sample.working_time``, else ``total_time``
    ``trajectory``       ``"<log file>#sample=<id>&epoch=<epoch>"`` (load it with
                         ``inspect_ai.log.read_eval_log_sample``)
    ===================  ==============================================================

    Parameters
    ----------
    logs : path or list of paths
    candidate : str, optional
        Name every trial with this candidate id (overrides ``candidate_from``).
    candidate_from : str
        Where the candidate id is read from each log's header: ``"model"``, ``"task"``,
        ``"tag"`` (the log's only tag), ``"metadata:FIELD"`` (``eval.metadata``) or
        ``"task_arg:NAME"`` (``eval.task_args``).
    scorer : str, optional
        The scorer whose value decides ``passed``; needed when samples carry several.
    score_key : str, optional
        For scorers whose value is a dict: the key to read.
    threshold : float
        ``passed`` when the value as a float is at least this (C/I scores: 1 or 0).
    split : {"train", "test"}
    failure_classes : mapping, optional
        Overrides of :data:`FAILURE_CLASSES` (``{"sample_error": "agent"}`` scores errored
        samples as failures).

    Returns
    -------
    Imported
        ``trials`` and ``dropped`` (samples without the chosen score; logs whose status
        is not ``success``).
    """
    log_api = _inspect_log_api()
    _check_split(split)
    failure = classify_failure("sample_error", failure_classes)
    files = _inspect_files(logs, log_api)
    headers = [(path, log_api.read_eval_log(str(path), header_only=True)) for path in files]
    headers.sort(key=lambda item: str(item[1].eval.created))
    rows: list[dict] = []
    dropped: list[dict] = []
    offsets: dict[str, int] = {}
    for path, header in headers:
        name = candidate if candidate is not None else _inspect_candidate(header, candidate_from,
                                                                           path)
        if header.status != "success":
            dropped.append({"candidate": name, "source": str(path), "task_id": None,
                            "reason": f"log status {header.status!r}: samples it did not "
                                      "finish are missing"})
        offset = offsets.get(name, 0)
        last_epoch = 0
        for s in log_api.read_eval_log_sample_summaries(str(path)):
            last_epoch = max(last_epoch, int(s.epoch))
            base = {"candidate": name, "task_id": str(s.id), "repeat": offset + int(s.epoch) - 1,
                    "trajectory": f"{path}#sample={s.id}&epoch={s.epoch}",
                    "tokens": _sum_usage(s.model_usage, "total_tokens"),
                    "cost_usd": _sum_usage(s.model_usage, "total_cost", all_known=True),
                    "seconds": _first_number(s.working_time, s.total_time)}
            retries = int(s.retries or 0)
            for attempt in range(retries):  # what earlier attempts used is not recorded
                rows.append({**base, "tokens": math.nan, "cost_usd": math.nan,
                             "seconds": math.nan, "attempt": attempt, "passed": False,
                             "infra_ok": failure != "infra",
                             "error": "sample_error: errored and was retried"})
            if s.error:
                rows.append({**base, "attempt": retries, "passed": False,
                             "infra_ok": failure != "infra",
                             "error": f"sample_error: {_first_line(s.error)}"})
                continue
            value, reason = _inspect_value(s, scorer, score_key, path)
            if reason is not None:
                dropped.append({"candidate": name, "source": str(path), "task_id": str(s.id),
                                "reason": reason})
                continue
            rows.append({**base, "attempt": retries, "passed": value >= threshold,
                         "infra_ok": True, "error": None})
        offsets[name] = offset + last_epoch
    return _finish(rows, dropped, split, what=f"Inspect logs {_shown(logs)}", numbered=True)


def _inspect_log_api():
    try:
        import inspect_ai.log as log_api
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("reading Inspect logs needs inspect_ai: pip install 'gsme[inspect]'"
                          ) from None
    return log_api


def _inspect_files(logs, log_api) -> list[Path]:
    files: list[Path] = []
    for path in _paths(logs):
        if path.is_dir():
            found = [Path(info.name.removeprefix("file://"))
                     for info in log_api.list_eval_logs(str(path), recursive=True)]
            if not found:
                raise LogError(f"no Inspect log (.eval or .json) under {path}")
            files.extend(sorted(found))
        else:
            files.append(path)
    return files


def _inspect_candidate(header, candidate_from: str, path: Path) -> str:
    ev = header.eval
    kind, _, field = candidate_from.partition(":")
    if kind == "model" and not field:
        return str(ev.model)
    if kind == "task" and not field:
        return str(ev.task)
    if kind == "tag" and not field:
        tags = list(ev.tags or [])
        if len(tags) != 1:
            raise ConfigError(f"candidate_from='tag' needs exactly one tag per log; {path} "
                              f"has {tags}")
        return str(tags[0])
    if kind in ("metadata", "task_arg") and field:
        source = (ev.metadata or {}) if kind == "metadata" else (ev.task_args or {})
        if field not in source:
            raise ConfigError(f"{path}: eval.{'metadata' if kind == 'metadata' else 'task_args'}"
                              f" has no {field!r}; it has {sorted(source)}")
        return str(source[field])
    raise ConfigError(f"candidate_from must be 'model', 'task', 'tag', 'metadata:FIELD' or "
                      f"'task_arg:NAME', got {candidate_from!r}")


def _inspect_value(sample, scorer, score_key, path) -> tuple[float, str | None]:
    from inspect_ai.scorer import value_to_float

    scores = sample.scores or {}
    if not scores:
        return math.nan, "no score (the sample was not scored)"
    if scorer is None:
        if len(scores) > 1:
            raise ConfigError(f"{path}: samples carry several scorers {sorted(scores)}; "
                              "choose one with scorer=...")
        scorer = next(iter(scores))
    if scorer not in scores:
        return math.nan, f"no score from scorer {scorer!r} (it has {sorted(scores)})"
    value = scores[scorer].value
    if isinstance(value, Mapping):
        if score_key is None or score_key not in value:
            raise ConfigError(f"{path}: scorer {scorer!r} gives a dict with keys {sorted(value)};"
                              " choose one with score_key=...")
        value = value[score_key]
    return float(value_to_float()(value)), None


def _sum_usage(usage, field: str, all_known: bool = False) -> float:
    values = [getattr(u, field, None) for u in (usage or {}).values()]
    known = [float(v) for v in values if v is not None]
    if not known or (all_known and len(known) < len(values)):
        return math.nan
    return float(sum(known))


# --------------------------------------------------------------- Harbor / Terminal-Bench 2

def read_harbor(
    path,
    *,
    candidate: str | None = None,
    reward_key: str = "reward",
    threshold: float = 1.0,
    split: str = "train",
    failure_classes: Mapping[str, str] | None = None,
) -> Imported:
    """Harbor (Terminal-Bench 2) job folders: one ``result.json`` per trial.

    Accepts a job folder (``<job>/<trial>/result.json``; the job's own ``result.json``
    with its totals is skipped), a folder of job folders, a trial's ``result.json``, or a
    list of these. Each trial's ``result.json`` (Harbor's ``TrialResult``) becomes one
    repeat; the fields read are::

        {"task_name": "fix-git", "trial_name": "fix-git__a1b2c3",
         "started_at": "2025-11-02T10:00:00Z", "finished_at": "2025-11-02T10:04:10Z",
         "verifier_result": {"rewards": {"reward": 1.0}},            # or null
         "exception_info": {"exception_type": "AgentTimeoutError",    # or null
                            "exception_message": "..."},
         "agent_result": {"n_input_tokens": 51200, "n_cache_tokens": 40000,
                          "n_output_tokens": 2300, "cost_usd": 0.21}}  # each may be null

    ``passed`` is ``rewards[reward_key] >= threshold``; an exception is classified by its
    ``exception_type`` (:data:`FAILURE_CLASSES`): an infrastructure one sets
    ``infra_ok=False``, an agent one (a timeout, say) keeps the verifier's verdict, False
    when there is none. ``tokens`` = input (cache included) + output tokens, ``seconds`` =
    ``finished_at - started_at``, ``trajectory`` = the trial folder. A trial with neither
    a reward nor an exception (unfinished) is dropped.

    Parameters
    ----------
    path : path or list of paths
    candidate : str, optional
        Default: the name of the folder (or of the job folder of a ``result.json``) given.
    reward_key : str
        The key of ``verifier_result.rewards`` that scores the trial.
    threshold : float
    split : {"train", "test"}
    failure_classes : mapping, optional
        Overrides of :data:`FAILURE_CLASSES`.

    Returns
    -------
    Imported
    """
    _check_split(split)
    rows: list[dict] = []
    dropped: list[dict] = []
    for given in _paths(path):
        name = candidate if candidate is not None else _default_candidate(given, trial_file=True)
        files = _result_files(given, "result.json", lambda d: "task_name" in d and "trial_name" in d,
                              depth=2)
        if not files:
            raise LogError(f"no Harbor trial result.json (with task_name and trial_name) under "
                           f"{given}")
        for file, data in files:
            row = _harbor_row(data, file, reward_key, threshold, failure_classes)
            if row is None:
                dropped.append({"candidate": name, "source": str(file),
                                "task_id": str(data["task_name"]),
                                "reason": "no verifier reward and no exception (unfinished "
                                          "trial)"})
                continue
            rows.append({**row, "candidate": name, "_order": len(rows)})
    return _finish(rows, dropped, split, what=f"Harbor jobs {_shown(path)}")


def _harbor_row(data: dict, file: Path, reward_key, threshold, failure_classes) -> dict | None:
    rewards = ((data.get("verifier_result") or {}).get("rewards")) or None
    exception = data.get("exception_info") or None
    agent = data.get("agent_result") or {}
    reward = None
    if rewards is not None:
        if reward_key not in rewards:
            raise ConfigError(f"{file}: verifier rewards have keys {sorted(rewards)}, not "
                              f"reward_key={reward_key!r}")
        reward = rewards[reward_key]
    if reward is None and exception is None:
        return None
    kind, error = "none", None
    if exception is not None:
        name = str(exception.get("exception_type") or "UnknownException")
        kind = classify_failure(name, failure_classes)
        error = f"{name}: {_first_line(exception.get('exception_message') or '')}".rstrip(": ")
    tokens = [agent.get("n_input_tokens"), agent.get("n_output_tokens")]
    return {
        "task_id": str(data["task_name"]),
        "started": data.get("started_at"),
        "passed": kind != "infra" and reward is not None and float(reward) >= threshold,
        "infra_ok": kind != "infra",
        "tokens": float(sum(t for t in tokens if t is not None))
        if any(t is not None for t in tokens) else math.nan,
        "cost_usd": _number(agent.get("cost_usd")),
        "seconds": _seconds(data.get("started_at"), data.get("finished_at")),
        "trajectory": str(file.parent),
        "error": error,
    }


# ----------------------------------------------------------------------- Terminal-Bench 1

def read_terminal_bench(
    path,
    *,
    candidate: str | None = None,
    split: str = "train",
    failure_classes: Mapping[str, str] | None = None,
) -> Imported:
    """Terminal-Bench 1 run folders: ``results.json`` with a ``results`` list.

    Accepts a run folder (``<run>/results.json``), a folder of run folders (e.g. one
    leaderboard submission, ``<submission>/<run>/results.json``), a ``results.json``, or a
    list of these; all their trials belong to one candidate. Each entry of ``results``
    (Terminal-Bench's ``TrialResults``) becomes one repeat::

        {"results": [{"task_id": "hello-world", "trial_name": "hello-world.1-of-1.run",
                      "is_resolved": true,            # null when the tests did not run
                      "failure_mode": "unset",        # see FAILURE_CLASSES
                      "total_input_tokens": 18230, "total_output_tokens": 911,
                      "trial_started_at": "2025-07-11T20:35:11.742594+00:00",
                      "trial_ended_at": "2025-07-11T20:41:02.100000+00:00",
                      "recording_path": "..."}, ...]}

    ``passed`` is ``is_resolved`` (null counts as False, as on the leaderboard) unless the
    ``failure_mode`` is an infrastructure one, which sets ``infra_ok=False``. Repeats of a
    task are ordered by ``trial_started_at``. ``tokens`` = input + output tokens,
    ``seconds`` = ended − started, ``trajectory`` = ``recording_path`` or the trial folder;
    Terminal-Bench 1 records no cost.

    Parameters
    ----------
    path : path or list of paths
    candidate : str, optional
        Default: the name of the folder given (of the run folder for a ``results.json``).
    split : {"train", "test"}
    failure_classes : mapping, optional
        Overrides of :data:`FAILURE_CLASSES`.

    Returns
    -------
    Imported
    """
    _check_split(split)
    rows: list[dict] = []
    for given in _paths(path):
        name = candidate if candidate is not None else _default_candidate(given, trial_file=False)
        files = _result_files(given, "results.json",
                              lambda d: isinstance(d.get("results"), list), depth=1)
        if not files:
            raise LogError(f"no Terminal-Bench results.json (with a 'results' list) under {given}")
        for file, data in files:
            for i, result in enumerate(data["results"]):
                if "task_id" not in result:
                    raise LogError(f"{file}: results[{i}] has no 'task_id'")
                mode = result.get("failure_mode") or "unset"
                kind = classify_failure(mode, failure_classes)
                tokens = [result.get("total_input_tokens"), result.get("total_output_tokens")]
                trial = result.get("trial_name") or ""
                rows.append({
                    "candidate": name, "task_id": str(result["task_id"]),
                    "started": result.get("trial_started_at"), "_order": len(rows),
                    "passed": kind != "infra" and bool(result.get("is_resolved")),
                    "infra_ok": kind != "infra",
                    "tokens": float(sum(t for t in tokens if t is not None))
                    if any(t is not None for t in tokens) else math.nan,
                    "seconds": _seconds(result.get("trial_started_at"),
                                        result.get("trial_ended_at")),
                    "trajectory": result.get("recording_path")
                    or str(file.parent / str(result["task_id"]) / trial),
                    "error": None if kind == "none" else mode,
                })
    return _finish(rows, [], split, what=f"Terminal-Bench runs {_shown(path)}")


# ------------------------------------------------------------------------------ SWE-bench

def read_swebench(
    reports,
    *,
    candidate: str | None = None,
    logs=None,
    split: str = "train",
    failure_classes: Mapping[str, str] | None = None,
) -> Imported:
    """SWE-bench evaluation reports: one run per report, runs in the order given.

    Accepts, per run, either

    * the run report ``<model>.<run_id>.json`` that ``swebench.harness.run_evaluation``
      writes (schema 2)::

          {"resolved_ids": [...], "unresolved_ids": [...], "error_ids": [...],
           "empty_patch_ids": [...], "incomplete_ids": [...], ...}

      with ``logs`` (optional) the run's instance-log folder
      ``logs/run_evaluation/<run_id>/<model>/`` (or a list, one per report); or
    * that instance-log folder itself: one ``<instance_id>/`` per evaluated instance,
      ``report.json`` (``{"<id>": {"resolved": true, ...}}``) when tests ran and
      ``run_instance.log`` always.

    Outcomes: resolved → passed; unresolved → failed; ``empty_patch_ids`` → class
    ``"empty_patch"``; an error id whose ``run_instance.log`` says
    ``>>>>> Patch Apply Failed`` → class ``"patch_apply_failed"``; any other error id →
    class ``"evaluation_error"`` (without a log, a patch-apply failure cannot be told from
    an infrastructure error). By :data:`FAILURE_CLASSES` the first two are agent failures,
    the last infrastructure. ``incomplete_ids`` (never submitted) are dropped. Reports
    carry no tokens, cost or time.

    Parameters
    ----------
    reports : path or list of paths
    candidate : str, optional
        Default: the model name of the first report (``<model>.<run_id>.json``), or the
        instance-log folder's name.
    logs : path or list of paths, optional
        Instance-log folders aligned with ``reports`` (one for all when a single path).
    split : {"train", "test"}
    failure_classes : mapping, optional

    Returns
    -------
    Imported
    """
    _check_split(split)
    runs = _paths(reports)
    log_dirs = _aligned_logs(logs, len(runs))
    rows: list[dict] = []
    dropped: list[dict] = []
    name = candidate
    for run, (report, log_dir) in enumerate(zip(runs, log_dirs)):
        if report.is_dir():
            outcomes = _swebench_instance_dirs(report)
            log_dir = report
            name = name if name is not None else report.name
        else:
            data = _read_json(report)
            if "resolved_ids" not in data:
                raise LogError(f"{report}: not a SWE-bench run report (no 'resolved_ids')")
            outcomes = _swebench_report(data, log_dir)
            name = name if name is not None else report.stem.rsplit(".", 1)[0]
            dropped.extend({"candidate": name, "source": str(report), "task_id": str(i),
                            "reason": "incomplete: no prediction was submitted"}
                           for i in data.get("incomplete_ids") or [])
        for task_id, outcome in outcomes:
            kind = "none" if outcome in ("resolved", "unresolved") else classify_failure(
                outcome, failure_classes)
            rows.append({"candidate": name, "task_id": str(task_id), "_order": run,
                         "passed": outcome == "resolved", "infra_ok": kind != "infra",
                         "trajectory": None if log_dir is None else str(log_dir / str(task_id)),
                         "error": None if kind == "none" else outcome})
    return _finish(rows, dropped, split, what=f"SWE-bench reports {_shown(reports)}")


def _swebench_report(data: dict, log_dir: Path | None) -> list[tuple[str, str]]:
    outcomes = [(i, "resolved") for i in data.get("resolved_ids") or []]
    outcomes += [(i, "unresolved") for i in data.get("unresolved_ids") or []]
    outcomes += [(i, "empty_patch") for i in data.get("empty_patch_ids") or []]
    outcomes += [(i, _swebench_error(None if log_dir is None else log_dir / str(i)))
                 for i in data.get("error_ids") or []]
    return outcomes


def _swebench_instance_dirs(folder: Path) -> list[tuple[str, str]]:
    outcomes = []
    for instance in sorted(p for p in folder.iterdir() if p.is_dir()):
        report = instance / "report.json"
        if report.is_file():
            entry = _read_json(report).get(instance.name)
            if not isinstance(entry, Mapping) or "resolved" not in entry:
                raise LogError(f"{report}: no '{instance.name}' entry with 'resolved'")
            outcomes.append((instance.name, "resolved" if entry["resolved"] else "unresolved"))
        else:
            outcomes.append((instance.name, _swebench_error(instance)))
    if not outcomes:
        raise LogError(f"{folder}: no instance folders (expected <instance_id>/report.json)")
    return outcomes


def _swebench_error(instance_dir: Path | None) -> str:
    log = None if instance_dir is None else instance_dir / "run_instance.log"
    if log is not None and log.is_file() and APPLY_PATCH_FAIL in log.read_text(errors="replace"):
        return "patch_apply_failed"
    return "evaluation_error"


def _aligned_logs(logs, n: int) -> list[Path | None]:
    if logs is None:
        return [None] * n
    paths = _paths(logs)
    if len(paths) == 1:
        return paths * n
    if len(paths) != n:
        raise ConfigError(f"logs must be one folder or one per report ({n}), got {len(paths)}")
    return paths


# ------------------------------------------------------------------------------------ HAL

def read_hal(
    uploads,
    *,
    candidate: str | None = None,
    split: str = "train",
) -> Imported:
    """HAL harness upload files (``<run_id>_UPLOAD.json``): one run per file.

    The fields read (HAL's ``BaseBenchmark.process_results``)::

        {"config": {"agent_name": "my-agent", "run_id": "...", "date": "2025-06-01"},
         "results": {"successful_tasks": ["t1", ...], "failed_tasks": ["t2", ...],
                     "latencies": {"t1": {"first_call_timestamp": "...",
                                          "total_time": 12.5}, ...}},
         "wall_clock_times": {"t1": 14.0, ...},                       # optional
         "raw_logging_results": {"t1": {"call_metadata": [{"usage": {...}}, ...]}},
         "total_cost": 1.93}

    ``successful_tasks`` pass, ``failed_tasks`` fail (HAL does not tell infrastructure
    failures from agent ones: all are scored). ``seconds`` is the wall-clock time, else
    the latency's ``total_time``; ``tokens`` sums each call's ``usage``
    (``total_tokens``, else prompt/input + completion/output tokens). HAL records only the
    run's ``total_cost``, so ``cost_usd`` is NaN. Repeats of a task (several files) are
    ordered by the task's ``first_call_timestamp``, else by file. Tasks with latencies or
    logs but in neither list are dropped.

    Parameters
    ----------
    uploads : path or list of paths
    candidate : str, optional
        Default: ``config.agent_name`` of the first file.
    split : {"train", "test"}

    Returns
    -------
    Imported
    """
    _check_split(split)
    rows: list[dict] = []
    dropped: list[dict] = []
    name = candidate
    for run, file in enumerate(_paths(uploads)):
        data = _read_json(file)
        results = data.get("results")
        if not isinstance(results, Mapping) or "successful_tasks" not in results:
            raise LogError(f"{file}: not a HAL upload (no results.successful_tasks)")
        name = name if name is not None else str((data.get("config") or {}).get(
            "agent_name") or file.stem)
        passed = {str(t) for t in results.get("successful_tasks") or []}
        failed = {str(t) for t in results.get("failed_tasks") or []}
        latencies = results.get("latencies") or {}
        walls = data.get("wall_clock_times") or {}
        usage = _hal_tokens(data.get("raw_logging_results"))
        for task in sorted(passed & failed):
            dropped.append({"candidate": name, "source": str(file), "task_id": task,
                            "reason": "listed in both successful_tasks and failed_tasks"})
        seen = set(latencies) | set(usage) | set(data.get("raw_eval_results") or {})
        for task in sorted(set(map(str, seen)) - passed - failed):
            dropped.append({"candidate": name, "source": str(file), "task_id": task,
                            "reason": "in neither successful_tasks nor failed_tasks"})
        for task in sorted(passed ^ failed):
            latency = latencies.get(task) or {}
            rows.append({"candidate": name, "task_id": task, "_order": run,
                         "started": latency.get("first_call_timestamp"),
                         "passed": task in passed, "infra_ok": True,
                         "tokens": usage.get(task, math.nan),
                         "seconds": _first_number(walls.get(task), latency.get("total_time")),
                         "trajectory": f"{file}#raw_logging_results/{task}", "error": None})
    return _finish(rows, dropped, split, what=f"HAL uploads {_shown(uploads)}")


def _hal_tokens(raw) -> dict[str, float]:
    """Tokens per task from ``raw_logging_results`` (compact dict or list of calls)."""
    calls: list[tuple[str, Mapping]] = []
    if isinstance(raw, Mapping):
        for task, entry in raw.items():
            for call in (entry or {}).get("call_metadata") or []:
                calls.append((str(task), call.get("usage") or {}))
    elif isinstance(raw, list):
        for call in raw:
            if isinstance(call, Mapping) and "weave_task_id" in call:
                usage = (call.get("output") or {}).get("usage") or {}
                calls.append((str(call["weave_task_id"]), usage))
    totals: dict[str, float] = {}
    for task, usage in calls:
        if "total_tokens" in usage:
            n = usage["total_tokens"]
        else:
            n = sum(usage.get(k) or 0 for k in ("prompt_tokens", "input_tokens",
                                                 "completion_tokens", "output_tokens"))
        totals[task] = totals.get(task, 0.0) + float(n or 0)
    return totals


# ------------------------------------------------------------------------------------ CSV

def read_trials_csv(path, *, candidate: str | None = None, split: str = "train") -> Imported:
    """A trials frame saved as CSV (columns of :data:`gsme.schema.FRAMES` ``["trials"]``).

    ``candidate`` renames the file's one candidate (a file holding several is refused);
    a missing ``candidate`` column needs it. A missing ``split`` column is filled with
    ``split``.
    """
    _check_split(split)
    frames = []
    for file in _paths(path):
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
    return Imported(schema.as_trials(pd.concat(frames, ignore_index=True)), _dropped_frame([]))


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
        names = (_label(baseline), _label(child))
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
    first = _paths(path, must_exist=False)[0]
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
            if file.is_file() and "task_name" in _read_json(file):
                return "harbor"
        if any(first.glob("*/run_instance.log")):
            return "swebench"
        jsons = sorted(first.glob("*.json"))
        if not jsons:
            raise ConfigError(f"cannot tell the format of {first}; pass --format/format=")
        first = jsons[0]
    if not first.exists():
        raise FileNotFoundError(f"no such file or folder: {first}")
    data = _read_json(first)
    for fmt, keys in (("inspect", ("eval", "version")), ("tb", ("results",)),
                      ("swebench", ("resolved_ids",)), ("harbor", ("task_name", "trial_name")),
                      ("hal", ("config", "results"))):
        if all(k in data for k in keys) and (fmt != "tb" or isinstance(data["results"], list)):
            return fmt
    raise ConfigError(f"cannot tell the format of {first}; pass --format/format= "
                      f"(one of {list(FORMATS)})")


# ------------------------------------------------------------------------------ internals

def _finish(rows: list[dict], dropped: list[dict], split: str, *, what: str,
            numbered: bool = False) -> Imported:
    """Rows → a validated trials frame; repeats numbered by start time unless given."""
    if not rows:
        raise LogError(f"no trials could be read from {what}")
    frame = pd.DataFrame(rows)
    frame["split"] = split
    if not numbered:
        started = (pd.to_datetime(frame["started"], utc=True, errors="coerce", format="ISO8601")
                   if "started" in frame else pd.Series(pd.NaT, index=frame.index))
        frame = frame.assign(_started=started).sort_values(
            ["_started", "_order"], na_position="last", kind="stable")
        frame["repeat"] = frame.groupby(["candidate", "task_id"], sort=False).cumcount()
        frame = frame.sort_index()
    frame = frame.drop(columns=[c for c in ("started", "_started", "_order") if c in frame])
    if "attempt" not in frame:
        frame["attempt"] = 0
    return Imported(schema.as_trials(frame), _dropped_frame(dropped))


def _dropped_frame(dropped: list[dict]) -> pd.DataFrame:
    out = pd.DataFrame(dropped, columns=_DROPPED)
    return out.astype(object).where(out.notna(), None)


def _paths(value, must_exist: bool = True) -> list[Path]:
    items = [value] if isinstance(value, (str, PathLike)) else list(value or [])
    if not items:
        raise ConfigError("no log path given")
    paths = [Path(item) for item in items]
    for path in paths:
        if must_exist and not path.exists():
            raise FileNotFoundError(f"no such file or folder: {path}")
    return paths


def _result_files(given: Path, filename: str, accept, depth: int) -> list[tuple[Path, dict]]:
    if given.is_file():
        candidates = [given]
    else:
        candidates = [given / filename]
        pattern = filename
        for _ in range(depth):
            pattern = "*/" + pattern
            candidates += sorted(given.glob(pattern))
    out = []
    for file in candidates:
        if file.is_file():
            data = _read_json(file)
            if isinstance(data, Mapping) and accept(data):
                out.append((file, data))
    return out


def _read_json(path: Path):
    try:
        return json.loads(Path(path).read_text())
    except json.JSONDecodeError as err:
        raise LogError(f"{path} is not valid JSON: {err}") from None
    except UnicodeDecodeError:
        raise LogError(f"{path} is not a text (JSON) file") from None


def _default_candidate(given: Path, *, trial_file: bool) -> str:
    if given.is_dir():
        return given.resolve().name
    parent = given.resolve().parent
    return (parent.parent if trial_file else parent).name


def _label(value) -> str:
    path = _paths(value, must_exist=False)[0]
    return path.name if path.is_dir() else path.stem


def _shown(value) -> str:
    paths = _paths(value, must_exist=False)
    return str(paths[0]) + (f" (+{len(paths) - 1} more)" if len(paths) > 1 else "")


def _classes(failure_classes) -> dict[str, str]:
    table = dict(FAILURE_CLASSES)
    for name, kind in (failure_classes or {}).items():
        if kind not in CLASSES:
            raise ConfigError(f"failure_classes[{name!r}] must be one of {list(CLASSES)}, "
                              f"got {kind!r}")
        table[str(name)] = kind
    return table


def _check_split(split: str) -> None:
    if split not in schema.SPLITS:
        raise ConfigError(f"split must be one of {list(schema.SPLITS)}, got {split!r}")


def _seconds(start, end) -> float:
    if not start or not end:
        return math.nan
    delta = pd.to_datetime(end, utc=True, errors="coerce") - pd.to_datetime(start, utc=True,
                                                                           errors="coerce")
    return math.nan if pd.isna(delta) else float(delta.total_seconds())


def _number(value) -> float:
    try:
        return math.nan if value is None else float(value)
    except (TypeError, ValueError):
        return math.nan


def _first_number(*values) -> float:
    for value in values:
        number = _number(value)
        if not np.isnan(number):
            return number
    return math.nan


def _first_line(text) -> str:
    lines = str(text).strip().splitlines()
    return lines[0][:300] if lines else ""
