"""Validity and power of the gate designs on synthetic tasks shaped like real agent benchmarks.

For every design × reference (:class:`gsme.settings.GateConfig`) this prints, side by side:

1. **A/A false credit** — the child is the parent (same per-task pass probabilities,
   independent trials): the share of pairs credited, with Clopper–Pearson 95% intervals, at
   n = 26, 45 and 80 tasks (``--pairs`` pairs each, default 2,000);
2. **power** — the share credited at a true +4 pp and +8 pp gain in mean pass rate;
3. **cost** — the mean child trials per candidate (A/A and +8 pp) and the mean looks
   (``fixed k=4`` spends about what the adaptive design spends: power at equal cost);
4. **few tasks change** — A/A on 26 tasks of which only 4 have a pass probability strictly
   between 0 and 1, and the case "4 of 26 tasks gain one pass in three, none lose" (the
   fixed design sees only that; the adaptive design's later repeats of the 4 tasks are
   drawn under the null).

Tasks are bimodal: each task's pass probability is drawn from a U-shaped Beta(a, b)
fitted by maximum likelihood (beta-binomial) to the per-(system, task) pass counts of
``../shared/data/realdata/terminal_bench_core_0.1.1_trials.csv`` (13 systems × 80 tasks × 5
runs: 46% of tasks never pass, 26% always pass, 28% are mixed); without that file the
built-in fit below is used. A true effect shifts every task's log-odds by the one constant
that raises the mean pass rate by the stated amount (tasks that never or always pass barely
move: the gain is concentrated on the mixed tasks, as a patch's is).

Many pairs share one trials frame (candidates ``c00000`` vs ``p00000`` …) and the real
gate code decides them all at once: :func:`gsme.designs.compare` (what
:func:`gsme.gates.credit` and :func:`gsme.gates.significance_gate` call after validating
and encoding the frame) and :func:`gsme.designs.looks_of_slots` (the looks and trials
read). Each frame is encoded once and shared by the configurations: the adaptive frame holds
``k_max`` repeats of every task whose pooled first ``k`` repeats are mixed, which is every
repeat any adaptive configuration can read (a look reads only the repeats below its count).
That this equals running each configuration's own scoring loop is checked here: the real
loop (``designs.wanted`` → score the wanted slots → ``wanted`` … until nothing new is
wanted) runs for the default adaptive configuration on the A/A pairs of every n, and its
``gates.significance_gate`` decisions and trial counts must match.

    python benchmarks/aa_designs.py [--pairs 2000] [--power-pairs 1000] [--seed 0]
                                    [--out results.json] [--quick]

Targets: adaptive A/A false credit ≤ 2.5% within Monte Carlo error (the Clopper–Pearson
interval reaches 2.5%) at every n; the "4 of 26" case never credited. Runs in about 80 s
on 2 cores (``--workers``, default 2; several minutes on a machine shared with other jobs).
``--quick``: 100 pairs, 50 power pairs, one process: seconds (intervals too wide to judge).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import integrate, optimize, special
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from gsme import designs, gates, pairing
from gsme.settings import GateConfig

REAL = (Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "realdata"
        / "terminal_bench_core_0.1.1_trials.csv")
BUILT_IN_BETA = (0.1553, 0.2306)  # the fit to the file above, for when it is absent
SIZES = (26, 45, 80)
EFFECTS_PP = (4.0, 8.0)
CONFIGS = {
    "fixed / normal": GateConfig(reference="normal", exact_below=0),
    "fixed / t": GateConfig(reference="t", exact_below=0),
    "fixed / t+exact6 *": GateConfig(),
    "fixed k=4 / t+exact6": GateConfig(k=4),
    "adaptive / normal": GateConfig(design="adaptive", reference="normal", exact_below=0),
    "adaptive / t": GateConfig(design="adaptive", reference="t", exact_below=0),
    "adaptive / t+exact6 *": GateConfig(design="adaptive"),
    "adaptive / t+exact6, no futility": GateConfig(design="adaptive", futility_z=None),
}
DEFAULT_ADAPTIVE = "adaptive / t+exact6 *"


# ------------------------------------------------------------------------------ tasks

def calibrate(path: Path = REAL) -> dict:
    """Beta(a, b) of per-task pass probabilities, fitted to the real file when present."""
    if not path.exists():
        a, b = BUILT_IN_BETA
        return {"source": f"built-in (file absent: {path})", "a": a, "b": b,
                **_shares(a, b, 5)}
    real = pd.read_csv(path)
    counts = real.groupby(["system", "task_id"])["passed"].sum().to_numpy().astype(int)
    runs = int(real.groupby(["system", "task_id"]).size().max())
    observed = np.bincount(counts, minlength=runs + 1)

    def nll(log_ab):
        a, b = np.exp(log_ab)
        return -float(observed @ sps.betabinom.logpmf(np.arange(runs + 1), runs, a, b))

    a, b = np.exp(optimize.minimize(nll, [0.0, 0.0], method="Nelder-Mead").x)
    real_shares = {"real_never": float(np.mean(counts == 0)),
                   "real_always": float(np.mean(counts == runs))}
    return {"source": str(path.resolve()), "a": float(a), "b": float(b),
            **_shares(a, b, runs), **real_shares}


def _shares(a: float, b: float, runs: int) -> dict:
    pmf = sps.betabinom.pmf(np.arange(runs + 1), runs, a, b)
    return {"runs": runs, "never": float(pmf[0]), "always": float(pmf[-1]),
            "mixed": float(1 - pmf[0] - pmf[-1])}


def logit_shift(a: float, b: float, effect: float) -> float:
    """The log-odds shift that raises the mean pass rate of Beta(a, b) tasks by ``effect``.

    The gain E[expit(logit p + s) − p] is integrated on the log-odds scale x = logit p,
    where the Beta density times dp/dx is p^a (1 − p)^b / B(a, b), smooth and decaying
    like e^{−|x|}: a trapezoid rule on [−80, 80] is exact to about 1e-9.
    """
    if effect == 0:
        return 0.0
    x = np.linspace(-80.0, 80.0, 400_001)
    p = special.expit(x)
    weight = np.exp(a * special.log_expit(x) + b * special.log_expit(-x) - special.betaln(a, b))

    def gain(shift):
        return float(integrate.trapezoid((special.expit(x + shift) - p) * weight, x)) - effect

    return float(optimize.brentq(gain, 0.0, 20.0, xtol=1e-10))


def outcomes(rng, p_parent: np.ndarray, p_child: np.ndarray, k_max: int):
    """Independent pass/fail draws: (pairs, tasks, k_max) for each side."""
    shape = (*p_parent.shape, k_max)
    return (rng.random(shape) < p_parent[..., None], rng.random(shape) < p_child[..., None])


def trials_frame(parent: np.ndarray, child: np.ndarray, repeats_parent: np.ndarray,
                 repeats_child: np.ndarray) -> pd.DataFrame:
    """A trials frame (contracted dtypes) holding repeats ``0 .. repeats-1`` of each task."""
    n_pairs, n_tasks, k_max = parent.shape
    tasks = np.array([f"t{j:03d}" for j in range(n_tasks)], dtype=object)
    columns = {name: [] for name in ("candidate", "task_id", "repeat", "passed")}
    for side, passed, repeats in (("p", parent, repeats_parent), ("c", child, repeats_child)):
        pair, task, repeat = np.nonzero(np.arange(k_max)[None, None, :] < repeats[..., None])
        names = np.array([f"{side}{i:05d}" for i in range(n_pairs)], dtype=object)
        columns["candidate"].append(names[pair])
        columns["task_id"].append(tasks[task])
        columns["repeat"].append(repeat.astype(np.int64))
        columns["passed"].append(passed[pair, task, repeat])
    size = sum(len(r) for r in columns["repeat"])
    nothing = np.full(size, None, dtype=object)
    def text(values):  # object dtype: pandas would infer its own string dtype
        return pd.Series(values, dtype=object)

    return pd.DataFrame({
        "candidate": text(np.concatenate(columns["candidate"])),
        "task_id": text(np.concatenate(columns["task_id"])),
        "split": text(np.full(size, "train", dtype=object)),
        "repeat": np.concatenate(columns["repeat"]),
        "attempt": np.zeros(size, dtype=np.int64),
        "passed": np.concatenate(columns["passed"]),
        "infra_ok": np.ones(size, dtype=bool),
        "activated": np.zeros(size, dtype=bool),
        "beacons": text(np.full(size, "", dtype=object)),
        "tokens": np.full(size, np.nan), "cost_usd": np.full(size, np.nan),
        "seconds": np.full(size, np.nan),
        "pathology": text(nothing), "trajectory": text(nothing), "error": text(nothing),
        "borrowed_from": text(nothing),
    })


def pairs_frame(n_pairs: int) -> pd.DataFrame:
    return pd.DataFrame({"child": [f"c{i:05d}" for i in range(n_pairs)],
                         "parent": [f"p{i:05d}" for i in range(n_pairs)]}, dtype=object)


def most_repeats(parent: np.ndarray, child: np.ndarray, config: GateConfig) -> np.ndarray:
    """Per (pair, task): every repeat an adaptive design can read (k_max on pooled-mixed)."""
    k = config.k
    pooled = parent[..., :k].sum(-1) + child[..., :k].sum(-1)
    return np.where((pooled > 0) & (pooled < 2 * k), config.k_max, k)


# ------------------------------------------------------------------------------ evaluation

def evaluate(parent: np.ndarray, child: np.ndarray, configs: dict) -> dict:
    """Decisions, looks and child trials of every configuration on one set of pairs."""
    n_pairs, n_tasks, _ = parent.shape
    pairs = pairs_frame(n_pairs)
    slots = {}
    for config in configs.values():
        key = (config.design, config.k, config.k_max)
        if key not in slots:  # the fixed design reads every repeat: give it exactly k
            repeats = (most_repeats(parent, child, config) if config.design == "adaptive"
                       else np.full((n_pairs, n_tasks), config.k))
            slots[key] = pairing.encode_slots(pairing.checked_trials(
                trials_frame(parent, child, repeats, repeats)))
    out = {}
    for name, config in configs.items():
        here = slots[(config.design, config.k, config.k_max)]
        decided = designs.compare(here, pairs, split="train", gate=config)
        taken = designs.looks_of_slots(here, pairs, split="train", gate=config)
        last = taken.groupby("child", sort=False).tail(1)
        if not (last["decision"].to_numpy() == decided["decision"].to_numpy()).all():
            raise AssertionError(f"{name}: looks() and compare() disagree")
        out[name] = {
            "credit": int((decided["decision"] == "credit").sum()),
            "cull": int((decided["decision"] == "cull").sum()),
            "pairs": n_pairs,
            "looks": float(decided["looks"].mean()),
            "child_trials": float(last["child_trials"].mean()),
        }
    return out


def check_loop(parent: np.ndarray, child: np.ndarray, config: GateConfig,
               expected: dict) -> dict:
    """Run the real scoring loop on these outcomes; its decisions must equal ``expected``."""
    n_pairs, n_tasks, _ = parent.shape
    pairs = pairs_frame(n_pairs)
    tasks = pd.DataFrame({"task_id": [f"t{j:03d}" for j in range(n_tasks)], "split": "train"})
    have_parent = np.full((n_pairs, n_tasks), config.k)  # the parent was scored before
    have_child = np.zeros((n_pairs, n_tasks), dtype=np.int64)
    for passes in range(1, 20):
        trials = trials_frame(parent, child, have_parent, have_child)
        want = designs.wanted(trials, pairs, tasks, split="train", gate=config)
        side = want["candidate"].str[0].to_numpy()
        pair = want["candidate"].str[1:].astype(int).to_numpy()
        task = want["task_id"].str[1:].astype(int).to_numpy()
        repeats = want["repeats"].to_numpy()
        new_parent, new_child = have_parent.copy(), have_child.copy()
        for flag, grid in (("p", new_parent), ("c", new_child)):
            mine = side == flag
            grid[pair[mine], task[mine]] = np.maximum(grid[pair[mine], task[mine]],
                                                      repeats[mine])
        if (new_parent == have_parent).all() and (new_child == have_child).all():
            break
        have_parent, have_child = new_parent, new_child
    decided = gates.significance_gate(trials, pairs, gate=config)
    credit = int((decided["decision"] == "credit").sum())
    child_trials = float(have_child.sum(axis=1).mean())
    same = (credit == expected["credit"]
            and abs(child_trials - expected["child_trials"]) < 1e-9)
    return {"passes": passes, "credit": credit, "child_trials": child_trials, "matches": same}


def rate(count: int, total: int) -> dict:
    """``count / total`` with its Clopper–Pearson 95 % interval (NaN when total is 0)."""
    low, high = proportion_confint(count, total, alpha=0.05, method="beta") if total else (
        np.nan, np.nan)
    return {"count": int(count), "total": int(total), "rate": count / total if total else np.nan,
            "ci_low": float(low), "ci_high": float(high)}


# ------------------------------------------------------------------------------ scenarios

def run(n_pairs: int, power_pairs: int, seed: int, workers: int = 2) -> dict:
    """Every scenario, the sizes spread over ``workers`` processes (seeded per job)."""
    fit = calibrate()
    jobs = [("size", n) for n in sorted(SIZES, reverse=True)] + [("few", 26)]
    seeds = np.random.SeedSequence(seed).spawn(len(jobs))
    args = [(kind, n, n_pairs, power_pairs, fit["a"], fit["b"], s)
            for (kind, n), s in zip(jobs, seeds)]
    if workers > 1:
        with cf.ProcessPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(_job, args))
    else:
        done = [_job(a) for a in args]
    results = {"calibration": fit, "sizes": list(SIZES), "effects_pp": list(EFFECTS_PP),
               "pairs": n_pairs, "power_pairs": power_pairs, "seed": seed,
               "configs": {name: c.model_dump() for name, c in CONFIGS.items()},
               "aa": {}, "power": {}, "loop_check": {}, "few": {}}
    for (kind, n), part in zip(jobs, done):
        if kind == "few":
            results["few"] = part
        else:
            results["aa"][n] = part["aa"]
            results["loop_check"][n] = part["loop_check"]
            results["power"].update(part["power"])
    return results


def _job(args) -> dict:
    kind, n, n_pairs, power_pairs, a, b, seed = args
    rng = np.random.default_rng(seed)
    k_max = max(c.k_max for c in CONFIGS.values())
    if kind == "few":
        return few_tasks(rng, n_pairs, k_max)
    p = rng.beta(a, b, (n_pairs, n))
    parent, child = outcomes(rng, p, p, k_max)
    out = {"aa": evaluate(parent, child, CONFIGS), "power": {}}
    sub = slice(0, min(n_pairs, 600))  # the loop re-encodes its frame on every pass
    default = CONFIGS[DEFAULT_ADAPTIVE]
    expected = evaluate(parent[sub], child[sub], {"default": default})["default"]
    out["loop_check"] = check_loop(parent[sub], child[sub], default, expected)
    for effect in EFFECTS_PP:
        p = rng.beta(a, b, (power_pairs, n))
        gained = special.expit(special.logit(np.clip(p, 1e-15, 1 - 1e-15))
                               + logit_shift(a, b, effect / 100))
        parent, child = outcomes(rng, p, gained, k_max)
        out["power"][f"{n}/{effect:g}"] = evaluate(parent, child, CONFIGS)
    return out


def few_tasks(rng, n_pairs: int, k_max: int) -> dict:
    """Null pairs where only 4 of 26 tasks can change at all, and the '4 of 26' case."""
    n, moving = 26, 4
    p = np.where(rng.random((n_pairs, n)) < 0.5, 0.0, 1.0)
    p[:, :moving] = rng.uniform(0.2, 0.8, (n_pairs, moving))
    parent, child = outcomes(rng, p, p, k_max)
    sparse = evaluate(parent, child, CONFIGS)
    # 4 of 26 tasks gain one pass in three (parent 1/3, child 2/3), none lose; 22 unchanged
    p = np.where(np.arange(n) % 2 == 0, 0.0, 1.0)[None, :].repeat(n_pairs, axis=0)
    p[:, :moving] = 0.5
    parent, child = outcomes(rng, p, p, k_max)
    parent[:, :moving, :3] = [True, False, False]
    child[:, :moving, :3] = [True, True, False]
    case = evaluate(parent, child, CONFIGS)
    return {"sparse": sparse, "four_of_26": case}


# ------------------------------------------------------------------------------ printing

def share(result: dict) -> float:
    return result["credit"] / result["pairs"]


def report(results: dict, seconds: float) -> str:
    names = list(CONFIGS)
    width = max(len(n) for n in names) + 2
    lines = []
    fit = results["calibration"]
    lines.append(f"tasks: Beta({fit['a']:.3f}, {fit['b']:.3f}) from {fit['source']}")
    lines.append(f"  over {fit['runs']} runs: never {fit['never']:.0%}, always "
                 f"{fit['always']:.0%}, mixed {fit['mixed']:.0%}"
                 + (f" (real: never {fit['real_never']:.0%}, always {fit['real_always']:.0%})"
                    if "real_never" in fit else ""))
    lines.append("  (* = the GateConfig defaults of that design)")

    lines.append("\nA/A false credit, % [Clopper-Pearson 95%]   (cull % in parentheses)")
    lines.append(" " * width + "".join(f"{f'n={n}':>27}" for n in SIZES))
    for name in names:
        cells = []
        for n in SIZES:
            r = results["aa"][n][name]
            ci = rate(r["credit"], r["pairs"])
            cells.append(f"{100 * ci['rate']:5.2f} "
                         f"[{100 * ci['ci_low']:4.2f},{100 * ci['ci_high']:5.2f}]"
                         f" ({100 * r['cull'] / r['pairs']:4.2f})")
        lines.append(f"{name:<{width}}" + "".join(f"{c:>27}" for c in cells))

    lines.append("\npower: % credited at a true gain of +4 pp / +8 pp")
    lines.append(" " * width + "".join(f"{f'n={n}':>17}" for n in SIZES))
    for name in names:
        cells = [" / ".join(f"{100 * share(results['power'][f'{n}/{e:g}'][name]):5.1f}"
                            for e in EFFECTS_PP) for n in SIZES]
        lines.append(f"{name:<{width}}" + "".join(f"{c:>17}" for c in cells))

    lines.append("\nmean child trials per candidate (mean looks): A/A | +8 pp")
    lines.append(" " * width + "".join(f"{f'n={n}':>30}" for n in SIZES))
    for name in names:
        cells = []
        for n in SIZES:
            aa, up = results["aa"][n][name], results["power"][f"{n}/{EFFECTS_PP[-1]:g}"][name]
            cells.append(f"{aa['child_trials']:6.1f} ({aa['looks']:.2f}) | "
                         f"{up['child_trials']:6.1f} ({up['looks']:.2f})")
        lines.append(f"{name:<{width}}" + "".join(f"{c:>30}" for c in cells))

    lines.append("\nfew tasks change (n = 26): A/A with 4 movable tasks | '4 of 26 gain one in "
                 "three, none lose'")
    for name in names:
        sparse, case = results["few"]["sparse"][name], results["few"]["four_of_26"][name]
        ci = rate(sparse["credit"], sparse["pairs"])
        lines.append(f"{name:<{width}}  false credit {100 * ci['rate']:5.2f}% "
                     f"[{100 * ci['ci_low']:4.2f},{100 * ci['ci_high']:5.2f}]   |   credited "
                     f"{100 * case['credit'] / case['pairs']:5.1f}% of {case['pairs']}")

    lines.append("\nscoring loop replayed for the default adaptive design (A/A pairs):")
    for n in SIZES:
        c = results["loop_check"][n]
        lines.append(f"  n={n}: {c['passes']} passes of wanted(), {c['credit']} credited, "
                     f"{c['child_trials']:.1f} child trials per candidate: "
                     + ("same as the shared frame" if c["matches"] else "DIFFERS"))

    lines.append("\ntargets:")
    verdicts = []
    for n in SIZES:
        r = results["aa"][n][DEFAULT_ADAPTIVE]
        ci = rate(r["credit"], r["pairs"])
        ok = ci["ci_low"] <= 0.025
        verdicts.append(ok)
        lines.append(f"  adaptive default A/A at n={n}: {100 * ci['rate']:.2f}% "
                     f"[{100 * ci['ci_low']:.2f}, {100 * ci['ci_high']:.2f}] "
                     + ("met (<= 2.5% within Monte Carlo error)" if ok else "MISSED"))
    for name in names:
        r = results["few"]["four_of_26"][name]
        if r["credit"]:
            lines.append(f"  '4 of 26' credited by {name}: {r['credit']} of {r['pairs']}"
                         + (" -- MISSED" if name.endswith("*") else " (not a default)"))
    defaults = [n for n in names if n.endswith("*")]
    case_ok = all(results["few"]["four_of_26"][n]["credit"] == 0 for n in defaults)
    lines.append("  '4 of 26' never credited by the defaults: " + ("met" if case_ok else "MISSED"))
    loops_ok = all(c["matches"] for c in results["loop_check"].values())
    lines.append("  scoring loop equals the shared-frame evaluation: "
                 + ("met" if loops_ok else "MISSED"))
    results["targets_met"] = bool(all(verdicts) and case_ok and loops_ok)
    lines.append(f"\n{seconds:.0f} s")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000, help="A/A pairs per n (2000)")
    parser.add_argument("--power-pairs", type=int, default=1000,
                        help="pairs per n and effect for power (1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="processes (2)")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    parser.add_argument("--quick", action="store_true",
                        help="100 pairs, 50 power pairs, one process: seconds")
    args = parser.parse_args(argv)
    if args.quick:
        args.pairs, args.power_pairs, args.workers = 100, 50, 1
    started = time.perf_counter()
    results = run(args.pairs, args.power_pairs, args.seed, args.workers)
    seconds = time.perf_counter() - started
    print(report(results, seconds))
    if args.out is not None:
        results["seconds"] = seconds
        args.out.write_text(json.dumps(results, indent=1, default=str))
    return 0 if results["targets_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
