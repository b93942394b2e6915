"""Do the executors keep their workers busy? Trials/s of I/O-bound trials, by executor.

Each trial sleeps 0.2 s (a :class:`~gsme.agents.TaskAgent` whose ``run`` sleeps: an agent
waiting on a container or an API; no simulator), so ``workers`` busy workers run
``workers / 0.2`` trials/s. One scoring pass (:func:`gsme.scoring.execute`, trials recorded
to an in-memory sink as they land, the health check every 64 trials) is timed for 2, 4 and
8 workers on:

* **threads**: the default executor (``[executor] kind = "threads"``);
* **dask**: a Dask ``LocalCluster`` of ``workers`` single-threaded workers
  (``processes=False`` by default: workers in this process, so the figure is the
  scheduling round trip, not process start-up; ``--processes`` for worker processes),
  through gsme's streaming executor (``DaskExecutor``: one trial per task, every worker's
  slot kept in flight);
* **dask, old path**: the same cluster driven as gsme drove any non-default executor
  before 0.3.0: batches of 64 trials, each cut in chunks of 32, every batch waiting for
  its slowest chunk (at most 2 trials in flight).

Each row prints trials/s beside the target ``workers / 0.2`` and their ratio (the target
is a ratio of at least 80% for threads and Dask), and this process's CPU milliseconds per
trial: gsme's own, and with Dask workers in this process the scheduler's and the workers'
too (on a machine whose cores are busy, that CPU, not the streaming, bounds Dask).
Sections come from :data:`SECTIONS` (other executors add their own there).

    python benchmarks/bench_executors.py [--trials-per-worker 15] [--processes]
    python benchmarks/bench_executors.py --quick      # 2 and 4 workers, few trials

The full run takes about a minute; it writes its table to
``benchmarks/results/bench_executors.txt`` (not with ``--quick``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from gsme import scoring
from gsme.agents import TaskAgent, Trajectory
from gsme.agents.base import TrialSpec
from gsme.executors import Snapshot
from gsme.executors.pool import DaskExecutor, PoolExecutor
from gsme.settings import RunConfig

TRIAL_SECONDS = 0.2
TARGET_RATIO = 0.8
RESULTS = Path(__file__).resolve().parent / "results" / "bench_executors.txt"


class Sleeper(TaskAgent):
    """Every trial sleeps :data:`TRIAL_SECONDS` and passes (I/O-bound: the GIL is free)."""

    name = "sleeper"

    def __init__(self, n_tasks: int):
        self.n_tasks = n_tasks

    def tasks(self) -> pd.DataFrame:
        return pd.DataFrame({"task_id": [f"t{i:04d}" for i in range(self.n_tasks)],
                             "split": "train"})

    def run(self, harness_dir, task, *, repeat, attempt, run_seed):
        time.sleep(TRIAL_SECONDS)
        return Trajectory(passed=True, seconds=TRIAL_SECONDS)


class Memory:
    """A sink that keeps what it is given (no ledger: the executor's own throughput)."""

    def __init__(self):
        self.rows = []

    def record_trials(self, rows):
        self.rows += rows

    def mark_infra_failed(self, keys, error):
        pass


class OldPath(PoolExecutor):
    """gsme before 0.3.0 on a non-default executor: batches of 64, chunks of 32, every
    batch waiting for its slowest chunk."""

    def stream(self, specs, **kw):
        for start in range(0, len(specs), 64):
            batch = specs[start: start + 64]
            yield from PoolExecutor(self.pool(), concurrency=len(batch), chunk=32).stream(
                batch, **kw)


def trials_per_second(workers: int, n: int, executor) -> tuple[float, float]:
    """Trials/s of one pass of ``n`` trials through ``executor`` (None: the default), and
    this process's CPU milliseconds per trial (gsme's, and a local Dask cluster's)."""
    agent = Sleeper(n)
    tasks = agent.tasks()
    specs = [TrialSpec("baseline", t, "train", 0) for t in tasks["task_id"]]
    sink = Memory()
    started, cpu = time.perf_counter(), time.process_time()
    scoring.execute(specs, agent=agent, harness=lambda c: Snapshot({"prompt.md": "hi"}),
                    sink=sink, run_config=RunConfig(workers=workers), tasks=tasks,
                    executor=executor, progress=False)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    if len(sink.rows) != n:
        raise RuntimeError(f"{len(sink.rows)} of {n} trials recorded")
    return n / seconds, 1000 * cpu / n


def threads_and_dask(args) -> list[str]:
    """Threads, Dask (streaming) and Dask through the old chunked path."""
    load, rows = os.getloadavg()[0], []
    for workers in args.workers:
        n = args.trials_per_worker * workers
        rows.append(("threads", workers, *trials_per_second(workers, n, None)))
        dask = DaskExecutor(workers=workers, processes=args.processes)
        try:
            dask.pool()  # start the cluster before the clock
            rows.append(("dask", workers, *trials_per_second(workers, n, dask)))
            old = OldPath(dask.pool())
            rows.append(("dask, old path", workers,
                         *trials_per_second(workers, max(n, 64), old)))
        finally:
            dask.close()
    where = "worker processes" if args.processes else "workers in this process"
    lines = [f"I/O-bound trials of {TRIAL_SECONDS} s: trials/s by executor (Dask LocalCluster: "
             f"{where}, 1 thread each; {args.trials_per_worker} trials per worker; "
             f"{os.cpu_count()} cores, load average {load:.1f} at the start)",
             f"{'executor':<16}{'workers':>8}{'trials/s':>10}{'target':>8}{'ratio':>8}"
             f"{'CPU ms/trial':>14}"]
    missed = []
    for kind, workers, rate, cpu in rows:
        target = workers / TRIAL_SECONDS
        lines.append(f"{kind:<16}{workers:>8}{rate:>10.2f}{target:>8.1f}{rate / target:>8.0%}"
                     f"{cpu:>14.1f}")
        if kind in ("threads", "dask") and rate / target < TARGET_RATIO:
            missed.append(f"{kind} at {workers}")
    lines.append(f"target >= {TARGET_RATIO:.0%} of workers/{TRIAL_SECONDS} on threads and dask: "
                 + ("met" if not missed else f"MISSED ({', '.join(missed)})"))
    return lines


FAKE_HARBOR = Path(__file__).resolve().parents[1] / "tests" / "scripts" / "harbor"
HARBOR_SLOTS = 200
HARBOR_TARGET_MS = 20.0


class Listed(Sleeper):
    """Lists the same tasks as :class:`Sleeper`; Harbor runs the trials."""

    name = "listed"

    def run(self, harness_dir, task, *, repeat, attempt, run_seed):
        raise RuntimeError("Harbor runs the trials")


def harbor_overhead(args) -> list[str]:
    """gsme's Harbor path per trial: one pass of :data:`HARBOR_SLOTS` slots (100 tasks at 2
    repeats: one Harbor job) through ``tests/scripts/harbor``, the fake Harbor 0.22 whose
    trials take no time, so the pass's wall time is all overhead (writing the job config
    and harness, starting the job, reading each result back and recording it) plus the
    fake's own writing of the job folder; the fake alone on the same job gives the latter.
    Medians of 3 of each, alternated (1 with ``--quick``)."""
    import json
    import os
    import subprocess
    import tempfile

    from gsme.executors.harbor import HarborExecutor

    for name in [k for k in os.environ if k.startswith("FAKE_HARBOR_")]:
        del os.environ[name]
    os.environ["FAKE_HARBOR_PYTHON"] = sys.executable
    agent = Listed(HARBOR_SLOTS // 2)
    tasks = agent.tasks()
    specs = [TrialSpec("baseline", t, "train", r) for t in tasks["task_id"] for r in range(2)]
    through, alone, cpu = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for task in tasks["task_id"]:
            (root / "tasks" / task).mkdir(parents=True)
            (root / "tasks" / task / "task.toml").write_text("")
        for i in range(1 if args.quick else 3):
            jobs = root / f"jobs{i}"
            executor = HarborExecutor(path=str(root / "tasks"), agent_import_path="agent:Harness",
                                      harbor=str(FAKE_HARBOR), jobs_dir=str(jobs), n_concurrent=32)
            sink = Memory()
            started, used = time.perf_counter(), time.process_time()
            scoring.execute(specs, agent=agent, harness=lambda c: Snapshot({"prompt.md": "hi"}),
                            sink=sink, run_config=RunConfig(), tasks=tasks, executor=executor,
                            progress=False)
            through.append(time.perf_counter() - started)
            cpu.append(time.process_time() - used)
            if len(sink.rows) != len(specs) or not all(r["passed"] for r, _ in sink.rows):
                raise RuntimeError(f"{len(sink.rows)} of {len(specs)} trials recorded")
            config = json.loads(next((jobs / ".gsme").glob("gsme-*.json")).read_text())
            (root / "alone.json").write_text(json.dumps({**config, "job_name": f"alone{i}"}))
            started = time.perf_counter()
            subprocess.run([str(FAKE_HARBOR), "jobs", "start", "-c", str(root / "alone.json")],
                           check=True, capture_output=True)
            alone.append(time.perf_counter() - started)
    per, per_alone, per_cpu = (1000 * float(pd.Series(x).median()) / len(specs)
                               for x in (through, alone, cpu))
    part = per - per_alone
    return [f"Harbor path: one pass of {len(specs)} slots (one job) through a fake harbor "
            f"whose trials take no time (median of {len(through)})",
            f"through gsme (config, job start, read-back, recording): {per:.2f} ms per trial "
            f"({per * len(specs) / 1000:.2f} s)",
            f"the fake harbor alone on the same job: {per_alone:.2f} ms per trial",
            f"gsme's overhead (the difference): {part:.2f} ms per trial; gsme's CPU time: "
            f"{per_cpu:.2f} ms per trial",
            f"target <= {HARBOR_TARGET_MS:g} ms of overhead per trial: "
            + ("met" if part <= HARBOR_TARGET_MS else "MISSED")]


SECTIONS: list[Callable[[argparse.Namespace], list[str]]] = [
    threads_and_dask,
    harbor_overhead,
]
"""The benchmark's sections, printed in order, each a function ``(args) -> lines``."""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--trials-per-worker", type=int, default=15,
                        help="trials per worker in each pass (default: 15, 3 s a pass)")
    parser.add_argument("--processes", action="store_true",
                        help="Dask workers in their own processes")
    parser.add_argument("--quick", action="store_true",
                        help="2 and 4 workers, 5 trials per worker; writes no results file")
    args = parser.parse_args(argv)
    if args.quick:
        args.workers, args.trials_per_worker = [2, 4], 5
    command = "python benchmarks/bench_executors.py " + " ".join(argv or sys.argv[1:])
    lines = [f"$ {command.strip()}"]
    for section in SECTIONS:
        lines += ["", *section(args)]
    print("\n".join(lines))
    if not args.quick:
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
