"""Terminal-Bench logs: Harbor job folders (Terminal-Bench 2) and Terminal-Bench 1 runs."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from gsme import prices
from gsme.importers._common import (
    Format,
    Imported,
    LogError,
    as_number,
    as_paths,
    check_split,
    classify_failure,
    default_candidate,
    finish,
    first_line,
    json_object,
    read_json,
    result_files,
    seconds,
    shown,
    token_total,
)
from gsme.settings import ConfigError

__all__ = ["RESULTS_FILES", "Harbor", "TerminalBench", "harbor_trial", "read_harbor",
           "read_terminal_bench"]


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
    repeat; the job folder is its run. The fields read are::

        {"task_name": "fix-git", "trial_name": "fix-git__a1b2c3",
         "started_at": "2025-11-02T10:00:00Z", "finished_at": "2025-11-02T10:04:10Z",
         "verifier_result": {"rewards": {"reward": 1.0}},            # or null
         "exception_info": {"exception_type": "AgentTimeoutError",    # or null
                            "exception_message": "..."},
         "agent_result": {"n_input_tokens": 51200, "n_cache_tokens": 40000,
                          "n_output_tokens": 2300, "cost_usd": 0.21}}  # each may be null

    ``score`` is ``rewards[reward_key]`` as a float (not thresholded) and ``passed`` is
    ``score >= threshold``. Validity is Harbor's own (``TrialResult.reward_valid``): every
    exception the trial recorded, its own and its steps', is looked up by its
    ``exception_type`` in :data:`FAILURE_CLASSES`, whose Harbor entries are Harbor's
    exception policy table (:mod:`gsme.importers._harbor_policy`); one infrastructure
    exception sets ``infra_ok=False`` (score NaN). Exceptions of the agent's own (it ran
    out of time or context, or refused) keep the verifier's verdict, False (score 0) when
    there is none, as Harbor's mean counts it. ``tokens`` = input (cache included) +
    output tokens, ``seconds`` = ``finished_at - started_at``, ``trajectory`` = the trial
    folder. A trial with neither a reward nor an exception (unfinished) is dropped. Repeats of a task are numbered job
    by job (jobs in order of their first ``started_at``), within a job by ``started_at``
    (Harbor names a job's attempts of one task by a random suffix, not a number).

    Parameters
    ----------
    path : path or list of paths
    candidate : str, optional
        Default: the name of the (first) folder given, or of the job folder of a
        ``result.json``; all trials read belong to this one candidate.
    reward_key : str
        The key of ``verifier_result.rewards`` that scores the trial.
    threshold : float
        ``passed`` when the reward is at least this; the reward itself is kept in
        ``score``, which the gates judge when it is graded (not all 0 or 1).
    split : {"train", "test"}
    failure_classes : mapping, optional
        Overrides of :data:`FAILURE_CLASSES`.

    Returns
    -------
    Imported

    Examples
    --------
    A job of two trials of one task, written here: one passed, one timed out (an agent
    failure, so it is scored):

    >>> import json
    >>> for i, reward, exc in [(0, 1.0, None), (1, None, {"exception_type": "AgentTimeoutError"})]:
    ...     Path(f"job/fix-git__{i}").mkdir(parents=True)
    ...     json.dump({"task_name": "fix-git", "trial_name": f"fix-git__{i}",
    ...                "started_at": f"2025-11-02T10:0{i}:00Z",
    ...                "finished_at": f"2025-11-02T10:0{i}:30Z",
    ...                "verifier_result": reward and {"rewards": {"reward": reward}},
    ...                "exception_info": exc}, open(f"job/fix-git__{i}/result.json", "w"))
    >>> read_harbor("job").trials[["candidate", "task_id", "repeat", "passed", "infra_ok", "score"]]
      candidate  task_id  repeat  passed  infra_ok  score
    0       job  fix-git       0    True      True    1.0
    1       job  fix-git       1   False      True    0.0
    """
    check_split(split)
    rows: list[dict] = []
    dropped: list[dict] = []
    given_paths = as_paths(path)
    name = candidate if candidate is not None else default_candidate(given_paths[0],
                                                                     trial_file=True)
    jobs: dict[Path, int] = {}
    for given in given_paths:
        files = result_files(given, ("result.json", "*/result.json", "*/*/result.json"),
                             lambda d: "task_name" in d and "trial_name" in d)
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
            run = jobs.setdefault(file.parent.parent, len(jobs))
            rows.append({**row, "candidate": name, "_run": run})
    return finish(rows, dropped, split, what=f"Harbor jobs {shown(path)}")


