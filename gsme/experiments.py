"""Experiments over many *simulated* runs: the paper's tables, crediting policies, ablations.

Each function drives the embedded simulator (:mod:`gsme.sim`) through the ordinary loop
(:func:`gsme.evolve.evolve`, :func:`gsme.measure.finalize`) and sets what the loop measured
beside the simulator's ground truth (:meth:`gsme.sim.SimAgent.true_effect`), which the loop
itself never sees. Every result is simulated; every function returns one tidy DataFrame.

Runs are written under ``root`` (a fresh temporary directory when None): each call makes
its own new sub-directory there (``<experiment>-<random>``), one directory per run inside
it, so calls never collide and any run can be reopened with :meth:`gsme.run.Run.open`.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from gsme import analysis, evolve, measure, policy, report, sim, stats
from gsme.evolvers.mechanism import MechanismEvolver
from gsme.evolvers.rule import RuleEvolver
from gsme.patches import read_patches
from gsme.registry import POLICIES
from gsme.run import Run
from gsme.schema import BASELINE
from gsme.settings import STUDY_ROUNDS, GateConfig, KeepConfig, RunConfig, Schedule
from gsme.sim.audit import audit_decisions
from gsme.sim.catalogue import CATALOGUE

__all__ = [
    "PAPER_PRESETS",
    "RUNAWAY_MECHANISMS",
    "aa_noise",
    "ablation",
    "baseline_pathologies",
    "compare_policies",
    "pathology_matching",
    "preset_table",
    "simulated_run",
]

PAPER_PRESETS = tuple(p for p in sim.PRESETS if p != "tiny")
"""The seven simulated presets named after the paper's domains, in the paper's order."""

RUNAWAY_MECHANISMS = ("runaway-recovery", "token-budget-16x", "thinking-off")
"""The paper's reasoning-runaway ablation: selective recovery, a 16× budget, thinking off."""

_ROUND = Schedule()  # children and recombinations per round of every study's runs


def simulated_run(preset: str, *, root=None, seed: int = 0, profile: str | None = None,
                  mix=None, breadth: float | None = None,
                  policy: str | None = None,
                  gate: GateConfig | None = None, rounds: int = STUDY_ROUNDS,
                  children: int = _ROUND.children_per_round,
                  recombinations: int = _ROUND.recombinations_per_round,
                  learn_from: str | None = None, learn_match: str = "world",
                  suite_seed: int | None = None,
                  keep: KeepConfig | None = None, finalize: bool = True,
                  progress: bool = False) -> Run:
    """Create, evolve and (by default) seal one run of the rule evolver on a preset.

    The agent is ``gsme.sim.preset(preset, suite_seed=seed, profile=profile)``, the evolver
    ``RuleEvolver(seed=seed)`` and the run's config ``RunConfig(run_seed=seed,
    policy=policy, gate=gate)``; both specs are stored, so ``Run.open(run.path)`` rebuilds
    them. The run is returned open (call ``run.close()`` when done with it).

    Parameters
    ----------
    preset : str
        One of :data:`gsme.sim.PRESETS`.
    root : path-like, optional
        Parent directory of the run; a fresh temporary directory when None. The run goes
        to ``root/<preset>-<profile>-<policy>-<design>-s<seed>``, which must not exist yet.
    seed : int
        Seed of the simulated suite, the evolver and the run.
    profile : str, optional
        One of :data:`gsme.sim.PROFILES`; default: the preset's own.
    mix : str or Mix, optional
        The simulator's proposal mix (a :data:`gsme.sim.MIXES` name or a stated
        :class:`~gsme.sim.catalogue.Mix`); default ``calibrated``.
    breadth : float, optional
        How concentrated each failure mode is on a visible task feature (the simulated
        suite's knob, :func:`gsme.sim.preset`); default the suite's own (unconcentrated).
    policy : {"gated", "greedy", "peak", "learned"}, optional
        The keep rule; default :class:`~gsme.settings.RunConfig`'s.
    gate : GateConfig, optional
        The gate's settings; default :class:`~gsme.settings.GateConfig`.
    rounds, children, recombinations : int
        Rounds to run, children and recombinations per round.
    learn_from : str, optional
        A comparisons file the run learns from and appends to when sealed
        (:class:`~gsme.settings.RunConfig` ``learn_from``), from its rows that
        ``learn_match`` selects (``RunConfig.learn_match``).
    suite_seed : int, optional
        Seed of the simulated suite when not ``seed`` (runs of one suite share a world).
    keep : KeepConfig, optional
        The ``learned`` policy's settings; default :class:`~gsme.settings.KeepConfig`.
    finalize : bool
        Score the sealed test split once at the end (:func:`gsme.measure.finalize`).
    progress : bool
        Show the progress bars.

    Returns
    -------
    gsme.run.Run

    Examples
    --------
    >>> run = simulated_run("tiny", rounds=1)
    >>> run.sealed, run.agent.name
    (True, 'simulated:tiny/qwen-careless')
    >>> run.close()
    """
    gate = gate or GateConfig()
    world = {k: v for k, v in (("mix", mix), ("breadth", breadth)) if v is not None}
    suite_seed = seed if suite_seed is None else suite_seed
    agent = sim.preset(preset, suite_seed=suite_seed, profile=profile, **world)
    profile_name = agent.profile.name
    config = RunConfig(run_seed=seed, gate=gate, learn_from=learn_from, learn_match=learn_match,
                       keep=keep or KeepConfig(),
                       **({} if policy is None else {"policy": policy}))
    shown = [getattr(v, "name", v) for v in world.values()]  # a stated Mix by its name
    label = "-".join([preset, profile_name, *map(str, shown), config.policy, gate.design,
                      f"s{seed}"])
    if "mix" in world and not isinstance(world["mix"], str):  # stored as its table
        world["mix"] = dataclasses.asdict(world["mix"])
    path = _root(root, None) / label
    run = Run.create(path, agent=agent, evolver=RuleEvolver(seed=seed),
                     run_config=config,
                     schedule=Schedule(rounds=rounds, children_per_round=children,
                                       recombinations_per_round=recombinations),
                     agent_spec={"kind": "sim", "preset": preset, "suite_seed": suite_seed,
                                 "profile": profile_name, **world},
                     evolver_spec={"kind": "rule", "seed": seed})
    evolve.evolve(run, progress=progress)
    if finalize:
        measure.finalize(run, progress=progress)
    return run


