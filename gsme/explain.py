"""Why a candidate was kept: its patch, its gate and its trials beside its parent's.

The frames the explorer (:mod:`gsme.widgets`) and the run viewer (:mod:`gsme.view`) show,
read from a run (:class:`gsme.run.Run`, open read-only or not) or, for
:func:`paired_trials`, from a trials frame alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from gsme import archive, designs, policy, prior, report, schema, stats
from gsme.schema import BASELINE, split_ids

__all__ = ["CHANGES", "archive_progress", "archive_table", "elite_names", "keep_reasons",
           "paired_trials", "patch_details", "selected", "train_rates", "transcripts",
           "why_levels"]

#: The posterior interval :func:`keep_reasons` gives the expected effect (two-sided).
INTERVAL = 0.90

#: What happened on one repeat of a task from parent to child (:func:`paired_trials`).
CHANGES = ("fixed", "broken", "both_failed", "both_passed", "invalid", "unpaired")

_SIDES = ("parent", "child")
_UNDECIDED = {"decision": None, "z": np.nan, "p_one_sided": np.nan, "delta_pp": np.nan,
              "kept": pd.NA}
_SIDE_COLUMNS = ("passed", "infra_ok", "pathology", "trajectory", "borrowed_from")


def patch_details(run, *, candidates=None, split: str = "train",
                  reasons: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each candidate's patch and the decision it earned: diff, rationale, gate, beacon.

    Parameters
    ----------
    run : gsme.run.Run
        A run, live or sealed (``candidates()``, ``decisions()``, ``trials(split=...)``,
        ``repo.diff``).
    candidates : list of str, optional
        The candidates to describe (default: every one, in the run's order).
    split : {"train", "test"}
        The split of the decision and of the trials the activation rate reads.
    reasons : DataFrame, optional
        The run's :func:`keep_reasons` on ``split`` when the caller has them already
        (computed here otherwise).

    Returns
    -------
    DataFrame
        One row per candidate: ``candidate, parent`` (the parent its decision compared it
        with, else its first parent; None for the baseline), ``kind, round, where, why,
        patch_id, env_gate, beacon, rationale`` (the evolver's, from the commit),
        ``n_trials`` (its valid trials on ``split``, borrowed ones included),
        ``activation_rate`` (the share of them in which its own beacon fired; NaN without a
        beacon or trials), ``decision, z, p_one_sided, delta_pp, kept`` (its decision on
        ``split``; None, NaN and NA when undecided; ``delta_pp`` is against the parent, on
        the repeats the decision read), ``diff`` (the unified ``git diff`` from the
        parent's harness to its own; from the empty tree for the baseline), ``train_rate,
        delta_vs_baseline_pp`` (:func:`train_rates`) and ``keep_reason``
        (:func:`keep_reasons`; None when undecided).

    Raises
    ------
    ValueError
        ``split`` is not a split, or a candidate is not in the run.

    Examples
    --------
    >>> from gsme import experiments
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> patch_details(run, candidates=["c0001"])[["candidate", "where", "why"]]
      candidate    where              why
    0     c0001  runtime  careless-submit
    >>> run.close()
    """
    _check_split(split)
    frame = run.candidates()
    if candidates is not None:
        wanted = [str(c) for c in candidates]
        unknown = sorted(set(wanted) - set(frame["candidate"]))
        if unknown:
            raise ValueError(f"candidates {unknown} are not in the run; it has "
                             f"{frame['candidate'].tolist()[:20]}")
        frame = frame.set_index("candidate").loc[wanted].reset_index()
    decisions = run.decisions()
    decisions = (decisions[decisions["split"] == split].drop_duplicates("child", keep="last")
                 .set_index("child"))
    trials = run.trials(split=split)
    valid = trials.loc[trials["infra_ok"].to_numpy(dtype=bool), ["candidate", "activated"]]
    fired = valid.groupby("candidate")["activated"].agg(["size", "mean"])
    rows = []
    for row in frame.itertuples(index=False):
        decided = row.candidate in decisions.index
        parents = split_ids(row.parents)
        parent = decisions.at[row.candidate, "parent"] if decided else (
            parents[0] if parents else None)
        n = int(fired["size"].get(row.candidate, 0))
        has_beacon = bool(row.beacon) and not pd.isna(row.beacon)
        gate = decisions.loc[row.candidate] if decided else {}
        rows.append({
            "candidate": row.candidate, "parent": parent, "kind": row.kind, "round": row.round,
            "where": row.where, "why": row.why, "patch_id": row.patch_id,
            "env_gate": row.env_gate, "beacon": row.beacon, "rationale": row.rationale,
            "n_trials": n,
            "activation_rate": float(fired["mean"][row.candidate]) if n and has_beacon
            else np.nan,
            **{c: gate.get(c, default) for c, default in _UNDECIDED.items()},
            "diff": run.diff(parent, row.candidate),
        })
    out = pd.DataFrame(rows, columns=[
        "candidate", "parent", "kind", "round", "where", "why", "patch_id", "env_gate",
        "beacon", "rationale", "n_trials", "activation_rate", "decision", "z", "p_one_sided",
        "delta_pp", "kept", "diff"])
    rates = train_rates(run).set_index("candidate")
    out["train_rate"] = out["candidate"].map(rates["rate"]).astype(np.float64)
    out["delta_vs_baseline_pp"] = out["candidate"].map(
        rates["delta_vs_baseline_pp"]).astype(np.float64)
    reasons = (keep_reasons(run, split=split) if reasons is None else reasons
               ).drop_duplicates("child", keep="last")
    out["keep_reason"] = out["candidate"].map(
        reasons.set_index("child")["keep_reason"]).astype(object)
    out["keep_reason"] = out["keep_reason"].where(out["keep_reason"].notna(), None)
    return out.astype({"n_trials": np.int64, "z": np.float64, "p_one_sided": np.float64,
                       "delta_pp": np.float64, "kept": "boolean"})


