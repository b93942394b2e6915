"""Executors over worker pools: threads (the default), processes, any
:class:`concurrent.futures.Executor`, and Dask.

Every one streams: it keeps ``concurrency`` tasks in flight, submits the next as soon as
one lands, and yields each as it lands, so :func:`gsme.scoring.execute` records it at
once and no worker waits for the slowest trial of a batch. A task is one trial, or
``chunk`` trials when trials are shorter than a round trip to the workers (chunking only
pays for trials of a few milliseconds on a remote cluster). Each trial runs in a fresh copy
of its candidate's committed harness (:class:`_Copies`), removed when it ends; a task
carries its harness's files, so workers need no shared file system. An agent that raises,
a worker that dies and a pool that is broken are each an infrastructure failure of the
trials concerned (re-run under the validity gate, never scored).

========== ========================= ==========================================
kind       class                     for
========== ========================= ==========================================
threads    :class:`ThreadExecutor`   I/O-bound agents (a command, an API) on one
                                     machine: the default
processes  :class:`ProcessExecutor`  compute-bound agents on one machine
dask       :class:`DaskExecutor`     compute-bound agents on a Dask cluster (by
                                     scheduler address) or a local one
(Python)   :class:`PoolExecutor`     any ``concurrent.futures`` executor handed
                                     in (a Dask client's ``get_executor()``)
========== ========================= ==========================================
"""

from __future__ import annotations

import atexit
import concurrent.futures as cf
import itertools
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from gsme._proc import remove_tree, remove_when_gone, scratch
from gsme.agents.base import TaskAgent, Trajectory, TrialSpec
from gsme.executors.base import Done, Executor, Snapshot
from gsme.settings import ConfigError, RunConfig

__all__ = ["DaskExecutor", "PoolExecutor", "ProcessExecutor", "ThreadExecutor", "as_executor",
           "crashed", "scratch"]

_WORKERS = RunConfig.model_fields["workers"].default


class PoolExecutor(Executor):
    """Trials through any :class:`concurrent.futures.Executor`, streamed.

    Parameters
    ----------
    pool : concurrent.futures.Executor
        Where tasks run (a thread or process pool, a Dask client's ``get_executor()``).
        It stays the caller's: :meth:`close` does not shut it down.
    concurrency : int, optional
        Tasks kept in flight. Default: the pool's workers when it says (a thread or
        process pool's ``max_workers``; twice a Dask client's threads, so that each worker
        has its next task waiting instead of a round trip), else ``RunConfig.workers``.
    chunk : int
        Trials per task (1: each trial its own task).

    Examples
    --------
    >>> from gsme import sim
    >>> agent = sim.preset("tiny")
    >>> specs = [TrialSpec("baseline", t, "train", 0) for t in ("tiny-001", "tiny-002")]
    >>> tasks = {r["task_id"]: r for r in agent.tasks().to_dict("records")}
    >>> snapshots = {"baseline": Snapshot({"prompt/system.md": "Be careful."})}
    >>> with cf.ThreadPoolExecutor(2) as threads:
    ...     done = [pair for landed in PoolExecutor(threads).stream(
    ...         specs, agent=agent, snapshots=snapshots, tasks=tasks, run_seed=0,
    ...         patience=lambda: None) for pair in landed]
    >>> sorted(spec.task_id for spec, _ in done), all(t.infra_ok for _, t in done)
    (['tiny-001', 'tiny-002'], True)
    """

    def __init__(self, pool: cf.Executor, *, concurrency: int | None = None, chunk: int = 1):
        _at_least_one(concurrency=concurrency, chunk=chunk)
        self._pool = pool
        self.concurrency = concurrency or _capacity(pool)
        self.chunk = chunk

    def pool(self) -> cf.Executor:
        """The pool tasks are submitted to."""
        return self._pool

    def stream(self, specs: list[TrialSpec], *, agent: TaskAgent,
               snapshots: Mapping[str, Snapshot], tasks: Mapping[str, dict], run_seed: int,
               patience: Callable[[], float | None]) -> Iterator[Done]:
        pool = self.pool()
        parts = (specs[i: i + self.chunk] for i in range(0, len(specs), self.chunk))
        flying: dict[cf.Future, list[TrialSpec]] = {}

        def top_up() -> None:
            for part in itertools.islice(parts, max(0, self.concurrency - len(flying))):
                items = [(snapshots[s.candidate], dict(tasks[s.task_id]), s) for s in part]
                flying[_submit(pool, agent, items, run_seed)] = part

        try:
            top_up()
            while flying:
                done, _ = cf.wait(flying, timeout=patience(), return_when=cf.FIRST_COMPLETED)
                if not done:
                    yield []
                    continue
                landed = [(flying.pop(f), _result(f)) for f in done]
                top_up()  # workers get their next task before anything is recorded
                for part, trajectories in landed:
                    yield list(zip(part, _fit(trajectories, len(part)), strict=True))
        finally:  # stopped early (a failed health check, an interrupt): drop what waits
            for future in flying:
                future.cancel()