def preset_table(presets=PAPER_PRESETS, *, rounds: int = 5, seed: int = 0, root=None,
                 children: int = _ROUND.children_per_round,
                 recombinations: int = _ROUND.recombinations_per_round,
                 gate: GateConfig | None = None,
                 progress: bool = True) -> pd.DataFrame:
    """The paper's results table, produced by one simulated gated run per preset.

    Parameters
    ----------
    presets : sequence of str
        Presets of :data:`gsme.sim.PRESETS`; default the seven of :data:`PAPER_PRESETS`.
    rounds, seed, root, children, recombinations, gate
        As in :func:`simulated_run`.
    progress : bool
        Show a progress bar over the presets.

    Returns
    -------
    DataFrame
        One row per preset: ``preset``, then every column of
        :func:`gsme.report.run_table` (measured ``train_delta_pp, sealed_delta_pp,
        train_z, ...`` beside the true ``true_train_delta_pp, true_sealed_delta_pp``),
        then ``run_dir``.

    Examples
    --------
    >>> preset_table(["tiny"], rounds=1, progress=False)["preset"].tolist()
    ['tiny']
    """
    root = _root(root, "preset_table")
    rows = []
    for name in tqdm(list(presets), desc="presets", disable=not progress):
        with simulated_run(name, root=root, seed=seed, policy="gated", rounds=rounds,
                           children=children, recombinations=recombinations,
                           gate=gate) as run:
            rows.append(report.run_table(run).assign(run_dir=str(run.path)))
    table = pd.concat(rows, ignore_index=True)
    table.insert(0, "preset", pd.Series(list(presets), dtype=object))
    return table


