"""Inspect AI as an executor: a scoring pass becomes one ``inspect_ai.eval`` run.

Each candidate's trials become one Inspect task: the user's task (``task``) created with
the candidate's harness folder as task argument ``harness_dir`` (or handed to the user's
solver factory, ``solver``), its dataset cut to the samples asked (a gsme task id is an
Inspect sample id) and ``epochs`` set to the repeats asked (a candidate whose tasks want
different numbers of repeats gets one Inspect task per number). Every sample carries
``metadata["gsme"]``: ``candidate``, ``task_id``, ``run_seed`` and ``trials``, the
``{"repeat", "attempt"}`` of each epoch in order (epoch ``e`` is ``trials[e - 1]``); a
solver reports the beacons of the harness code paths it ran by setting
``metadata["gsme"]["beacons"]`` (a list of strings). A candidate's harness folder is
written once and shared by its samples: a solver copies it into each sample's sandbox
rather than letting the agent write to it. Written against inspect_ai 0.3.285.

Samples are read back with :mod:`inspect_ai.log` while the eval runs: the log is written
after every sample (``log_buffer=1``, an atomic rewrite of the ``.eval`` file), and each
new sample becomes its slot's trajectory (:func:`read_sample`) as soon as it is on disk.

Why a subprocess: the eval runs the user's task and solver (their code) and, through the
sandbox, the agent under test (untrusted). It runs as ``python -m
gsme.executors.inspect_eval SPEC`` in its own session, in a scratch folder outside the
run directory, writing only its log folder. gsme kills its process group when a pass is
abandoned (and the eval kills its own group once gsme is gone), and reads back nothing
but the logs, checking each sample against the slots it asked for (an unasked sample,
epoch or task is dropped) and cutting its transcript. The subprocess keeps the eval's code
out of gsme's process and run directory; it does not keep the agent off the host: that is
the sandbox's job (``docker``, ``k8s``). Under ``local`` the agent runs on this machine as
this user.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from gsme._proc import remove_tree, remove_when_gone, scratch
from gsme.agents.base import Trajectory, TrialSpec
from gsme.agents.command import MAX_TRANSCRIPT_BYTES
from gsme.executors.base import Done, Executor
from gsme.importers._common import classify_failure, first_line
from gsme.importers.inspect_logs import sample_score, sample_usage
from gsme.settings import ConfigError

__all__ = ["InspectExecutor", "read_sample"]

RESERVED = frozenset({
    "tasks", "model", "sandbox", "log_dir", "log_format", "log_buffer", "epochs", "sample_id",
    "max_samples", "max_tasks", "task_args", "solver", "display", "fail_on_error", "limit"})
"""Arguments of ``inspect_ai.eval`` gsme sets itself (not allowed in ``eval_args``)."""

POLL_SECONDS = 0.25
"""How often a running eval's log folder is read for new samples."""