def _harbor_row(data: dict, file: Path, reward_key, threshold, failure_classes) -> dict | None:
    row = harbor_trial(data, source=file.parent, reward_key=reward_key, threshold=threshold,
                       failure_classes=failure_classes)
    if row is not None:
        row["trajectory"] = str(file.parent)
    return row


def harbor_trial(data: Mapping, *, source, reward_key: str = "reward", threshold: float = 1.0,
                 failure_classes: Mapping[str, str] | None = None) -> dict | None:
    """One Harbor ``TrialResult`` (a trial's ``result.json``, parsed) as a trial row.

    The rules of :func:`read_harbor`, for one trial: ``score`` is the reward, ``passed``
    is ``score >= threshold``; the trial is an infrastructure failure when any exception
    it or one of its steps (``step_results``) recorded is one (:data:`FAILURE_CLASSES`:
    Harbor's ``reward_valid``), and ``error`` names the first such, else its first
    exception. A multi-step trial's tokens and cost are its steps' sums when it has no
    ``agent_result`` of its own. A reward that is not a number in [0, 1] makes the trial an
    infrastructure failure naming it (never scored).

    Returns
    -------
    dict or None
        ``task_id, started, passed, score, infra_ok, tokens, cost_usd, seconds, error``;
        None for an unfinished trial (neither a reward nor an exception).

    Raises
    ------
    LogError
        A field has the wrong type (the message names ``source`` and the field).
    ConfigError
        The trial's rewards have no ``reward_key``.

    Examples
    --------
    >>> row = harbor_trial({"task_name": "fix-git", "verifier_result": {"rewards": {"reward": 0.5}},
    ...                     "agent_result": {"n_input_tokens": 900, "n_output_tokens": 100,
    ...                                      "cost_usd": 0.02}}, source="job/fix-git__a")
    >>> row["passed"], row["score"], row["tokens"], row["cost_usd"]
    (False, 0.5, 1000.0, 0.02)
    >>> priced = {"task_name": "t", "verifier_result": {"rewards": {"reward": 1}},
    ...           "config": {"agent": {"model_name": "anthropic/claude-haiku-4-5"}},
    ...           "agent_result": {"n_input_tokens": 1000, "n_output_tokens": 200}}
    >>> harbor_trial(priced, source="x")["cost_usd"]  # no cost_usd: gsme.prices
    0.002
    >>> harbor_trial({"task_name": "t", "verifier_result": {"rewards": {"reward": 3}}},
    ...              source="x")["error"]
    "reward 'reward' = 3: a reward must be a number in [0, 1]"
    """
    if not isinstance(data, Mapping) or "task_name" not in data:
        raise LogError(f"{source}: a Harbor trial result needs 'task_name'")
    rewards = _field(data, "verifier_result", source) or {}
    rewards = _field(rewards, "rewards", source) or None
    exception = _trial_exception(data, source, failure_classes)
    contexts = _agent_contexts(data, source)
    reward = None
    if rewards is not None:
        if reward_key not in rewards:
            raise ConfigError(f"{source}: verifier rewards have keys {sorted(rewards)}, not "
                              f"reward_key={reward_key!r} (gsme compare --scorer)")
        reward = rewards[reward_key]
    if reward is None and exception is None:
        return None
    kind, error = "none", None
    if exception is not None:
        kind, error = exception
    if reward is not None and not _is_reward(reward):
        kind, error = "infra", (f"reward {reward_key!r} = {reward!r}: a reward must be a number "
                                "in [0, 1]")
    return {
        "task_id": str(data["task_name"]),
        "started": data.get("started_at"),
        "passed": kind != "infra" and reward is not None and float(reward) >= threshold,
        "score": math.nan if kind == "infra" else 0.0 if reward is None else float(reward),
        "infra_ok": kind != "infra",
        "tokens": token_total(*(_sum(contexts, k) for k in ("n_input_tokens", "n_output_tokens"))),
        "cost_usd": _cost(data, contexts, source),
        "seconds": seconds(data.get("started_at"), data.get("finished_at")),
        "trajectory": str(source),
        "error": error,
    }


def _field(data, name: str, source):
    """``data[name]`` when it is a mapping or missing (None); LogError otherwise."""
    if not isinstance(data, Mapping):
        raise LogError(f"{source}: expected an object holding {name!r}, got "
                       f"{type(data).__name__}")
    value = data.get(name)
    if value is not None and not isinstance(value, Mapping):
        raise LogError(f"{source}: {name!r} must be an object or null, got "
                       f"{type(value).__name__}")
    return value


def _is_reward(value) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and 0.0 <= float(value) <= 1.0)


def _steps(data: Mapping, source) -> list:
    steps = data.get("step_results") or []
    if not isinstance(steps, list):
        raise LogError(f"{source}: 'step_results' must be a list or null")
    return steps


