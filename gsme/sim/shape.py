"""The simulator beside real benchmarks: per-task outcome shape, run-to-run spread, effect sizes.

Two calibration targets, and the functions that measure the simulator against them. Every
number these functions compute from a :class:`~gsme.sim.SimAgent` is SIMULATED.

**Shape (real data).** Real agent benchmarks are bimodal. On the Terminal-Bench
leaderboard (terminal-bench-core 0.1.1: 13 systems × 80 tasks × 5 separate real runs; a
third-party file this project does not ship, see :func:`read_leaderboard_trials`) each system
has, over its 5 runs, 31–78% of tasks that never pass, 1–48% that always pass, only
15–43% *borderline* (passing in some runs, not all), and a run-to-run standard deviation
of its overall pass rate of 1.0–4.7 pp. :func:`outcome_shape` computes these statistics
for any trials frame (real or simulated); :data:`TERMINAL_BENCH_RANGES` holds the real
ranges (min, mean, max over the 13 systems), recomputed from the file by the tests. A
preset is *calibrated* when its baseline's shares over 5 runs lie within the real ranges
and so does its run-to-run sd *sized to 80 tasks* (``run_sd_80_pp``: the sd times
``sqrt(n_tasks / 80)``, since a suite of n tasks has a spread ∝ 1/sqrt(n)).

**Effect sizes (published).** The only published evidence of harness-fix effect sizes
is the paper's table of credited train Δ per domain (``data/paper_table.csv``: TB2 +6.3,
LiveCode +15.8, Omni-MATH +10.1, BrowseComp+ +15.8, GDPval +8.4, AppWorld +17.8,
SWE-bench +13.9 pp, the last preliminary). A preset's *targeted fix* is the catalogue's
``targeted`` mechanism for the preset's *dominant pathology* (the failure mode behind the
largest share of its baseline's failing train trials,
:meth:`~gsme.sim.SimAgent.true_failure_shares`), ungated. Its effect *sits in the range*
when the mean over suite seeds :data:`EFFECT_SUITE_SEEDS` of its true train effect lies
within :data:`EFFECT_BAND` = [0.5×, 1.25×] of the published Δ of the preset's domain. The
band is asymmetric on purpose: a published credited Δ is the gain of a *selected*
harness (the winner among noisy candidates, often a recombination of several fixes), so a
single fix's true effect should be at or somewhat below it, not far above it. The presets
were set near 0.8× (see :mod:`gsme.sim.suite`); single suites vary around that mean.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from types import MappingProxyType

import numpy as np
import pandas as pd

from gsme.patches import FileChange, Patch, plan_patch
from gsme.sim.catalogue import CATALOGUE, DEFAULT_MIX

__all__ = [
    "EFFECT_BAND",
    "EFFECT_SUITE_SEEDS",
    "REFERENCE_TASKS",
    "SHAPE_STATISTICS",
    "TARGETED_FIX",
    "TERMINAL_BENCH_FILE",
    "TERMINAL_BENCH_RANGES",
    "baseline_runs",
    "calibration",
    "outcome_shape",
    "proposal_effects",
    "published_train_delta",
    "read_leaderboard_trials",
    "shape_ranges",
    "single_patch",
    "targeted_effects",
]

TERMINAL_BENCH_FILE = "terminal_bench_core_0.1.1_trials.csv"
"""Name of the real Terminal-Bench trials file (not shipped; see :func:`read_leaderboard_trials`)."""
REFERENCE_TASKS = 80
"""Tasks of the real reference benchmark; ``run_sd_80_pp`` sizes a spread to it."""
SHAPE_STATISTICS = ("never", "always", "borderline", "run_sd_80_pp")
"""The statistics of :func:`outcome_shape` that calibration compares with real data."""
TERMINAL_BENCH_RANGES: Mapping[str, tuple[float, float, float]] = MappingProxyType({
    "never": (0.3125, 0.4587, 0.775),
    "always": (0.0125, 0.2635, 0.475),
    "borderline": (0.15, 0.2779, 0.425),
    "run_sd_80_pp": (1.0458, 2.7954, 4.6771),
})
"""(min, mean, max) over the 13 real systems of each :data:`SHAPE_STATISTICS`, computed by
:func:`shape_ranges` from the Terminal-Bench file (leaderboard commit ``8e1925a``); the tests
recompute them from the file when it is present."""
EFFECT_BAND = (0.5, 1.25)
"""A targeted fix's mean true train effect must lie within these multiples of the
published train Δ of its domain."""
EFFECT_SUITE_SEEDS = (0, 1, 2, 3, 4)
"""The suite seeds whose mean targeted-fix effect is held to :data:`EFFECT_BAND`."""
TARGETED_FIX: Mapping[str, str] = MappingProxyType(
    {e.why: e.mechanism for e in CATALOGUE.values() if e.kind == "targeted"})
"""Failure mode → the catalogue's targeted (working) fix for it."""