class InspectExecutor(Executor):
    """Runs a scoring pass's trials as one Inspect eval of the user's task (see the module).

    Parameters
    ----------
    task : str
        The user's Inspect task: ``"path/to/file.py@task_name"`` or
        ``"package.module:task_function"`` (importable, or from the folder gsme runs in); it
        takes ``harness_dir`` unless ``solver`` is set.
    solver : str, optional
        A solver factory, named like ``task``, called as ``factory(harness_dir=...)``; its
        solver (or agent) replaces the task's.
    model : str, optional
        The Inspect model (``"anthropic/claude-sonnet-4-5"``, ``"mockllm/model"``); default:
        the task's own, else ``INSPECT_EVAL_MODEL``.
    sandbox : str, optional
        Inspect's sandbox (``"docker"``, ``"k8s"``, ``"local"``, ``"docker:compose.yaml"``);
        default: the task's.
    log_dir : str, optional
        Keep every pass's logs in a new folder under this one (for ``inspect view``); by
        default they go to a scratch folder removed after the pass.
    max_samples, max_tasks : int, optional
        Samples run at once per Inspect task (Inspect's default: ``max_connections``), and
        Inspect tasks (candidates) at once (Inspect's default: 1): at most ``max_samples *
        max_tasks`` trials in flight.
    scorer : str, optional
        The scorer that decides (needed when the task has several).
    score_key : str, optional
        For a scorer whose value is a dict: the key read.
    threshold : float
        ``passed`` when the value as a float is at least this. A value in [0, 1] becomes the
        trial's ``score`` (``C``/``I``: 1/0); one outside it is an infrastructure failure.
    task_args : mapping, optional
        More arguments for the task function.
    eval_args : mapping, optional
        More arguments for ``inspect_ai.eval`` (``time_limit``, ``token_limit``,
        ``max_sandboxes``, ``retry_on_error``...), not those in :data:`RESERVED`.

    Examples
    --------
    >>> ex = InspectExecutor(task="my_evals.tasks:graded", model="mockllm/model",
    ...                      sandbox="local", max_samples=4)
    >>> ex.whole_pass, ex.settings["sandbox"]
    (True, 'local')
    >>> InspectExecutor(task="no_at_sign")
    Traceback (most recent call last):
    ...
    gsme.settings.ConfigError: [executor] task must be "file.py@task_name" or "package.module:task_function", got 'no_at_sign'
    """

    whole_pass = True

    def __init__(self, *, task: str, solver: str | None = None, model: str | None = None,
                 sandbox: str | None = None, log_dir: str | os.PathLike | None = None,
                 max_samples: int | None = None, max_tasks: int | None = None,
                 scorer: str | None = None, score_key: str | None = None,
                 threshold: float = 1.0, task_args: Mapping | None = None,
                 eval_args: Mapping | None = None):
        task = _check_ref("task", task)
        solver = None if solver is None else _check_ref("solver", solver)
        for key, value in (("model", model), ("sandbox", sandbox), ("scorer", scorer),
                           ("score_key", score_key)):
            if value is not None and (not isinstance(value, str) or not value):
                raise ConfigError(f"[executor] {key} must be a non-empty string, got {value!r}")
        for key, value in (("max_samples", max_samples), ("max_tasks", max_tasks)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or value < 1):
                raise ConfigError(f"[executor] {key} must be an integer >= 1, got {value!r}")
        if (not isinstance(threshold, (int, float)) or isinstance(threshold, bool)
                or not math.isfinite(threshold)):
            raise ConfigError(f"[executor] threshold must be a number, got {threshold!r}")
        for key, value in (("task_args", task_args), ("eval_args", eval_args)):
            if value is not None and not (isinstance(value, Mapping)
                                          and all(isinstance(k, str) for k in value)):
                raise ConfigError(f"[executor] {key} must be a table of named values, "
                                  f"got {value!r}")
        taken = sorted(RESERVED & set(eval_args or {}))
        if taken:
            raise ConfigError(f"[executor] eval_args may not set {taken}: gsme sets them "
                              f"(use the executor's own settings); reserved: {sorted(RESERVED)}")
        if "harness_dir" in (task_args or {}):
            raise ConfigError("[executor] task_args may not set 'harness_dir': gsme passes "
                              "each candidate's harness there")
        if log_dir is not None and not isinstance(log_dir, (str, os.PathLike)):
            raise ConfigError(f"[executor] log_dir must be a folder path, got {log_dir!r}")
        self.settings = {"task": task, "solver": solver, "model": model, "sandbox": sandbox,
                         "max_samples": max_samples, "max_tasks": max_tasks,
                         "task_args": dict(task_args or {}), "eval_args": dict(eval_args or {})}
        self.log_dir = None if log_dir is None else Path(log_dir).absolute()
        self.scoring = {"scorer": scorer, "score_key": score_key, "threshold": float(threshold)}
        self._process: subprocess.Popen | None = None

    def stream(self, specs: list[TrialSpec], *, agent, snapshots, tasks, run_seed: int,
               patience) -> Iterator[Done]:
        """Run ``specs`` as one Inspect eval; yield each sample's trial as it is logged."""
        if not specs:
            return
        work = Path(tempfile.mkdtemp(prefix="gsme-inspect-", dir=scratch()))
        remove_when_gone(work)  # even if gsme is killed
        if self.log_dir is None:
            logs = work / "logs"
        else:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            logs = Path(tempfile.mkdtemp(prefix=time.strftime("pass-%Y%m%dT%H%M%S-"),
                                         dir=self.log_dir))
        try:
            groups, slots = _groups(specs, work, snapshots, run_seed)
            spec_file = work / "spec.json"
            spec_file.write_text(json.dumps({**self.settings, "log_dir": str(logs),
                                             "import_from": os.getcwd(), "groups": groups}))
            with open(work / "stderr.txt", "wb") as stderr:
                self._process = subprocess.Popen(
                    [sys.executable, "-m", "gsme.executors.inspect_eval", str(spec_file)],
                    cwd=work, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
                    start_new_session=True)
            yield from self._follow(logs, slots, patience)
            code = self._process.wait()
            tail = first_line(_tail(work / "stderr.txt"))
            if code == 2:
                raise ConfigError(tail)
            error = f"inspect eval ended without this sample (exit code {code})" + (
                f": {tail}" if tail else "")
            if slots:
                yield [(spec, Trajectory(passed=False, infra_ok=False, error=error))
                       for spec in slots.values()]
        finally:
            self.close()
            remove_tree(str(work))

    def _follow(self, logs: Path, slots: dict, patience) -> Iterator[Done]:
        """Yield the slots' trials as their samples appear in ``logs`` until the eval ends."""
        read: dict[Path, tuple[int, int]] = {}
        quiet_since = time.monotonic()
        while slots:
            running = self._process.poll() is None
            done = _read_new(logs, slots, read, self.scoring)
            if done:
                quiet_since = time.monotonic()
                yield done
            if not running:
                return
            wait = patience()
            if wait is not None and time.monotonic() - quiet_since >= wait:
                quiet_since = time.monotonic()
                yield []
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=POLL_SECONDS)

    def close(self) -> None:
        """Stop the eval's process group if a pass is still running."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def read_sample(sample, *, path, scorer=None, score_key=None, threshold=1.0) -> Trajectory:
    """The trajectory of one Inspect sample (``inspect_ai.log.EvalSample``).

    An errored sample is an infrastructure failure (the importer's class
    ``sample_error``), as is a score outside [0, 1]; otherwise ``passed`` is the scorer's
    value as a float at least ``threshold`` and ``score`` that value. Tokens, cost and
    seconds are :func:`gsme.importers.inspect_logs.sample_usage`'s; the transcript is the
    sample's messages (``role: text``), cut at
    :data:`gsme.agents.command.MAX_TRANSCRIPT_BYTES` characters; beacons are
    ``metadata["gsme"]["beacons"]``.

    Examples
    --------
    >>> from inspect_ai.log import EvalSample
    >>> from inspect_ai.scorer import Score
    >>> sample = EvalSample(id="t1", epoch=1, input="hi", target="", messages=[],
    ...                     scores={"grade": Score(value=0.75)})
    >>> traj = read_sample(sample, path="log.eval", threshold=0.5)
    >>> traj.passed, traj.score, traj.infra_ok
    (True, 0.75, True)
    """
    usage = sample_usage(sample)
    text = "\n".join(f"{m.role}: {m.text}" for m in sample.messages or [])
    if len(text) > MAX_TRANSCRIPT_BYTES:
        text = (text[:MAX_TRANSCRIPT_BYTES] + f"\n[gsme: transcript cut: its first "
                f"{MAX_TRANSCRIPT_BYTES} of {len(text)} characters]")
    own = (sample.metadata or {}).get("gsme")
    beacons = own.get("beacons") if isinstance(own, Mapping) else None
    beacons = tuple(b for b in beacons if isinstance(b, str)) if isinstance(beacons, list) else ()
    common = {**usage, "transcript": text, "beacons": beacons}
    if sample.error is not None:
        infra = classify_failure("sample_error") == "infra"
        return Trajectory(passed=False, infra_ok=not infra, **common,
                          error=f"sample_error: {first_line(sample.error.message)}")
    value, reason = sample_score(sample, scorer, score_key, path)
    if reason is not None or not 0.0 <= value <= 1.0:
        return Trajectory(passed=False, infra_ok=False, **common,
                          error=reason or f"score {value!r} is outside [0, 1]")
    return Trajectory(passed=value >= threshold, score=value, **common)


# ---------------------------------------------------------------------------- internals


def _check_ref(key: str, ref) -> str:
    """``ref`` checked, a file made absolute (the eval runs in another folder)."""
    file, at, name = ref.rpartition("@") if isinstance(ref, str) else ("", "", "")
    module, colon, function = ref.partition(":") if isinstance(ref, str) else ("", "", "")
    if at and file.endswith(".py") and name.isidentifier():
        if not Path(file).is_file():
            raise ConfigError(f"[executor] {key}: no file {file!r}")
        return f"{Path(file).absolute()}@{name}"
    if colon and function.isidentifier() and all(p.isidentifier() for p in module.split(".")):
        return ref
    raise ConfigError(f'[executor] {key} must be "file.py@{key}_name" or '
                      f'"package.module:{key}_function", got {ref!r}')


def _groups(specs, work: Path, snapshots, run_seed: int) -> tuple[list[dict], dict]:
    """The Inspect tasks of a pass (one per candidate and number of repeats) and each slot
    ``(task name, sample id, epoch)`` → its spec."""
    trials: dict[str, dict[str, list[TrialSpec]]] = {}
    for spec in specs:
        trials.setdefault(spec.candidate, {}).setdefault(spec.task_id, []).append(spec)
    groups, slots = [], {}
    for c, (candidate, by_task) in enumerate(trials.items()):
        harness = snapshots[candidate].write(work / f"harness-{c}")
        by_count: dict[int, dict[str, list[TrialSpec]]] = {}
        for task_id, mine in by_task.items():
            by_count.setdefault(len(mine), {})[task_id] = sorted(
                mine, key=lambda s: (s.repeat, s.attempt))
        for count, samples in by_count.items():
            name = f"gsme{len(groups)}_{candidate}"
            groups.append({"name": name, "candidate": candidate, "harness_dir": str(harness),
                           "epochs": count, "run_seed": run_seed,
                           "samples": {t: [{"repeat": s.repeat, "attempt": s.attempt}
                                           for s in mine] for t, mine in samples.items()}})
            slots.update({(name, t, e + 1): s for t, mine in samples.items()
                          for e, s in enumerate(mine)})
    return groups, slots


def _read_new(logs: Path, slots: dict, read: dict, scoring: dict) -> Done:
    """Trials of the samples logged under ``logs`` since the last call; removes their slots.

    A sample that is no slot (a task, sample or epoch not asked for, or one already read)
    is dropped. ``read`` maps each log read in full to its size and time then: it is not
    read again until it changes. A log that cannot be read yet (being replaced) is read at
    the next call.
    """
    from inspect_ai.log import (
        read_eval_log,
        read_eval_log_sample,
        read_eval_log_sample_summaries,
    )

    done: Done = []
    for path in sorted(logs.glob("*.eval")) if logs.is_dir() else []:
        stat = path.stat()
        stamp = (stat.st_size, stat.st_mtime_ns)
        if read.get(path) == stamp:
            continue
        try:
            name = read_eval_log(str(path), header_only=True).eval.task
            summaries = read_eval_log_sample_summaries(str(path))
        except Exception:  # noqa: BLE001, S112 - a log mid-write, or not Inspect's: try again later
            continue
        read[path] = stamp
        for summary in summaries:
            key = (name, str(summary.id), int(summary.epoch))
            if key not in slots:
                continue
            try:
                sample = read_eval_log_sample(str(path), summary.id, summary.epoch)
            except Exception:  # noqa: BLE001 - not yet in the file: at the next call
                read.pop(path, None)
                continue
            done.append((slots.pop(key), read_sample(sample, path=path, **scoring)))
    return done


def _tail(path: Path, size: int = 4096) -> str:
    """The last non-empty line of the text at ``path``'s end."""
    with open(path, "rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - size))
        lines = [line for line in f.read().decode("utf-8", "replace").splitlines()
                 if line.strip()]
    return lines[-1] if lines else ""


# ---------------------------------------------------------------------------- the runner


class _UserError(Exception):
    """A setting the eval cannot start with: one line, exit code 2."""


def _load(key: str, ref: str):
    """The function ``ref`` names (``file.py@name`` or ``package.module:name``)."""
    file, at, name = ref.rpartition("@")
    try:
        if at:
            path = Path(file).resolve()
            sys.path.insert(0, str(path.parent))
            spec = importlib.util.spec_from_file_location(f"gsme_inspect_{key}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            module_name, _, name = ref.partition(":")
            module = importlib.import_module(module_name)  # importable here or from gsme's cwd
    except Exception as err:  # noqa: BLE001 - the user's module: say which and why
        raise _UserError(f"[executor] {key}: cannot load {ref!r}: {type(err).__name__}: "
                         f"{first_line(err)}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise _UserError(f"[executor] {key}: {ref!r} names no function")
    return function


def _params(function) -> tuple[set[str], bool]:
    parameters = inspect.signature(function).parameters.values()
    return ({p.name for p in parameters},
            any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters))


def _tasks(spec: dict) -> list:
    """The Inspect tasks of a pass: the user's task per group, cut and labelled."""
    from inspect_ai import task_with
    from inspect_ai.dataset import MemoryDataset

    make = _load("task", spec["task"])
    factory = None if spec["solver"] is None else _load("solver", spec["solver"])
    names, open_ended = _params(make)
    unknown = sorted(set(spec["task_args"]) - names) if not open_ended else []
    if unknown:
        raise _UserError(f"[executor] task_args: {spec['task']} takes no {unknown}; it takes "
                         f"{sorted(names)}")
    takes_harness = "harness_dir" in names or open_ended
    if not takes_harness and factory is None:
        raise _UserError(f"[executor] task: {spec['task']} takes no harness_dir argument and "
                         "no [executor] solver is set: no harness would reach the agent")
    out = []
    for group in spec["groups"]:
        args = dict(spec["task_args"])
        if takes_harness:
            args["harness_dir"] = group["harness_dir"]
        task = make(**args)
        by_id = {str(s.id): s for s in task.dataset}
        missing = sorted(set(group["samples"]) - set(by_id))
        if missing:
            raise _UserError(f"[executor] task: {spec['task']} has no sample {missing[0]!r} "
                             f"({len(missing)} of the tasks asked are missing)")
        samples = [by_id[t].model_copy(update={"metadata": {
            **(by_id[t].metadata or {}),
            "gsme": {"candidate": group["candidate"], "task_id": t,
                     "run_seed": group["run_seed"], "trials": trials}}})
            for t, trials in group["samples"].items()]
        changes = {} if factory is None else {"solver": factory(harness_dir=group["harness_dir"])}
        out.append(task_with(task, dataset=MemoryDataset(samples), epochs=group["epochs"],
                             name=group["name"], **changes))
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the eval a pass's spec file describes (``python -m gsme.executors.inspect_eval``)."""
    from inspect_ai import eval as inspect_eval

    threading.Thread(target=_end_with, args=(os.getppid(),), daemon=True).start()
    spec = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    sys.path.append(spec["import_from"])
    try:
        tasks = _tasks(spec)
        names, _ = _params(inspect_eval)
        unknown = sorted(set(spec["eval_args"]) - names)
        if unknown:
            raise _UserError(f"[executor] eval_args: inspect_ai.eval takes no {unknown}")
    except _UserError as err:
        print(err, file=sys.stderr)
        return 2
    chosen = {k: spec[k] for k in ("model", "sandbox", "max_samples", "max_tasks")
              if spec[k] is not None}
    inspect_eval(tasks, log_dir=spec["log_dir"], log_format="eval", log_buffer=1,
                 display="none", fail_on_error=False, **chosen, **spec["eval_args"])
    return 0


def _end_with(parent: int) -> None:
    """Kill this eval's process group once gsme (``parent``) is gone."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os.killpg(os.getpgid(0), signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