class _OwnPool(PoolExecutor):
    """A pool executor that starts its own pool (:meth:`_start`) at its first trial and
    shuts it down at :meth:`close`; ``workers`` default to ``RunConfig.workers``."""

    def __init__(self, workers: int | None = None, *, chunk: int = 1):
        _at_least_one(workers=workers)
        self._own: cf.Executor | None = None
        self.workers = workers or _WORKERS
        super().__init__(None, concurrency=self.workers, chunk=chunk)

    def pool(self) -> cf.Executor:
        if self._own is None:
            self._own = self._start()
        return self._own

    def _start(self) -> cf.Executor:
        raise NotImplementedError

    def close(self) -> None:
        own, self._own = self._own, None
        if own is not None:
            own.shutdown(cancel_futures=True)
        _COPIES.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ThreadExecutor(_OwnPool):
    """Trials in this process's threads, ``workers`` at once (the default executor).

    For I/O-bound agents (a command, an API): each trial waits on a subprocess or the
    network, so threads keep many in flight at little cost.

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.measure import measure
    >>> from gsme.run import Run
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> with ThreadExecutor(workers=2) as threads:
    ...     trials = measure(run, "baseline", executor=threads, progress=False)
    >>> len(trials)
    49
    >>> run.close()
    """

    def _start(self) -> cf.Executor:
        return cf.ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="gsme-trial")


class ProcessExecutor(_OwnPool):
    """Trials in ``workers`` processes of this machine (compute-bound agents).

    The agent is pickled to each process; each process makes its own harness copies.

    Examples
    --------
    >>> ProcessExecutor(workers=2).concurrency
    2
    """

    def _start(self) -> cf.Executor:
        return cf.ProcessPoolExecutor(max_workers=self.workers)


class DaskExecutor(_OwnPool):
    """Trials on a Dask cluster: the scheduler at ``address``, else a local cluster of
    ``workers`` (``gsme[dask]``).

    Parameters
    ----------
    address : str, optional
        A running scheduler (``tcp://host:8786``). Its workers need gsme and the agent's
        code installed.
    workers : int, optional
        Without ``address``: the local cluster's workers (default ``RunConfig.workers``).
    processes : bool
        Without ``address``: workers in their own processes (True) or threads of this one.
    concurrency : int, optional
        Tasks kept in flight (default: twice the cluster's threads when it starts, so that
        each worker has its next task waiting instead of a round trip).
    chunk : int
        Trials per task.

    Nothing connects until the first trial runs; a scheduler that cannot be reached then is
    an ``OSError`` naming the address (one line on the command line).

    Examples
    --------
    >>> DaskExecutor(address="tcp://10.0.0.5:8786", chunk=4).chunk
    4
    >>> try:
    ...     DaskExecutor(address="10.0.0.5", workers=2)
    ... except ValueError as err:
    ...     print(err)
    address = '10.0.0.5' and workers = 2: give a scheduler address (scheme://host:port) or the workers of a local cluster, not both
    """

    def __init__(self, address: str | None = None, workers: int | None = None, *,
                 processes: bool = True, concurrency: int | None = None, chunk: int = 1):
        if address is not None and (workers is not None or "://" not in address):
            raise ValueError(f"address = {address!r}" + (
                f" and workers = {workers}: give a scheduler address (scheme://host:port) or "
                "the workers of a local cluster, not both" if workers is not None else
                ": needs scheme://host:port, e.g. 'tcp://10.0.0.5:8786'"))
        _at_least_one(concurrency=concurrency)
        super().__init__(workers, chunk=chunk)
        self.address = address
        self.processes = processes
        self._wanted = concurrency
        self._client = self._cluster = None

    def _start(self) -> cf.Executor:
        try:
            import distributed
        except ImportError:
            raise ConfigError("[executor] kind = 'dask' needs distributed: pip install "
                              "'gsme[dask]'") from None
        if self.address is None:
            self._cluster = distributed.LocalCluster(
                n_workers=self.workers, threads_per_worker=1, processes=self.processes,
                dashboard_address=None)
        try:
            self._client = distributed.Client(self.address or self._cluster, timeout="10s")
        except (OSError, TimeoutError) as err:
            self.close()
            raise OSError(f"[executor] address = {self.address!r}: cannot reach the Dask "
                          f"scheduler ({err})") from None
        executor = self._client.get_executor(pure=False)
        self.concurrency = self._wanted or _capacity(executor)
        return executor

    def close(self) -> None:
        client, cluster, self._client, self._cluster = self._client, self._cluster, None, None
        self._own = None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        _COPIES.clear()


def as_executor(executor, *, workers: int) -> tuple[Executor, bool]:
    """``executor`` as a gsme :class:`Executor`, and whether the caller owns it (must close).

    None is a new :class:`ThreadExecutor` of ``workers``; a plain
    :class:`concurrent.futures.Executor` is wrapped in a :class:`PoolExecutor`.

    Examples
    --------
    >>> with cf.ThreadPoolExecutor(3) as threads:
    ...     wrapped, own = as_executor(threads, workers=4)
    >>> type(wrapped).__name__, wrapped.concurrency, own
    ('PoolExecutor', 3, False)
    >>> as_executor(None, workers=4)[0].concurrency
    4
    """
    if executor is None:
        return ThreadExecutor(workers), True
    if isinstance(executor, Executor):
        return executor, False
    if isinstance(executor, cf.Executor):
        return PoolExecutor(executor), False
    raise TypeError(f"executor must be a gsme.executors.Executor or a concurrent.futures."
                    f"Executor, got {type(executor).__name__}")