def compare_policies(preset: str, *, seeds=(0, 1, 2), policies=None, designs=("fixed",),
                     mix: str | None = None, rounds: int = STUDY_ROUNDS, root=None,
                     children: int = _ROUND.children_per_round,
                     recombinations: int = _ROUND.recombinations_per_round,
                     progress: bool = True) -> pd.DataFrame:
    """Keep rules (and gate designs) on the same seeds, audited against ground truth.

    Every (design, policy, seed) is one run with the same suite, evolver seed and trial
    seed; only the gate design and the policy deciding which children are kept differ
    (``gated``: credited by the three gates; ``greedy``: any train gain; ``peak``: like
    greedy, and the best train rate ever scored is reported; ``learned``: credited, or
    expected to be worth keeping under the proposal mix learned so far, see
    :mod:`gsme.policy`). All results are simulated.

    Parameters
    ----------
    preset : str
        One of :data:`gsme.sim.PRESETS`.
    seeds : sequence of int
        Seeds, each used by every policy.
    policies : sequence of str
        Registered keep policies (:data:`gsme.registry.POLICIES`; default: every one).
    designs : sequence of str
        Registered gate designs (:class:`~gsme.settings.GateConfig` ``design``).
    mix : str, optional
        The simulator's proposal mix, as in :func:`simulated_run`.
    rounds, root, children, recombinations
        As in :func:`simulated_run`.
    progress : bool
        Show a progress bar over the runs.

    Returns
    -------
    DataFrame
        One row per (design, policy, seed): ``preset, design, policy, seed``, ``run``
        (``<policy>/s<seed>``, a label for :func:`gsme.plot.retention`), ``selected``;
        ``kept`` (children the policy kept), ``credited`` (children the gate credited),
        ``false_keeps`` (kept children whose true train effect on their parent is ≤ 0),
        ``false_credits`` (credited children whose true train effect is ≤ 0) and
        ``overfit_keeps`` (kept children truly better on train but not on test), see
        :func:`gsme.sim.audit.audit_decisions`; ``real_keeps`` (kept children truly
        better on their parent); ``false_keep_share`` (false_keeps / kept, NaN when none
        was kept); ``train_delta_pp,
        sealed_delta_pp, retention_pct, sealed_decision`` (measured, selected harness vs
        baseline); ``true_train_delta_pp, true_sealed_delta_pp``; ``trials_spent``,
        ``trials_borrowed``; ``child_trials`` (trials run in the evolution rounds: the
        children's, and the extra repeats of their parents an adaptive gate asks for);
        ``run_dir``.

    Examples
    --------
    >>> table = compare_policies("tiny", seeds=[0], policies=["gated", "greedy"], rounds=1,
    ...                          progress=False)
    >>> table[["policy", "seed", "selected", "kept"]]
       policy  seed  selected  kept
    0   gated     0  baseline     0
    1  greedy     0     c0001     3
    """
    root = _root(root, "compare_policies")
    policies = POLICIES.names() if policies is None else policies
    unknown = sorted(set(policies) - set(POLICIES.names()))
    if unknown:
        raise ValueError(f"policies must be among {list(POLICIES)}, got unknown {unknown}")
    grid = [(d, p, int(s)) for d in designs for p in policies for s in seeds]
    rows = []
    for design, name, seed in tqdm(grid, desc=f"{preset}: design × policy × seed",
                                   disable=not progress):
        with simulated_run(preset, root=root, seed=seed, policy=name, rounds=rounds,
                           mix=mix, gate=GateConfig(design=design), children=children,
                           recombinations=recombinations) as run:
            audit = audit_decisions(run)
            table = report.run_table(run).iloc[0]
            trials = run.trials()
            child_trials = int((trials["borrowed_from"].isna() & (trials["round"] >= 1)).sum())
        kept = int(audit["kept"].sum())
        false = int(audit["false_keep"].sum())
        rows.append({
            "preset": preset, "design": design, "policy": name, "seed": seed,
            "run": f"{name}/s{seed}", "selected": table["selected"],
            "kept": kept, "credited": int((audit["decision"] == "credit").sum()),
            "false_keeps": false, "false_credits": int(audit["false_credit"].sum()),
            "real_keeps": int((audit["kept"] & (audit["true_delta_pp"] > 0)).sum()),
            "overfit_keeps": int(audit["overfit"].sum()),
            "false_keep_share": false / kept if kept else np.nan,
            **{c: table[c] for c in ("train_delta_pp", "sealed_delta_pp", "retention_pct",
                                     "sealed_decision", "true_train_delta_pp",
                                     "true_sealed_delta_pp", "trials_spent",
                                     "trials_borrowed")},
            "child_trials": child_trials,
            "run_dir": str(run.path),
        })
    return pd.DataFrame(rows)


