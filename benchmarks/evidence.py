"""The evidence behind gsme's keep rule: policies × proposal mixes on simulated runs, the
learning curve of the learned rule, and A/A runs. Every figure is SIMULATED (the embedded
simulator, calibrated to real Terminal-Bench runs; true effects from its ground truth).

Three parts, printed and written as JSON with ``--out``:

1. **Grid** — presets ``tb2``, ``appworld``, ``swe-bench`` × proposal mixes (``--mixes``, any
   of :data:`gsme.sim.MIXES`; by default all but ``null``) × keep
   rules: ``greedy`` (any train gain), the paper's gate (``gated``, fixed design), the
   adaptive gate (``gated``, adaptive design) and ``learned`` in a first run (no history),
   ``--seeds`` seeds each (20), ``--rounds`` rounds (4). Per row: true sealed Δ of the
   reported harness (mean and bootstrap 95% interval over seeds), runs ending within 0.5 pp
   of the baseline or better (Clopper–Pearson 95%), runs that keep the baseline, children
   kept and credited per run, false keeps per run (kept with a true effect ≤ 0 on their
   parent), false credits per run, trials spent.
2. **History** — per preset and mix, a chain of ``--seeds`` ``learned`` runs, each learning
   from every earlier run's comparisons (one comparisons file, appended to as each run is
   sealed, :mod:`gsme.comparisons`): the ``learned, with history`` rows (runs whose history
   holds ≥ ``--min-history`` comparisons) and the learning curve (true sealed Δ against
   history size).
3. **A/A** — the ``null`` mix (no proposal does anything): the share of runs whose sealed
   test credits the selected harness (``--aa-runs`` runs (1000) of the learned rule and of greedy,
   which seals a non-baseline harness far more often), with Clopper–Pearson intervals, and
   the gate's false credit over every null comparison of those runs.

4. **Drift** — history from one world, runs in another (``DRIFT``: a kind world, then a
   harmful one): ``--drift-chains`` chains of ``--drift-before`` learned runs in the first
   world and ``--drift-after`` in the second, one comparisons file read with
   ``learn_match = "any"`` (a world change the signature does not see), against first runs
   of the second world without history at the same seeds. Targets (issue 30): the first
   run after the change (poisoned history) and the runs after it (recovery within one run)
   each within 0.2 pp of the no-history first run, or above it.

Targets (keep-rule study) are evaluated and printed as met or not.

    python benchmarks/evidence.py [--seeds 20] [--rounds 4] [--workers 2] [--out evidence.json]
    python benchmarks/evidence.py --mixes rare_big,bimodal --presets tb2   # any registered mixes
    python benchmarks/evidence.py --quick      # a smoke run in seconds
    python benchmarks/evidence.py --drift-only --presets tb2 --drift-chains 6   # part 4 alone
    python benchmarks/evidence.py --read evidence.json --markdown   # README's tables again
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from gsme import experiments, report, sim
from gsme.schema import BASELINE
from gsme.settings import GateConfig
from gsme.sim.audit import audit_decisions

sys.path.insert(0, str(Path(__file__).parent))  # the sibling script, run from anywhere
import aa_designs  # its Clopper–Pearson rate serves both scripts

PRESETS = ("tb2", "appworld", "swe-bench")
MIXES = ("calibrated", "weak", "ineffective", "harmful", "published", "rare_big", "many_small",
         "train_overfit", "bimodal")
RULES = {  # label -> (policy, gate design)
    "greedy": ("greedy", "adaptive"),
    "paper gate": ("gated", "fixed"),
    "adaptive gate": ("gated", "adaptive"),
    "learned": ("learned", "adaptive"),
}
WITH_HISTORY = "learned, with history"
BAD_MIXES = ("ineffective", "harmful")
DRIFT = ("calibrated", "harmful")  # history from the first world, runs in the second
DRIFT_TOLERANCE_PP = 0.2


# ------------------------------------------------------------------------------ one run

def one_run(preset: str, mix: str, rule: str, seed: int, rounds: int, root: str,
            learn_from: str | None = None, learn_match: str = "world") -> dict:
    """One simulated run, sealed and audited against ground truth: a row of the grid."""
    policy, design = RULES["learned" if rule == WITH_HISTORY else rule]
    with experiments.simulated_run(preset, root=f"{root}/{preset}-{mix}-{rule}-{seed}",
                                   seed=seed, mix=mix, policy=policy, rounds=rounds,
                                   gate=GateConfig(design=design),
                                   learn_from=learn_from, learn_match=learn_match) as run:
        history = len(run.comparisons(before_round=1))
        checks = run.events("history_checked")
        table = report.run_table(run).iloc[0]
        audit = audit_decisions(run)
        null_tests = int(audit["decision"].isin(["credit", "cull", "inconclusive"]).sum())
    credited = audit["decision"] == "credit"
    return {
        "preset": preset, "mix": mix, "rule": rule, "seed": seed, "history": history,
        "selected": table["selected"], "sealed_decision": table["sealed_decision"],
        "true_sealed_delta_pp": float(table["true_sealed_delta_pp"]),
        "true_train_delta_pp": float(table["true_train_delta_pp"]),
        "sealed_delta_pp": float(table["sealed_delta_pp"]),
        "sealed_p_one_sided": float(table["sealed_p_one_sided"]),
        "kept": int(audit["kept"].sum()), "credited": int(credited.sum()),
        "false_keeps": int(audit["false_keep"].sum()),
        "false_credits": int(audit["false_credit"].sum()),
        "significance_tests": null_tests, "trials_spent": int(table["trials_spent"]),
        "history_dropped_round": next((int(r) for r, p in zip(checks["round"], checks["payload"])
                                       if not p["used"]), None),
    }


def _grid_job(args) -> dict:
    return one_run(*args)


def _chain_job(args) -> list[dict]:
    """``learned`` runs one after another, each learning from every earlier one."""
    preset, mix, seeds, rounds, root = args
    book = f"{root}/{preset}-{mix}-comparisons.csv"
    # each run has its own suite (seed): the chain learns across suites, by name
    return [one_run(preset, mix, WITH_HISTORY, s, rounds, root, learn_from=book,
                    learn_match="agent,evolver") for s in seeds]


def _drift_job(args) -> list[dict]:
    """One drift chain: ``before`` learned runs in ``DRIFT[0]``, then ``after`` in
    ``DRIFT[1]``, every run learning from all earlier ones (``learn_match = "any"``)."""
    preset, chain, before, after, rounds, root = args
    book = f"{root}/drift-{preset}-{chain}.csv"
    worlds = [(DRIFT[0], step - before) for step in range(before)] + [
        (DRIFT[1], step + 1) for step in range(after)]
    return [{**one_run(preset, mix, WITH_HISTORY, 5000 + 100 * chain + before + step, rounds,
                       f"{root}/drift-{chain}", learn_from=book, learn_match="any"),
             "chain": chain, "step": step} for mix, step in worlds]


def drift_table(chains: pd.DataFrame, fresh: pd.DataFrame) -> dict:
    """Part 4: runs after the world changed against no-history first runs at the same seeds.

    ``step`` 1 is the first run in the new world (its history all from the old one); its
    gap and that of steps 2+ (recovery) are paired by seed with ``fresh``'s runs.
    """
    base = fresh.set_index("seed")["true_sealed_delta_pp"]
    after = chains[chains["step"] >= 1].assign(
        gap=lambda d: d["true_sealed_delta_pp"] - d["seed"].map(base))
    out = {"no_history": float(base.mean()), "runs_per_step": int((after["step"] == 1).sum())}
    for label, rows in (("poisoned", after[after["step"] == 1]),
                        ("recovery", after[after["step"] >= 2])):
        low, high = bootstrap_mean(rows["gap"])
        out[label] = {"true_sealed_delta_pp": float(rows["true_sealed_delta_pp"].mean()),
                      "gap_pp": float(rows["gap"].mean()), "gap_ci": [low, high],
                      "kept_per_run": float(rows["kept"].mean()),
                      "false_keeps_per_run": float(rows["false_keeps"].mean()),
                      "history_dropped": float(rows["history_dropped_round"].notna().mean()),
                      "met": bool(rows["gap"].mean() >= -DRIFT_TOLERANCE_PP)}
    out["fresh_kept_per_run"] = float(fresh["kept"].mean())
    out["fresh_false_keeps_per_run"] = float(fresh["false_keeps"].mean())
    return out


def run_drift(args, root: str, pool) -> dict:
    """Part 4 on the first preset: the chains and their no-history counterparts."""
    preset = args.presets[0]
    jobs = [(preset, c, args.drift_before, args.drift_after, args.rounds, root)
            for c in range(args.drift_chains)]
    chains = pd.DataFrame([r for rows in pool.map(_drift_job, jobs) for r in rows])
    seeds = sorted(chains.loc[chains["step"] >= 1, "seed"])
    fresh = pd.DataFrame(list(pool.map(_grid_job, [(preset, DRIFT[1], "learned", s, args.rounds,
                                                    f"{root}/fresh") for s in seeds])))
    return {"preset": preset, "worlds": list(DRIFT), "before": args.drift_before,
            "after": args.drift_after, **drift_table(chains, fresh),
            "runs": chains.to_dict("records")}


def render_drift(d: dict) -> str:
    """Part 4's printed lines, each target met or not."""
    lines = [f"4. Drift (preset {d['preset']}): {d['before']} learned runs in {d['worlds'][0]}, "
             f"then {d['after']} in {d['worlds'][1]}, history read with learn_match = 'any'; "
             f"{d['runs_per_step']} chains; true sealed delta (pp) against no-history first "
             f"runs at the same seeds ({d['no_history']:+.2f}; kept "
             f"{d['fresh_kept_per_run']:.2f}, false keeps {d['fresh_false_keeps_per_run']:.2f} "
             "per run)"]
    for label, what in (("poisoned", "first run after the change"),
                        ("recovery", "runs after the first")):
        r = d[label]
        lines.append(f"   {what:27s} {r['true_sealed_delta_pp']:+.2f}, gap {r['gap_pp']:+.2f} "
                     f"[{r['gap_ci'][0]:+.2f}, {r['gap_ci'][1]:+.2f}]; kept {r['kept_per_run']:.2f}"
                     f", false keeps {r['false_keeps_per_run']:.2f} per run; history dropped in "
                     f"{100 * r['history_dropped']:.0f}% of runs; target (gap >= "
                     f"-{DRIFT_TOLERANCE_PP} pp): {'met' if r['met'] else 'NOT MET'}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ tables

def bootstrap_mean(values, *, draws: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of the mean (seeded)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) < 2:
        return (np.nan, np.nan)
    rng = np.random.default_rng(seed)
    means = rng.choice(values, size=(draws, len(values))).mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (preset, mix, rule): the figures of part 1 (and 2's history rows)."""
    rows = []
    for (preset, mix, rule), g in runs.groupby(["preset", "mix", "rule"], sort=False):
        low, high = bootstrap_mean(g["true_sealed_delta_pp"])
        within = aa_designs.rate(int((g["true_sealed_delta_pp"] >= -0.5).sum()), len(g))
        rows.append({
            "preset": preset, "mix": mix, "rule": rule, "runs": len(g),
            "history": float(g["history"].mean()),
            "true_sealed_delta_pp": float(g["true_sealed_delta_pp"].mean()),
            "ci_low": low, "ci_high": high,
            "within_half_pp": within["rate"], "within_ci_low": within["ci_low"],
            "keeps_baseline": float((g["selected"] == BASELINE).mean()),
            "kept_per_run": float(g["kept"].mean()),
            "credited_per_run": float(g["credited"].mean()),
            "false_keeps_per_run": float(g["false_keeps"].mean()),
            "false_credits_per_run": float(g["false_credits"].mean()),
            "trials_per_run": float(g["trials_spent"].mean()),
        })
    return pd.DataFrame(rows)


def targets(table: pd.DataFrame) -> pd.DataFrame:
    """The keep-rule targets, per preset and mix, as measured."""
    rows = []
    for (preset, mix), g in table.groupby(["preset", "mix"], sort=False):
        by = g.set_index("rule")["true_sealed_delta_pp"]
        best = max(by.get("greedy", np.nan), by.get("paper gate", np.nan))
        row = {"preset": preset, "mix": mix, "best_of_greedy_and_paper_gate": best,
               "learned_first_run": by.get("learned", np.nan),
               "learned_with_history": by.get(WITH_HISTORY, np.nan)}
        row["first_run_gap"] = row["learned_first_run"] - best
        row["first_run_met"] = bool(row["first_run_gap"] >= -3.0)
        row["history_gap"] = row["learned_with_history"] - best
        row["history_met"] = bool(row["history_gap"] >= -1.0)
        if mix in BAD_MIXES:
            within = g.set_index("rule")["within_half_pp"]
            row["within_half_pp_first_run"] = within.get("learned", np.nan)
            row["within_half_pp_with_history"] = within.get(WITH_HISTORY, np.nan)
            row["within_met"] = bool(min(row["within_half_pp_first_run"],
                                         row["within_half_pp_with_history"]) >= 0.95)
        rows.append(row)
    return pd.DataFrame(rows)


def learning_curve(chains: pd.DataFrame, table: pd.DataFrame, *, bins=(0, 1, 30, 60, 120,
                                                                      240, 10**9)) -> pd.DataFrame:
    """Regret of the learned rule against max(greedy, paper gate) by history size."""
    best = (table[table["rule"].isin(["greedy", "paper gate"])]
            .groupby(["preset", "mix"])["true_sealed_delta_pp"].max().rename("best"))
    runs = chains.join(best, on=["preset", "mix"])
    runs["regret_pp"] = runs["best"] - runs["true_sealed_delta_pp"]
    labels = [f"{a}-{b - 1}" if b < 10**9 else f"{a}+" for a, b in itertools.pairwise(bins)]
    runs["history_bin"] = pd.cut(runs["history"], bins=list(bins), right=False, labels=labels)
    return (runs.groupby(["mix", "history_bin"], observed=True)
            .agg(runs=("regret_pp", "size"), history=("history", "mean"),
                 regret_pp=("regret_pp", "mean"))
            .reset_index())


def aa_table(runs: pd.DataFrame) -> dict:
    """A/A: sealed credits of the selected harness, and the gate's credits of null children."""
    out = {}
    for rule, g in runs.groupby("rule"):
        out[rule] = {
            "sealed_credit": aa_designs.rate(int((g["sealed_decision"] == "credit").sum()),
                                             len(g)),
            "non_baseline_sealed": float((g["selected"] != BASELINE).mean()),
            "gate_credit": aa_designs.rate(int(g["credited"].sum()),
                                           int(g["significance_tests"].sum())),
        }
    return out


def shipping(runs: pd.DataFrame, *, min_history: int) -> pd.DataFrame:
    """What each ship rule (:data:`gsme.report.SHIP_RULES`) ships, per preset, mix and keep
    rule: the true sealed Δ of the shipped harness (the selected one when the rule ships it,
    else the baseline: 0), mean and bootstrap 95% interval over runs, the share of runs
    shipping a child, and runs within 0.5 pp of the baseline or better (Clopper–Pearson).
    History runs count from ``min_history`` comparisons. Runs stored without
    ``sealed_p_one_sided`` (before it was recorded) leave the rules that read it out."""
    runs = runs[(runs["rule"] != WITH_HISTORY) | (runs["history"] >= min_history)]
    runs = runs[runs["mix"] != "null"]
    rows = []
    for (preset, mix, rule), g in runs.groupby(["preset", "mix", "rule"], sort=False):
        for ship_rule, ships in report.SHIP_RULES.items():
            if ship_rule == "sealed_p20" and g.get("sealed_p_one_sided", pd.Series(
                    dtype=float)).isna().all():
                continue
            ships = ships(g) & (g["selected"] != BASELINE).to_numpy()
            shipped = np.where(ships, g["true_sealed_delta_pp"], 0.0)
            low, high = bootstrap_mean(shipped)
            within = aa_designs.rate(int((shipped >= -0.5).sum()), len(g))
            rows.append({"preset": preset, "mix": mix, "rule": rule, "ship_rule": ship_rule,
                         "runs": len(g), "shipped_true_delta_pp": float(shipped.mean()),
                         "ci_low": low, "ci_high": high, "ships_child": float(ships.mean()),
                         "within_half_pp": within["rate"], "within_ci_low": within["ci_low"],
                         "within_met": (bool(within["rate"] >= 0.95) if mix in BAD_MIXES
                                        else None)})
    return pd.DataFrame(rows)


def render_shipping(table: pd.DataFrame) -> str:
    """The shipping table, one line per (preset, mix, keep rule), a column per ship rule."""
    wide = table.assign(cell=[f"{d:+.2f} ({100 * w:.0f}%)" for d, w in zip(
        table["shipped_true_delta_pp"], table["within_half_pp"])]).pivot_table(
        index=["preset", "mix", "rule"], columns="ship_rule", values="cell", aggfunc="first",
        sort=False)
    return ("Shipped (ship rules of gsme.report.SHIP_RULES; default "
            f"{report.SHIP_RULE}): true sealed delta (pp) of what is shipped (runs within 0.5 "
            "pp of the baseline or better)\n" + wide.reset_index().to_string(index=False))


def markdown_shipping(table: pd.DataFrame) -> str:
    """README's shipped table: the learned rule's runs (first and with history)."""
    rules = list(dict.fromkeys(table["ship_rule"]))
    lines = ["| preset | mix | keep rule | " + " | ".join(rules) + " | harmful target "
             f"({report.SHIP_RULE}) |", "|---|---|---|" + "---|" * (len(rules) + 1)]
    mine = table[table["rule"].isin(["learned", WITH_HISTORY])]
    for (preset, mix, rule), g in mine.groupby(["preset", "mix", "rule"], sort=False):
        by = g.set_index("ship_rule")
        cells = [f"{by.at[r, 'shipped_true_delta_pp']:+.1f} "
                 f"({100 * by.at[r, 'within_half_pp']:.0f}%)" if r in by.index else ""
                 for r in rules]
        met = by.at[report.SHIP_RULE, "within_met"] if report.SHIP_RULE in by.index else None
        lines.append(f"| {preset} | {mix} | {rule} | " + " | ".join(cells) + " | "
                     + ("" if met is None or pd.isna(met) else "met" if met else "not met")
                     + " |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ main

def registered_mixes(text: str) -> list[str]:
    """``--mixes``: comma-separated names of :data:`gsme.sim.MIXES`, each checked."""
    names = [name for name in text.split(",") if name]
    for name in names:
        if name not in sim.MIXES:
            raise argparse.ArgumentTypeError(f"mix must be one of {list(sim.MIXES)}, got {name!r}")
    return names


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="seeds per grid row (20)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds per run (4)")
    parser.add_argument("--presets", nargs="+", default=list(PRESETS), help="presets")
    parser.add_argument("--mixes", nargs="+", type=registered_mixes, default=None,
                        help="proposal mixes, any of gsme.sim.MIXES, comma- or space-separated "
                             f"(default: {','.join(MIXES)})")
    parser.add_argument("--min-history", type=int, default=60,
                        help="comparisons a history run needs to count as 'with history' (60)")
    parser.add_argument("--aa-runs", type=int, default=1000, help="A/A runs per rule (1000)")
    parser.add_argument("--drift-chains", type=int, default=12,
                        help="drift chains on the first preset (12; 0 skips part 4)")
    parser.add_argument("--drift-before", type=int, default=5,
                        help="runs of a drift chain in the first world (5)")
    parser.add_argument("--drift-after", type=int, default=3,
                        help="runs of a drift chain in the second world (3)")
    parser.add_argument("--drift-only", action="store_true", help="run part 4 alone")
    parser.add_argument("--workers", type=int, default=2, help="processes (2)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny preset, 2 mixes, 2 seeds, 1 round, 4 A/A runs: seconds")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    parser.add_argument("--read", type=Path, default=None, metavar="JSON",
                        help="print the tables of an earlier --out file instead of running")
    parser.add_argument("--markdown", action="store_true",
                        help="with --read: the tables as Markdown (README's)")
    args = parser.parse_args(argv)
    args.mixes = list(MIXES) if args.mixes is None else [m for ms in args.mixes for m in ms]
    if args.read is not None:
        result = json.loads(args.read.read_text())
        if "shipping" not in result:  # stored before the shipped columns: from its runs
            result["shipping"] = shipping(pd.DataFrame(result["runs"]), min_history=result[
                "settings"]["min_history"]).to_dict("records")
        print(markdown(result) if args.markdown else render(result))
        return 0
    if args.quick:
        args.presets, args.mixes, args.seeds, args.rounds = ["tiny"], ["calibrated",
                                                                      "harmful"], 2, 1
        args.aa_runs, args.min_history = 4, 1
    started = time.time()
    root = tempfile.mkdtemp(prefix="gsme-evidence-")
    if args.drift_only:
        with cf.ProcessPoolExecutor(args.workers) as pool:
            drift = run_drift(args, root, pool)
        print(render_drift(drift) + f"\n   ({(time.time() - started) / 60:.1f} min on "
              f"{args.workers} processes; SIMULATED)")
        if args.out:
            args.out.write_text(json.dumps({"drift": drift}, indent=1, default=float))
        return 0
    seeds = list(range(args.seeds))
    grid = [(p, m, rule, s, args.rounds, root) for p in args.presets for m in args.mixes
            for rule in RULES for s in seeds]
    chains = [(p, m, seeds, args.rounds, root) for p in args.presets for m in args.mixes]
    aa_preset = args.presets[0]
    aa = [(aa_preset, "null", rule, 1000 + 2 * s + j, args.rounds, root)  # no seed shared:
          for j, rule in enumerate(("learned", "greedy")) for s in range(args.aa_runs)]  # independent runs
    with cf.ProcessPoolExecutor(args.workers) as pool:
        chain_futures = [pool.submit(_chain_job, c) for c in chains]
        grid_runs = pd.DataFrame(list(pool.map(_grid_job, grid, chunksize=4)))
        chain_runs = pd.DataFrame([r for f in chain_futures for r in f.result()])
        grid_seconds = time.time() - started
        aa_runs = pd.DataFrame(list(pool.map(_grid_job, aa, chunksize=4)))
        drift = run_drift(args, root, pool) if args.drift_chains else None
    with_history = chain_runs[chain_runs["history"] >= args.min_history]
    table = summary(pd.concat([grid_runs, with_history], ignore_index=True))
    result = {
        "grid": table.to_dict("records"),
        "targets": targets(table).to_dict("records"),
        "learning_curve": learning_curve(chain_runs, table).to_dict("records"),
        "aa": aa_table(aa_runs),
        "shipping": shipping(pd.concat([grid_runs, with_history], ignore_index=True),
                             min_history=args.min_history).to_dict("records"),
        "aa_preset": aa_preset,
        **({"drift": drift} if drift is not None else {}),
        "runs": pd.concat([grid_runs, chain_runs, aa_runs], ignore_index=True)
        .to_dict("records"),
        "settings": {"seeds": args.seeds, "rounds": args.rounds, "presets": args.presets,
                     "mixes": args.mixes, "min_history": args.min_history,
                     "aa_runs": args.aa_runs, "workers": args.workers,
                     "grid_seconds": grid_seconds, "seconds": time.time() - started},
    }
    print(render(result))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, default=float))
    return 0