def paired_trials(trials, *, parent: str, child: str, split: str = "train", task_id=None,
                  pathology=None, change=None) -> pd.DataFrame:
    """The parent's and the child's trials of each task side by side, repeat by repeat.

    Each side's row of a (task, repeat) is its last attempt (a re-run after an
    infrastructure failure replaces the attempt before it).

    Parameters
    ----------
    trials : DataFrame
        A trials frame (:data:`gsme.schema.TRIALS`).
    parent, child : str
        The two candidates.
    split : {"train", "test"}
        The split compared.
    task_id, pathology, change : str or list of str, optional
        Keep only these tasks; the rows where either side's failure has one of these
        pathologies; the rows whose ``change`` is one of these (:data:`CHANGES`).

    Returns
    -------
    DataFrame
        One row per task and repeat either side holds, sorted by ``task_id, repeat``:
        ``task_id, repeat, change`` (``fixed``: the parent failed and the child passed;
        ``broken``: the reverse; ``both_failed``, ``both_passed``; ``invalid``: a side's
        environment failed; ``unpaired``: one side has no such repeat), then per side
        ``passed_parent, passed_child, infra_ok_parent, infra_ok_child, pathology_parent,
        pathology_child, trajectory_parent, trajectory_child`` (the transcript
        references), ``borrowed_from_parent, borrowed_from_child`` (NA where a side is
        missing).

    Raises
    ------
    ValueError
        ``split`` is not a split, or ``change`` holds a value not in :data:`CHANGES`.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": ["p", "c"], "task_id": "a", "split": "train",
    ...                   "repeat": 0, "passed": [False, True]})
    >>> paired_trials(t, parent="p", child="c")[["task_id", "repeat", "change"]]
      task_id  repeat change
    0       a       0  fixed
    """
    _check_split(split)
    changes = _as_list(change, "change")
    bad = sorted(set(changes or ()) - set(CHANGES))
    if bad:
        raise ValueError(f"change must be among {list(CHANGES)}, got {bad}")
    frame = schema.as_trials(trials)
    frame = frame[frame["split"] == split].sort_values("attempt", kind="stable")
    sides = []
    for side, name in zip(_SIDES, (parent, child)):
        rows = frame[frame["candidate"] == name].drop_duplicates(["task_id", "repeat"],
                                                                 keep="last")
        sides.append(rows[["task_id", "repeat", *_SIDE_COLUMNS]]
                     .rename(columns={c: f"{c}_{side}" for c in _SIDE_COLUMNS}))
    out = sides[0].merge(sides[1], on=["task_id", "repeat"], how="outer")
    out = out.sort_values(["task_id", "repeat"], kind="stable", ignore_index=True)
    for side in _SIDES:
        for column in ("passed", "infra_ok"):
            out[f"{column}_{side}"] = out[f"{column}_{side}"].astype("boolean")
    out.insert(2, "change", _changes(out))
    keep = np.ones(len(out), bool)
    tasks = _as_list(task_id, "task_id")
    if tasks is not None:
        keep &= out["task_id"].isin(tasks).to_numpy()
    labels = _as_list(pathology, "pathology")
    if labels is not None:
        keep &= (out["pathology_parent"].isin(labels) | out["pathology_child"].isin(labels)
                 ).to_numpy()
    if changes is not None:
        keep &= out["change"].isin(changes).to_numpy()
    columns = ["task_id", "repeat", "change", *(f"{c}_{s}" for c in _SIDE_COLUMNS
                                                for s in _SIDES)]
    return out.loc[keep, columns].reset_index(drop=True)


