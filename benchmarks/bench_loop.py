"""Orchestration overhead per trial, and simulated trials/s with threads vs a Dask cluster.

    python benchmarks/bench_loop.py [--tasks 400] [--k 10]

Prints (1) the loop's own cost per trial with a no-op agent, ledger writes included
(target: under 1 ms), and (2) simulated trials/s through ``Run.score`` with the default
thread pool and with a ``dask.distributed`` LocalCluster, measured side by side.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from gsme import sim
from gsme.agents import TaskAgent, Trajectory
from gsme.run import Run
from gsme.settings import GateConfig, RunConfig


class NoOpAgent(TaskAgent):
    """Returns a pass immediately: what is left is the orchestration's own cost."""

    name = "no-op"

    def __init__(self, n_tasks: int):
        self._tasks = pd.DataFrame({"task_id": [f"t{i:04d}" for i in range(n_tasks)],
                                    "split": ["train"] * (n_tasks - 2) + ["test"] * 2})

    def tasks(self):
        return self._tasks

    def run(self, harness_dir, task, *, repeat, attempt, run_seed):
        return Trajectory(passed=True, transcript="done")


def _time_score(run: Run, executor=None) -> tuple[int, float]:
    start = time.perf_counter()
    run.score("baseline", executor=executor, progress=False)
    return run.trials_spent(), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=400)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="gsme-bench-loop-"))
    config = RunConfig(gate=GateConfig(k=args.k))  # k repeats of every task: one pass

    noop = Run.create(root / "noop", agent=NoOpAgent(args.tasks), config=config)
    n, seconds = _time_score(noop)
    print(f"no-op agent: {n} trials in {seconds:.2f} s -> {1e3 * seconds / n:.3f} ms per trial "
          f"of orchestration (ledger writes included; target < 1 ms)")

    preset = "omni-math"
    threads = Run.create(root / "threads", agent=sim.preset(preset), config=config)
    n_t, s_t = _time_score(threads)
    print(f"simulated {preset}, threads: {n_t} trials in {s_t:.2f} s -> {n_t / s_t:,.0f} trials/s")
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("dask.distributed not installed: pip install 'gsme[dask]' to compare")
        return
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        dask_run = Run.create(root / "dask", agent=sim.preset(preset), config=config)
        n_d, s_d = _time_score(dask_run, executor=client.get_executor())
    print(f"simulated {preset}, dask LocalCluster (2 workers): {n_d} trials in {s_d:.2f} s "
          f"-> {n_d / s_d:,.0f} trials/s ({s_d / s_t:.1f}x the thread pool's time)")


if __name__ == "__main__":
    main()