def render(result: dict) -> str:
    """The printed report: every table of ``result``."""
    s = result["settings"]
    lines = [("SIMULATED evidence (embedded simulator calibrated to real Terminal-Bench runs; "
             "true effects from its ground truth)"),
             (f"{s['seeds']} seeds x {s['rounds']} rounds per row; presets {s['presets']}; "
             f"grid and history chains {s['grid_seconds'] / 60:.1f} min, everything "
             f"{s['seconds'] / 60:.1f} min on {s['workers']} processes"), "",
             "1-2. Keep rules x proposal mixes: true sealed delta (pp) of the reported harness"]
    table = pd.DataFrame(result["grid"])
    shown = table.assign(
        true_sealed=[f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}]" for m, lo, hi in
                     zip(table["true_sealed_delta_pp"], table["ci_low"], table["ci_high"])],
        within=[f"{100 * w:.0f}% (>={100 * lo:.0f}%)" for w, lo in
                zip(table["within_half_pp"], table["within_ci_low"])])
    columns = ["preset", "mix", "rule", "runs", "history", "true_sealed", "within",
               "keeps_baseline", "kept_per_run", "credited_per_run", "false_keeps_per_run",
               "false_credits_per_run", "trials_per_run"]
    with pd.option_context("display.width", 250, "display.max_columns", 30,
                           "display.float_format", "{:.2f}".format):
        lines.append(shown[columns].to_string(index=False))
        lines += ["", ("Targets (keep-rule study): learned >= max(greedy, paper gate) - 3.0 pp in a "
                  "first run, - 1.0 pp with >= 60 comparisons of history; within 0.5 pp of "
                  "the baseline in >= 95% of runs on ineffective and harmful"),
                  pd.DataFrame(result["targets"]).to_string(index=False), "",
                  ("Learning curve: regret (pp) of learned runs against max(greedy, paper "
                  "gate), by comparisons of history"),
                  pd.DataFrame(result["learning_curve"]).to_string(index=False)]
    lines += ["", render_shipping(pd.DataFrame(result["shipping"]))]
    lines += ["", (f"3. A/A (null mix, preset {result['aa_preset']}): sealed test credits the "
              "selected harness, % [Clopper-Pearson 95%]")]
    for rule, r in result["aa"].items():
        c, gate = r["sealed_credit"], r["gate_credit"]
        lines.append(f"   {rule:8s} sealed credit {100 * c['rate']:.2f} [{100 * c['ci_low']:.2f}, "
                     f"{100 * c['ci_high']:.2f}] of {c['total']} runs (non-baseline sealed in "
                     f"{100 * r['non_baseline_sealed']:.0f}%); gate credits of null children "
                     f"{100 * gate['rate']:.2f} [{100 * gate['ci_low']:.2f}, "
                     f"{100 * gate['ci_high']:.2f}] of {gate['total']}")
    learned = result["aa"].get("learned", {}).get("sealed_credit")
    if learned is not None:
        met = learned["rate"] <= 0.025 and learned["ci_high"] <= 0.035 and learned["total"] >= 500
        lines.append(f"   target (learned: <= 2.5% of >= 500 runs, upper limit <= 3.5%): "
                     f"{'met' if met else 'MISSED'}")
    if "drift" in result:
        lines += ["", render_drift(result["drift"])]
    return "\n".join(lines)


