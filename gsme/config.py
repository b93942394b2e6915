"""Run configuration files (TOML): read, check everything, then build nothing until asked.

A config file has up to six tables::

    [run]                       # where, how long, and the run's settings
    dir = "runs/tb2"            # relative to this file
    rounds = 5                  # schedule: rounds, children_per_round,
    children_per_round = 3      #   recombinations_per_round, trial_budget,
    budget_usd = 400            #   budget_usd, budget_hours (gsme.budget)
    run_seed = 0                # any other key is a RunConfig setting (policy, ...)
    learn_from = "comparisons.csv"  # optional, relative to this file (gsme.comparisons)

    [gate]                      # GateConfig settings (design, k, z_crit, ...)
    design = "fixed"

    [agent]                     # kind = "sim" | "command" | "anthropic" (gsme.registry)
    kind = "sim"
    preset = "tb2"

    [evolver]                   # kind = "rule" | "claude" | ... (gsme.registry)
    kind = "rule"

    [executor]                  # kind = "threads" | "dask" | ... (gsme.registry)
    kind = "dask"               # optional: without it, threads of [run] workers (the
    address = "tcp://10.0.0.5:8786"  # simulator: in this process)

    [split]                     # optional: the sealed split is another dataset (tasks
    test_dataset = "test.csv"   #   file, relative to this file); all [agent] tasks train

:func:`load` checks the whole file before anything is created: types and ranges of every
setting (one line per problem naming the key and value), credentials anywhere in it, a
command agent's ``workdir`` outside the run directory, and that the agent and evolver can
be built. Specs are stored in the run's ledger so
``gsme resume DIR`` can rebuild them (the executor too; ``--executor`` overrides it).
"""

from __future__ import annotations

import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from gsme import plugins
from gsme.credentials import refuse_credentials
from gsme.settings import (
    DEFAULT_ISOLATION,
    MAX_CONFIG_BYTES,
    ConfigError,
    RunConfig,
    Schedule,
    ValidationError,
    describe,
)

__all__ = ["ConfigError", "RunSpec", "load"]

_TABLES = ("run", "gate", "agent", "evolver", "executor", "split")
DEFAULT_AGENT = {"kind": "sim", "preset": "tiny"}
DEFAULT_EVOLVER = {"kind": "rule"}


@dataclass(frozen=True)
class RunSpec:
    """A checked config file: the run directory, its settings, schedule and plugin specs.

    Examples
    --------
    >>> _ = open("run.toml", "w").write('[run]\\ndir = "runs/demo"\\nrounds = 2\\n'
    ...                                 'policy = "gated"\\n\\n[gate]\\ndesign = "adaptive"\\n')
    >>> spec = load("run.toml")
    >>> spec.dir.name, spec.schedule.rounds, spec.config.policy, spec.config.gate.design
    ('demo', 2, 'gated', 'adaptive')
    >>> spec.agent, spec.evolver, spec.executor
    ({'kind': 'sim', 'preset': 'tiny'}, {'kind': 'rule'}, None)
    """

    dir: Path
    config: RunConfig
    schedule: Schedule
    agent: dict
    evolver: dict
    executor: dict | None = None
    """The ``[executor]`` spec (:data:`gsme.registry.EXECUTORS`); None: the default, a pool
    of ``[run] workers`` threads (an agent that runs many trials at once, in this process)."""


