"""Inspect AI logs, read with Inspect's own log API."""

from __future__ import annotations

import json
import math
import zipfile
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from gsme import prices
from gsme.importers._common import (
    Format,
    Imported,
    LogError,
    as_paths,
    check_split,
    classify_failure,
    finish,
    first_line,
    first_number,
    json_object,
    shown,
)
from gsme.settings import ConfigError

__all__ = ["Inspect", "read_inspect", "sample_score", "sample_usage"]


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
    ``task_id``          ``"<eval.task>/<sample.id>"``; ``sample.id`` alone when the
                         task names the candidate (``candidate_from="task"``); the task
                         qualified by its arguments where they differ (below)
    ``repeat``           ``sample.epoch - 1`` (a log is a run: later logs of the same
                         candidate, Inspect task and task arguments continue after the
                         epochs of earlier ones; logs in order of ``eval.created``, then
                         of their first sample's ``started_at``)
    ``attempt``          ``sample.retries`` (earlier attempts that errored and were
                         retried become attempts 0..retries-1 with ``infra_ok=False``)
    ``score``            the scorer's value as a float (``C``/``I``/``P``/``N``, booleans,
                         numbers: ``inspect_ai.scorer.value_to_float``), not thresholded;
                         0 for an errored sample scored as a failure, NaN for one not
                         scored
    ``passed``           ``score >= threshold``
    ``infra_ok``         False when ``sample.error`` is set (class ``"sample_error"``)
    ``error``            ``"sample_error: "`` + ``sample.error``
    ``tokens``           sum of ``total_tokens`` over ``sample.model_usage``
    ``cost_usd``         sum of each model's ``total_cost``, else its cost at
                         :data:`gsme.prices.PRICES`; NaN when a model has neither
    ``seconds``          ``sample.working_time``, else ``total_time``
    ``trajectory``       ``"<log file>#sample=<id>&epoch=<epoch>"`` (load it with
                         ``inspect_ai.log.read_eval_log_sample``)
    ===================  ==============================================================

    Sample ids are unique within an Inspect task only, so the task is part of the task
    id, always: logs of different tasks whose samples share ids stay different tasks. So
    are runs of one task with different arguments (``eval.task_args``, defaults
    included; not the one naming the candidate, ``candidate_from="task_arg:NAME"``):
    where the logs read hold several, each log's task is qualified by the arguments that
    differ (``"quiz[level=2]/s1"``; ``"[level=2]/s1"`` when the task names the
    candidate), and ``dropped`` holds a line saying so. A sample id met twice in one epoch
    of a log is an error naming the log.

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
        ``passed`` when the value as a float is at least this (C/I scores: 1 or 0). The
        value itself is kept in ``score``, which the gates judge when it is graded (not
        all 0 or 1; :func:`gsme.compare.compare`'s ``on``).
    split : {"train", "test"}
    failure_classes : mapping, optional
        Overrides of :data:`FAILURE_CLASSES` (``{"sample_error": "agent"}`` scores errored
        samples as failures).

    Returns
    -------
    Imported
        ``trials`` and ``dropped`` (samples without the chosen score; logs whose status
        is not ``success``; a line per task run with several sets of task arguments).

    Examples
    --------
    A minimal .json log of two samples, written here:

    >>> import json
    >>> samples = [{"id": sid, "epoch": 1, "input": "2 + 2?", "target": "4",
    ...             "scores": {"match": {"value": value}}}
    ...            for sid, value in [("s0", "C"), ("s1", "I")]]
    >>> json.dump({"version": 2, "status": "success", "plan": {}, "stats": {},
    ...            "eval": {"task": "demo", "created": "2025-06-01T10:00:00+00:00",
    ...                     "model": "mockllm/model", "dataset": {}, "config": {}},
    ...            "samples": samples}, open("demo.json", "w"))
    >>> read_inspect("demo.json").trials[["candidate", "task_id", "repeat", "passed", "infra_ok"]]
           candidate  task_id  repeat  passed  infra_ok
    0  mockllm/model  demo/s0       0    True      True
    1  mockllm/model  demo/s1       0   False      True
    """
    log_api = _inspect_log_api()
    check_split(split)
    failure = classify_failure("sample_error", failure_classes)
    files = _inspect_files(logs, log_api)
    logs_read = [(path, _inspect_header(path, log_api),
                  log_api.read_eval_log_sample_summaries(str(path))) for path in files]
    # in order of creation (to the second), then of the first sample's start (to the µs)
    logs_read.sort(key=lambda log: (str(log[1].eval.created),
                                    min((str(s.started_at) for s in log[2] if s.started_at),
                                        default=""), str(log[0])))
    task_named = candidate is None and candidate_from == "task"
    named_by = candidate_from.partition(":")[2] if (
        candidate is None and candidate_from.startswith("task_arg:")) else None
    prefixes, notes = _task_prefixes([log[1] for log in logs_read], named_by, task_named)
    rows: list[dict] = []
    dropped: list[dict] = [{"candidate": None, "source": shown(logs), "task_id": None,
                            "reason": note} for note in notes]
    offsets: dict[tuple[str, str], int] = {}
    for (path, header, summaries), prefix in zip(logs_read, prefixes):
        name = candidate if candidate is not None else _inspect_candidate(header, candidate_from,
                                                                           path)
        run = (name, str(header.eval.task), prefix)
        if header.status != "success":
            dropped.append({"candidate": name, "source": str(path), "task_id": None,
                            "reason": f"log status {header.status!r}: samples it did not "
                                      "finish are missing"})
        offset = offsets.get(run, 0)
        last_epoch = 0
        seen: set[tuple[str, int]] = set()
        for s in summaries:
            key = (str(s.id), int(s.epoch))
            if key in seen:
                raise LogError(f"{path}: sample id {s.id!r} appears twice in epoch {s.epoch} "
                               "(sample ids must be unique within a log)")
            seen.add(key)
            last_epoch = max(last_epoch, int(s.epoch))
            task_id = f"{prefix}{s.id}"
            base = {"candidate": name, "task_id": task_id, "repeat": offset + int(s.epoch) - 1,
                    "trajectory": f"{path}#sample={s.id}&epoch={s.epoch}", **sample_usage(s)}
            retries = int(s.retries or 0)
            failed = {"passed": False, "infra_ok": failure != "infra",
                      "score": math.nan if failure == "infra" else 0.0}
            for attempt in range(retries):  # what earlier attempts used is not recorded
                rows.append({**base, "tokens": math.nan, "cost_usd": math.nan,
                             "seconds": math.nan, "attempt": attempt, **failed,
                             "error": "sample_error: errored and was retried"})
            if s.error:
                rows.append({**base, "attempt": retries, **failed,
                             "error": f"sample_error: {first_line(s.error)}"})
                continue
            value, reason = sample_score(s, scorer, score_key, path)
            if reason is not None:
                dropped.append({"candidate": name, "source": str(path), "task_id": task_id,
                                "reason": reason})
                continue
            rows.append({**base, "attempt": retries, "passed": value >= threshold,
                         "score": value, "infra_ok": True, "error": None})
        offsets[run] = offset + last_epoch
    return finish(rows, dropped, split, what=f"Inspect logs {shown(logs)}", numbered=True)


_UNSET = "?"  # a task argument one log of the task has and another lacks


def _task_prefixes(headers, named_by: str | None, task_named: bool) -> tuple[list[str], list]:
    """Each log's task id prefix (``"<task>/"``; ``""`` when the task names the candidate),
    its task qualified by the arguments that differ between the logs of that task
    (``"quiz[level=2]/"``), and a note per task so qualified. ``named_by`` is the task
    argument naming the candidate (not part of a task)."""
    def arguments(header) -> dict[str, str]:
        given = {str(k): json.dumps(v, sort_keys=True, default=str)
                 for k, v in (header.eval.task_args or {}).items()}
        given.pop(named_by, None)
        return given

    given = [(str(h.eval.task), arguments(h)) for h in headers]
    by_task: dict[str, list[dict]] = {}
    for task, args in given:
        by_task.setdefault(task, []).append(args)
    differ = {task: [k for k in sorted({k for a in sets for k in a})
                     if len({a.get(k, _UNSET) for a in sets}) > 1]
              for task, sets in by_task.items()}
    prefixes = []
    for task, args in given:
        keys = differ[task]
        qualified = f"[{','.join(f'{k}={args.get(k, _UNSET)}' for k in keys)}]" if keys else ""
        named = f"{qualified}/" if qualified else ""
        prefixes.append(named if task_named else f"{task}{named or '/'}")
    notes = []
    for task, keys in differ.items():
        if keys:
            shown_as = sorted({p for (t, _), p in zip(given, prefixes) if t == task})
            notes.append(f"Inspect task {task!r} ran with {len(shown_as)} sets of task "
                         f"arguments ({', '.join(keys)}): kept apart as tasks "
                         f"{', '.join(p + '<sample id>' for p in shown_as)}, not merged as "
                         "repeats")
    return prefixes, notes


def _inspect_log_api():
    try:
        import inspect_ai.log as log_api
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("reading Inspect logs needs inspect_ai: pip install 'gsme[inspect]'"
                          ) from None
    return log_api


def _inspect_files(logs, log_api) -> list[Path]:
    files: list[Path] = []
    for path in as_paths(logs):
        if path.is_dir():
            found = [Path(info.name.removeprefix("file://"))
                     for info in log_api.list_eval_logs(str(path), recursive=True)]
            if not found:
                raise LogError(f"no Inspect log (.eval or .json) under {path}")
            files.extend(sorted(found))
        else:
            files.append(path)
    return files


def _inspect_header(path: Path, log_api):
    try:
        return log_api.read_eval_log(str(path), header_only=True)
    except (ValueError, KeyError, OSError, zipfile.BadZipFile) as err:  # not an Inspect log
        raise LogError(f"{path} is not an Inspect log: {first_line(err)}") from None


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


def sample_usage(sample) -> dict[str, float]:
    """``tokens``, ``cost_usd`` and ``seconds`` of an Inspect sample (or its summary).

    ``tokens`` sums ``total_tokens`` over ``sample.model_usage``; ``cost_usd`` sums each
    model's ``total_cost``, else its price in :data:`gsme.prices.PRICES` (the model id
    without its provider), NaN when a model has neither; ``seconds`` is ``working_time``,
    else ``total_time``.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> usage = {"anthropic/claude-haiku-4-5": NS(total_tokens=1200, total_cost=None,
    ...          input_tokens=1000, output_tokens=200, input_tokens_cache_write=None,
    ...          input_tokens_cache_read=None)}
    >>> sample_usage(NS(model_usage=usage, working_time=3.5, total_time=4.0))
    {'tokens': 1200.0, 'cost_usd': 0.002, 'seconds': 3.5}
    """
    usage = sample.model_usage or {}
    costs = [u.total_cost if u.total_cost is not None else _priced(model, u)
             for model, u in usage.items()]
    return {"tokens": _sum_usage(usage, "total_tokens"),
            "cost_usd": float(sum(costs)) if costs else math.nan,
            "seconds": first_number(sample.working_time, sample.total_time)}


def _priced(model: str, usage) -> float:
    """What ``usage`` of ``model`` costs at gsme's prices (NaN: unknown model or counts)."""
    try:
        return prices.call_cost(str(model), usage.input_tokens or 0,
                                usage.output_tokens or 0, usage.input_tokens_cache_write or 0,
                                usage.input_tokens_cache_read or 0)
    except ValueError:  # a negative or non-numeric count
        return math.nan