def read_leaderboard_trials(path: str | os.PathLike) -> pd.DataFrame:
    """The real Terminal-Bench trials file as a frame: ``system, task_id, run, passed``.

    The file (``terminal_bench_core_0.1.1_trials.csv``, built from the public
    ``laude-institute/terminal-bench-leaderboard`` repository) has no licence that clears
    redistribution: gsme never ships or copies it, it only reads it where it is (e.g.
    ``../shared/data/realdata/`` beside a checkout). ``run`` is the run (1..5, in date
    order; the file's column ``k``); ``passed`` counts an unresolved or missing result as a
    failure, as the leaderboard does.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    ValueError
        When a required column is missing (named).

    Examples
    --------
    A tiny file of the same layout, written here:

    >>> pd.DataFrame({"system": "s", "task_id": ["a", "a", "b"], "k": [1, 2, 1],
    ...               "passed": [1, None, 0]}).to_csv("trials.csv", index=False)
    >>> read_leaderboard_trials("trials.csv")
      system task_id  run  passed
    0      s       a    1    True
    1      s       a    2   False
    2      s       b    1   False
    """
    frame = pd.read_csv(path)
    required = ["system", "task_id", "k", "passed"]
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: column(s) {missing} missing; required: {required}")
    out = frame[required].rename(columns={"k": "run"})
    out["passed"] = out["passed"].fillna(0).astype(bool)
    return out


def outcome_shape(trials: pd.DataFrame) -> pd.DataFrame:
    """Per system: how its tasks' outcomes spread over its runs.

    Parameters
    ----------
    trials : DataFrame
        ``system, task_id, run, passed``: one row per (system, task, run); every task of
        a system must have the same runs.

    Returns
    -------
    DataFrame
        One row per system: ``system``, ``n_tasks``, ``n_runs``, ``pass_rate`` (mean of
        ``passed``), ``never`` / ``always`` / ``borderline`` (shares of tasks passing in no
        run, in every run, in some but not all), ``run_sd_pp`` (sample sd, ddof 1, of the
        per-run pass rates, in pp) and ``run_sd_80_pp`` (``run_sd_pp`` sized to
        :data:`REFERENCE_TASKS` tasks: times ``sqrt(n_tasks / 80)``).

    Raises
    ------
    ValueError
        When a column is missing, or a system's tasks do not all have the same runs.

    Examples
    --------
    >>> t = pd.DataFrame({"system": "s", "task_id": list("aabbcc"), "run": [1, 2] * 3,
    ...                   "passed": [0, 0, 1, 1, 1, 0]})
    >>> outcome_shape(t)[["never", "always", "borderline"]].round(3).iloc[0].tolist()
    [0.333, 0.333, 0.333]
    """
    required = ["system", "task_id", "run", "passed"]
    missing = [c for c in required if c not in getattr(trials, "columns", [])]
    if missing:
        raise ValueError(f"trials lacks column(s) {missing}; required: {required}")
    rows = []
    for system, group in trials.groupby("system", sort=True):
        table = group.pivot_table(index="task_id", columns="run", values="passed",
                                  aggfunc="mean")
        if table.isna().any().any():
            ragged = table.index[table.isna().any(axis=1)].tolist()[:5]
            raise ValueError(f"system {system!r}: tasks {ragged} lack some runs; every task "
                             "needs every run")
        counts = (table.to_numpy() > 0.5).sum(axis=1)
        n_tasks, n_runs = table.shape
        run_sd = 100.0 * float(np.std(table.mean(axis=0).to_numpy(), ddof=1))
        rows.append({
            "system": system, "n_tasks": n_tasks, "n_runs": n_runs,
            "pass_rate": float(table.to_numpy().mean()),
            "never": float(np.mean(counts == 0)), "always": float(np.mean(counts == n_runs)),
            "borderline": float(np.mean((counts > 0) & (counts < n_runs))),
            "run_sd_pp": run_sd, "run_sd_80_pp": run_sd * np.sqrt(n_tasks / REFERENCE_TASKS),
        })
    return pd.DataFrame(rows)