def load(path) -> RunSpec:
    """Read and check a TOML run config. Raises :class:`ConfigError` naming what is wrong.

    ``dir`` is resolved against the config file's folder; without an ``[agent]`` or
    ``[evolver]`` table the simulated ``tiny`` agent and the rule evolver are used, without
    an ``[executor]`` table the default executor (:attr:`RunSpec.executor`).

    Examples
    --------
    >>> _ = open("run.toml", "w").write('[run]\\ndir = "runs/demo"\\nrounds = 2\\n')
    >>> spec = load("run.toml")
    >>> spec.dir.relative_to(Path.cwd()).as_posix(), spec.schedule.rounds
    ('runs/demo', 2)
    >>> _ = open("bad.toml", "w").write('[run]\\ndir = "runs/bad"\\nexplore = 2\\n')
    >>> try:
    ...     load("bad.toml")
    ... except ConfigError as err:
    ...     print(err)
    bad.toml: [run] explore = 2: Input should be less than or equal to 1
    """
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{path} is a folder; gsme run takes a config file (to continue a "
                          "run: gsme resume DIR)")
    try:
        data = tomllib.loads(_read_text(path))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path} is not valid TOML: {err}") from None
    unknown = sorted(set(data) - set(_TABLES))
    if unknown:
        raise ConfigError(f"{path}: unknown table(s) {unknown}; expected "
                          f"{', '.join(f'[{t}]' for t in _TABLES)}")
    for table in _TABLES:
        if not isinstance(data.get(table, {}), dict):
            raise ConfigError(f"{path}: {table} = {data[table]!r} must be a table: write "
                              f"[{table}] on a line of its own, then its keys")
        refuse_credentials(data.get(table), f"{path}: [{table}]")
    run = dict(data.get("run", {}))
    if "gate" in run and "gate" in data:
        raise ConfigError(f"{path}: gate settings are given twice, as [run] gate and as "
                          "[gate]; keep the [gate] table")
    gate = run.pop("gate", data.get("gate", {}))
    where = run.pop("dir", None)
    if not isinstance(where, str) or not where.strip():
        raise ConfigError(f"{path}: [run] dir = {where!r}: needs the run directory, a path "
                          "relative to the config file")
    schedule = {k: run.pop(k) for k in list(run) if k in Schedule.model_fields}
    schedule = _model(Schedule, schedule, path, "run")
    base = path.parent
    if isinstance(run.get("learn_from"), str):
        run["learn_from"] = str((base / run["learn_from"]).resolve())
    config = _model(RunConfig, {**run, "gate": gate}, path, "run")
    agent = _test_dataset(data.get("split", {}), dict(data.get("agent", DEFAULT_AGENT)),
                          base, path)
    run_dir = (base / where).resolve()
    if agent.get("kind") == "command":
        agent = _command_paths(agent, base)
        _outside_the_run(agent, run_dir, path)
    evolver = dict(data.get("evolver", DEFAULT_EVOLVER))
    executor = dict(data["executor"]) if "executor" in data else None
    if executor is not None and executor.get("kind") == "inspect":
        executor = _inspect_paths(executor, base, run_dir, path)
    if executor is not None and executor.get("kind") == "harbor":
        executor = _harbor_paths(executor, base, run_dir, path)
    try:  # fail now, not mid-run (building an executor starts and connects nothing)
        plugins.build_agent(agent)
        plugins.build_evolver(evolver)
        if executor is not None:
            plugins.build_executor(executor)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    return RunSpec(dir=run_dir, config=config, schedule=schedule, agent=agent,
                   evolver=evolver, executor=executor)


def _test_dataset(split: dict, agent: dict, base: Path, path: Path) -> dict:
    """The ``[split]`` table: ``test_dataset``, a tasks file (CSV, JSON or JSONL, relative to
    the config file) whose tasks are the whole sealed split while every task of the agent's
    ``tasks`` trains: a command agent's ``test_tasks``, stored with its spec so ``gsme
    resume`` reads the same split (its commitment is checked)."""
    unknown = sorted(set(split) - {"test_dataset"})
    if unknown:
        raise ConfigError(f"{path}: [split] has unknown key(s) {unknown}; it takes "
                          "test_dataset")
    if "test_dataset" not in split:
        return agent
    where = split["test_dataset"]
    if not isinstance(where, str) or not where.strip():
        raise ConfigError(f"{path}: [split] test_dataset = {where!r}: needs a tasks file (CSV, "
                          "JSON or JSONL), a path relative to the config file")
    if agent.get("kind") != "command":
        raise ConfigError(f"{path}: [split] test_dataset needs an agent that reads its tasks "
                          f"from a file ([agent] kind = \"command\"), not kind = "
                          f"{agent.get('kind')!r}")
    if "test_tasks" in agent:
        raise ConfigError(f"{path}: the test dataset is given twice, as [agent] test_tasks and "
                          "as [split] test_dataset; keep [split] test_dataset")
    return {**agent, "test_tasks": str((base / where).resolve())}


def _model(model, values: dict, path: Path, table: str):
    bad = _bool_as_number(model, values)
    if bad:
        raise ConfigError(f"{path}: [{table}] {bad[0]} = {str(bad[1]).lower()}: needs a "
                          "number, not a boolean")
    try:
        return model.model_validate(values)
    except ValidationError as err:
        raise ConfigError(f"{path}: {describe(err, table=table)}") from None


