"""Throughput of the simulated task agent through its public interface (results simulated).

Runs ``SimAgent.run`` on every task of a preset, K repeats, a few seeds, on two harnesses:
the seed harness and a copy carrying three gated patches (so manifests are read, gates
masked and beacons checked), then the same trials through ``SimAgent.run_many`` (one call
per harness and seed, on the harness's files: the path scoring takes). Prints trials per
second (wall and CPU), then the time of a full cold-start baseline of ``tb2`` at K=3 (every
task of both splits) and the same baseline turned into a validated trials frame with
:func:`gsme.agents.to_trials`. The same trials through ``measure.measure`` (planning and ledger
included) are measured by ``benchmarks/bench_loop.py``.

    python benchmarks/bench_sim.py [--preset tb2] [--mix calibrated] [--seeds 20] [--k 3]
                                   [--quick]

Target on a 2-core machine: at least 10,000 simulated trials per second. ``--quick``: 2
seeds, seconds.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from gsme import sim
from gsme.agents import TrialSpec, to_trials
from gsme.patches import FileChange, Patch, apply_patch
from gsme.resources import SEED_HARNESS

PATCHES = (("submit-verify", "careless-submit", "has_tests"),
           ("runaway-recovery", "thinking-runaway", "hard"),
           ("tool-schema-hints", "tool-misuse", "needs_tools"))


def patched_harness(root: Path) -> Path:
    """A copy of the seed harness with three gated patches applied."""
    harness = Path(shutil.copytree(SEED_HARNESS, root / "patched"))
    for i, (mechanism, why, gate) in enumerate(PATCHES):
        apply_patch(harness, Patch(
            id=f"p{i}", where="knowledge", why=why, mechanism=mechanism, beacon=f"b{i}",
            env_gate=gate, changes=(FileChange(f"knowledge/p{i}.md", f"{mechanism}\n"),)))
    return harness


def run_trials(agent, harness, rows, *, seeds, k):
    """Every row × k repeats × run seed through ``agent.run``; (spec, trajectory, None)."""
    out = []
    for run_seed in seeds:
        for row in rows:
            for repeat in range(k):
                traj = agent.run(harness, row, repeat=repeat, attempt=0, run_seed=run_seed)
                out.append((TrialSpec("c", row["task_id"], row["split"], repeat), traj, None))
    return out


def run_many(agent, harness: Path, rows, *, seeds, k):
    """The same trials through ``agent.run_many``, one call per seed; the trajectories."""
    files = {p.relative_to(harness).as_posix(): p.read_text() for p in harness.rglob("*")
             if p.is_file()}
    trials = [(row, repeat, 0) for row in rows for repeat in range(k)]
    return [traj for run_seed in seeds
            for traj in agent.run_many(files, trials, run_seed=run_seed)]


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="tb2", choices=sim.PRESETS)
    parser.add_argument("--mix", default="calibrated", choices=list(sim.MIXES))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2 seeds: seconds")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds = 2

    agent = sim.preset(args.preset, mix=args.mix)
    rows = agent.tasks().to_dict("records")
    print(f"agent: {agent.name} (SIMULATED), {len(rows)} tasks")
    with tempfile.TemporaryDirectory() as tmp:
        for label, harness in (("seed harness", Path(SEED_HARNESS)),
                               ("3 gated patches", patched_harness(Path(tmp)))):
            for way, fn in (("run", run_trials), ("run_many", run_many)):
                results, wall, cpu = timed(lambda h=harness, f=fn: f(
                    agent, h, rows, seeds=range(args.seeds), k=args.k))
                print(f"{label:16s} {way:8s}: {len(results):,} trials in {wall:.2f} s wall "
                      f"({len(results) / wall:,.0f} trials/s; {len(results) / cpu:,.0f}/s CPU)")

    tb2 = sim.preset("tb2")
    tb2_rows = tb2.tasks().to_dict("records")
    results, wall, _ = timed(lambda: run_trials(tb2, SEED_HARNESS, tb2_rows, seeds=[0], k=3))
    _, frame_wall, _ = timed(lambda: to_trials(results))
    print(f"full tb2 baseline at K=3: {len(results)} trials in {wall * 1000:.1f} ms "
          f"(+ {frame_wall * 1000:.1f} ms to a validated trials frame)")


if __name__ == "__main__":
    main()