def archive_progress(run) -> pd.DataFrame:
    """How the archive grew round by round: elites, coverage and the best elite's rate.

    Returns
    -------
    DataFrame
        One row per round from 0 (the cold start) to the last: ``round, num_elites,
        coverage`` (of the where × why cells of :func:`why_levels`), ``best_candidate``
        (the archive's best elite; None while empty) and ``best_rate`` (its train rate;
        NaN while empty).

    Examples
    --------
    >>> from gsme import experiments
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> archive_progress(run)["round"].tolist()
    [0, 1]
    >>> run.close()
    """
    n_cells = len(schema.LEVERS) * len(why_levels(run))
    last = int(run.candidates()["round"].max())
    rows = [archive.summary(run.archive(round=r), n_cells=n_cells).assign(round=r)
            for r in range(last + 1)]
    out = pd.concat(rows, ignore_index=True)
    return out[["round", "num_elites", "coverage", "best_candidate", "best_rate"]]


def elite_names(elites: pd.DataFrame, *, why_levels) -> pd.DataFrame:
    """The where × why table of the elites' candidate ids, for :func:`gsme.plot.occupancy`.

    Returns
    -------
    DataFrame
        Index ``where`` (the levers), columns ``why`` (``why_levels``); each cell its
        elite's candidate id, None when empty (the shape of :func:`gsme.archive.occupancy`).

    Examples
    --------
    >>> from gsme import evolve, sim
    >>> from gsme.evolvers import RuleEvolver
    >>> from gsme.run import Run
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
    >>> _ = evolve.evolve(run, rounds=2, progress=False)
    >>> table = elite_names(run.archive(), why_levels=why_levels(run))
    >>> table.loc["runtime", ["careless-submit", "context-overflow"]].fillna("").tolist()
    ['c0001', '']
    >>> run.close()
    """
    schema.validate(elites, "archive")
    table = pd.DataFrame(None, index=pd.Index(schema.LEVERS, name="where"),
                         columns=pd.Index(list(why_levels), name="why"), dtype=object)
    for where, why, candidate in zip(elites["where"], elites["why"], elites["candidate"]):
        table.loc[where, why] = candidate
    return table


def selected(run) -> str:
    """The harness the run reports: the sealed one once sealed, else the one its keep
    policy would seal now (:func:`gsme.policy.reported`).

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1, policy="greedy")
    >>> selected(run)
    'c0001'
    >>> run.close()
    """
    sealed = run.sealed_result
    if sealed is not None:
        return str(sealed.loc[sealed["role"] == "selected", "candidate"].iloc[0])
    return policy.reported(run.archive(), run.trials(split="train"),
                           policy=run.config.policy, k=run.config.gate.k)