def shape_ranges(shape: pd.DataFrame) -> pd.DataFrame:
    """Min, mean and max over systems of each :data:`SHAPE_STATISTICS`.

    Parameters
    ----------
    shape : DataFrame
        What :func:`outcome_shape` returns.

    Returns
    -------
    DataFrame
        One row per statistic: ``statistic, low, mean, high``.

    Examples
    --------
    >>> t = pd.DataFrame({"system": ["s"] * 4 + ["u"] * 4, "task_id": list("aabb") * 2,
    ...                   "run": [1, 2] * 4, "passed": [1, 1, 0, 1, 0, 0, 0, 1]})
    >>> shape_ranges(outcome_shape(t)).round(3)
          statistic   low  mean  high
    0         never  0.00  0.25  0.50
    1        always  0.00  0.25  0.50
    2    borderline  0.50  0.50  0.50
    3  run_sd_80_pp  5.59  5.59  5.59
    """
    return pd.DataFrame([{"statistic": s, "low": float(shape[s].min()),
                          "mean": float(shape[s].mean()), "high": float(shape[s].max())}
                         for s in SHAPE_STATISTICS])


def baseline_runs(agent, *, runs: int = 5, run_seed: int = 0) -> pd.DataFrame:
    """``runs`` separate simulated runs of ``agent``'s baseline on every task (both splits).

    Run ``r`` is a trial of every task with ``run_seed + r`` and repeat 0; a trial whose
    environment failed is re-run (next ``attempt``), as the validity gate does. The result
    is SIMULATED.

    Returns
    -------
    DataFrame
        ``system`` (the agent's name), ``task_id``, ``split``, ``run`` (1..runs),
        ``passed``: the input :func:`outcome_shape` takes.

    Examples
    --------
    >>> from gsme import sim
    >>> runs = baseline_runs(sim.preset("tiny"), runs=2)
    >>> runs.shape, sorted(runs["run"].unique().tolist())
    ((48, 5), [1, 2])
    >>> runs.columns.tolist()
    ['system', 'task_id', 'split', 'run', 'passed']
    """
    from gsme.resources import SEED_HARNESS

    rows = []
    for task in agent.tasks().to_dict("records"):
        for r in range(runs):
            for attempt in range(100):
                traj = agent.run(SEED_HARNESS, task, repeat=0, attempt=attempt,
                                 run_seed=run_seed + r)
                if traj.infra_ok:
                    break
            else:  # pragma: no cover - needs an infra fault rate near 1
                raise RuntimeError(f"task {task['task_id']}: 100 infrastructure faults in a row")
            rows.append((agent.name, task["task_id"], task["split"], r + 1, bool(traj.passed)))
    return pd.DataFrame(rows, columns=["system", "task_id", "split", "run", "passed"])


def single_patch(mechanism: str, why: str, *, env_gate: str = "",
                 tasks: Iterable[str] = ()) -> dict[str, str]:
    """The files of a harness holding one patch of ``mechanism`` (its manifest decides).

    ``tasks`` become the patch's ``predicted_tasks`` (what train-task hints name).

    Examples
    --------
    >>> sorted(single_patch("submit-verify", "careless-submit"))
    ['knowledge/submit-verify.md', 'patches/submit-verify.toml']
    """
    patch = Patch(id=mechanism, where="knowledge", why=why, mechanism=mechanism,
                  beacon=mechanism, env_gate=env_gate,
                  changes=(FileChange(f"knowledge/{mechanism}.md", f"{mechanism}\n"),),
                  predicted_tasks=tuple(tasks))
    return plan_patch({}, patch)