def sample_score(sample, scorer, score_key, path) -> tuple[float, str | None]:
    """The value of ``scorer`` (the only one when None) on an Inspect sample, as a float
    (``C``/``I`` are 1/0: ``inspect_ai.scorer.value_to_float``), and None; or NaN and why
    the sample has none. A dict value is read at ``score_key``. An ambiguous choice is a
    :class:`~gsme.settings.ConfigError` naming ``path``.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> sample_score(NS(scores={"match": NS(value="C")}), None, None, "log.eval")
    (1.0, None)
    >>> sample_score(NS(scores={}), None, None, "log.eval")
    (nan, 'no score (the sample was not scored)')
    """
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


def _sum_usage(usage, field: str) -> float:
    known = [float(v) for v in (getattr(u, field, None) for u in usage.values()) if v is not None]
    if not known:
        return math.nan
    return float(sum(known))


class Inspect(Format):
    """The ``inspect`` format: :func:`read_inspect`.

    Examples
    --------
    >>> import json
    >>> samples = [{"id": sid, "epoch": 1, "input": "2 + 2?", "target": "4",
    ...             "scores": {"match": {"value": value}}}
    ...            for sid, value in [("s0", "C"), ("s1", "I")]]
    >>> json.dump({"version": 2, "status": "success", "plan": {}, "stats": {},
    ...            "eval": {"task": "demo", "created": "2025-06-01T10:00:00+00:00",
    ...                     "model": "mockllm/model", "dataset": {}, "config": {}},
    ...            "samples": samples}, open("demo.json", "w"))
    >>> Inspect().guess_can_open(Path("demo.json")), len(Inspect().read("demo.json").trials)
    (True, 2)
    """

    summary = "Inspect AI .eval/.json logs"
    scoring = MappingProxyType({"scorer": "scorer", "score_key": "score_key",
                                "threshold": "threshold"})

    def read(self, path, **options) -> Imported:
        return read_inspect(path, **options)

    def guess_can_open(self, path: Path) -> bool:
        if path.suffix.lower() == ".eval":
            return True
        if path.is_dir():
            return any(path.rglob("*.eval"))
        data = json_object(path)
        return "eval" in data and "version" in data

    def candidate_option(self, candidate_from: str) -> dict:
        return {"candidate_from": "model" if candidate_from == "log" else candidate_from}
