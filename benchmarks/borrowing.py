"""What borrowing saves: by how narrow patches act, and when a benchmark grows. SIMULATED.

Every figure comes from the embedded simulator (calibrated to real Terminal-Bench runs) and
the rule evolver, through the ordinary loop. Two parts, printed side by side:

(a) **Breadth.** The simulator's breadth knob (``gsme.sim.preset(..., breadth=b)``) confines
    each failure mode to a share b of the tasks; the rule evolver gates each patch on the
    feature values of the failures it diagnosed. Per breadth: the measured share of tasks a
    patch acts on (its env gate's admitted share, mean over mutations), the child trials
    saved by borrowing (borrowed child slots over all child slots, evolution rounds), and
    the decisions equal to *full scoring* (the same candidates, every borrowed slot re-run
    by the child itself, the same gate).
(b) **Growing benchmark.** Each run's suite then grows (``grown=``: half as many new train
    tasks again) and :func:`gsme.grow.grow` re-scores the run's decided candidates on the
    new tasks, borrowing wherever a candidate's acting patch set there equals an
    ancestor's. Per breadth: child trials saved on the new tasks, and the re-gated
    decisions equal to full scoring of the new tasks (every borrowed new-task slot re-run
    by the child itself), beside the paper's 67% and 14 of 14.

    python benchmarks/borrowing.py [--seeds 10] [--rounds 4] [--workers 2] [--max-failures N]
    python benchmarks/borrowing.py --quick     # tb2, 1 seed, 1 round: seconds

The full run takes about 15 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from gsme import designs, envgate, evolve, gates, scoring, sim
from gsme.evolvers.rule import RuleEvolver
from gsme.grow import grow
from gsme.run import Run
from gsme.settings import RunConfig, Schedule
from gsme.sim.suite import PRESET_SPECS

BREADTHS = (0.1, 0.33, 0.6, 0.9, 1.0)
PRESETS = ("tb2", "appworld", "swe-bench")
PAPER_SAVED, PAPER_AGREE = 0.67, (14, 14)
TARGET_SAVED, TARGET_AGREE = 0.50, 0.95


# ------------------------------------------------------------------------- one run

class _Memory:
    """A scoring sink that keeps trials in memory (full scoring beside a real run)."""

    def __init__(self):
        self.rows = []

    def record_trials(self, rows):
        self.rows += [row for row, _ in rows]

    def mark_infra_failed(self, keys, error):
        marked = {tuple(k) for k in keys}
        for row in self.rows:
            if (row["candidate"], row["task_id"], row["split"], row["repeat"],
                    row["attempt"]) in marked:
                row.update(infra_ok=False, passed=False, error=error)


def full_scoring(run: Run, *, relent: pd.Series, redraw: int = 0) -> pd.DataFrame:
    """The run's decisions with the borrowed trials marked in ``relent`` run by the child
    itself instead (in memory; the ledger is untouched). ``redraw`` > 0 runs them with
    another run seed: a second, independent full scoring (the noise floor of agreement)."""
    trials = run.trials(split="train")
    own = trials[~relent].drop(columns="round")
    candidates, tasks = run.candidates(), run.tasks()
    children = candidates[candidates["kind"] != "baseline"]
    pairs = pd.DataFrame({"child": children["candidate"],
                          "parent": [p.split(",")[0] for p in children["parents"]]})
    sink = _Memory()
    no_borrow = run.config.model_copy(update={"borrow": False,
                                              "run_seed": run.config.run_seed + redraw})
    for _ in range(64):
        current = pd.concat([own, pd.DataFrame(sink.rows, columns=own.columns)],
                            ignore_index=True).astype(own.dtypes.to_dict())
        wanted = designs.wanted(current, pairs, tasks, split="train", gate=run.config.gate)
        todo = scoring.plan_trials(current, candidates, tasks, wanted, run_config=no_borrow)
        if not todo.specs:
            break
        scoring.execute(todo.specs, agent=run.agent, harness=run.snapshot, sink=sink,
                        run_config=no_borrow, tasks=tasks, progress=False)
    decided = candidates[candidates["candidate"].isin(run.decisions()["child"])]
    return gates.credit(current, decided, split="train", gate=run.config.gate)


def _agreement(borrowed: pd.DataFrame, full: pd.DataFrame) -> tuple[int, int]:
    mine = borrowed.set_index("child")["decision"]
    theirs = full.set_index("child")["decision"].loc[mine.index]
    return int((mine == theirs).sum()), len(mine)


def _compared(prefix: str, borrowed: pd.DataFrame, run: Run, relent: pd.Series) -> dict:
    """Agreement of ``borrowed`` decisions with full scoring, and of two full scorings."""
    full = full_scoring(run, relent=relent)
    again = full_scoring(run, relent=relent, redraw=1_000_003)
    agree, decisions = _agreement(borrowed, full)
    return {f"{prefix}agree": agree, f"{prefix}decisions": decisions,
            f"{prefix}floor": _agreement(full, again)[0],
            f"{prefix}credits": int((borrowed["decision"] == "credit").sum()),
            f"{prefix}credits_full": int((full["decision"] == "credit").sum())}


def one_run(args) -> dict:
    """Evolve one simulated run at a breadth, measure (a), grow it, measure (b)."""
    preset, breadth, seed, rounds, root, max_failures = args
    spec = {"kind": "sim", "preset": preset, "suite_seed": seed, "breadth": breadth}
    path = Path(root) / f"{preset}-b{breadth}-s{seed}"
    with Run.create(path, agent=sim.preset(preset, suite_seed=seed, breadth=breadth),
                    evolver=RuleEvolver(seed=seed),
                    run_config=RunConfig(run_seed=seed, **max_failures),
                    schedule=Schedule(rounds=rounds), agent_spec=spec,
                    evolver_spec={"kind": "rule", "seed": seed}) as run:
        evolve.evolve(run, progress=False)
        tasks, candidates = run.tasks(), run.candidates()
        mutations = candidates[candidates["kind"] == "mutation"]
        acting = [envgate.parse(g or "").mask(tasks).mean() for g in mutations["env_gate"]]
        trials = run.trials(split="train")
        child = trials[trials["round"] >= 1]
        evolved = _compared("", run.decisions(), run, trials["borrowed_from"].notna())
    grown = PRESET_SPECS[preset].n_train // 2
    spec = {**spec, "grown": grown}
    with Run.open(path, agent=sim.preset(preset, suite_seed=seed, breadth=breadth,
                                         grown=grown)) as run:
        old = set(run.tasks()["task_id"])
        regated = grow(run, run.agent.tasks(), agent_spec=spec, progress=False)
        trials = run.trials(split="train")
        new = ~trials["task_id"].isin(old)
        new_child = trials[new & (trials["candidate"] != "baseline")]
        grown = _compared("grown_", regated, run, new & trials["borrowed_from"].notna())
    return {"preset": preset, "breadth": breadth, "seed": seed,
            "acting": float(np.mean(acting)) if acting else np.nan,
            "child_slots": len(child), "borrowed": int(child["borrowed_from"].notna().sum()),
            **evolved, "grown_child_slots": len(new_child),
            "grown_borrowed": int(new_child["borrowed_from"].notna().sum()), **grown,
            "changed_by_growth": int(regated["changed"].sum())}


# ------------------------------------------------------------------------- report

def table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per breadth: part (a) and part (b) side by side (sums over runs)."""
    g = runs.groupby("breadth")
    sums = g[[c for c in runs.columns if c.endswith(("agree", "decisions", "floor", "credits",
                                                     "credits_full"))]
             + ["changed_by_growth"]].sum()
    return sums.assign(
        runs=g.size(), acting_share=g["acting"].mean(),
        saved=g["borrowed"].sum() / g["child_slots"].sum(),
        grown_saved=g["grown_borrowed"].sum() / g["grown_child_slots"].sum()).reset_index()