def why_levels(run) -> list[str]:
    """Every why of the run: its vocabulary's labels in order, then any other the archive
    or the candidates use.

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1, finalize=False)
    >>> why_levels(run)[:3]
    ['thinking-runaway', 'premature-finalization', 'careless-submit']
    >>> run.close()
    """
    found = pd.concat([run.candidates()["why"], run.archive()["why"]]).dropna()
    labels = list(run.vocabulary.labels)
    return labels + sorted(set(found) - set(labels))


def transcripts(run, *, text: bool = True) -> pd.DataFrame:
    """Every stored transcript once, with the trial that wrote it.

    A borrowed trial reuses its source's transcript, which is listed under the source.
    With ``text=False`` the texts are not read (a large run's index; read each with
    ``run.transcript(ref)`` when needed).

    Returns
    -------
    DataFrame
        One row per transcript, sorted by ``split, candidate, task_id, repeat, attempt``:
        ``candidate, task_id, split, repeat, attempt, passed, infra_ok, pathology,
        trajectory`` (its reference) and, with ``text``, ``text``.

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1, finalize=False)
    >>> texts = transcripts(run)
    >>> len(texts), texts["text"].iloc[0].splitlines()[0]
    (366, 'task: Small shell task: fix the failing step')
    >>> run.close()
    """
    trials = run.trials()  # in key order: candidate, task_id, split, repeat, attempt
    own = np.flatnonzero((trials["trajectory"].notna() & trials["borrowed_from"].isna())
                         .to_numpy())
    own = own[~trials["trajectory"].iloc[own].duplicated().to_numpy()]
    # a stable sort by split puts the key order in split, candidate, task, repeat order
    own = own[np.argsort(trials["split"].to_numpy()[own], kind="stable")]
    out = trials[["candidate", "task_id", "split", "repeat", "attempt", "passed", "infra_ok",
                  "pathology", "trajectory"]].take(own).reset_index(drop=True)
    if text:
        out["text"] = [run.transcript(ref) for ref in out["trajectory"]]
    return out


def archive_table(run, *, round: int | None = None) -> pd.DataFrame:
    """The archive after ``round`` as every surface shows it: each elite's ``rate`` is its
    train rate of :func:`train_rates` (first ``k`` repeats of every task), not the rate of
    the repeats its decision read, so an elite shows one rate everywhere.

    Returns
    -------
    DataFrame
        The archive frame (:data:`gsme.schema.FRAMES` ``archive``: ``where, why,
        candidate, rate, delta_pp`` (vs its parent, on its decision's repeats), ``z,
        round, credited``) with ``rate`` replaced and ``delta_vs_baseline_pp`` added.

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1, finalize=False, policy="greedy")
    >>> table, rates = archive_table(run), train_rates(run).set_index("candidate")
    >>> bool(table.loc[0, "rate"] == rates.loc[table.loc[0, "candidate"], "rate"])
    True
    >>> run.close()
    """
    elites = run.archive(round=round)
    rates = train_rates(run).set_index("candidate")
    out = elites.assign(rate=elites["candidate"].map(rates["rate"]).astype(np.float64))
    out["delta_vs_baseline_pp"] = out["candidate"].map(rates["delta_vs_baseline_pp"]).astype(
        np.float64)
    return out


def train_rates(run) -> pd.DataFrame:
    """Each candidate's train rate as every surface shows it: the mean per-task pass rate
    over the first ``k`` repeats of every train task (:func:`gsme.stats.candidate_rates`,
    ``k`` the gate's; unbiased under the adaptive design), and its Δ against the baseline.

    Returns
    -------
    DataFrame
        ``candidate, n_tasks`` (train tasks with a valid repeat among the first ``k``),
        ``rate`` and ``delta_vs_baseline_pp`` (rate minus the baseline's, pp).

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1, finalize=False)
    >>> train_rates(run)[["candidate", "delta_vs_baseline_pp"]].head(2).round(1)
      candidate  delta_vs_baseline_pp
    0  baseline                   0.0
    1     c0001                   4.2
    >>> run.close()
    """
    rates = stats.candidate_rates(run.trials(split="train"), k=run.config.gate.k)
    base = rates.loc[rates["candidate"] == BASELINE, "rate"]
    base = float(base.iloc[0]) if len(base) else np.nan
    return rates.assign(delta_vs_baseline_pp=100.0 * (rates["rate"] - base))[
        ["candidate", "n_tasks", "rate", "delta_vs_baseline_pp"]]


