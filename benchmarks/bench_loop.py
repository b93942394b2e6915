"""Orchestration overhead per trial, and simulated trials/s through ``measure.measure``.

    python benchmarks/bench_loop.py [--tasks 400] [--k 10] [--preset omni-math]
                                    [--rounds 5] [--round-preset tb2]
                                    [--repeats 3] [--quick] [--trials-only]

Prints, each measured ``--repeats`` times on fresh runs (the spread shows how noisy the
machine is):

1. the loop's own cost per trial with a no-op agent, ledger writes included (target:
   0.15 ms or less). The no-op agent runs one trial at a time, so this is the path every
   real agent takes: the default thread pool, a fresh copy of the harness per trial,
   trials committed to the ledger in batches;
2. simulated trials/s through ``measure.measure`` (the simulator's ``run_many`` path:
   planning, scoring, ledger writes; targets: 10,000/s or more and 20,000 per CPU second
   or more) beside the simulator alone on the same trials (``SimAgent.run_many`` called
   directly) and the ratio of the two;
3. a simulated run of ``--rounds`` evolution rounds (``--round-preset``, SIMULATED) through
   ``evolve.evolve``: the trials read from the ledger file per round (``Run.reads``;
   target: 2 or fewer), the trials frame checks per round (``schema.CHECKS["trials"]``:
   every check of a whole trials frame; target: 2 or fewer), beside them the checks of
   rows added to a checked frame, checked on their own (``schema.CHECKS["trials_added"]``:
   the rows a scoring pass wrote, a parent's fresh block; no target), and the trials run
   per CPU second of the whole loop (git commits, the evolver and the gates included; no
   target);
4. (not with ``--quick``) simulated trials/s with a ``dask.distributed`` LocalCluster
   executor, which takes the per-trial path, beside the default;
5. what one command trial costs beyond its command: a ``sh`` one-liner run as a plain
   process, in the sandbox without network and with it (slirp4netns), median of 40 (5
   with ``--quick``), and the harness copy a trial gets (the seed harness: written and
   removed, or, in versions that reused a checked copy, checked). ``--trials-only`` prints
   only this part, which also runs on older versions of gsme (for before/after figures:
   ``PYTHONPATH=<old checkout> python benchmarks/bench_loop.py --trials-only``).

Every task is scored ``k`` times in one pass (``GateConfig(k=k, k_max=k)``). ``--quick``
runs small sizes in a few seconds (for the test suite); its figures are not the targets'.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

from gsme import measure, sandbox, schema, scoring, sim
from gsme._proc import run_limited
from gsme.agents import TaskAgent, Trajectory
from gsme.executors import pool
from gsme.experiments import simulated_run
from gsme.resources import SEED_HARNESS
from gsme.run import Run
from gsme.schema import BASELINE
from gsme.settings import GateConfig, RunConfig

ORCHESTRATION_TARGET_MS = 0.15
SIMULATED_TARGET = 10_000
SIMULATED_CPU_TARGET = 20_000
READS_PER_ROUND_TARGET = 2
CHECKS_PER_ROUND_TARGET = 2


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


def time_score(run: Run, executor=None) -> tuple[int, float, float]:
    """Score the baseline once: (trials run, wall seconds, CPU seconds of this process)."""
    wall, cpu = time.perf_counter(), time.process_time()
    measure.measure(run, BASELINE, executor=executor, progress=False)
    return run.trials_spent(), time.perf_counter() - wall, time.process_time() - cpu


def time_simulator(run: Run) -> tuple[int, float]:
    """The simulator alone on the trials ``run`` holds: (trials, wall seconds)."""
    trials = run.trials(candidate=BASELINE)
    records = {r["task_id"]: r for r in run.agent.tasks().to_dict("records")}
    todo = [(records[t], int(r), int(a)) for t, r, a in
            zip(trials["task_id"], trials["repeat"], trials["attempt"], strict=True)]
    files = run.snapshot(BASELINE).files
    wall = time.perf_counter()
    run.agent.run_many(files, todo, run_seed=run.config.run_seed)
    return len(todo), time.perf_counter() - wall


def time_rounds(root: Path, preset: str, rounds: int) -> dict[str, float]:
    """A simulated run of ``rounds`` rounds through ``evolve.evolve`` (not sealed): trials
    run, CPU seconds of this process, and per round the trials read from the ledger file
    and the frame checks: whole frames and added rows (None where this gsme counts none)."""
    checks = getattr(schema, "CHECKS", None)  # a Counter by frame kind
    checked = None if checks is None else checks.copy()
    cpu = time.process_time()
    run = simulated_run(preset, root=root, rounds=rounds, finalize=False)
    cpu = time.process_time() - cpu
    try:
        done = run.rounds_done()
        reads = getattr(run, "reads", None)
        return {"rounds": done, "trials": run.trials_spent(), "cpu": cpu,
                "reads": None if reads is None else reads.get("trials", 0) / done,
                "checks": None if checked is None else (checks["trials"] - checked["trials"]) / done,
                "added": None if checked is None else (
                    checks["trials_added"] - checked["trials_added"]) / done}
    finally:
        run.close()


def verdict(value: float | None, target: float, *, at_most: bool) -> str:
    """``value`` beside its target: met or not met (not counted: None)."""
    if value is None:
        return "not counted by this version"
    met = value <= target if at_most else value >= target
    return (f"{value:,.1f} (target {'<=' if at_most else '>='} {target:,}: "
            f"{'met' if met else 'not met'})")


def print_rounds(root: Path, preset: str, rounds: int, repeats: int) -> None:
    found = [time_rounds(root / f"rounds-{i}", preset, rounds) for i in range(repeats)]
    last = found[-1]
    rates = [f["trials"] / f["cpu"] for f in found]
    print(f"SIMULATED {preset}, {last['rounds']} rounds through evolve.evolve: "
          f"{last['trials']} trials run; trials reads (from the ledger file) per round "
          f"{verdict(last['reads'], READS_PER_ROUND_TARGET, at_most=True)}; trials frame checks "
          f"per round {verdict(last['checks'], CHECKS_PER_ROUND_TARGET, at_most=True)} (and "
          f"{'-' if last['added'] is None else format(last['added'], '.1f')} checks of added "
          "rows alone, no target); trials per CPU second of the whole loop "
          f"{spread(rates, '{:,.0f}', max)}")


def time_command_trials(root: Path, n: int) -> dict[str, float]:
    """Median ms of a ``sh`` one-liner as a plain process and in the sandbox (without and
    with network), and of a trial's harness copy; each kind in turn, ``n`` times."""
    work = root / "work"
    out = work / "out"
    out.mkdir(parents=True)
    work.chmod(0o755)
    env = {"PATH": os.environ["PATH"]}
    kinds = {"plain process": None}
    if sandbox.unavailable() is None:
        kinds["sandbox, network = false"] = sandbox.Sandbox(work, writable=[out], network=False)
        networked = not _has_network_flag() or sandbox.unavailable(network=True) is None
        if networked:
            kinds["sandbox, network = true"] = sandbox.Sandbox(work, writable=[out],
                                                               network=True)
    times: dict[str, list[float]] = {k: [] for k in kinds}
    times["harness copy"] = []
    snap = scoring.Snapshot({str(p.relative_to(SEED_HARNESS)): p.read_text()
                             for p in SEED_HARNESS.rglob("*") if p.is_file()})
    copies = pool._COPIES
    for _ in range(n):
        for kind, box in kinds.items():
            start = time.perf_counter()
            run_limited(["sh", "-c", "echo hi > out/x"], timeout_s=60, env=env, cwd=work,
                        sandbox=box)
            times[kind].append(1e3 * (time.perf_counter() - start))
        start = time.perf_counter()
        if hasattr(copies, "fresh"):  # a fresh copy per trial, removed after it
            from gsme._proc import remove_tree

            copy = copies.fresh(snap)
            remove_tree(copy.parent)
        else:  # older versions: a copy per thread, checked before each reuse
            copies.get(snap)
        times["harness copy"].append(1e3 * (time.perf_counter() - start))
    copies.clear()
    return {k: statistics.median(v) for k, v in times.items()}