def _share(n: int, d: int) -> str:
    return f"{n:4d}/{d:<4d} {n / max(d, 1):6.1%}"


def report(summary: pd.DataFrame, settings: str) -> str:
    lines = [f"SIMULATED borrowing ({settings})", "",
             ("(a) evolution: child trials saved by borrowing, decisions equal to full scoring "
              "(every borrowed slot run by the child), and two full scorings' agreement (the "
              "noise floor: the borrowed slots drawn again)"),
             ("breadth  acting    saved  equal to full        full vs full       credits "
              "borrowed/full")]
    for r in summary.itertuples():
        lines.append(f"{r.breadth:7.2f}  {r.acting_share:6.1%}  {r.saved:7.1%}  "
                     f"{_share(r.agree, r.decisions)}  {_share(r.floor, r.decisions)}  "
                     f"{r.credits:5d}/{r.credits_full:<5d}")
    lines += ["", ("(b) growing benchmark (half as many train tasks again): child trials saved "
                   "on the new tasks, re-gated decisions equal to full scoring of them"),
              ("breadth  acting    saved  equal to full        full vs full       changed by "
               "growth")]
    for r in summary.itertuples():
        lines.append(f"{r.breadth:7.2f}  {r.acting_share:6.1%}  {r.grown_saved:7.1%}  "
                     f"{_share(r.grown_agree, r.grown_decisions)}  "
                     f"{_share(r.grown_floor, r.grown_decisions)}  {r.changed_by_growth:5d}")
    lines += ["", (f"paper (growing benchmarks): {PAPER_SAVED:.0%} fewer child trials, "
                   f"{PAPER_AGREE[0]}/{PAPER_AGREE[1]} decisions identical")]
    narrow = summary[summary["acting_share"].round(3) <= 0.335]  # 33%, as printed
    for r in narrow.itertuples():
        met = r.saved >= TARGET_SAVED and r.agree / max(r.decisions, 1) >= TARGET_AGREE
        lines.append(f"target at acting share <= 33% (breadth {r.breadth:g}, acting "
                     f"{r.acting_share:.1%}): >= {TARGET_SAVED:.0%} saved with >= "
                     f"{TARGET_AGREE:.0%} equal to full scoring: {'met' if met else 'MISSED'} "
                     f"({r.saved:.1%}, {r.agree / max(r.decisions, 1):.1%})")
    if narrow.empty:
        lines.append("target at acting share <= 33%: no breadth reached it: MISSED")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10, help="suite/run seeds per preset")
    parser.add_argument("--rounds", type=int, default=4, help="evolution rounds per run")
    parser.add_argument("--workers", type=int, default=2, help="processes")
    parser.add_argument("--max-failures", type=int, default=None,
                        help="failing trials the evolver reads per round (default: the run "
                             "config's); more of them give narrower gates")
    parser.add_argument("--quick", action="store_true",
                        help="tb2 only, 1 seed, 1 round: a smoke run in seconds")
    args = parser.parse_args(argv)
    presets = PRESETS
    if args.quick:
        presets, args.seeds, args.rounds, args.workers = ("tb2",), 1, 1, 1
    started = time.time()
    root = tempfile.mkdtemp(prefix="gsme-borrowing-")
    reads = {} if args.max_failures is None else {"max_failures": args.max_failures}
    jobs = [(p, b, s, args.rounds, root, reads) for p in presets for b in BREADTHS
            for s in range(args.seeds)]
    if args.workers > 1:
        with cf.ProcessPoolExecutor(args.workers) as pool:
            runs = pd.DataFrame(list(pool.map(one_run, jobs)))
    else:
        runs = pd.DataFrame([one_run(job) for job in jobs])
    settings = (f"presets {', '.join(presets)}; {args.seeds} seed(s) x {args.rounds} rounds "
                f"per breadth; adaptive gate; evolver reads "
                f"{args.max_failures or RunConfig().max_failures} failures per round; "
                f"{time.time() - started:.0f} s")
    print(report(table(runs), settings))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
