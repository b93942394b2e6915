"""The winner's curse on the parent: is a comparison's Δ centred on the child's true effect?

SIMULATED (the embedded simulator; true effects from its ground truth). For each keep rule
(as in ``benchmarks/evidence.py``) × proposal mix (``null``, ``calibrated``) × which trials
of the parent a child is compared with (``GateConfig.parent_trials``: ``stored``, the
paper's, or ``fresh``, a block scored alongside the children), ``--seeds`` runs of
``--rounds`` rounds on tb2. Every measured comparison (credit, cull, inconclusive) gives
z = (Δ − θ) / se, θ the child's true train effect over its parent; an unbiased comparison
has mean z 0. Printed per cell: comparisons, mean z of the decision's Δ (the adaptive
design's stopping look is biased by design) and of the first-look Δ (the first ``k``
repeats, what the keep rule learns from) with a 95% interval, by round, the first look's
mean Δ − θ in pp, and trials per run (the fresh block's cost). Target (issue 30): |mean z| of the first-look Δ ≤ 0.1 for every
rule on both mixes.

    python benchmarks/reference_bias.py [--seeds 20] [--rounds 4] [--workers 2] [--modes fresh]
    python benchmarks/reference_bias.py --quick
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import itertools
import tempfile
import time

import numpy as np
import pandas as pd

from gsme import experiments
from gsme.settings import GateConfig
from gsme.sim.audit import audit_decisions

RULES = {  # label -> (policy, design), as in benchmarks/evidence.py
    "greedy": ("greedy", "adaptive"),
    "paper gate": ("gated", "fixed"),
    "adaptive gate": ("gated", "adaptive"),
    "learned": ("learned", "adaptive"),
}
MIXES = ("null", "calibrated")
MODES = ("stored", "fresh")
MEASURED = ("credit", "cull", "inconclusive")


def one_run(rule: str, mix: str, mode: str, seed: int, rounds: int, preset: str) -> pd.DataFrame:
    """Every measured comparison of one run: round, z (decision), z (first look), trials."""
    policy, design = RULES[rule]
    with tempfile.TemporaryDirectory() as root:
        run = experiments.simulated_run(preset, root=root, seed=seed, mix=mix, policy=policy,
                                        gate=GateConfig(design=design, parent_trials=mode),
                                        rounds=rounds, finalize=False)
        try:
            audit = audit_decisions(run)
            trials = len(run.trials(split="train"))
        finally:
            run.close()
    audit = audit[audit["decision"].isin(MEASURED) & (audit["se_pp"] > 0)]
    return pd.DataFrame({
        "rule": rule, "mix": mix, "mode": mode, "seed": seed,
        "round": audit["round"].to_numpy(),
        "z": ((audit["delta_pp"] - audit["true_delta_pp"]) / audit["se_pp"]).to_numpy(),
        "z_first": ((audit["first_delta_pp"] - audit["true_delta_pp"])
                    / audit["first_se_pp"]).to_numpy(),
        "pp_first": (audit["first_delta_pp"] - audit["true_delta_pp"]).to_numpy(),
        "trials": trials,
    })


def summarise(rows: pd.DataFrame, rounds: int) -> pd.DataFrame:
    """One row per cell: n, mean z and its 95% interval (runs as clusters), by round."""
    out = []
    for (rule, mix, mode), cell in rows.groupby(["rule", "mix", "mode"], sort=False):
        row = {"rule": rule, "mix": mix, "parent_trials": mode, "comparisons": len(cell)}
        for column, name in (("z", "z_decision"), ("z_first", "z_first_look"),
                             ("pp_first", "pp_first_look")):
            per_run = cell.groupby("seed")[column].agg(["sum", "count"])
            mean = per_run["sum"].sum() / per_run["count"].sum()
            # ratio estimator's cluster se: runs are the independent units
            resid = per_run["sum"] - mean * per_run["count"]
            se = np.sqrt((resid ** 2).sum()) / per_run["count"].sum()
            row[name] = f"{mean:+.2f} [{mean - 1.96 * se:+.2f}, {mean + 1.96 * se:+.2f}]"
            row[f"{name}_mean"] = mean
        for r in range(1, rounds + 1):
            at = cell[cell["round"] == r]["z_first"]
            row[f"r{r}"] = f"{at.mean():+.2f}" if len(at) else "-"
        row["trials_per_run"] = cell.groupby("seed")["trials"].first().mean()
        out.append(row)
    return pd.DataFrame(out)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--preset", default="tb2")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="parent_trials modes, comma-separated (default: both)")
    parser.add_argument("--quick", action="store_true", help="2 seeds, 2 rounds")
    args = parser.parse_args(argv)
    seeds, rounds = (2, 2) if args.quick else (args.seeds, args.rounds)
    start = time.time()
    modes = args.modes.split(",")
    jobs = list(itertools.product(RULES, MIXES, modes, range(100, 100 + seeds)))
    with cf.ProcessPoolExecutor(args.workers) as pool:
        parts = list(pool.map(one_run, *zip(*jobs), itertools.repeat(rounds),
                              itertools.repeat(args.preset), chunksize=1))
    rows = pd.concat(parts, ignore_index=True)
    table = summarise(rows, rounds)
    stored = table[table["parent_trials"] == "stored"].set_index(["rule", "mix"])
    fresh = table[table["parent_trials"] == "fresh"].set_index(["rule", "mix"])
    table["trial_cost"] = [
        f"{fresh.loc[(r, m), 'trials_per_run'] / stored.loc[(r, m), 'trials_per_run']:.2f}x"
        if mode == "fresh" and (r, m) in stored.index else "" for r, m, mode in
        zip(table["rule"], table["mix"], table["parent_trials"])]
    met = table[table["parent_trials"] == "fresh"]["z_first_look_mean"].abs().max() <= 0.1
    print(f"SIMULATED winner's-curse check on {args.preset}: {seeds} seeds x {rounds} rounds per "
          f"row (seeds 100-{99 + seeds}), {time.time() - start:.0f} s on {args.workers} "
          "processes")
    print("mean (delta - true effect) / se per comparison, and mean delta - true effect in pp "
          "(pp_first_look); [95% interval, runs as clusters]; r1.. = first-look mean z by round")
    shown = ["rule", "mix", "parent_trials", "comparisons", "z_decision", "z_first_look",
             "pp_first_look",
             *[f"r{r}" for r in range(1, rounds + 1)], "trials_per_run", "trial_cost"]
    print(table[shown].to_string(index=False, float_format=lambda v: f"{v:.0f}"))
    print(f"target |mean z| of the first-look delta <= 0.1 under parent_trials='fresh' for "
          f"every rule and mix: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
