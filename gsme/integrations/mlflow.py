"""A gsme run in MLflow: one parent run, a nested run per candidate, each patch as files.

:func:`export` writes what a run directory holds to an MLflow tracking store:

* **the parent run**, named after the run directory. Params: the run's config
  (``policy``, ``run_seed``, ``gate.*``, ``keep.*``, ...), its schedule (``schedule.*``)
  and the agent's ``agent.<key>`` for the keys of :data:`AGENT_PARAMS` only (a spec's other
  keys, such as a command agent's environment, are never exported). Metrics:
  ``rounds_done, trials_spent`` and, once the run is sealed, every number of
  :func:`gsme.report.run_table` (train and sealed Δ, z, p, retention, pass@k, counts; a
  flag as 1 or 0). Tags: ``gsme.run_id``, ``gsme.dir`` (the run directory), ``simulated``
  and ``sealed`` (``yes`` or ``no``), ``agent``, the run table's other texts
  (``selected``, ``sealed_decision``, ...), ``gsme.ship`` (the ship line,
  :func:`gsme.report.ship_line`, also the run's note) and, once sealed, ``shipped`` (the
  harness to deploy, :func:`gsme.report.recommendation`).
* **a nested run per candidate**, the baseline included, named after it. Metrics: the
  numbers of its decision on the train split (:meth:`gsme.run.Run.decisions`: ``delta_pp,
  z, p_one_sided, round, kept`` (1 or 0), ``n_tasks, se_pp, expected_delta_pp``, ...; none
  for the baseline) and ``train_rate`` (:func:`gsme.explain.train_rates`: the rate every
  surface shows). Tags: ``gsme.run_id, gsme.candidate, parent, kind, where, why,
  patch_id, env_gate, beacon``, the decision's texts (``decision, split, gate_failed,
  reason``) and ``keep_reason`` (why it was kept or not, :func:`gsme.explain.keep_reasons`).
  Artifacts: ``patch/diff.patch`` (the unified diff from its parent's harness; from the
  empty tree for the baseline) and ``patch/rationale.md`` (the evolver's
  rationale), as :func:`gsme.explain.patch_details` gives them.

A NaN (an undecided candidate's z, a non-simulated run's true effects) and a None are not
logged. Every text comes from the run's ledger and repository, which redact what they
store.

**Re-exporting replaces.** The runs of an export carry the gsme run's id in the tag
``gsme.run_id``. An export first writes the whole new parent and its nested runs, then
deletes every other run of the experiment holding that tag (MLflow's soft delete: they go
to its trash, ``mlflow gc`` removes them for good). The experiment therefore holds one
parent per gsme run, with the candidates as they are now; a failed export leaves the
earlier one in place and is itself replaced by the next.

The tracking URI is the one given, else ``MLFLOW_TRACKING_URI`` (:data:`TRACKING_URI_ENV`).
MLflow is an optional extra (``pip install "gsme[mlflow]"``, ``mlflow-skinny`` suffices for
a tracking server or a ``file:`` folder; a database store such as ``sqlite:`` needs the full
``mlflow`` package, and an export to one without it fails in one line saying so); it is
imported when :func:`export` is called, and so are the modules that read the run
(importing this one for its names stays light).
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import sys
import time
from typing import NamedTuple

import pandas as pd

__all__ = ["AGENT_PARAMS", "CANDIDATE_TAG", "EXPERIMENT", "MISSING", "RUN_ID_TAG",
           "TRACKING_URI_ENV", "Export", "ExportError", "export"]

EXPERIMENT = "gsme"
"""The MLflow experiment an export goes to unless another is named."""
RUN_ID_TAG = "gsme.run_id"
"""The tag holding the gsme run's id on the parent and on every nested run."""
CANDIDATE_TAG = "gsme.candidate"
"""The tag holding the candidate's id on its nested run."""
AGENT_PARAMS = ("kind", "preset", "profile", "mix", "suite_seed", "model", "isolation")
"""The agent spec's keys exported as ``agent.<key>`` params; no other key is."""
MISSING = 'exporting to MLflow needs mlflow: pip install "gsme[mlflow]"'
TRACKING_URI_ENV = "MLFLOW_TRACKING_URI"
"""The environment variable read for the tracking URI when none is given (MLflow's own)."""
_DATABASES = ("sqlite", "postgresql", "mysql", "mssql")
"""MLflow's database stores: SQLAlchemy's, which only the full ``mlflow`` package brings."""
_CANDIDATE_TAGS = ("kind", "where", "why", "patch_id", "env_gate", "beacon")
_BATCH = 100  # MLflow takes at most 100 params or tags per batch


