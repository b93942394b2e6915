"""Experiments over many *simulated* runs: the paper's tables, crediting policies, ablations.

Each function drives the embedded simulator (:mod:`gsme.sim`) through the ordinary loop
(:func:`gsme.evolve.evolve`, :meth:`gsme.run.Run.finalize`) and sets what the loop measured
beside the simulator's ground truth (:meth:`gsme.sim.SimAgent.true_effect`), which the loop
itself never sees. Every result is simulated; every function returns one tidy DataFrame.

Runs are written under ``root`` (a fresh temporary directory when None): each call makes
its own new sub-directory there (``<experiment>-<random>``), one directory per run inside
it, so calls never collide and any run can be reopened with :meth:`gsme.run.Run.open`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from gsme import analysis, evolve, report, sim, stats
from gsme.evolvers.base import DIAGNOSIS_COLUMNS, Evolver
from gsme.evolvers.rule import RuleEvolver
from gsme.evolvers.templates import FALLBACK, TEMPLATES, changes
from gsme.harness import harness_files
from gsme.patch import Patch
from gsme.run import POLICIES, Run, RunConfig
from gsme.sim.catalogue import CATALOGUE

__all__ = [
    "PAPER_PRESETS",
    "RUNAWAY_MECHANISMS",
    "MechanismEvolver",
    "aa_noise",
    "ablation",
    "audit_decisions",
    "baseline_pathologies",
    "compare_policies",
    "mechanism_patch",
    "pathology_matching",
    "preset_table",
    "simulated_run",
]

PAPER_PRESETS = tuple(p for p in sim.PRESETS if p != "tiny")
"""The seven simulated presets named after the paper's domains, in the paper's order."""

RUNAWAY_MECHANISMS = ("runaway-recovery", "token-budget-16x", "thinking-off")
"""The paper's reasoning-runaway ablation: selective recovery, a 16× budget, thinking off."""


def simulated_run(preset: str, *, root=None, seed: int = 0, profile: str | None = None,
                  policy: str = "gated", rounds: int = 3, children: int = 3,
                  recombinations: int = 1, finalize: bool = True,
                  progress: bool = False) -> Run:
    """Create, evolve and (by default) seal one run of the rule evolver on a preset.

    The agent is ``gsme.sim.preset(preset, seed=seed, profile=profile)``, the evolver
    ``RuleEvolver(seed=seed)`` and the run's config ``RunConfig(seed=seed, policy=policy)``;
    both specs are stored, so ``Run.open(run.path)`` rebuilds them.

    Parameters
    ----------
    preset : str
        One of :data:`gsme.sim.PRESETS`.
    root : path-like, optional
        Parent directory of the run; a fresh temporary directory when None. The run goes
        to ``root/<preset>-<profile>-<policy>-s<seed>``, which must not exist yet.
    seed : int
        Seed of the benchmark, the evolver and the run.
    profile : str, optional
        One of :data:`gsme.sim.PROFILES`; default: the preset's own.
    policy : {"gated", "greedy", "peak"}
        The crediting policy.
    rounds, children, recombinations : int
        Rounds to run, children and recombinations per round.
    finalize : bool
        Score the sealed test split once at the end (:meth:`gsme.run.Run.finalize`).
    progress : bool
        Show the per-round scoring progress bars.

    Returns
    -------
    gsme.run.Run

    Examples
    --------
    >>> run = simulated_run("tiny", rounds=1)
    >>> run.sealed, run.agent.name
    (True, 'simulated:tiny/qwen-careless')
    """
    agent = sim.preset(preset, seed=seed, profile=profile)
    profile_name = agent.profile.name
    path = _root(root, None) / f"{preset}-{profile_name}-{policy}-s{seed}"
    run = Run.create(path, agent=agent, evolver=RuleEvolver(seed=seed),
                     config=RunConfig(seed=seed, policy=policy),
                     agent_spec={"kind": "sim", "preset": preset, "seed": seed,
                                 "profile": profile_name},
                     evolver_spec={"kind": "rule", "seed": seed})
    evolve.evolve(run, rounds=rounds, children_per_round=children,
                  recombinations_per_round=recombinations, progress=progress)
    if finalize:
        run.finalize(progress=progress)
    return run