def keep_reasons(run, *, split: str = "train") -> pd.DataFrame:
    """Why each decided child was kept or not: the gate's look, the learned mix, the rule.

    For each round the proposal mix is refitted exactly as the loop fitted it when it
    decided (:func:`gsme.policy.expected_effects` on the comparisons before the round and
    the round's own), so ``expected_delta_pp`` is the value the keep rule read.

    Returns
    -------
    DataFrame
        One row per decision on ``split``, in the run's order: ``child, parent, round,
        policy, decision, kept, credited``, ``look`` (the look that decided: 1 for the
        fixed design; NA for invalid and inactive children), ``boundary`` (the z the
        child had to reach at that look to be credited, :func:`gsme.designs.boundaries`;
        NaN without a look; with few changed tasks the exact sign-flip p decides instead),
        ``z, delta_pp`` (vs its parent, on the repeats the decision read),
        ``p_one_sided``, ``gate_reason`` (the gate's own words),
        ``expected_delta_pp, expected_low_pp, expected_high_pp`` (the posterior mean
        of its true effect under the learned mix and its central :data:`INTERVAL`
        interval on the mix's grid), ``p_positive``, ``worth_pp`` (the learned rule's
        threshold), ``comparisons`` (how many comparisons the mix learned from: earlier
        runs', earlier rounds' and this round's) and ``keep_reason`` (all of it in words).

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1, finalize=False)
    >>> keep_reasons(run)[["child", "look", "comparisons"]].head(2)
       child  look  comparisons
    0  c0001     3            3
    1  c0002     3            3
    >>> run.close()
    """
    _check_split(split)
    config, gate = run.config, run.config.gate
    decisions = run.decisions()
    decisions = decisions[decisions["split"] == split].reset_index(drop=True)
    bounds = designs.boundaries(gate)["boundary"].to_numpy()
    parts = []
    for r, decided in decisions.groupby("round", sort=False):
        past = run.comparisons(before_round=int(r))
        mix, count = policy.learned_mix(decided, past=past, keep=config.keep)
        post = prior.posterior(decided, mix, keep=config.keep)
        low, high = _posterior_interval(decided, mix, config.keep)
        measured = decided["decision"].isin(prior.LEARNED_DECISIONS).to_numpy()
        parts.append(pd.DataFrame({
            "expected_delta_pp": np.where(measured, post["expected_delta_pp"], np.nan),
            "expected_low_pp": np.where(measured, low, np.nan),
            "expected_high_pp": np.where(measured, high, np.nan),
            "p_positive": np.where(measured, post["p_positive"], np.nan),
            "comparisons": count}, index=decided.index))
    learned = (pd.concat(parts) if parts else pd.DataFrame(
        columns=["expected_delta_pp", "expected_low_pp", "expected_high_pp", "p_positive",
                 "comparisons"]))
    looked = decisions["decision"].isin(prior.LEARNED_DECISIONS)
    look = decisions["looks"].where(looked).astype("Int64")
    out = pd.DataFrame({
        "child": decisions["child"], "parent": decisions["parent"],
        "round": decisions["round"], "policy": config.policy,
        "decision": decisions["decision"], "kept": decisions["kept"].astype(bool),
        "credited": decisions["decision"] == "credit", "look": look,
        "boundary": [bounds[min(int(v), len(bounds)) - 1] if not pd.isna(v) else np.nan
                     for v in look],
        "z": decisions["z"], "p_one_sided": decisions["p_one_sided"],
        "delta_pp": decisions["delta_pp"],
        "gate_reason": decisions["reason"].where(decisions["reason"].notna(), None)})
    out = out.join(learned.reindex(decisions.index))
    out["worth_pp"] = config.keep.worth_pp
    out["comparisons"] = out["comparisons"].astype("Int64")
    out["keep_reason"] = [_keep_words(row) for row in out.itertuples()]
    return out