def ablation(preset: str = "livecode", *, mechanisms=RUNAWAY_MECHANISMS, seeds=(0,),
             profile: str | None = None, gate: GateConfig | None = None, root=None,
             progress: bool = True) -> pd.DataFrame:
    """Put one candidate per mechanism through the gates against the baseline.

    Per seed, one run: the baseline is scored on the train split, then one round of
    :class:`MechanismEvolver` commits a child of the baseline per mechanism, scores it and
    gates it; its ``kept`` column is the default keep rule's (``RunConfig().policy``).
    Nothing is sealed: the true effects come from the simulator.

    Parameters
    ----------
    preset : str
        One of :data:`gsme.sim.PRESETS`; default ``livecode`` (the paper's ablation).
    mechanisms : sequence of str
        Mechanisms to compare; default :data:`RUNAWAY_MECHANISMS`.
    seeds : sequence of int
        One run per seed (benchmark and trial seed).
    profile : str, optional
        Model profile; default the preset's own.
    gate : GateConfig, optional
        The gate's settings; default :class:`~gsme.settings.GateConfig`.
    root : path-like, optional
        Parent directory of the runs.
    progress : bool
        Show a progress bar over the seeds.

    Returns
    -------
    DataFrame
        One row per (seed, mechanism): ``preset, seed, mechanism, kind`` (the catalogue's
        hidden kind, e.g. targeted, costly, harmful), then the decision of
        :func:`gsme.sim.audit.audit_decisions` (``child, parent, ..., delta_pp, z, p_value,
        decision, ..., true_delta_pp, true_sealed_delta_pp``, so
        :func:`gsme.plot.z_forest` draws it), then ``tokens_ratio`` (mean tokens per valid
        train trial, child over baseline) and ``run_dir`` (reopen with
        :meth:`gsme.run.Run.open`).

    Examples
    --------
    >>> table = ablation("tiny", mechanisms=["submit-verify"], progress=False)
    >>> table[["mechanism", "kind"]].values.tolist()
    [['submit-verify', 'targeted']]
    """
    root = _root(root, "ablation")
    rows = []
    for seed in tqdm([int(s) for s in seeds], desc=f"{preset}: ablation",
                     disable=not progress):
        agent = sim.preset(preset, suite_seed=seed, profile=profile)
        with Run.create(root / f"ablation-{preset}-{agent.profile.name}-s{seed}", agent=agent,
                        evolver=MechanismEvolver(list(mechanisms)),
                        run_config=RunConfig(run_seed=seed, gate=gate or GateConfig()),
                        agent_spec={"kind": "sim", "preset": preset, "suite_seed": seed,
                                    "profile": agent.profile.name}) as run:
            evolve.run_round(run, children=len(mechanisms), recombinations=0, progress=False)
            audit = audit_decisions(run)
            tokens = run.trials(split="train")
        tokens = tokens[tokens["infra_ok"]].groupby("candidate")["tokens"].mean()
        rows.append(audit.assign(
            preset=preset, seed=seed,
            kind=[CATALOGUE[m].kind if m in CATALOGUE else "unknown" for m in audit["mechanism"]],
            tokens_ratio=audit["child"].map(tokens) / tokens[BASELINE],
            run_dir=str(run.path)))
    out = pd.concat(rows, ignore_index=True)
    first = ["preset", "seed", "mechanism", "kind"]
    return out[first + [c for c in out.columns if c not in first]]


def baseline_pathologies(preset: str = "appworld", *, profiles=tuple(sim.PROFILES),
                         seed: int = 0, root=None, progress: bool = True) -> pd.DataFrame:
    """What the baseline's failures are made of, per model profile, on one preset.

    The baseline of each profile is scored on the train split and its failing valid
    trials are counted by their (simulator ground-truth) pathology with
    :func:`gsme.analysis.pathology_shares`.

    Returns
    -------
    DataFrame
        ``preset, profile, family, pathology, n, share``: one row per (profile,
        pathology), most frequent first within a profile; shares sum to 1 per profile.

    Examples
    --------
    >>> shares = baseline_pathologies("tiny", profiles=["qwen-runaway"], progress=False)
    >>> float(shares["share"].sum())
    1.0
    """
    root = _root(root, "baseline_pathologies")
    frames = []
    for name in tqdm(list(profiles), desc=f"{preset}: baselines", disable=not progress):
        with Run.create(root / f"baseline-{preset}-{name}-s{seed}",
                        agent=sim.preset(preset, suite_seed=seed, profile=name),
                        run_config=RunConfig(run_seed=seed)) as run:
            trials = evolve.cold_start(run, progress=False)
        frames.append(_baseline_shares(trials).assign(
            preset=preset, profile=name, family=sim.PROFILES[name].family))
    cols = ["preset", "profile", "family", "pathology", "n", "share"]
    return pd.concat(frames, ignore_index=True)[cols]