def _bool_as_number(model, values: dict, prefix: str = "") -> tuple[str, bool] | None:
    """The first ``(dotted key, value)`` holding a boolean where ``model`` wants a number
    (pydantic would read ``rounds = true`` as 1), searched through nested settings."""
    for key, value in values.items():
        field = model.model_fields.get(key)
        if field is None:
            continue
        kinds = typing.get_args(field.annotation) or (field.annotation,)
        nested = [k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)]
        if isinstance(value, dict) and nested:
            found = _bool_as_number(nested[0], value, f"{prefix}{key}.")
            if found:
                return found
        elif isinstance(value, bool) and bool not in kinds and ({int, float} & set(kinds)):
            return prefix + key, value
    return None


def _outside_the_run(spec: dict, run_dir: Path, path: Path) -> None:
    """Refuse a command agent's ``workdir`` that is the run directory or lies inside it:
    trials see their working directory, and the run's ledger and repository with it. (A
    workdir holding the run directory is fine: the sandbox hides the run directory.)"""
    if isinstance(spec.get("workdir"), str):
        _outside(f"[agent] workdir = {spec['workdir']!r}", Path(spec["workdir"]), run_dir, path,
                 "which trials must not see")


def _outside(setting: str, folder: Path, run_dir: Path, path: Path, why: str) -> str:
    """``folder`` resolved, refused (naming ``setting``) if it is or lies inside the run
    directory ``run_dir``."""
    folder = folder.resolve()
    if folder.is_relative_to(run_dir):
        raise ConfigError(f"{path}: {setting} is or lies inside the run directory {run_dir}, "
                          f"{why}; choose a folder outside it")
    return str(folder)


_ONLY_GSME = "where nothing but gsme writes"


def _inspect_paths(spec: dict, base: Path, run_dir: Path, path: Path) -> dict:
    """An Inspect executor's task and solver files and ``log_dir`` are relative to the config
    file; stored as absolute paths. ``log_dir`` must lie outside the run directory (the
    eval writes there)."""
    for key in ("task", "solver"):
        ref = spec.get(key)
        file, at, name = ref.rpartition("@") if isinstance(ref, str) else ("", "", "")
        if at and file.endswith(".py"):
            spec[key] = f"{(base / file).resolve()}@{name}"
    if isinstance(spec.get("log_dir"), str):
        spec["log_dir"] = _outside(f"[executor] log_dir = {spec['log_dir']!r}",
                                   base / spec["log_dir"], run_dir, path, _ONLY_GSME)
    return spec


def _harbor_paths(spec: dict, base: Path, run_dir: Path, path: Path) -> dict:
    """A Harbor executor's task ``path`` and ``jobs_dir`` are relative to the config file;
    stored as absolute paths. ``jobs_dir`` is the run's own (default: the folder
    ``<run directory>.harbor-jobs`` beside it, so no two runs share finished trials) and
    must lie outside the run directory (Harbor's trials write there)."""
    if isinstance(spec.get("path"), str):
        spec["path"] = str((base / spec["path"]).resolve())
    jobs = spec.setdefault("jobs_dir", str(run_dir.with_name(run_dir.name + ".harbor-jobs")))
    if isinstance(jobs, str):
        spec["jobs_dir"] = _outside(f"[executor] jobs_dir = {jobs!r}", base / jobs, run_dir,
                                    path, _ONLY_GSME)
    return spec


def _command_paths(spec: dict, base: Path) -> dict:
    """A command agent's files are relative to the config file; stored as absolute paths.
    Its isolation is stored too, so the run says how its trials ran."""
    spec.setdefault("isolation", DEFAULT_ISOLATION)
    if isinstance(spec.get("tasks"), str):
        spec["tasks"] = str((base / spec["tasks"]).resolve())
    workdir = spec.get("workdir", ".")
    if isinstance(workdir, str):
        spec["workdir"] = str((base / workdir).resolve())
    return spec


def _read_text(path: Path) -> str:
    """The file's text, refused past :data:`~gsme.settings.MAX_CONFIG_BYTES` (a device such
    as ``/dev/zero`` is never read to the end)."""
    with path.open("rb") as handle:
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path} is larger than {MAX_CONFIG_BYTES:,} bytes; a run config "
                          "is a few lines of TOML")
    return data.decode("utf-8")