def _trial_exception(data: Mapping, source, failure_classes) -> tuple[str, str] | None:
    """``(class, error)`` of the trial's recorded exceptions (its own first, then its
    steps' in order, as Harbor's ``_recorded_exceptions``): the first infrastructure one,
    else the first."""
    found = []
    for holder in [data, *_steps(data, source)]:
        info = _field(holder, "exception_info", source)
        if info:
            name = str(info.get("exception_type") or "UnknownException")
            error = f"{name}: {first_line(info.get('exception_message') or '')}".rstrip(": ")
            found.append((classify_failure(name, failure_classes), error))
    return next((f for f in found if f[0] == "infra"), found[0] if found else None)


def _agent_contexts(data: Mapping, source) -> list[Mapping]:
    own = _field(data, "agent_result", source)
    if own is not None:
        return [own]
    return [ctx for step in _steps(data, source)
            if (ctx := _field(step, "agent_result", source)) is not None]


def _cost(data: Mapping, contexts: list[Mapping], source) -> float:
    """The trial's ``cost_usd``; where Harbor gives tokens but no dollars, their cost at
    :data:`gsme.prices.PRICES` for the agent's ``config.agent.model_name`` (a provider
    prefix dropped; ``n_cache_tokens``, part of ``n_input_tokens``, priced as cache reads),
    NaN for a model the table does not list."""
    cost = as_number(_sum(contexts, "cost_usd"))
    agent = _field(_field(data, "config", source) or {}, "agent", source) or {}
    model = agent.get("model_name")
    counts = [_sum(contexts, k) or 0 for k in ("n_input_tokens", "n_cache_tokens",
                                               "n_output_tokens")]
    if not math.isnan(cost) or not isinstance(model, str) or not any(counts):
        return cost
    fresh, cached, output = counts
    return prices.call_cost(model, max(fresh - cached, 0), output, 0, min(cached, fresh))


def _sum(contexts: list[Mapping], key: str):
    known = [as_number(c.get(key)) for c in contexts if c.get(key) is not None]
    return sum(known) if known else None


# ----------------------------------------------------------------------- Terminal-Bench 1

RESULTS_FILES = ("results.json", "*_results.json", "*/results.json", "*/*_results.json")
"""Where :func:`read_terminal_bench` looks in a folder: a run's own file, a submission's
``<date>_results.json`` files, and those of its run folders."""


def read_terminal_bench(
    path,
    *,
    candidate: str | None = None,
    split: str = "train",
    failure_classes: Mapping[str, str] | None = None,
) -> Imported:
    """Terminal-Bench 1 runs: ``results.json`` files with a ``results`` list.

    Accepts a run folder (``<run>/results.json``), a folder of runs (one leaderboard
    submission: ``<submission>/<run>/results.json`` or ``<submission>/<date>_results.json``),
    a results file, or a list of these; all their trials belong to one candidate. Each
    entry of ``results`` (Terminal-Bench's ``TrialResults``) becomes one repeat::

        {"results": [{"task_id": "hello-world", "trial_name": "hello-world.1-of-1.<run_id>",
                      "is_resolved": true,            # null when the tests did not run
                      "failure_mode": "unset",        # see FAILURE_CLASSES
                      "total_input_tokens": 18230, "total_output_tokens": 911,
                      "trial_started_at": "2025-07-11T20:35:11.742594+00:00",
                      "trial_ended_at": "2025-07-11T20:41:02.100000+00:00",
                      "recording_path": "..."}, ...]}

    ``passed`` is ``is_resolved`` (null counts as False, as on the leaderboard) unless the
    ``failure_mode`` is an infrastructure one, which sets ``infra_ok=False``. ``tokens`` =
    input + output tokens, ``seconds`` = ended − started, ``trajectory`` =
    ``recording_path`` or the trial folder; Terminal-Bench 1 records no cost.

    A run is one results file and, within it, one attempt ``i`` of the trial names
    ``<task_id>.<i>-of-<n>`` (a run with ``--n-attempts n`` holds n attempts of each task).
    Repeats of a task are numbered run by run, runs in order of their first
    ``trial_started_at`` (runs with none last, then in read order); start times only order
    a task's trials within one run when their names carry no attempt.

    Parameters
    ----------
    path : path or list of paths
    candidate : str, optional
        Default: the name of the (first) folder given, or of the folder of a results file.
    split : {"train", "test"}
    failure_classes : mapping, optional
        Overrides of :data:`FAILURE_CLASSES`.

    Returns
    -------
    Imported

    Examples
    --------
    A run of two attempts of one task, written here; the second one's agent process crashed
    (an infrastructure failure, never scored):

    >>> import json
    >>> Path("run").mkdir()
    >>> json.dump({"results": [
    ...     {"task_id": "hello-world", "trial_name": "hello-world.1-of-2.r", "is_resolved": True,
    ...      "failure_mode": "unset"},
    ...     {"task_id": "hello-world", "trial_name": "hello-world.2-of-2.r", "is_resolved": None,
    ...      "failure_mode": "unknown_agent_error"}]}, open("run/results.json", "w"))
    >>> read_terminal_bench("run").trials[["task_id", "repeat", "passed", "infra_ok", "error"]]
           task_id  repeat  passed  infra_ok                error
    0  hello-world       0    True      True                 None
    1  hello-world       1   False     False  unknown_agent_error
    """
    check_split(split)
    rows: list[dict] = []
    given_paths = as_paths(path)
    name = candidate if candidate is not None else default_candidate(given_paths[0],
                                                                     trial_file=False)
    files = []
    for given in given_paths:
        found = result_files(given, RESULTS_FILES, lambda d: isinstance(d.get("results"), list))
        if not found:
            raise LogError(f"no Terminal-Bench results file ({' or '.join(RESULTS_FILES)}, "
                           f"with a 'results' list) under {given}")
        files.extend(found)
    for n, (file, data) in enumerate(files):
        for i, result in enumerate(data["results"]):
            if not isinstance(result, Mapping) or "task_id" not in result:
                raise LogError(f"{file}: results[{i}] has no 'task_id'")
            task = str(result["task_id"])
            mode = result.get("failure_mode") or "unset"
            kind = classify_failure(mode, failure_classes)
            trial = str(result.get("trial_name") or "")
            rows.append({
                "candidate": name, "task_id": task, "_run": (n, _attempt(trial, task)),
                "started": result.get("trial_started_at"),
                "passed": kind != "infra" and bool(result.get("is_resolved")),
                "infra_ok": kind != "infra",
                "tokens": token_total(result.get("total_input_tokens"),
                                      result.get("total_output_tokens")),
                "seconds": seconds(result.get("trial_started_at"), result.get("trial_ended_at")),
                "trajectory": result.get("recording_path") or str(file.parent / task / trial),
                "error": None if kind == "none" else mode,
            })
    runs = {run: j for j, run in enumerate(sorted({row["_run"] for row in rows}))}
    for row in rows:
        row["_run"] = runs[row["_run"]]
    return finish(rows, [], split, what=f"Terminal-Bench runs {shown(path)}")


