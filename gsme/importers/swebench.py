"""SWE-bench evaluation reports and instance-log folders."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gsme.importers._common import (
    Imported,
    LogError,
    as_paths,
    check_split,
    classify_failure,
    finish,
    read_json,
    shown,
)
from gsme.settings import ConfigError

__all__ = ["APPLY_PATCH_FAIL", "read_swebench"]

APPLY_PATCH_FAIL = ">>>>> Patch Apply Failed"
"""The marker SWE-bench writes to ``run_instance.log`` when a patch does not apply."""


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
    check_split(split)
    runs = as_paths(reports)
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
            data = read_json(report)
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
    return finish(rows, dropped, split, what=f"SWE-bench reports {shown(reports)}")


def _swebench_report(data: dict, log_dir: Path | None) -> list[tuple[str, str]]:
    outcomes = [(i, "resolved") for i in data.get("resolved_ids") or []]
    outcomes += [(i, "unresolved") for i in data.get("unresolved_ids") or []]
    outcomes += [(i, "empty_patch") for i in data.get("empty_patch_ids") or []]
    outcomes += [(i, _swebench_error(None if log_dir is None else log_dir / str(i)))
                 for i in data.get("error_ids") or []]
    return outcomes


def _swebench_instance_dirs(folder: Path) -> list[tuple[str, str]]:
    outcomes = []
    instances = [p for p in folder.iterdir()
                 if (p / "report.json").is_file() or (p / "run_instance.log").is_file()]
    for instance in sorted(instances):
        report = instance / "report.json"
        if report.is_file():
            entry = read_json(report).get(instance.name)
            if not isinstance(entry, Mapping) or "resolved" not in entry:
                raise LogError(f"{report}: no '{instance.name}' entry with 'resolved'")
            outcomes.append((instance.name, "resolved" if entry["resolved"] else "unresolved"))
        else:
            outcomes.append((instance.name, _swebench_error(instance)))
    if not outcomes:
        raise LogError(f"{folder}: no SWE-bench instance folders (<instance_id>/report.json or "
                       "run_instance.log)")
    return outcomes


def _swebench_error(instance_dir: Path | None) -> str:
    log = None if instance_dir is None else instance_dir / "run_instance.log"
    if log is not None and log.is_file() and APPLY_PATCH_FAIL in log.read_text(errors="replace"):
        return "patch_apply_failed"
    return "evaluation_error"


def _aligned_logs(logs, n: int) -> list[Path | None]:
    if logs is None:
        return [None] * n
    paths = as_paths(logs)
    if len(paths) == 1:
        return paths * n
    if len(paths) != n:
        raise ConfigError(f"logs must be one folder or one per report ({n}), got {len(paths)}")
    return paths