def published_train_delta() -> pd.Series:
    """The paper's credited train Δ (pp) by preset name (presets without a domain left out).

    Examples
    --------
    >>> published_train_delta().head(3)
    tb2           6.3
    livecode     15.8
    omni-math    10.1
    Name: published_train_delta_pp, dtype: float64
    """
    from gsme.resources import PAPER_TABLE
    from gsme.sim.suite import PRESET_SPECS

    table = pd.read_csv(PAPER_TABLE, dtype={"benchmark": object})
    delta = dict(zip(table["benchmark"], table["train_delta_pp"].astype(float)))
    return pd.Series({name: delta[s.paper_benchmark] for name, s in PRESET_SPECS.items()
                      if s.paper_benchmark is not None}, name="published_train_delta_pp")


def targeted_effects(preset: str, *, suite_seeds: Iterable[int] = EFFECT_SUITE_SEEDS,
                     profile: str | None = None, mix: str = DEFAULT_MIX) -> pd.DataFrame:
    """The true effect of ``preset``'s targeted fix of its dominant pathology, per suite seed.

    Parameters
    ----------
    preset : str
        One of :data:`gsme.sim.PRESETS`.
    suite_seeds : iterable of int
        Suites to measure; default :data:`EFFECT_SUITE_SEEDS` (the calibration rule).
    profile, mix : str, optional
        As in :func:`gsme.sim.preset`.

    Returns
    -------
    DataFrame
        One row per suite seed: ``preset, suite_seed, why`` (the dominant pathology),
        ``why_share`` (its share of failing train trials), ``mechanism`` (its targeted fix),
        ``true_train_delta_pp, true_test_delta_pp`` (exact, ungated, over the baseline) and
        ``published_train_delta_pp`` (NaN for a preset without a domain). SIMULATED.

    Examples
    --------
    >>> targeted_effects("appworld", suite_seeds=[0])[["why", "mechanism"]].iloc[0].tolist()
    ['careless-submit', 'submit-verify']
    """
    from gsme.sim import preset as make

    published = published_train_delta().get(preset, np.nan)
    rows = []
    for seed in suite_seeds:
        agent = make(preset, suite_seed=int(seed), profile=profile, mix=mix)
        shares = agent.true_failure_shares({}, "train")
        why, share = shares["why"].iloc[0], float(shares["share"].iloc[0])
        mechanism = TARGETED_FIX[why]
        fix = single_patch(mechanism, why)
        rows.append({"preset": preset, "suite_seed": int(seed), "why": why, "why_share": share,
                     "mechanism": mechanism,
                     "true_train_delta_pp": agent.true_effect(fix, {}, "train"),
                     "true_test_delta_pp": agent.true_effect(fix, {}, "test"),
                     "published_train_delta_pp": published})
    return pd.DataFrame(rows)


def proposal_effects(agent, templates: Mapping) -> pd.DataFrame:
    """The true effect of every proposal of a template library, alone.

    ``templates`` maps a failure mode to its templates (each with a ``mechanism``), e.g. the
    rule evolver's :data:`gsme.evolvers.templates.TEMPLATES`. Each template (listed under
    each failure mode, so a template listed twice counts twice, as the evolver may draw it twice) is
    applied alone, ungated, to the baseline; train-task hints name every train task the
    baseline can fail (the most they could name). SIMULATED ground truth.

    Returns
    -------
    DataFrame
        ``why, mechanism, kind`` (the catalogue's), ``true_train_delta_pp``,
        ``true_test_delta_pp``.

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolvers.templates import TEMPLATES
    >>> effects = proposal_effects(sim.preset("tiny"), {"careless-submit": TEMPLATES["careless-submit"]})
    >>> effects.columns.tolist()
    ['why', 'mechanism', 'kind', 'true_train_delta_pp', 'true_test_delta_pp']
    >>> effects[["mechanism", "kind"]].head(2)
             mechanism      kind
    0    submit-verify  targeted
    1  verify-reminder      weak
    """
    base = agent.true_rates({}, "train")
    failing = tuple(base.loc[base["rate"] < 1.0, "task_id"])
    rows = []
    for why, listed in templates.items():
        for template in listed:
            effect = CATALOGUE[template.mechanism]
            files = single_patch(template.mechanism, why,
                                 tasks=failing if effect.named_only else ())
            rows.append({"why": why, "mechanism": template.mechanism, "kind": effect.kind,
                         "true_train_delta_pp": agent.true_effect(files, {}, "train"),
                         "true_test_delta_pp": agent.true_effect(files, {}, "test")})
    return pd.DataFrame(rows)