def _at_least_one(**values) -> None:
    for key, value in values.items():
        if value is not None and (isinstance(value, bool) or value < 1):
            raise ValueError(f"{key} = {value!r}: must be a whole number of at least 1")


def _capacity(pool) -> int:
    """How many tasks to keep in flight in ``pool``, when it says: a thread or process
    pool's workers, twice a Dask client's threads; else ``RunConfig.workers``."""
    workers = getattr(pool, "_max_workers", None)
    if isinstance(workers, int) and workers > 0:
        return workers
    client = getattr(pool, "_client", None)
    if client is not None and callable(getattr(client, "nthreads", None)):
        try:
            return 2 * max(1, sum(client.nthreads().values()))
        except Exception:  # noqa: BLE001 - a cluster that cannot say gets the default
            pass
    return _WORKERS


def _submit(pool: cf.Executor, agent: TaskAgent, items, run_seed: int) -> cf.Future:
    """``pool.submit`` of a task; a pool that refuses it (broken, shut down) gives a future
    that holds its error, so the task's trials become infrastructure failures."""
    try:
        return pool.submit(_run_chunk, agent, items, run_seed)
    except Exception as err:  # noqa: BLE001 - a broken pool is an infra failure of each trial
        failed: cf.Future = cf.Future()
        failed.set_exception(err)
        return failed


def _result(future: cf.Future):
    """What a task returned, or the error it ended with (a worker died, a pickling error)."""
    try:
        return future.result()
    except Exception as err:  # noqa: BLE001 - a dead worker is an infra failure of its trials
        return err


def _fit(result, n: int) -> list[Trajectory]:
    """A task's ``n`` trajectories: its result, or ``n`` infrastructure failures."""
    if isinstance(result, list) and len(result) == n and all(
            isinstance(t, Trajectory) for t in result):
        return result
    err = result if isinstance(result, Exception) else TypeError(
        f"a task of {n} trials returned {type(result).__name__}, not {n} trajectories")
    return [crashed(err, time.perf_counter())] * n


def _run_chunk(agent: TaskAgent, items, run_seed: int) -> list[Trajectory]:
    return [_run_one(agent, snapshot, task, spec, run_seed) for snapshot, task, spec in items]


def _run_one(agent: TaskAgent, snapshot: Snapshot, task: dict, spec: TrialSpec,
             run_seed: int) -> Trajectory:
    """Run one trial in a fresh copy of the harness; an agent's crash is an infra failure."""
    started = time.perf_counter()
    copy = None
    try:
        copy = _COPIES.fresh(snapshot)
        traj = agent.run(copy, task, repeat=spec.repeat, attempt=spec.attempt,
                         run_seed=run_seed)
        if not isinstance(traj, Trajectory):
            raise TypeError(f"{type(agent).__name__}.run returned {type(traj).__name__}, "
                            "not a Trajectory")
        return traj
    except Exception as err:  # noqa: BLE001 - an agent's crash is an infra failure, not a stop
        return crashed(err, started)
    finally:
        if copy is not None:
            remove_tree(copy.parent)


def crashed(err: Exception, started: float) -> Trajectory:
    """The infrastructure failure standing for a trial whose agent (or worker) raised
    ``err``, ``started`` (:func:`time.perf_counter`) when it began.

    Examples
    --------
    >>> traj = crashed(RuntimeError("container died"), time.perf_counter())
    >>> traj.infra_ok, traj.error
    (False, 'RuntimeError: container died')
    """
    return Trajectory(
        passed=False, infra_ok=False, seconds=time.perf_counter() - started,
        error=f"{type(err).__name__}: {err}", transcript=f"agent raised {type(err).__name__}",
    )


class _Copies:
    """Fresh harness copies for trials, each in its own folder under one folder of this
    process in :func:`scratch` (removed by :meth:`clear`, or when the process ends)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._root: Path | None = None

    def fresh(self, snapshot: Snapshot) -> Path:
        """A new copy of ``snapshot``'s files: ``<its own folder>/harness``."""
        with self._lock:
            if self._root is None or not self._root.is_dir():
                self._root = Path(tempfile.mkdtemp(prefix="gsme-trials-", dir=scratch()))
                remove_when_gone(self._root)  # even if this process is killed
            root = self._root
        return snapshot.write(Path(tempfile.mkdtemp(prefix="trial-", dir=root)) / "harness")

    def clear(self) -> None:
        with self._lock:
            root, self._root = self._root, None
        if root is not None:
            remove_tree(root)


_COPIES = _Copies()
atexit.register(_COPIES.clear)
