"""HAL harness upload files."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from gsme.importers._common import (
    Format,
    Imported,
    LogError,
    check_split,
    expand,
    finish,
    first_number,
    json_object,
    read_json,
    shown,
)

__all__ = ["HAL", "UPLOAD_FILES", "read_hal"]

UPLOAD_FILES = ("*_UPLOAD.json", "*/*_UPLOAD.json")
"""Where :func:`read_hal` looks in a folder: a run folder's upload, those of its run
folders."""


def read_hal(
    uploads,
    *,
    candidate: str | None = None,
    split: str = "train",
) -> Imported:
    """HAL harness upload files (``<run_id>_UPLOAD.json``): one run per file.

    Accepts an upload file, a HAL run folder (``results/<benchmark>/<run_id>/``, holding
    ``<run_id>_UPLOAD.json`` beside the raw ``<run_id>.json``), a folder of run folders,
    or a list of these.

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
    run's ``total_cost``, so ``cost_usd`` is NaN. Repeats of a task are numbered run by
    run (file by file), runs in order of their earliest ``first_call_timestamp`` (runs
    with none last, then in read order). Tasks with latencies or logs but in neither list
    are dropped.

    Parameters
    ----------
    uploads : path or list of paths
    candidate : str, optional
        Default: each file's ``config.agent_name`` (its file name when it has none).
    split : {"train", "test"}

    Returns
    -------
    Imported

    Examples
    --------
    >>> import json
    >>> upload = {"config": {"agent_name": "my-agent"},
    ...           "results": {"successful_tasks": ["t1"], "failed_tasks": ["t2"]}}
    >>> json.dump(upload, open("run1_UPLOAD.json", "w"))
    >>> imported = read_hal("run1_UPLOAD.json")
    >>> imported.trials[["candidate", "task_id", "repeat", "passed"]]
      candidate task_id  repeat  passed
    0  my-agent      t1       0    True
    1  my-agent      t2       0   False
    """
    check_split(split)
    rows: list[dict] = []
    dropped: list[dict] = []
    for run, file in enumerate(expand(uploads, UPLOAD_FILES, "HAL upload")):
        data = read_json(file)
        results = data.get("results")
        if not isinstance(results, Mapping) or "successful_tasks" not in results:
            raise LogError(f"{file}: not a HAL upload (no results.successful_tasks)")
        name = candidate if candidate is not None else str(
            (data.get("config") or {}).get("agent_name") or file.stem)
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
            rows.append({"candidate": name, "task_id": task, "_run": run,
                         "started": latency.get("first_call_timestamp"),
                         "passed": task in passed, "infra_ok": True,
                         "tokens": usage.get(task, math.nan),
                         "seconds": first_number(walls.get(task), latency.get("total_time")),
                         "trajectory": f"{file}#raw_logging_results/{task}", "error": None})
    return finish(rows, dropped, split, what=f"HAL uploads {shown(uploads)}")


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


class HAL(Format):
    """The ``hal`` format: :func:`read_hal`.

    Examples
    --------
    >>> import json
    >>> json.dump({"config": {}, "results": {"successful_tasks": ["t1"], "failed_tasks": []}},
    ...           open("run1_UPLOAD.json", "w"))
    >>> fmt = HAL()
    >>> fmt.guess_can_open(Path("run1_UPLOAD.json")), len(fmt.read("run1_UPLOAD.json").trials)
    (True, 1)
    """

    summary = "HAL *_UPLOAD.json files and run folders"

    def read(self, path, **options) -> Imported:
        return read_hal(path, **options)

    def guess_can_open(self, path: Path) -> bool:
        if path.is_dir():
            return any(f for pattern in UPLOAD_FILES for f in path.glob(pattern))
        data = json_object(path)
        return "config" in data and "results" in data