class ExportError(RuntimeError):
    """MLflow refused the export (a bad tracking URI, a deleted experiment, a store error).

    Examples
    --------
    MLflow 3 refuses a folder store unless ``MLFLOW_ALLOW_FILE_STORE`` is set:

    >>> import os
    >>> from gsme import sim
    >>> from gsme.run import Run
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> "MLFLOW_ALLOW_FILE_STORE" in os.environ
    False
    >>> try:
    ...     export(run, "file:store")
    ... except ExportError as err:
    ...     print(str(err)[:59])
    MLflow at file:store: The filesystem tracking backend (e.g.
    >>> run.close()
    """


class Export(NamedTuple):
    """What :func:`export` wrote: the experiment, the parent run, the runs it replaced.

    ``runs`` has one row per MLflow run written: ``candidate`` (missing for the parent),
    ``mlflow_run_id``. ``tracking_uri`` is the store written to (given or read from
    :data:`TRACKING_URI_ENV`).

    Examples
    --------
    A fresh simulated run exported to an MLflow folder store here (MLflow 3 writes one only
    with ``MLFLOW_ALLOW_FILE_STORE`` set):

    >>> import os
    >>> from gsme import sim
    >>> from gsme.run import Run
    >>> os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> done = export(run, "file:mlruns")
    >>> done.runs["candidate"].tolist(), done.replaced
    ([nan, 'baseline'], [])
    >>> len(export(run, "file:mlruns").replaced)  # a re-export replaces both runs
    2
    >>> run.close()
    >>> del os.environ["MLFLOW_ALLOW_FILE_STORE"]
    """

    experiment_id: str
    parent_run_id: str
    runs: pd.DataFrame
    replaced: list[str]
    tracking_uri: str


def export(run, tracking_uri: str | None = None, *, experiment: str | None = None,
           progress: bool = False) -> Export:
    """Write ``run`` to the MLflow tracking store at ``tracking_uri``, replacing its last
    export.

    Parameters
    ----------
    run : gsme.run.Run
        A run, live or sealed (open it read-only: ``Run.open(path, read_only=True)``).
    tracking_uri : str, optional
        MLflow's tracking URI: a tracking server (``http://...``), a folder (``file:...``;
        MLflow 3 writes one only with ``MLFLOW_ALLOW_FILE_STORE=true`` set) or, with the
        full ``mlflow`` package rather than ``mlflow-skinny``, a database
        (``sqlite:///mlflow.db``). Default: ``MLFLOW_TRACKING_URI``.
    experiment : str, optional
        The experiment's name (default :data:`EXPERIMENT`); created when missing.
    progress : bool
        Show a progress bar on stderr (on a terminal only).

    Returns
    -------
    Export
        ``experiment_id, parent_run_id``, ``runs`` (one row per MLflow run written:
        ``candidate`` (missing for the parent), ``mlflow_run_id``), ``replaced`` (the ids
        of the earlier export's runs, now deleted) and ``tracking_uri``.

    Raises
    ------
    ImportError
        mlflow is not installed (:data:`MISSING`).
    ExportError
        No tracking URI was given or set; the installed MLflow cannot write the store (the
        message names the package to install); MLflow refused a step (the message is
        MLflow's).

    Examples
    --------
    >>> done = export(run, "http://localhost:5000")  # doctest: +SKIP
    >>> done.runs["candidate"].dropna().tolist()  # doctest: +SKIP
    ['baseline', 'c0001', 'c0002', 'c0003']
    """
    tracking_uri = tracking_uri or os.environ.get(TRACKING_URI_ENV)
    if not tracking_uri:
        raise ExportError(f"no MLflow tracking URI: give one or set {TRACKING_URI_ENV}")
    mlflow = _mlflow()
    try:
        client = _client(mlflow, tracking_uri)
        return _export(client, run, tracking_uri, experiment or EXPERIMENT, progress)
    except mlflow.exceptions.MlflowException as err:
        message = str(err.message).strip()
        raise ExportError(f"MLflow at {tracking_uri}: {message}") from None