def pathology_matching(preset: str = "appworld", *, profiles=tuple(sim.PROFILES), seeds=(0,),
                       rounds: int = STUDY_ROUNDS, gate: GateConfig | None = None, root=None,
                       children: int = _ROUND.children_per_round,
                       recombinations: int = _ROUND.recombinations_per_round,
                       progress: bool = True) -> pd.DataFrame:
    """Does the winning patch target the model's dominant pathology? One run per profile.

    Per (profile, seed) a gated run evolves on ``preset`` with that model profile. The
    *dominant pathology* is the most frequent ground-truth pathology of the baseline's
    failing train trials over the first ``gate.k`` repeats of every task (the cold start;
    the adaptive design adds repeats to mixed tasks only, which would weigh them more).
    The *winning patch* is the first credited mutation (earliest round, then id) whose
    patch the selected harness carries: the fix the gates credited first on the way to the
    selected harness, the one the baseline needed most.

    Parameters
    ----------
    preset, rounds, gate, root, children, recombinations
        As in :func:`simulated_run`.
    profiles : sequence of str
        Model profiles of :data:`gsme.sim.PROFILES`.
    seeds : sequence of int
        One run per (profile, seed).
    progress : bool
        Show a progress bar over the runs.

    Returns
    -------
    DataFrame
        One row per (profile, seed): ``preset, profile, family, seed``,
        ``dominant_pathology, dominant_share``, ``selected`` (the run's harness),
        ``winner`` (candidate id; None when nothing was credited), ``winner_mechanism``,
        ``winner_why`` (the pathology the patch was proposed for), ``winner_targets``
        (the failure mode the mechanism truly acts on, from the hidden catalogue),
        ``matched`` (``winner_why`` equals the dominant pathology), ``winner_delta_pp,
        winner_z`` (measured against its parent), ``winner_true_delta_pp`` and
        ``true_train_delta_pp`` (selected harness vs baseline, ground truth).

    Examples
    --------
    >>> table = pathology_matching("tiny", profiles=["qwen-runaway"], rounds=1, progress=False)
    >>> table[["profile", "dominant_pathology", "winner", "matched"]]
            profile dominant_pathology winner  matched
    0  qwen-runaway   thinking-runaway   None    False
    """
    root = _root(root, "pathology_matching")
    grid = [(p, int(s)) for p in profiles for s in seeds]
    rows = []
    for name, seed in tqdm(grid, desc=f"{preset}: profile × seed", disable=not progress):
        with simulated_run(preset, root=root, seed=seed, profile=name, policy="gated",
                           rounds=rounds, gate=gate, children=children,
                           recombinations=recombinations, finalize=False) as run:
            baseline = run.trials(split="train", candidate=BASELINE)
            # the cold start's K repeats: the adaptive design extends mixed tasks later
            shares = _baseline_shares(baseline[baseline["repeat"] < run.config.gate.k])
            chosen = policy.reported(run.archive(), run.trials(split="train"),
                                     policy=run.config.policy, k=run.config.gate.k)
            winner = _winner(run, chosen)
            true_gain = run.agent.true_effect(run.harness(chosen), run.harness(BASELINE),
                                              "train")
        mech = None if winner is None else winner["mechanism"]
        rows.append({
            "preset": preset, "profile": name, "family": sim.PROFILES[name].family,
            "seed": seed, "dominant_pathology": shares["pathology"].iloc[0],
            "dominant_share": float(shares["share"].iloc[0]), "selected": chosen,
            "winner": None if winner is None else winner["child"],
            "winner_mechanism": mech,
            "winner_why": None if winner is None else winner["why"],
            "winner_targets": CATALOGUE[mech].why if mech in CATALOGUE else None,
            "matched": winner is not None and winner["why"] == shares["pathology"].iloc[0],
            "winner_delta_pp": np.nan if winner is None else winner["delta_pp"],
            "winner_z": np.nan if winner is None else winner["z"],
            "winner_true_delta_pp": np.nan if winner is None else winner["true_delta_pp"],
            "true_train_delta_pp": true_gain,
        })
    return pd.DataFrame(rows)


