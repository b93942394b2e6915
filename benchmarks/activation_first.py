"""What the activation gate saves by coming first: trials spent on a child whose beacon never fires.

Under the adaptive design (the default) a comparison whose first look is inconclusive goes
on: its mixed tasks get more repeats on both sides, up to ``k_max``. A child whose beacon
never fired is ``inactive`` whatever those repeats show, so the scoring loop stops it once
its first look is complete (:func:`gsme.gates.silent`, asked by :func:`gsme.measure.settle`).
This prints, side by side in one run, the trials such a child and its parent spend with the
rule and without it (the rule switched off in this process only), through the real loop
(:class:`gsme.run.Run`, :func:`gsme.measure.measure`).

Tasks are bimodal as in ``aa_designs.py`` (pass probabilities from its Beta fit to real
Terminal-Bench runs); the child's patch does nothing and never fires (the task agent draws
every trial from the task's probability alone). SIMULATED.

    python benchmarks/activation_first.py [--seeds 20] [--quick]

Target: an inactive child gets no repeat after its first look (child trials = n × k).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

from gsme import gates, measure
from gsme.agents import TaskAgent, Trajectory
from gsme.patches import FileChange, Patch
from gsme.run import Run
from gsme.settings import GateConfig, RunConfig

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aa_designs import BUILT_IN_BETA

SIZES = (26, 45, 89)
PATCH = Patch(id="never", where="prompt", why="careless-submit", mechanism="a note",
              beacon="never-fired", changes=(FileChange("prompt/never.md", "A note.\n"),))


class Bimodal(TaskAgent):
    """Each task passes with its own probability; no beacon ever fires. SIMULATED."""

    name = "bimodal"
    simulated = True
    honours_env_gates = True

    def __init__(self, n_tasks: int, seed: int):
        rng = np.random.default_rng(seed)
        self.p = dict(zip((f"t{i:03d}" for i in range(n_tasks)), rng.beta(*BUILT_IN_BETA, n_tasks)))
        self.seed = seed

    def tasks(self):
        ids = list(self.p)
        return pd.DataFrame({"task_id": ids + [f"x{i:03d}" for i in range(4)],
                             "split": ["train"] * len(ids) + ["test"] * 4})

    def run(self, harness_dir, task, *, repeat, attempt, run_seed):
        draw = np.random.default_rng([self.seed, int(task["task_id"][1:]), repeat,
                                      len(list(Path(harness_dir, "patches").glob("*.toml")))])
        return Trajectory(passed=bool(draw.random() < self.p.get(task["task_id"], 0.5)))


def spent(n_tasks: int, seed: int, *, first: bool) -> tuple[int, int]:
    """Trials the inactive child and its parent spend on its comparison."""
    off = mock.patch.object(gates, "silent", lambda trials, pairs, *a, **k: np.zeros(
        len(pairs), dtype=bool))
    with tempfile.TemporaryDirectory() as root, Run.create(
            Path(root) / "run", agent=Bimodal(n_tasks, seed),
            run_config=RunConfig(gate=GateConfig(design="adaptive"), workers=1)) as run:
        measure.measure(run, "baseline", round=0, progress=False)
        before = run.trials_spent()
        child, _ = run.add_candidate(["baseline"], patch=PATCH, round=1)
        if first:
            measure.measure(run, child, round=1, progress=False)
        else:
            with off:
                measure.measure(run, child, round=1, progress=False)
        own = run.trials(candidate=child)
        return int(own["borrowed_from"].isna().sum()), run.trials_spent() - before - len(own)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="3 seeds, n = 26: seconds")
    args = parser.parse_args(argv)
    sizes, seeds = ((26,), 3) if args.quick else (SIZES, args.seeds)
    k = GateConfig().k
    print(f"SIMULATED: an inactive child under the adaptive design, {seeds} seeds per size "
          f"(bimodal tasks, Beta{BUILT_IN_BETA})")
    print(f"{'tasks':>5}  {'child trials: before':>20}  {'now':>7}  {'parent extra: before':>20}"
          f"  {'now':>5}  {'saved':>6}")
    met = True
    for n in sizes:
        before = np.array([spent(n, s, first=False) for s in range(seeds)])
        now = np.array([spent(n, s, first=True) for s in range(seeds)])
        met &= bool((now[:, 0] == n * k).all())
        saved = 1 - now.sum() / before.sum()
        print(f"{n:>5}  {before[:, 0].mean():>20.1f}  {now[:, 0].mean():>7.1f}  "
              f"{before[:, 1].mean():>20.1f}  {now[:, 1].mean():>5.1f}  {saved:>6.1%}")
    print(f"target: no repeat after the first look (child trials = n x {k}): "
          f"{'met' if met else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