def _mlflow():
    try:
        import mlflow
    except ImportError:
        raise ImportError(MISSING) from None
    return mlflow


def _client(mlflow, tracking_uri: str):
    """MLflow's client of the store at ``tracking_uri``; an :class:`ExportError` naming the
    package to install when the installed MLflow has no store for a database URI (without
    SQLAlchemy, mlflow-skinny registers none and raises MlflowException; with only some of
    the full package's modules, or without a database driver, an ImportError)."""
    try:
        return mlflow.MlflowClient(tracking_uri=tracking_uri)
    except (mlflow.exceptions.MlflowException, ImportError) as err:
        scheme = tracking_uri.partition(":")[0].partition("+")[0].lower()
        if scheme not in _DATABASES:
            raise
        if isinstance(err, ImportError) and _full_mlflow():
            install = err.name or "its database driver"
        else:
            install = "mlflow (mlflow-skinny lacks SQLAlchemy)"
        raise ExportError(f"MLflow at {tracking_uri}: the installed MLflow cannot write a "
                          f"{scheme} store: pip install {install}") from None


def _full_mlflow() -> bool:
    """True when the full ``mlflow`` package is installed, not only ``mlflow-skinny``."""
    try:
        importlib.metadata.distribution("mlflow")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _export(client, run, tracking_uri: str, experiment: str, progress: bool) -> Export:
    from tqdm.auto import tqdm

    found = client.get_experiment_by_name(experiment)
    experiment_id = (found.experiment_id if found is not None
                     else client.create_experiment(experiment))
    earlier = _tagged(client, experiment_id, run.run_id)
    into = (client, experiment_id, run.run_id, int(time.time() * 1000))
    with tqdm(desc="gsme export: reading the run", unit="run", leave=False, file=sys.stderr,
              disable=None if progress else True) as bar:  # None: a terminal's only
        fields, candidates = _parent(run), _candidates(run)
        bar.reset(total=1 + len(candidates))
        bar.set_description(f"gsme export: writing {1 + len(candidates)} MLflow runs")
        parent = _write(into, run.path.name, fields)
        written = [(None, parent)]
        for name, candidate in candidates.items():
            bar.update()
            written.append((name, _write(into, name, candidate, parent=parent)))
        bar.update()
    replaced = sorted(earlier - {run_id for _, run_id in written})
    for run_id in replaced:
        client.delete_run(run_id)
    runs = pd.DataFrame(written, columns=["candidate", "mlflow_run_id"])
    return Export(experiment_id, parent, runs, replaced, tracking_uri)


