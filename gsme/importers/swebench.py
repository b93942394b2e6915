"""SWE-bench evaluation reports and instance-log folders."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from gsme.importers._common import (
    Format,
    Imported,
    LogError,
    as_paths,
    check_split,
    classify_failure,
    finish,
    json_object,
    read_json,
    shown,
)
from gsme.settings import ConfigError

__all__ = ["APPLY_PATCH_FAIL", "SWEBench", "read_swebench"]

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
           "empty_patch_ids": [...], "incomplete_ids": [...],
           "infra_failure_ids": [...], "failure_reasons": {"<id>": "out_of_memory"}, ...}

      with ``logs`` (optional) the run's instance-log folder
      ``logs/run_evaluation/<run_id>/<model>/`` (or a list, one per report); or
    * that instance-log folder itself: one ``<instance_id>/`` per evaluated instance,
      ``report.json`` (``{"<id>": {"resolved": true, "infra_failure": false, ...}}``) when
      tests ran and ``run_instance.log`` always;

    or a folder of run reports (its ``*.json`` files with ``resolved_ids``, by name: the
    repeats of one harness; other JSON files there are noted in ``dropped``).

    Outcomes, each looked up in :data:`FAILURE_CLASSES`: resolved → passed; unresolved →
    failed, scored; ``infra_failure_ids`` (environment failures SWE-bench also lists among
    the unresolved or error ids; ``"infra_failure": true`` in an instance's report) →
    ``"infra_failure"``, infrastructure, never scored, its ``failure_reasons`` entry kept
    in ``error``; ``empty_patch_ids`` → ``"empty_patch"``, a failure of the agent, scored:
    the agent submitted nothing, and SWE-bench counts it unresolved (in the denominator of
    its resolve rate); an error id whose ``run_instance.log`` says ``>>>>> Patch Apply
    Failed`` → ``"patch_apply_failed"``, the agent's; any other error id (as SWE-bench
    does, an instance whose ``report.json`` is empty or unreadable is one) →
    ``"evaluation_error"``, infrastructure (without a log, a patch-apply failure cannot be
    told from an infrastructure error). Ambiguous failures (``ambiguous_failure_ids``) keep
    their unresolved or error outcome. ``incomplete_ids`` (never submitted) are dropped.
    An instance-log folder cannot show the empty patches (SWE-bench never evaluates them):
    ``dropped`` says so; read the run report to score them. Reports carry no tokens, cost
    or time.

    Parameters
    ----------
    reports : path or list of paths
    candidate : str, optional
        Default: each report's model (``<model>.<run_id>.json``), or the instance-log
        folder's name (``<model>``).
    logs : path or list of paths, optional
        Instance-log folders aligned with the reports read (one for all when a single
        path).
    split : {"train", "test"}
    failure_classes : mapping, optional

    Returns
    -------
    Imported

    See Also
    --------
    gsme.importers.read_pair : A baseline's and a child's reports in one frame.

    Examples
    --------
    Two runs of one model: repeats 0 and 1 of every instance.

    >>> import json
    >>> json.dump({"resolved_ids": ["a", "b"], "unresolved_ids": ["c"], "error_ids": [],
    ...            "empty_patch_ids": ["d"], "incomplete_ids": ["e"], "infra_failure_ids": []},
    ...           open("my-model.run1.json", "w"))
    >>> json.dump({"resolved_ids": ["a"], "unresolved_ids": ["b", "c"], "error_ids": ["d"],
    ...            "empty_patch_ids": [], "incomplete_ids": [], "infra_failure_ids": ["d"],
    ...            "failure_reasons": {"d": "out_of_memory"}}, open("my-model.run2.json", "w"))
    >>> imported = read_swebench(["my-model.run1.json", "my-model.run2.json"])
    >>> imported.trials[["candidate", "task_id", "repeat", "passed", "infra_ok", "error"]]
      candidate task_id  repeat  passed  infra_ok                         error
    0  my-model       a       0    True      True                          None
    1  my-model       b       0    True      True                          None
    2  my-model       c       0   False      True                          None
    3  my-model       d       0   False      True                   empty_patch
    4  my-model       a       1    True      True                          None
    5  my-model       d       1   False     False  infra_failure: out_of_memory
    6  my-model       b       1   False      True                          None
    7  my-model       c       1   False      True                          None
    >>> imported.dropped[["task_id", "reason"]]
      task_id                                   reason
    0       e  incomplete: no prediction was submitted
    """
    check_split(split)
    dropped: list[dict] = []
    runs = _swebench_runs(reports, candidate, dropped)
    log_dirs = _aligned_logs(logs, len(runs))
    rows: list[dict] = []
    for run, ((source, data), log_dir) in enumerate(zip(runs, log_dirs)):
        if data is None:
            name = candidate if candidate is not None else source.name
            outcomes = _swebench_instance_dirs(source)
            log_dir = source
            dropped.append({"candidate": name, "source": str(source), "task_id": None,
                            "reason": "instances with an empty patch are not in an "
                                      "instance-log folder: read the run report to score them"})
        else:
            name = candidate if candidate is not None else _model(source)
            outcomes = _swebench_report(source, data, log_dir)
            dropped.extend({"candidate": name, "source": str(source), "task_id": i,
                            "reason": "incomplete: no prediction was submitted"}
                           for i in _ids(source, data, "incomplete_ids"))
        for task_id, outcome, detail in outcomes:
            kind = "none" if outcome in ("resolved", "unresolved") else classify_failure(
                outcome, failure_classes)
            rows.append({"candidate": name, "task_id": str(task_id), "_run": run,
                         "passed": outcome == "resolved", "infra_ok": kind != "infra",
                         "trajectory": None if log_dir is None else str(log_dir / str(task_id)),
                         "error": None if kind == "none" else
                         f"{outcome}: {detail}" if detail else outcome})
    return finish(rows, dropped, split, what=f"SWE-bench reports {shown(reports)}")


