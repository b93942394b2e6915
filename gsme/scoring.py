"""Scoring: which trials candidates still need (a pure plan), and running them.

:func:`plan_trials` is a function of frames: the trials so far, the candidates, the tasks and the
slots wanted (``candidate, task_id, split, repeats``). A slot with a trial is judged by the
validity gate (:func:`gsme.gates.validity_gate`: re-run an infrastructure failure up to
``max_reruns`` times, never re-score a valid slot); a slot never tried is borrowed when a
scored candidate behaves identically on that task (:func:`behaviour`), else run (the plan
is :mod:`gsme._plan`, its names re-exported here).

:func:`execute` runs trial specs through an executor (:mod:`gsme.executors`: threads by
default, processes, Dask, any :class:`concurrent.futures.Executor`, an outside tool's job)
and records each trial as it lands. The pool executors (:mod:`gsme.executors.pool`) run
each trial in a copy of its candidate's committed harness in a temporary folder outside
the run directory, so trials see nothing of the run (ledger, test split). Every trial gets
a fresh copy (new files, folders, modes, times, no extended attributes), removed when the
trial ends, so no trial sees what another left, not even in a file's metadata; what is
left when scoring ends (or when gsme is killed) is removed too.
An agent that runs many trials in one call (the simulator, gsme's own trusted code) reads
the committed files instead, in this process. Completed trials go to a sink (the run) in
small groups, each one ledger transaction, within milliseconds of completing.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Protocol

import pandas as pd

from gsme import _renamed
from gsme._plan import Plan, behaviour, plan_trials, wanted_slots
from gsme.agents.base import TaskAgent, Trajectory, TrialSpec, trial_row
from gsme.executors.base import Snapshot
from gsme.executors.pool import as_executor, crashed
from gsme.settings import RunConfig

__all__ = ["HEALTH_TRIES", "MIN_FAILED_BATCH", "InfraError", "Plan", "Sink", "Snapshot",
           "behaviour", "execute", "plan_trials", "wanted_slots"]

__getattr__ = _renamed.renamed(__name__, {"plan": "plan_trials"})

HEALTH_TRIES = 3
MIN_FAILED_BATCH = 5
"""A batch whose first attempts (at least this many) all fail for infrastructure reasons
stops a run: the environment is broken, and re-running would only fail again."""


class InfraError(RuntimeError):
    """The agent's environment failed: its health check, or every trial of a batch.

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.measure import measure
    >>> from gsme.run import Run
    >>> agent = sim.preset("tiny")
    >>> agent.health_check = lambda: False  # an environment that is down
    >>> run = Run.create("run", agent=agent)
    >>> measure(run, "baseline", progress=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gsme.scoring.InfraError: the agent's health check failed 3 times before scoring; ...
    >>> run.close()
    """


class Sink(Protocol):
    """Where :func:`execute` puts what it learns (:meth:`gsme.run.Run.trial_sink`).

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.run import Run
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> sink = run.trial_sink()
    >>> callable(sink.record_trials), callable(sink.mark_infra_failed)
    (True, True)
    >>> run.close()
    """

    def record_trials(self, rows: list[tuple[dict, str | None]]) -> None: ...

    def mark_infra_failed(self, keys: list[tuple], error: str) -> None: ...


@_renamed.renamed_keywords(config="run_config")
def execute(specs: list[TrialSpec], *, agent: TaskAgent, harness: Callable[[str], Snapshot],
            sink: Sink, run_config: RunConfig, tasks: pd.DataFrame, executor=None,
            progress: bool = True, label: str = "scoring", round: int = 0) -> int:
    """Run ``specs`` through ``executor`` (threads by default), recording each as it lands.

    ``executor`` is a :class:`gsme.executors.Executor` (:mod:`gsme.executors.pool`,
    :data:`gsme.registry.EXECUTORS`), a plain :class:`concurrent.futures.Executor` (wrapped
    in a :class:`~gsme.executors.pool.PoolExecutor`), or None: a pool of
    ``run_config.workers`` threads, closed when scoring ends, each trial in a checked copy
    of its harness. An agent that runs many trials in one call (:attr:`TaskAgent.runs_many`,
    the simulator) is instead given, when no executor is given, each batch's trials of a
    harness at once, in this process, with the harness's committed files (no copy is made).

    The executor gets every spec of the pass at once and streams: it keeps its
    ``concurrency`` trials in flight and yields each as it lands. The agent's health check
    runs before the pass and after every ``run_config.batch_size`` trials have landed,
    while the executor goes on running the next ones (no worker waits for a batch's
    slowest trial); a failed check marks the trials landed since the previous check as
    infrastructure failures (re-run, never scored) and, like the check before the pass, is
    retried :data:`HEALTH_TRIES` times before scoring stops. In this process (no executor,
    ``runs_many``) the next batch starts only after the check.

    Completed trials reach ``sink`` in groups, one :meth:`Sink.record_trials` call (one
    ledger transaction) per ``run_config.flush_trials`` trials or once the oldest has
    waited ``run_config.flush_seconds``, whichever comes first, and always before a
    health-check verdict marks trials and before this function returns or raises. A trial not yet
    recorded when the process dies is simply run again when the run resumes.

    Raises
    ------
    InfraError
        The health check failed :data:`HEALTH_TRIES` times in a row, or every first
        attempt of ``run_config.batch_size`` landed trials (at least
        :data:`MIN_FAILED_BATCH`) failed for infrastructure reasons (the message names the
        commonest error). What completed is recorded first; trials not started are
        cancelled.

    Returns
    -------
    int
        The number of trials run.

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.run import Run
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> tasks = run.tasks()
    >>> wanted = wanted_slots(tasks, ["baseline"], split="train", k=2)
    >>> todo = plan_trials(run.trials(), run.candidates(), tasks, wanted, run_config=run.config)
    >>> execute(todo.specs, agent=run.agent, harness=run.snapshot, sink=run.trial_sink(),
    ...         run_config=run.config, tasks=tasks, progress=False)
    32
    >>> len(run.trials(split="train"))
    32
    >>> run.close()
    """
    if not specs:
        return 0
    in_process = executor is None and agent.runs_many
    runner, own = ((None, False) if in_process else
                   as_executor(executor, workers=run_config.workers))
    records = _task_records(tasks)
    snapshots = {c: harness(c) for c in dict.fromkeys(s.candidate for s in specs)}
    recorder = _Recorder(sink, size=run_config.flush_trials,
                         seconds=run_config.flush_seconds)
    _require_health(agent)
    bar = _progress(len(specs), progress, desc=label)
    runs = (_run_in_process(agent, specs, run_config.batch_size, snapshots, records,
                            run_config.run_seed) if in_process else
            runner.stream(specs, agent=agent, snapshots=snapshots, tasks=records,
                          run_seed=run_config.run_seed, patience=recorder.patience))
    landed: list[tuple[TrialSpec, Trajectory]] = []
    left = len(specs)
    try:
        for done in runs:
            recorder.add([(_row(spec, traj, round), traj.transcript) for spec, traj in done])
            landed += done
            left -= len(done)
            bar.update(len(done))
            if len(landed) >= run_config.batch_size or (landed and not left):
                _check(agent, landed, sink, recorder)
                landed = []
                if left:
                    _require_health(agent)
    finally:
        runs.close()  # cancels what has not started
        recorder.flush()
        bar.close()
        if own:
            runner.close()
    return len(specs)


def _check(agent: TaskAgent, landed, sink: Sink, recorder: _Recorder) -> None:
    """After a batch of landed trials: mark them if the health check fails, stop if every
    first attempt among them failed for infrastructure reasons."""
    if not _healthy(agent):
        recorder.flush()
        sink.mark_infra_failed([(s.candidate, s.task_id, s.split, s.repeat, s.attempt)
                                for s, _ in landed], "health check failed after the batch")
    errors = [None if traj.infra_ok else (traj.error or "unknown error")
              for spec, traj in landed if spec.attempt == 0]
    if len(errors) >= MIN_FAILED_BATCH and all(e is not None for e in errors):
        common, count = Counter(errors).most_common(1)[0]
        raise InfraError(f"all {len(errors)} first attempts of a batch failed for "
                         f"infrastructure reasons ({count} with: {common[:300]}); "
                         "fix the environment and resume")


# ---------------------------------------------------------------------------- internals


def _row(spec: TrialSpec, traj: Trajectory, round: int) -> dict:
    ref = "/".join([spec.split, spec.candidate, spec.task_id, f"r{spec.repeat}a{spec.attempt}"])
    row = trial_row(spec, traj, ref)  # a new dict: the round is added in place
    row["round"] = round
    return row


class _Recorder:
    """Completed trials on their way to the sink, written in groups.

    :meth:`add` writes everything waiting once ``size`` trials wait or the oldest has
    waited ``seconds``; :meth:`patience` says how long a caller may wait for more trials
    before that deadline; :meth:`flush` writes whatever waits now.
    """

    def __init__(self, sink: Sink, *, size: int, seconds: float):
        self._sink = sink
        self._size = size
        self._seconds = seconds
        self._rows: list[tuple[dict, str | None]] = []
        self._since = 0.0

    def add(self, rows: list[tuple[dict, str | None]]) -> None:
        if rows and not self._rows:
            self._since = time.monotonic()
        self._rows += rows
        if len(self._rows) >= self._size or (self._rows and self.patience() == 0.0):
            self.flush()

    def patience(self) -> float | None:
        """Seconds until what waits is due (None: nothing waits)."""
        if not self._rows:
            return None
        return max(0.0, self._since + self._seconds - time.monotonic())

    def flush(self) -> None:
        rows, self._rows = self._rows, []
        if rows:
            self._sink.record_trials(rows)


def _run_in_process(agent: TaskAgent, specs: list[TrialSpec], batch_size: int, snapshots,
                    records, run_seed: int):
    """Yield the ``(spec, trajectory)`` pairs of each harness's trials of each batch of
    ``batch_size`` specs, run in one :meth:`TaskAgent.run_many` call; an agent's crash is an
    infra failure of each."""
    for start in range(0, len(specs), batch_size):
        by_candidate: dict[str, list[TrialSpec]] = {}
        for spec in specs[start: start + batch_size]:
            by_candidate.setdefault(spec.candidate, []).append(spec)
        for candidate, mine in by_candidate.items():
            trials = [(dict(records[s.task_id]), s.repeat, s.attempt) for s in mine]
            started = time.perf_counter()
            try:
                done = agent.run_many(snapshots[candidate].files, trials, run_seed=run_seed)
                if len(done) != len(mine):
                    raise ValueError(f"run_many returned {len(done)} trajectories for "
                                     f"{len(mine)} trials")
            except Exception as err:  # noqa: BLE001 - an agent's crash is an infra failure
                done = [crashed(err, started)] * len(mine)
            yield list(zip(mine, done, strict=True))


def _task_records(tasks: pd.DataFrame) -> dict[str, dict]:
    """Each task's row as a dict (``task_id`` and its features, Python scalars), by task id."""
    names = tasks.columns.tolist()
    records = (dict(zip(names, row)) for row in zip(*(tasks[c].tolist() for c in names)))
    return {record["task_id"]: record for record in records}


def _healthy(agent: TaskAgent) -> bool:
    try:
        return bool(agent.health_check())
    except Exception:  # noqa: BLE001 - a health check that raises is a failed health check
        return False


def _require_health(agent: TaskAgent) -> None:
    for attempt in range(HEALTH_TRIES):
        if _healthy(agent):
            return
        time.sleep(0.1 * 2**attempt)
    raise InfraError(
        f"the agent's health check failed {HEALTH_TRIES} times before scoring; every "
        "completed trial is in the ledger: fix the environment and resume the run"
    )


def _progress(total: int, enabled: bool, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=False,
                disable=None if enabled else True)  # None: on a terminal only