def _attempt(trial_name: str, task_id: str) -> int:
    """``i`` of a trial named ``<task_id>.<i>-of-<n>[.<run_id>]``; 0 when it is not."""
    found = re.match(r"(\d+)-of-\d+(?:\.|$)", trial_name.removeprefix(f"{task_id}."))
    return int(found.group(1)) if found and trial_name.startswith(f"{task_id}.") else 0


class Harbor(Format):
    """The ``harbor`` format: :func:`read_harbor`.

    Examples
    --------
    >>> import json
    >>> Path("job/t__a").mkdir(parents=True)
    >>> json.dump({"task_name": "t", "trial_name": "t__a",
    ...            "verifier_result": {"rewards": {"reward": 1.0}}},
    ...           open("job/t__a/result.json", "w"))
    >>> Harbor().guess_can_open(Path("job")), len(Harbor().read("job").trials)
    (True, 1)
    """

    summary = "Harbor / Terminal-Bench 2 job folders"
    scoring = MappingProxyType({"scorer": "reward_key", "threshold": "threshold"})

    def read(self, path, **options) -> Imported:
        return read_harbor(path, **options)

    def guess_can_open(self, path: Path) -> bool:
        if path.is_dir():
            return any(file.is_file() and "task_name" in read_json(file)
                       for file in [path / "result.json", *sorted(path.glob("*/result.json")),
                                    *sorted(path.glob("*/*/result.json"))])
        data = json_object(path)
        return "task_name" in data and "trial_name" in data


class TerminalBench(Format):
    """The ``tb`` format: :func:`read_terminal_bench`.

    Examples
    --------
    >>> import json
    >>> Path("run").mkdir()
    >>> json.dump({"results": [{"task_id": "t", "is_resolved": True}]},
    ...           open("run/results.json", "w"))
    >>> TerminalBench().guess_can_open(Path("run")), len(TerminalBench().read("run").trials)
    (True, 1)
    """

    summary = "Terminal-Bench 1 runs and submissions"

    def read(self, path, **options) -> Imported:
        return read_terminal_bench(path, **options)

    def guess_can_open(self, path: Path) -> bool:
        if path.is_dir():
            return bool(result_files(path, RESULTS_FILES, _has_results))
        return _has_results(json_object(path))


def _has_results(data: Mapping) -> bool:
    return isinstance(data.get("results"), list)