def audit_decisions(run: Run) -> pd.DataFrame:
    """The run's decisions beside the simulator's true effect of each child on its parent.

    Parameters
    ----------
    run : gsme.run.Run
        A run whose agent has ground truth (``true_effect``), i.e. a simulated one.

    Returns
    -------
    DataFrame
        :meth:`gsme.run.Run.decisions` (with ``round``, ``policy``, ``kept``) plus
        ``mechanism`` (of the patch the child adds; None for a recombination),
        ``true_delta_pp`` (the exact effect of the child over its parent on the
        decision's split, in pp), ``true_sealed_delta_pp`` (the same on the test split,
        from ground truth: nothing is scored), ``false_credit`` (kept although its true
        effect is ≤ 0) and ``overfit`` (kept, truly better on the decision's split but
        not on the test split).

    Raises
    ------
    TypeError
        When the run's agent has no ground truth.
    """
    if not hasattr(run.agent, "true_effect"):
        raise TypeError(f"run.agent {run.agent.name!r} has no ground truth (true_effect); "
                        "audits need a simulated agent (gsme.sim)")
    decided = run.decisions()
    mechanisms = dict(zip(*evolve.history(run)[["candidate", "mechanism"]].to_numpy().T))
    dirs = [(run.harness_dir(c), run.harness_dir(p))
            for c, p in zip(decided["candidate"], decided["parent"])]
    out = decided.assign(
        mechanism=pd.Series([mechanisms.get(c) for c in decided["candidate"]],
                            index=decided.index, dtype=object),
        true_delta_pp=np.asarray([run.agent.true_effect(c, p, s) for (c, p), s
                                  in zip(dirs, decided["split"])], dtype=np.float64),
        true_sealed_delta_pp=np.asarray([run.agent.true_effect(c, p, "test")
                                         for c, p in dirs], dtype=np.float64))
    kept = out["kept"].astype(bool)
    out["false_credit"] = kept & (out["true_delta_pp"] <= 0)
    out["overfit"] = kept & (out["true_delta_pp"] > 0) & (out["true_sealed_delta_pp"] <= 0)
    return out