def _write(into: tuple, name: str, fields: dict, *, parent: str | None = None) -> str:
    """Create one MLflow run holding ``fields`` (params, metrics, tags, files); its id."""
    from mlflow.entities import Metric, Param, RunTag

    client, experiment_id, gsme_id, stamp = into
    nested = {} if parent is None else {"mlflow.parentRunId": parent}
    run_id = client.create_run(experiment_id, run_name=name,
                               tags={RUN_ID_TAG: gsme_id, **nested}).info.run_id
    params = [Param(k, str(v)) for k, v in fields.get("params", {}).items() if _present(v)]
    tags = [RunTag(k, str(v)) for k, v in fields["tags"].items() if _present(v)]
    metrics = [Metric(k, float(v), stamp, 0) for k, v in fields["metrics"].items()
               if _present(v)]
    client.log_batch(run_id, metrics=metrics)
    for start in range(0, max(len(params), len(tags)), _BATCH):
        client.log_batch(run_id, params=params[start:start + _BATCH],
                         tags=tags[start:start + _BATCH])
    for path, text in fields.get("files", {}).items():
        if _present(text):
            client.log_text(run_id, str(text), path)
    client.set_terminated(run_id, "FINISHED")
    return run_id


def _parent(run) -> dict:
    """The parent run's params, metrics and tags."""
    from gsme import report

    sealed = run.sealed_result is not None
    params = _flat(run.config.model_dump())
    if run.schedule is not None:
        params.update(_flat(run.schedule.model_dump(), "schedule."))
    spec = run.agent_spec or {}
    params.update({f"agent.{k}": spec[k] for k in AGENT_PARAMS if k in spec})
    metrics = {"rounds_done": run.rounds_done(), "trials_spent": run.trials_spent()}
    simulated = bool(run.agent.simulated)
    table = report.run_table(run) if sealed else None
    ship = report.ship_line(report.recommendation(table) if sealed else None)
    tags = {"gsme.dir": str(run.path.resolve()), "agent": run.agent.name,
            "simulated": _yes(simulated), "sealed": _yes(sealed), "gsme.ship": ship,
            "mlflow.note.content": f"gsme run {run.run_id}"
            + (" (SIMULATED agent)" if simulated else "") + f"\n\n{ship}"}
    if sealed:
        numbers, texts = _numbers_and_texts(table)
        metrics.update(table[numbers].iloc[0])
        tags.update({k: v for k, v in table[texts].iloc[0].items() if k not in tags})
        tags["shipped"] = report.recommendation(table).loc[0, "shipped"]
    return {"params": params, "metrics": metrics, "tags": tags}


def _candidates(run) -> dict[str, dict]:
    """Each candidate's tags, metrics (its decision's numbers) and patch files."""
    from gsme import explain

    decisions = run.decisions()
    numbers, texts = _numbers_and_texts(decisions.drop(columns=["child", "parent"]))
    decisions = decisions[decisions["split"] == "train"].set_index(["child", "parent"])
    out = {}
    for row in explain.patch_details(run).itertuples(index=False):
        tags = {CANDIDATE_TAG: row.candidate, "parent": row.parent,
                **{k: getattr(row, k) for k in _CANDIDATE_TAGS}, "keep_reason": row.keep_reason}
        metrics = {"train_rate": row.train_rate}
        if (row.candidate, row.parent) in decisions.index:
            decision = decisions.loc[(row.candidate, row.parent)]
            tags.update(decision[texts])
            metrics.update(decision[numbers])
        out[row.candidate] = {"tags": tags, "metrics": metrics,
                              "files": {"patch/diff.patch": row.diff,
                                        "patch/rationale.md": row.rationale}}
    return out


def _numbers_and_texts(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The columns logged as metrics (numbers and flags, a flag as 1 or 0) and as tags."""
    numbers = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
    return numbers, [c for c in frame.columns if c not in numbers]


def _tagged(client, experiment_id: str, run_id: str) -> set[str]:
    """The ids of the experiment's active MLflow runs tagged with gsme run ``run_id``."""
    found, token = set(), None
    while True:
        page = client.search_runs([experiment_id], f"tags.`{RUN_ID_TAG}` = {json.dumps(run_id)}",
                                  max_results=1000, page_token=token)
        found.update(r.info.run_id for r in page)
        token = page.token
        if not token:
            return found


def _flat(values: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _present(value) -> bool:
    return not (value is None or value is pd.NA
                or isinstance(value, float) and math.isnan(value))


def _yes(flag) -> str:
    return "yes" if flag else "no"