def calibration(presets: Iterable[str] | None = None, *, real=None, runs: int = 5,
                run_seed: int = 0, suite_seed: int = 0,
                effect_seeds: Iterable[int] = EFFECT_SUITE_SEEDS) -> pd.DataFrame:
    """SIMULATED calibration table: each preset's baseline shape and targeted-fix effect
    beside the real ranges and the published Δ.

    Parameters
    ----------
    presets : iterable of str, optional
        Default every preset of :data:`gsme.sim.PRESETS`.
    real : path or DataFrame, optional
        The real Terminal-Bench trials (a path for :func:`read_leaderboard_trials`, or its
        frame); default the stored :data:`TERMINAL_BENCH_RANGES`.
    runs, run_seed, suite_seed : int
        The simulated baseline runs (see :func:`baseline_runs`) and the suite they run on.
    effect_seeds : iterable of int
        Suite seeds whose mean targeted-fix effect is reported (see :func:`targeted_effects`).

    Returns
    -------
    DataFrame
        One row per preset: ``preset, profile, n_tasks, sim_pass_rate``; for each statistic
        ``s`` of :data:`SHAPE_STATISTICS`: ``sim_<s>`` (SIMULATED, over ``runs`` runs),
        ``real_<s>_low, real_<s>_high`` and ``<s>_ok`` (within the real range); then
        ``sim_run_sd_pp`` (unsized), ``dominant_why, targeted_fix``,
        ``sim_true_train_delta_pp`` (mean over ``effect_seeds``),
        ``published_train_delta_pp``, ``effect_ratio`` (their ratio) and ``effect_ok``
        (within :data:`EFFECT_BAND`; NA without a published Δ).

    Examples
    --------
    >>> table = calibration(["tiny"], effect_seeds=[0])
    >>> bool(table["borderline_ok"].iloc[0])
    True
    """
    from gsme import sim

    presets = list(sim.PRESETS if presets is None else presets)
    if real is None:
        ranges = {s: (lo, hi) for s, (lo, _, hi) in TERMINAL_BENCH_RANGES.items()}
    else:
        frame = real if isinstance(real, pd.DataFrame) else read_leaderboard_trials(real)
        table = shape_ranges(outcome_shape(frame)).set_index("statistic")
        ranges = {s: (table.at[s, "low"], table.at[s, "high"]) for s in SHAPE_STATISTICS}
    published = published_train_delta()
    rows = []
    for name in presets:
        agent = sim.preset(name, suite_seed=suite_seed)
        shape = outcome_shape(baseline_runs(agent, runs=runs, run_seed=run_seed)).iloc[0]
        row = {"preset": name, "profile": agent.profile.name, "n_tasks": int(shape["n_tasks"]),
               "sim_pass_rate": float(shape["pass_rate"])}
        for s in SHAPE_STATISTICS:
            lo, hi = ranges[s]
            row.update({f"sim_{s}": float(shape[s]), f"real_{s}_low": lo,
                        f"real_{s}_high": hi, f"{s}_ok": bool(lo <= shape[s] <= hi)})
        effects = targeted_effects(name, suite_seeds=effect_seeds)
        effect = float(effects["true_train_delta_pp"].mean())
        delta = float(published.get(name, np.nan))
        ratio = effect / delta if np.isfinite(delta) else np.nan
        row.update({
            "sim_run_sd_pp": float(shape["run_sd_pp"]),
            "dominant_why": effects["why"].mode().iloc[0],
            "targeted_fix": effects["mechanism"].mode().iloc[0],
            "sim_true_train_delta_pp": effect, "published_train_delta_pp": delta,
            "effect_ratio": ratio,
            "effect_ok": (bool(EFFECT_BAND[0] <= ratio <= EFFECT_BAND[1])
                          if np.isfinite(ratio) else pd.NA),
        })
        rows.append(row)
    return pd.DataFrame(rows)