def preset_table(presets=PAPER_PRESETS, *, rounds: int = 5, seed: int = 0, root=None,
                 children: int = 3, recombinations: int = 1,
                 progress: bool = True) -> pd.DataFrame:
    """The paper's results table, produced by one simulated gated run per preset.

    Parameters
    ----------
    presets : sequence of str
        Presets of :data:`gsme.sim.PRESETS`; default the seven of :data:`PAPER_PRESETS`.
    rounds, seed, root, children, recombinations
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
        run = simulated_run(name, root=root, seed=seed, rounds=rounds, children=children,
                            recombinations=recombinations)
        rows.append(report.run_table(run).assign(run_dir=str(run.path)))
    table = pd.concat(rows, ignore_index=True)
    table.insert(0, "preset", pd.Series(list(presets), dtype=object))
    return table


def compare_policies(preset: str, *, seeds=(0, 1, 2), policies=POLICIES, rounds: int = 3,
                     root=None, children: int = 3, recombinations: int = 1,
                     progress: bool = True) -> pd.DataFrame:
    """Crediting policies on the same seeds, audited against ground truth.

    Every (policy, seed) pair is one run with the same benchmark, evolver seed and trial
    seed; only the policy deciding which children are kept differs (``gated``: credited
    by the three gates; ``greedy``: any train gain; ``peak``: like greedy, and the best
    train rate ever scored is reported).

    Parameters
    ----------
    preset : str
        One of :data:`gsme.sim.PRESETS`.
    seeds : sequence of int
        Seeds, each used by every policy.
    policies : sequence of str
        Subset of :data:`gsme.run.POLICIES`.
    rounds, root, children, recombinations
        As in :func:`simulated_run`.
    progress : bool
        Show a progress bar over the runs.

    Returns
    -------
    DataFrame
        One row per (policy, seed): ``preset, policy, seed``, ``run`` (``<policy>/s<seed>``,
        a label for :func:`gsme.plot.retention`), ``selected``; ``kept`` (children
        the policy kept) and ``false_credits`` (kept children whose true train effect on
        their parent is ≤ 0) and ``overfit_credits`` (kept children truly better on train
        but not on test), see :func:`audit_decisions`; ``false_credit_share``
        (false_credits / kept, NaN when none was kept); ``train_delta_pp,
        sealed_delta_pp, retention_pct, sealed_decision`` (measured, selected harness vs
        baseline); ``true_train_delta_pp, true_sealed_delta_pp``; ``trials_spent``;
        ``run_dir``.
    """
    root = _root(root, "compare_policies")
    unknown = sorted(set(policies) - set(POLICIES))
    if unknown:
        raise ValueError(f"policies must be among {list(POLICIES)}, got unknown {unknown}")
    grid = [(p, int(s)) for p in policies for s in seeds]
    rows = []
    for policy, seed in tqdm(grid, desc=f"{preset}: policy × seed", disable=not progress):
        run = simulated_run(preset, root=root, seed=seed, policy=policy, rounds=rounds,
                            children=children, recombinations=recombinations)
        audit = audit_decisions(run)
        table = report.run_table(run).iloc[0]
        kept = int(audit["kept"].sum())
        false = int(audit["false_credit"].sum())
        rows.append({
            "preset": preset, "policy": policy, "seed": seed, "run": f"{policy}/s{seed}",
            "selected": table["selected"],
            "kept": kept, "false_credits": false,
            "overfit_credits": int(audit["overfit"].sum()),
            "false_credit_share": false / kept if kept else np.nan,
            **{c: table[c] for c in ("train_delta_pp", "sealed_delta_pp", "retention_pct",
                                     "sealed_decision", "true_train_delta_pp",
                                     "true_sealed_delta_pp", "trials_spent")},
            "run_dir": str(run.path),
        })
    return pd.DataFrame(rows)


def mechanism_patch(mechanism: str, harness_dir, *, why: str | None = None,
                    env_gate: str = "") -> Patch:
    """A patch that applies the template of ``mechanism`` to the harness at ``harness_dir``.

    The patch's id and beacon are the mechanism's name; its lever is the template's.

    Parameters
    ----------
    mechanism : str
        A mechanism with a template in :mod:`gsme.evolvers.templates` (all the catalogue's
        named fixes, e.g. ``"runaway-recovery"``, ``"thinking-off"``).
    harness_dir : path-like
        The harness the patch will apply to (its files decide the concrete changes).
    why : str, optional
        The failure mode the patch declares; default the one the catalogue says the
        mechanism acts on.
    env_gate : str
        The patch's env gate (empty: every task).

    Returns
    -------
    gsme.patch.Patch

    Raises
    ------
    ValueError
        When the mechanism has no template, no failure mode is known for it, or the
        template cannot change this harness (e.g. the setting is already at its target).

    Examples
    --------
    >>> from gsme._paths import SEED_HARNESS
    >>> patch = mechanism_patch("thinking-off", SEED_HARNESS)
    >>> patch.where, patch.why, patch.changes[0].new
    ('config', 'thinking-runaway', 'thinking_budget = 0')
    """
    known = {t.mechanism: t for group in (*TEMPLATES.values(), FALLBACK) for t in group}
    if mechanism not in known:
        raise ValueError(f"mechanism {mechanism!r} has no template; known: {sorted(known)}")
    if why is None:
        why = CATALOGUE[mechanism].why if mechanism in CATALOGUE else None
        if why is None:
            raise ValueError(f"mechanism {mechanism!r} acts on no particular failure mode; "
                             "pass why=...")
    template = known[mechanism]
    made = changes(template, harness_files(harness_dir), beacon=mechanism, why=why, tasks=())
    if not made:
        raise ValueError(f"mechanism {mechanism!r} changes nothing in harness {harness_dir}")
    return Patch(id=mechanism, where=template.where, why=why, mechanism=mechanism,
                 beacon=mechanism, env_gate=env_gate, changes=made,
                 rationale=f"{mechanism} applied as an experiment, not from a diagnosis.")


class MechanismEvolver(Evolver):
    """An evolver that proposes exactly the named mechanisms, for controlled experiments.

    It diagnoses nothing and proposes :func:`mechanism_patch` of each mechanism, in order,
    for whatever parent it is given; the loop then scores and gates the children like any
    others. Use it to put chosen patches through the gates side by side (an ablation).

    Parameters
    ----------
    mechanisms : sequence of str
        Mechanisms with a template (see :func:`mechanism_patch`).
    env_gate : str
        Env gate of every proposed patch.

    Examples
    --------
    >>> ev = MechanismEvolver(["thinking-off"])
    >>> from gsme._paths import SEED_HARNESS
    >>> [p.mechanism for p in ev.propose(SEED_HARNESS, None, None, None, n=3)]
    ['thinking-off']
    """

    name = "mechanisms"

    def __init__(self, mechanisms, *, env_gate: str = ""):
        self.mechanisms = tuple(mechanisms)
        if not self.mechanisms:
            raise ValueError("mechanisms must name at least one mechanism")
        self.env_gate = env_gate

    def diagnose(self, failures: pd.DataFrame, *, parent=None, vocabulary=None) -> pd.DataFrame:
        """No diagnosis: an empty frame of :data:`gsme.evolvers.DIAGNOSIS_COLUMNS`."""
        return pd.DataFrame({c: pd.Series(dtype=object) for c in DIAGNOSIS_COLUMNS})

    def propose(self, parent, diagnoses, archive, vocabulary, *, n: int,
                history=None) -> list[Patch]:
        """The first ``n`` mechanisms as patches of the harness at ``parent``."""
        return [mechanism_patch(m, parent, env_gate=self.env_gate)
                for m in self.mechanisms[:n]]


def ablation(preset: str = "livecode", *, mechanisms=RUNAWAY_MECHANISMS, seeds=(0,),
             profile: str | None = None, root=None, progress: bool = True) -> pd.DataFrame:
    """Put one candidate per mechanism through the gates against the baseline.

    Per seed, one run: the baseline is scored on the train split, then one round of
    :class:`MechanismEvolver` commits a child of the baseline per mechanism, scores it and
    gates it. Nothing is sealed: the true effects come from the simulator.

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
    root : path-like, optional
        Parent directory of the runs.
    progress : bool
        Show a progress bar over the seeds.

    Returns
    -------
    DataFrame
        One row per (seed, mechanism): ``preset, seed, mechanism, kind`` (the catalogue's
        hidden kind, e.g. targeted, costly, harmful), then the decision of
        :func:`audit_decisions` (``candidate, parent, ..., delta_pp, z, p_value,
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
        agent = sim.preset(preset, seed=seed, profile=profile)
        run = Run.create(root / f"ablation-{preset}-{agent.profile.name}-s{seed}", agent=agent,
                         evolver=MechanismEvolver(mechanisms), config=RunConfig(seed=seed),
                         agent_spec={"kind": "sim", "preset": preset, "seed": seed,
                                     "profile": agent.profile.name})
        evolve.run_round(run, children=len(mechanisms), recombinations=0, progress=False)
        audit = audit_decisions(run)
        tokens = run.trials(split="train")
        tokens = tokens[tokens["infra_ok"]].groupby("candidate")["tokens"].mean()
        rows.append(audit.assign(
            preset=preset, seed=seed,
            kind=[CATALOGUE[m].kind if m in CATALOGUE else "unknown" for m in audit["mechanism"]],
            tokens_ratio=audit["candidate"].map(tokens) / tokens["baseline"],
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
        run = Run.create(root / f"baseline-{preset}-{name}-s{seed}",
                         agent=sim.preset(preset, seed=seed, profile=name),
                         config=RunConfig(seed=seed))
        trials = evolve.cold_start(run, progress=False)
        frames.append(_baseline_shares(trials).assign(
            preset=preset, profile=name, family=sim.PROFILES[name].family))
    cols = ["preset", "profile", "family", "pathology", "n", "share"]
    return pd.concat(frames, ignore_index=True)[cols]


def pathology_matching(preset: str = "appworld", *, profiles=tuple(sim.PROFILES), seeds=(0,),
                       rounds: int = 3, root=None, children: int = 3,
                       recombinations: int = 1, progress: bool = True) -> pd.DataFrame:
    """Does the winning patch target the model's dominant pathology? One run per profile.

    Per (profile, seed) a gated run evolves on ``preset`` with that model profile. The
    *dominant pathology* is the most frequent ground-truth pathology of the baseline's
    failing train trials. The *winning patch* is the first credited mutation (earliest
    round, then id) whose patch the selected harness carries: the fix the gates credited
    first on the way to the selected harness, the one the baseline needed most.

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
    """
    root = _root(root, "pathology_matching")
    grid = [(p, int(s)) for p in profiles for s in seeds]
    rows = []
    for name, seed in tqdm(grid, desc=f"{preset}: profile × seed", disable=not progress):
        run = simulated_run(preset, root=root, seed=seed, profile=name, rounds=rounds,
                            children=children, recombinations=recombinations, finalize=False)
        shares = _baseline_shares(run.trials(split="train", candidate="baseline"))
        chosen = evolve.selected(run)
        winner = _winner(run, chosen)
        mech = None if winner is None else winner["mechanism"]
        base = run.harness_dir("baseline")
        rows.append({
            "preset": preset, "profile": name, "family": sim.PROFILES[name].family,
            "seed": seed, "dominant_pathology": shares["pathology"].iloc[0],
            "dominant_share": float(shares["share"].iloc[0]), "selected": chosen,
            "winner": None if winner is None else winner["candidate"],
            "winner_mechanism": mech,
            "winner_why": None if winner is None else winner["why"],
            "winner_targets": CATALOGUE[mech].why if mech in CATALOGUE else None,
            "matched": winner is not None and winner["why"] == shares["pathology"].iloc[0],
            "winner_delta_pp": np.nan if winner is None else winner["delta_pp"],
            "winner_z": np.nan if winner is None else winner["z"],
            "winner_true_delta_pp": np.nan if winner is None else winner["true_delta_pp"],
            "true_train_delta_pp": run.agent.true_effect(run.harness_dir(chosen), base,
                                                         "train"),
        })
    return pd.DataFrame(rows)


def aa_noise(preset: str = "appworld", *, reruns: int = 5, seed: int = 0, root=None,
             progress: bool = True) -> pd.DataFrame:
    """A/A tests: the same baseline harness scored again under other trial seeds.

    The benchmark is fixed by ``seed``; the baseline is scored on the train split once
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
        run = Run.create(root / f"aa-{preset}-s{seed}-run{s}", agent=sim.preset(preset, seed=seed),
                         config=RunConfig(seed=s))
        trials = evolve.cold_start(run, progress=False)
        scored.append(trials.assign(candidate="baseline" if s == seed else f"rerun-{s}"))
    trials = pd.concat(scored, ignore_index=True)
    tests = [stats.aa_test(trials, candidate="baseline", rerun=f"rerun-{s}").assign(rerun_seed=s)
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
    if chosen == "baseline":
        return None
    carried = {p.id for p in run.repo.patches_of(chosen)}
    cands = run.candidates()
    mine = cands[(cands["kind"] == "mutation") & cands["patch_id"].isin(carried)]
    audit = audit_decisions(run)
    audit = audit[(audit["decision"] == "credit") & audit["candidate"].isin(mine["candidate"])]
    if audit.empty:
        return None
    best = audit.sort_values(["round", "candidate"], kind="stable").iloc[0]
    why = mine.set_index("candidate").loc[best["candidate"], "why"]
    return {**best.to_dict(), "why": why}