def _posterior_interval(decided: pd.DataFrame, mix: pd.DataFrame, config
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Central :data:`INTERVAL` interval of each child's true effect on the mix's grid:
    posterior weights ∝ mix weight × Normal(delta_pp; θ, se_pp²), se floored as in
    :func:`gsme.prior.posterior`."""
    effects, weight = mix["effect_pp"].to_numpy(), mix["weight"].to_numpy()
    delta = decided["delta_pp"].to_numpy(np.float64)
    se = np.maximum(decided["se_pp"].to_numpy(np.float64), config.se_floor_pp)
    low, high = np.full(len(delta), np.nan), np.full(len(delta), np.nan)
    known = ~(np.isnan(delta) | np.isnan(se))
    if known.any():
        log = sps.norm.logpdf(delta[known, None], effects[None, :], se[known, None])
        post = weight * np.exp(log - log.max(axis=1, keepdims=True))
        cdf = np.cumsum(post / post.sum(axis=1, keepdims=True), axis=1)
        tail = (1.0 - INTERVAL) / 2
        low[known] = effects[np.argmax(cdf >= tail - 1e-12, axis=1)]
        high[known] = effects[np.argmax(cdf >= 1.0 - tail - 1e-12, axis=1)]
    return low, high


def _keep_words(row) -> str:
    """One decision's reason, in words (a row of :func:`keep_reasons`)."""
    n = report.number
    verdict = ("kept: credited by the gate" if row.credited else
               f"{'kept without a credit' if row.kept else 'not kept'}: "
               + ("expected Δ above worth_pp" if row.kept else
                  "not credited, expected Δ not above worth_pp")
               if row.policy == "learned" else
               f"{'kept' if row.kept else 'not kept'}: Δ vs parent "
               f"{'above' if row.kept else 'not above'} 0 ({row.policy})"
               if row.policy in ("greedy", "peak") else
               f"{'kept' if row.kept else 'not kept'} by policy {row.policy}")
    if pd.isna(row.look):
        return f"{verdict}. Gate: {row.decision} ({row.gate_reason or 'no paired test'})."
    gate = (f"{row.decision}, {row.gate_reason}" if row.gate_reason else
            f"{row.decision} at look {row.look}")
    return (f"{verdict}. Gate: {gate} (z {n(row.z, signed=True)}, credit boundary "
            f"{n(row.boundary)}, one-sided p "
            f"{n(row.p_one_sided, p=True)}; Δ vs parent {n(row.delta_pp, signed=True)} pp on "
            f"the repeats it read). Learned mix ({row.comparisons} comparisons): expected Δ "
            f"{n(row.expected_delta_pp, signed=True)} pp [{n(row.expected_low_pp, signed=True)}, "
            f"{n(row.expected_high_pp, signed=True)}], worth_pp {n(row.worth_pp)}.")


def _changes(pairs: pd.DataFrame) -> np.ndarray:
    parent, child = pairs["passed_parent"], pairs["passed_child"]
    missing = (parent.isna() | child.isna()).to_numpy()
    invalid = ~(pairs["infra_ok_parent"].fillna(True) & pairs["infra_ok_child"].fillna(True)
                ).to_numpy(bool)
    p, c = parent.fillna(False).to_numpy(bool), child.fillna(False).to_numpy(bool)
    out = np.select([missing, invalid, ~p & c, p & ~c, p & c],
                    ["unpaired", "invalid", "fixed", "broken", "both_passed"], "both_failed")
    return out.astype(object)


def _as_list(value, name: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    try:
        return [str(v) for v in value]
    except TypeError:
        raise ValueError(f"{name} must be a str or a list of str, got {value!r}") from None


def _check_split(split: str) -> None:
    if split not in schema.SPLITS:
        raise ValueError(f"split must be one of {list(schema.SPLITS)}, got {split!r}")