def _has_network_flag() -> bool:
    """Whether this gsme's ``sandbox.unavailable`` knows the network (newer versions)."""
    import inspect

    return "network" in inspect.signature(sandbox.unavailable).parameters


def print_command_trials(root: Path, n: int) -> None:
    found = time_command_trials(root, n)
    plain = found["plain process"]
    for kind, ms in found.items():
        extra = "" if kind in ("plain process", "harness copy") else f" (+{ms - plain:.1f} ms)"
        print(f"command trial, {kind}: {ms:.2f} ms median of {n}{extra}")


def spread(values: list[float], fmt: str, best=min) -> str:
    """``best, median (every value)`` of repeated measurements."""
    return (f"{fmt.format(best(values))} best, {fmt.format(statistics.median(values))} median "
            f"({', '.join(fmt.format(v) for v in values)})")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=400)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--preset", default="omni-math", choices=sim.PRESETS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--round-preset", default="tb2", choices=sim.PRESETS)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, no dask: seconds (the figures are not the targets')")
    parser.add_argument("--trials-only", action="store_true",
                        help="only the cost of one command trial (runs on older versions too)")
    args = parser.parse_args(argv)
    if args.quick:
        args.tasks, args.k, args.preset, args.repeats = 60, 3, "tiny", 1
        args.rounds, args.round_preset = 2, "tiny"
    root = Path(tempfile.mkdtemp(prefix="gsme-bench-loop-"))
    if args.trials_only:
        print_command_trials(root, 5 if args.quick else 40)
        return
    config = RunConfig(gate=GateConfig(k=args.k, k_max=args.k))  # every task k times, one pass

    per_trial, cpu_per_trial = [], []
    for i in range(args.repeats):
        with Run.create(root / f"noop-{i}", agent=NoOpAgent(args.tasks), run_config=config) as run:
            n, wall, cpu = time_score(run)
        per_trial.append(1e3 * wall / n)
        cpu_per_trial.append(1e3 * cpu / n)
    print(f"no-op agent: {n} trials per run -> {spread(per_trial, '{:.3f}')} ms per trial of "
          f"orchestration (ledger writes included; CPU {spread(cpu_per_trial, '{:.3f}')} ms; "
          f"target <= {ORCHESTRATION_TARGET_MS} ms)")

    scored, scored_cpu, alone = [], [], []
    for i in range(args.repeats):
        with Run.create(root / f"sim-{i}", agent=sim.preset(args.preset), run_config=config) as run:
            n, wall, cpu = time_score(run)
            n_alone, wall_alone = time_simulator(run)
        scored.append(n / wall)
        scored_cpu.append(n / cpu)
        alone.append(n_alone / wall_alone)
    ratios = [s / a for s, a in zip(scored, alone, strict=True)]
    print(f"simulated {args.preset}: {n} trials per run through measure.measure -> "
          f"{spread(scored, '{:,.0f}', max)} trials/s (per CPU second "
          f"{spread(scored_cpu, '{:,.0f}', max)}, target >= {SIMULATED_CPU_TARGET:,}: "
          f"{'met' if max(scored_cpu) >= SIMULATED_CPU_TARGET else 'not met'}; target >= "
          f"{SIMULATED_TARGET:,}/s: {'met' if max(scored) >= SIMULATED_TARGET else 'not met'}); "
          f"simulator alone {spread(alone, '{:,.0f}', max)} trials/s; measure.measure / simulator "
          f"alone {spread(ratios, '{:.2f}', max)}")
    print_rounds(root, args.round_preset, args.rounds, args.repeats)
    print_command_trials(root, 5 if args.quick else 40)
    if args.quick:
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("dask.distributed not installed: pip install 'gsme[dask]' to compare")
        return
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client, \
            Run.create(root / "dask", agent=sim.preset(args.preset), run_config=config) as run:
        n_d, s_d, _ = time_score(run, executor=client.get_executor())
    print(f"simulated {args.preset}, dask LocalCluster (2 workers, per-trial path): {n_d} "
          f"trials in {s_d:.2f} s -> {n_d / s_d:,.0f} trials/s "
          f"({statistics.median(scored) * s_d / n_d:.1f}x the default's time)")


if __name__ == "__main__":
    main()
