"""Time :func:`gsme.gates.credit` on a synthetic trials frame of about a million rows.

The frame is simulated: 2,000 candidates (a baseline and 1,999 mutations of earlier
candidates) × 167 tasks × K=3 repeats, with 1% of slots re-run after an infrastructure
failure. Prints the wall and CPU time of ``credit()`` (best of ``--repeats``), rows per
second, how many times a call checks the trials frame against its contract
(:data:`gsme.schema.CHECKS`; a :class:`gsme.pairing.Checked` frame is not checked again),
how its CPU time splits (checking the trials frame at the boundary and encoding it
into slots, with one factorization of its text columns; the design's paired test), the
same on the frame with pandas' string (Arrow)
dtype in its text columns, its peak traced memory and the process's peak resident memory,
the CPU time and checks of :func:`gsme.compare.compare` for one pair of the frame, then the
time of a naive per-pair loop (pandas filtering and ``scipy.stats.ttest_rel`` per pair)
measured on a sample of pairs and extrapolated to all of them, and the ratio.

    python benchmarks/bench_gates.py [--candidates 2000] [--tasks 167] [--k 3] [--quick]

Targets on a 2-core machine: ``credit()`` at most 0.30 s CPU on the million rows, one
check of the frame per call, under 1 GiB (issue 33; 0.4 s before). ``--quick``: 100
candidates, seconds (its figures are not the target's).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc

import numpy as np
import pandas as pd
from scipy import stats as sps

from gsme import compare, designs, gates, pairing, schema
from gsme.settings import GateConfig

CPU_TARGET_S = 0.30


def synthetic_run(n_candidates: int, n_tasks: int, k: int, *, seed: int = 0):
    """Simulated trials and candidates frames of one run (see the module docstring)."""
    rng = np.random.default_rng(seed)
    names = np.array([f"c{i:05d}" for i in range(n_candidates)], dtype=object)
    names[0] = "baseline"
    parent = np.r_[0, rng.integers(0, np.arange(1, n_candidates))]
    effect = np.r_[0.0, rng.normal(0.0, 0.05, n_candidates - 1)]
    difficulty = rng.uniform(0.1, 0.9, n_tasks)
    cand = np.repeat(np.arange(n_candidates), n_tasks * k)
    task = np.tile(np.repeat(np.arange(n_tasks), k), n_candidates)
    p_pass = np.clip(difficulty[task] + effect[cand], 0.0, 1.0)
    slots = pd.DataFrame(
        {
            "candidate": names[cand],
            "task_id": np.array([f"task-{j:04d}" for j in range(n_tasks)], dtype=object)[task],
            "split": "train",
            "repeat": np.tile(np.arange(k), n_candidates * n_tasks),
            "attempt": 0,
            "passed": rng.random(len(cand)) < p_pass,
            "infra_ok": True,
            "activated": (rng.random(len(cand)) < 0.3) & (cand > 0),
        }
    )
    crashed = rng.random(len(slots)) < 0.01
    rerun = slots[crashed].assign(attempt=1)
    slots.loc[crashed, ["passed", "infra_ok", "activated"]] = False
    trials = schema.as_trials(pd.concat([slots, rerun], ignore_index=True))
    candidates = pd.DataFrame(
        {
            "candidate": names,
            "parents": np.where(np.arange(n_candidates) == 0, "", names[parent]),
            "kind": np.where(np.arange(n_candidates) == 0, "baseline", "mutation"),
            "where": np.where(np.arange(n_candidates) == 0, None, "prompt"),
            "why": None, "patch_id": None, "beacon": None, "env_gate": None,
            "commit": None, "branch": None, "round": np.arange(n_candidates), "rationale": None,
        }
    )
    return trials, candidates


def naive_pair(trials: pd.DataFrame, child: str, parent: str) -> float:
    """One pair the slow way: filter, per-task means, merge, ``ttest_rel``; returns z."""
    rates = {}
    for name in (child, parent):
        rows = trials[(trials["candidate"] == name) & (trials["split"] == "train")
                      & trials["infra_ok"]]
        rates[name] = rows.groupby("task_id")["passed"].mean()
    both = pd.concat(rates, axis=1, join="inner")
    return float(sps.ttest_rel(both[child], both[parent]).statistic)


STORED = GateConfig(parent_trials="stored")  # synthetic trials: no fresh parent blocks


def cpu_seconds(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def checks(fn) -> int:
    """How many times ``fn()`` checks a trials frame against its contract."""
    before = schema.CHECKS["trials"]
    fn()
    return schema.CHECKS["trials"] - before


def split_cpu(trials: pd.DataFrame, candidates: pd.DataFrame, repeats: int) -> dict:
    """Best CPU seconds of the steps ``credit()`` takes: check and encode, the paired test."""
    slots = pairing.checked_slots(trials)
    children = candidates[candidates["kind"] != "baseline"]  # one parent each here
    pairs = pd.DataFrame({"child": children["candidate"], "parent": children["parents"]})
    steps = {"check_encode": lambda: pairing.checked_slots(trials),
             "test": lambda: designs.compare(slots, pairs, split="train", gate=STORED)}
    return {name: min(cpu_seconds(fn) for _ in range(repeats)) for name, fn in steps.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=2000)
    parser.add_argument("--tasks", type=int, default=167)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--naive-pairs", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="100 candidates: seconds")
    args = parser.parse_args(argv)
    if args.quick:
        args.candidates, args.repeats, args.naive_pairs = 100, 1, 5

    trials, candidates = synthetic_run(args.candidates, args.tasks, args.k)
    print(f"synthetic (simulated) trials: {len(trials):,} rows, "
          f"{args.candidates:,} candidates x {args.tasks} tasks x K={args.k}")

    times, cpu = [], []
    for _ in range(args.repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        decisions = gates.credit(trials, candidates, gate=STORED)
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    best = min(times)
    n_checks = checks(lambda: gates.credit(trials, candidates, gate=STORED))
    checked = pairing.check(trials)
    n_checks_given = checks(lambda: gates.credit(checked, candidates, gate=STORED))
    one_pair = {"parent": "baseline", "child": decisions["child"].iloc[0]}
    compare_cpu = min(cpu_seconds(lambda: compare.compare(trials, **one_pair))
                      for _ in range(args.repeats))
    compare_checks = checks(lambda: compare.compare(trials, **one_pair))
    parts = split_cpu(trials, candidates, args.repeats)
    arrow = trials.astype({c: "str" for c in ("candidate", "task_id", "split", "beacons")})
    arrow_cpu = min(cpu_seconds(lambda: gates.credit(arrow, candidates, gate=STORED))
                    for _ in range(args.repeats))
    tracemalloc.start()
    gates.credit(trials, candidates, gate=STORED)
    traced_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss_unit = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, else KiB
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * rss_unit
    print(f"credit(): best {best:.3f} s of {args.repeats} "
          f"({', '.join(f'{t:.3f}' for t in times)}), {len(trials) / best:,.0f} rows/s")
    met = ("not judged: --quick" if args.quick
           else "met" if min(cpu) <= CPU_TARGET_S else "not met")
    print(f"credit(): CPU time best {min(cpu):.3f} s ({', '.join(f'{c:.3f}' for c in cpu)}; "
          f"target <= {CPU_TARGET_S} s: {met}), of which checking the trials frame at the boundary "
          f"and encoding its slots {parts['check_encode']:.3f} s (one factorization of its "
          f"text columns), the design's paired test {parts['test']:.3f} s (wall time above "
          f"includes waiting for a shared CPU)")
    print(f"credit(): checks of the trials frame per call {n_checks} (target 1); given a "
          f"pairing.Checked frame {n_checks_given}")
    print(f"credit() on the same frame with pandas string (Arrow) text columns: CPU time best "
          f"{arrow_cpu:.3f} s")
    print(f"compare.compare() of one pair ({one_pair['child']} vs baseline) on the same frame: "
          f"CPU time best {compare_cpu:.3f} s, checks of the trials frame {compare_checks}")
    print(f"credit(): peak traced memory {traced_peak / 2**20:,.0f} MiB; "
          f"process peak RSS {peak_rss / 2**20:,.0f} MiB (includes building the frame)")
    print(f"decisions: {decisions['decision'].value_counts().to_dict()}")

    sample = decisions.sample(min(args.naive_pairs, len(decisions)), random_state=0)
    start = time.perf_counter()
    for child, parent in zip(sample["child"], sample["parent"]):
        naive_pair(trials, child, parent)
    per_pair = (time.perf_counter() - start) / len(sample)
    naive_total = per_pair * len(decisions)
    print(f"naive per-pair loop: {per_pair * 1e3:.1f} ms/pair on {len(sample)} pairs, "
          f"extrapolated {naive_total:.1f} s for {len(decisions):,} pairs")
    print(f"ratio naive / credit(): {naive_total / best:.0f}x")


if __name__ == "__main__":
    main()