def markdown(result: dict) -> str:
    """README's tables: true sealed Δ per preset, mix and rule; targets; A/A."""
    table = pd.DataFrame(result["grid"])
    rules = [r for r in [*RULES, WITH_HISTORY] if r in set(table["rule"])]
    cell = {(p, m, r): f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}]" for p, m, r, d, lo, hi in zip(
        table["preset"], table["mix"], table["rule"], table["true_sealed_delta_pp"],
        table["ci_low"], table["ci_high"])}
    lines = ["| preset | mix | " + " | ".join(rules) + " |",
             "|---|---|" + "---|" * len(rules)]
    for (preset, mix), _ in table.groupby(["preset", "mix"], sort=False):
        lines.append(f"| {preset} | {mix} | "
                     + " | ".join(cell.get((preset, mix, r), "") for r in rules) + " |")
    lines += ["", ("| preset | mix | rule | within 0.5 pp of baseline | keeps baseline | kept / run "
              "| credited / run | false keeps / run | false credits / run | trials / run |"),
              "|---|---|---|---|---|---|---|---|---|---|"]
    for row in table.itertuples():
        lines.append(f"| {row.preset} | {row.mix} | {row.rule} | {100 * row.within_half_pp:.0f}% "
                     f"| {100 * row.keeps_baseline:.0f}% | {row.kept_per_run:.2f} "
                     f"| {row.credited_per_run:.2f} | {row.false_keeps_per_run:.2f} "
                     f"| {row.false_credits_per_run:.2f} | {row.trials_per_run:,.0f} |")
    targets = pd.DataFrame(result["targets"])
    lines += ["", ("| preset | mix | max(greedy, paper gate) | learned, first run (gap) "
              "| learned, with history (gap) | within 0.5 pp, first / with history |"),
              "|---|---|---|---|---|---|"]
    for t in targets.itertuples():
        within = (f"{100 * t.within_half_pp_first_run:.0f}% / "
                  f"{100 * t.within_half_pp_with_history:.0f}%"
                  if t.mix in BAD_MIXES else "")
        lines.append(f"| {t.preset} | {t.mix} | {t.best_of_greedy_and_paper_gate:+.1f} "
                     f"| {t.learned_first_run:+.1f} ({t.first_run_gap:+.1f}) "
                     f"| {t.learned_with_history:+.1f} ({t.history_gap:+.1f}) | {within} |")
    lines += ["", markdown_shipping(pd.DataFrame(result["shipping"]))]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