def aa_noise(preset: str = "appworld", *, reruns: int = 5, seed: int = 0, root=None,
             progress: bool = True) -> pd.DataFrame:
    """A/A tests: the same baseline harness scored again under other trial seeds.

    The suite is fixed by ``seed``; the baseline is scored on the train split once
    with run seed ``seed`` and once more with each of ``seed + 1 ... seed + reruns``. Each
    re-run is compared with the first by :func:`gsme.stats.aa_test`: the true effect is
    0, so every ``credit`` or ``cull`` is a false alarm and ``delta_pp`` is pure drift.

    Returns
    -------
    DataFrame
        One row per re-run: ``preset, rerun_seed`` then the columns of
        :func:`gsme.stats.aa_test` (``candidate`` is ``rerun-<seed>``, ``parent``
        ``baseline``; ``delta_pp, z, p_value, decision, sd_pp, mde_pp`` ...), plus
        ``activation_rate`` (NaN: a re-run adds no patch) and ``gate_failed``
        (``significance`` unless credited), so the frame is a decisions frame that
        :func:`gsme.plot.z_forest` draws.

    Examples
    --------
    >>> aa_noise("tiny", reruns=1, progress=False)["decision"].isin(
    ...     ["credit", "cull", "inconclusive"]).all()
    np.True_
    """
    if reruns < 1:
        raise ValueError(f"reruns must be at least 1, got {reruns!r}")
    root = _root(root, "aa_noise")
    scored = []
    for s in tqdm(range(seed, seed + reruns + 1), desc=f"{preset}: A/A re-runs",
                  disable=not progress):
        with Run.create(root / f"aa-{preset}-s{seed}-run{s}",
                        agent=sim.preset(preset, suite_seed=seed),
                        run_config=RunConfig(run_seed=s)) as run:
            trials = evolve.cold_start(run, progress=False)
        scored.append(trials.assign(candidate=BASELINE if s == seed else f"rerun-{s}"))
    trials = pd.concat(scored, ignore_index=True)
    tests = [stats.aa_test(trials, candidate=BASELINE, rerun=f"rerun-{s}").assign(rerun_seed=s)
             for s in range(seed + 1, seed + reruns + 1)]
    out = pd.concat(tests, ignore_index=True).assign(preset=preset, activation_rate=np.nan)
    out["gate_failed"] = pd.Series(np.where(out["decision"] == "credit", None, "significance"),
                                   dtype=object)
    return out[["preset", "rerun_seed", *[c for c in out.columns
                                          if c not in ("preset", "rerun_seed")]]]


def _root(root, experiment: str | None) -> Path:
    """``root`` (a new temporary directory when None), or a new ``experiment-*`` folder in it."""
    root = Path(tempfile.mkdtemp(prefix="gsme-experiments-")) if root is None else Path(root)
    if experiment is None:
        return root
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{experiment}-", dir=root))


def _baseline_shares(trials: pd.DataFrame) -> pd.DataFrame:
    """Pathology shares of one candidate's failing valid train trials, most frequent first."""
    shares = analysis.pathology_shares(trials, split="train")
    return shares.drop(columns="candidate").reset_index(drop=True)


def _winner(run: Run, chosen: str) -> dict | None:
    """The earliest credited mutation whose patch ``chosen``'s harness carries, or None."""
    if chosen == BASELINE:
        return None
    carried = {p.id for p in read_patches(run.harness(chosen))}
    cands = run.candidates()
    mine = cands[(cands["kind"] == "mutation") & cands["patch_id"].isin(carried)]
    audit = audit_decisions(run)
    audit = audit[(audit["decision"] == "credit") & audit["child"].isin(mine["candidate"])]
    if audit.empty:
        return None
    best = audit.sort_values(["round", "child"], kind="stable").iloc[0]
    why = mine.set_index("candidate").loc[best["child"], "why"]
    return {**best.to_dict(), "why": why}
