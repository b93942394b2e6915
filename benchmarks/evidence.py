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

Targets (keep-rule study) are evaluated and printed as met or not.

    python benchmarks/evidence.py [--seeds 20] [--rounds 4] [--workers 2] [--out evidence.json]
    python benchmarks/evidence.py --mixes rare_big,bimodal --presets tb2   # any registered mixes
    python benchmarks/evidence.py --quick      # a smoke run in seconds
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


# ------------------------------------------------------------------------------ one run

def one_run(preset: str, mix: str, rule: str, seed: int, rounds: int, root: str,
            learn_from: str | None = None) -> dict:
    """One simulated run, sealed and audited against ground truth: a row of the grid."""
    policy, design = RULES["learned" if rule == WITH_HISTORY else rule]
    with experiments.simulated_run(preset, root=f"{root}/{preset}-{mix}-{rule}-{seed}",
                                   seed=seed, mix=mix, policy=policy, rounds=rounds,
                                   gate=GateConfig(design=design),
                                   learn_from=learn_from) as run:
        history = len(run.comparisons(before_round=1))
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
        "kept": int(audit["kept"].sum()), "credited": int(credited.sum()),
        "false_keeps": int(audit["false_keep"].sum()),
        "false_credits": int(audit["false_credit"].sum()),
        "significance_tests": null_tests, "trials_spent": int(table["trials_spent"]),
    }


def _grid_job(args) -> dict:
    return one_run(*args)


def _chain_job(args) -> list[dict]:
    """``learned`` runs one after another, each learning from every earlier one."""
    preset, mix, seeds, rounds, root = args
    book = f"{root}/{preset}-{mix}-comparisons.csv"
    return [one_run(preset, mix, WITH_HISTORY, s, rounds, root, learn_from=book)
            for s in seeds]


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
        print(markdown(result) if args.markdown else render(result))
        return 0
    if args.quick:
        args.presets, args.mixes, args.seeds, args.rounds = ["tiny"], ["calibrated",
                                                                      "harmful"], 2, 1
        args.aa_runs, args.min_history = 4, 1
    started = time.time()
    root = tempfile.mkdtemp(prefix="gsme-evidence-")
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
    with_history = chain_runs[chain_runs["history"] >= args.min_history]
    table = summary(pd.concat([grid_runs, with_history], ignore_index=True))
    result = {
        "grid": table.to_dict("records"),
        "targets": targets(table).to_dict("records"),
        "learning_curve": learning_curve(chain_runs, table).to_dict("records"),
        "aa": aa_table(aa_runs),
        "aa_preset": aa_preset,
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
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