def _swebench_runs(reports, candidate, dropped) -> list[tuple[Path, dict | None]]:
    """(report, its data) or (instance-log folder, None) per run; folders of reports opened."""
    runs: list[tuple[Path, dict | None]] = []
    for path in as_paths(reports):
        if path.is_file():
            data = read_json(path)
            if not isinstance(data, Mapping) or "resolved_ids" not in data:
                raise LogError(f"{path}: not a SWE-bench run report (no 'resolved_ids')")
            runs.append((path, data))
        elif _instance_dirs(path):
            runs.append((path, None))
        else:
            found = 0
            for file in sorted(path.glob("*.json")):
                data = read_json(file)
                if isinstance(data, Mapping) and "resolved_ids" in data:
                    runs.append((file, data))
                    found += 1
                else:
                    dropped.append({"candidate": candidate, "source": str(file), "task_id": None,
                                    "reason": "not a SWE-bench run report (no 'resolved_ids')"})
            if not found:
                raise LogError(f"{path}: no SWE-bench run report (*.json with 'resolved_ids') "
                               "and no instance folders (<instance_id>/report.json or "
                               "run_instance.log)")
    return runs


def _model(report: Path) -> str:
    return report.stem.rsplit(".", 1)[0]


def _swebench_report(report: Path, data: Mapping,
                     log_dir: Path | None) -> list[tuple[str, str, str | None]]:
    reasons = data.get("failure_reasons") or {}
    if not isinstance(reasons, Mapping):
        raise LogError(f"{report}: 'failure_reasons' must be an object, got "
                       f"{type(reasons).__name__}")
    infra = set(_ids(report, data, "infra_failure_ids"))
    outcomes = [(i, "resolved", None) for i in _ids(report, data, "resolved_ids")]
    outcomes += [(i, "infra_failure", reasons.get(i)) for i in sorted(infra)]
    outcomes += [(i, "unresolved", None) for i in _ids(report, data, "unresolved_ids")
                 if i not in infra]
    outcomes += [(i, "empty_patch", None) for i in _ids(report, data, "empty_patch_ids")]
    outcomes += [(i, _swebench_error(None if log_dir is None else log_dir / i), None)
                 for i in _ids(report, data, "error_ids") if i not in infra]
    return outcomes


def _ids(report: Path, data: Mapping, field: str) -> list[str]:
    ids = data.get(field) or []
    if not isinstance(ids, list):
        raise LogError(f"{report}: {field!r} must be a list of instance ids, got "
                       f"{type(ids).__name__}")
    return [str(i) for i in ids]


def _instance_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir()
                  if (p / "report.json").is_file() or (p / "run_instance.log").is_file())


def _swebench_instance_dirs(folder: Path) -> list[tuple[str, str, str | None]]:
    outcomes = []
    for instance in _instance_dirs(folder):
        report = instance / "report.json"
        entry, problem = None, "no report.json"
        if report.is_file():
            entry, problem = _instance_report(report, instance.name)
        if entry is None:
            outcomes.append((instance.name, _swebench_error(instance), problem))
        elif entry.get("infra_failure"):
            outcomes.append((instance.name, "infra_failure", entry.get("infra_failure_reason")))
        else:
            outcomes.append((instance.name, "resolved" if entry["resolved"] else "unresolved",
                             None))
    return outcomes


def _instance_report(report: Path, instance: str) -> tuple[Mapping | None, str | None]:
    """An instance's entry in its ``report.json``, or why there is none (as SWE-bench's run
    report, which counts such an instance among its error ids)."""
    text = report.read_text(errors="replace").strip()
    if not text:
        return None, f"{report} is empty"
    try:
        entry = json.loads(text).get(instance)
    except (json.JSONDecodeError, AttributeError):
        return None, f"{report} is not a JSON object"
    if not isinstance(entry, Mapping) or "resolved" not in entry:
        return None, f"{report} has no '{instance}' entry with 'resolved'"
    return entry, None


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
        raise ConfigError(f"logs must be one folder or one per report read ({n}), got "
                          f"{len(paths)}")
    return paths


class SWEBench(Format):
    """The ``swebench`` format: :func:`read_swebench`.

    Examples
    --------
    >>> import json
    >>> json.dump({"resolved_ids": ["a"], "unresolved_ids": ["b"]}, open("m.r1.json", "w"))
    >>> fmt = SWEBench()
    >>> fmt.guess_can_open(Path("m.r1.json")), len(fmt.read("m.r1.json").trials)
    (True, 2)
    """

    summary = "SWE-bench evaluation reports"

    def read(self, path, **options) -> Imported:
        return read_swebench(path, **options)

    def guess_can_open(self, path: Path) -> bool:
        if path.is_dir():
            return any(path.glob("*/run_instance.log"))
        return "resolved_ids" in json_object(path)
