"""The evolution loop, as visible steps a notebook can run one at a time.

One round: select a parent → its failing train trials → evolver diagnoses → evolver proposes
→ candidates committed to git → recombinations of archive elites → score → gates → archive.
:func:`run_round` chains the steps; :func:`evolve` runs rounds until the round count or
the trial budget is reached. Each round's steps are recorded as events in the ledger, so a
run killed mid-round resumes from the last completed step with the same result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from gsme import archive as archive_lib
from gsme import gates, schema, stats
from gsme.harness import PatchError
from gsme.patch import Patch
from gsme.run import Run, RunError

BASELINE = "baseline"


@dataclass
class RoundResult:
    """What one round produced: its parent, candidates, decisions and the archive after it."""

    round: int
    parent: str
    candidates: pd.DataFrame
    decisions: pd.DataFrame
    archive: pd.DataFrame
    outcomes: pd.DataFrame


def cold_start(run: Run, *, executor=None, progress: bool = True) -> pd.DataFrame:
    """Score the baseline on the full train split at K (idempotent); return its trials."""
    trials = run.score([BASELINE], executor=executor, progress=progress, round=0)
    if not run.events("cold_start").shape[0]:
        run.ledger.event("cold_start", 0, trials=len(trials))
    return trials


def next_round(run: Run) -> int:
    """The round to run next: one past the last completed round (rounds count from 1)."""
    done = run.events("round_done")
    return 1 if done.empty else int(done["round"].max()) + 1


def select(run: Run, *, round: int) -> str:
    """The parent of ``round``'s children: the archive's global best (quality-biased)."""
    rng = np.random.default_rng([run.config.seed, round, 1])
    return archive_lib.select_parent(run.archive(), rng=rng, baseline=BASELINE,
                                     explore=run.config.explore)


def failures(run: Run, parent: str, *, round: int) -> pd.DataFrame:
    """The parent's failing valid *train* trials the evolver will read.

    Returns
    -------
    DataFrame
        ``candidate, task_id, k, transcript`` plus the task's feature columns; at most
        ``config.max_failures`` rows, sampled reproducibly. Never a test task, never the
        ground-truth ``pathology``.
    """
    trials = run.trials(split="train", candidate=parent)
    failed = trials[trials["infra_ok"] & ~trials["passed"]]
    if len(failed) > run.config.max_failures:
        rng = np.random.default_rng([run.config.seed, round, 2])
        pick = np.sort(rng.choice(len(failed), run.config.max_failures, replace=False))
        failed = failed.iloc[pick]
    features = run.tasks("train").drop(columns=["split"])
    out = failed[["candidate", "task_id", "k", "trajectory"]].merge(features, on="task_id")
    out["transcript"] = [run.transcript(ref) for ref in out["trajectory"]]
    return out.drop(columns="trajectory").reset_index(drop=True)


def diagnose(run: Run, failed: pd.DataFrame, *, parent: str, round: int) -> pd.DataFrame:
    """Ask the evolver what went wrong with ``parent``; the diagnoses go to the ledger."""
    vocabulary = run.vocabulary
    result = run.evolver.diagnose(failed, parent=run.harness_dir(parent), vocabulary=vocabulary)
    run.save_vocabulary(vocabulary)
    if result.empty:
        return result
    run.ledger.append("diagnoses", result.assign(round=round))
    return result


def propose(run: Run, parent: str, diagnoses: pd.DataFrame, *, n: int, round: int) -> list[Patch]:
    """Ask the evolver for up to ``n`` patches of ``parent`` (vocabulary changes are kept)."""
    vocabulary = run.vocabulary
    patches = run.evolver.propose(run.harness_dir(parent), diagnoses, run.archive(),
                                  vocabulary, n=n, history=history(run))
    run.save_vocabulary(vocabulary)
    return list(patches)[:n]


def history(run: Run) -> pd.DataFrame:
    """What the run has tried so far and how the gates judged it.

    Returns
    -------
    DataFrame
        One row per decided mutation: ``candidate, mechanism, where, why, decision,
        delta_pp`` (recombinations add no mechanism of their own and are left out).
    """
    decided = run.decisions()
    cands = run.candidates()
    mutations = cands[(cands["kind"] == "mutation")
                      & cands["candidate"].isin(decided["candidate"])]
    rows = [{"candidate": cand, "mechanism": p.mechanism, "where": p.where, "why": p.why}
            for cand, patch_id in zip(mutations["candidate"], mutations["patch_id"])
            for p in run.repo.patches_of(cand) if p.id == patch_id]
    tried = pd.DataFrame(rows, columns=["candidate", "mechanism", "where", "why"])
    return tried.merge(decided[["candidate", "decision", "delta_pp"]], on="candidate")


def commit(run: Run, parent: str, patches: list[Patch], *, round: int) -> pd.DataFrame:
    """Commit each patch as a child of ``parent``; a patch that does not apply is recorded."""
    run._require_open()
    made, rows = [], []
    for patch in patches:
        try:
            cand = run.repo.add_mutation(parent, patch, round=round)
        except PatchError as err:
            rows.append({"kind": "mutation", "candidate": None, "parents": parent,
                         "ok": False, "reason": f"{patch.id}: {err}"})
            continue
        refused = _refused_by_agent(run, cand)
        made += [] if refused else [cand]
        rows.append({"kind": "mutation", "candidate": None if refused else cand,
                     "parents": parent, "ok": not refused,
                     "reason": refused and f"{patch.id}: {refused}"})
    return _record_candidates(run, made, rows, round)


def recombine(run: Run, base: str, *, n: int, round: int) -> pd.DataFrame:
    """Stack elites of other cells onto ``base`` (git merges); conflicts are recorded."""
    run._require_open()
    if n <= 0:
        return _record_candidates(run, [], [], round)
    tried = run.ledger.frame("proposals", "kind = 'recombination'")
    proposed = {frozenset(schema.split_ids(p)) for p in tried["parents"]}
    options = archive_lib.recombinations(run.archive(), base=base,
                                         lineage=run.repo.lineage(base), proposed=proposed)
    made, rows = [], []
    for elites in options["elites"].head(n):
        cand, reason = run.repo.recombine(base, schema.split_ids(elites), round=round)
        if cand is not None and (reason := _refused_by_agent(run, cand)):
            cand = None
        if cand is not None:
            made.append(cand)
        rows.append({"kind": "recombination", "candidate": cand,
                     "parents": schema.join_ids([base, *schema.split_ids(elites)]),
                     "ok": cand is not None, "reason": reason})
    return _record_candidates(run, made, rows, round)


def credit(run: Run, candidates: pd.DataFrame, *, round: int) -> pd.DataFrame:
    """Run the three gates on ``candidates`` vs their parents; store and annotate decisions.

    Returns the decisions frame plus ``round``, ``policy`` and ``kept`` (whether the run's
    crediting policy keeps the child: ``gated`` keeps credited ones, ``greedy`` and ``peak``
    keep any child whose train rate rose).
    """
    if candidates.empty:
        return schema.empty("decisions").assign(round=round, policy=run.config.policy, kept=False)
    cfg = run.config
    decided = gates.credit(
        run.trials(split="train"), candidates, split="train", z_crit=cfg.z_crit,
        reference=cfg.reference, min_tasks=cfg.min_tasks, min_activations=cfg.min_activations,
        max_dropped_frac=cfg.max_dropped_frac,
    )
    kept = decided["decision"] == "credit"
    if cfg.policy != "gated":
        kept = decided["delta_pp"].fillna(0) > 0
    decided = decided.assign(round=round, policy=cfg.policy, kept=kept.to_numpy())
    run.ledger.append("decisions", decided)
    for row in decided.to_dict("records"):
        run.repo.annotate(row["candidate"], {"gate": _jsonable(row)})
    return decided


def insert(run: Run, decided: pd.DataFrame, *, round: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Insert the kept children into the archive; snapshot it for ``round``; end the round.

    A kept child enters as credited whatever its gate decision (``greedy`` and ``peak``
    keep uncredited gains); every other child keeps its own decision in the outcomes. This
    is a round's last step: it records the round as done, so a round run step by step
    counts like one run by :func:`run_round`.
    """
    as_credit = decided.assign(decision=np.where(decided["kept"], "credit",
                                                 decided["decision"]))
    new, outcomes = archive_lib.insert(run.archive(), as_credit, run.candidates(), round=round)
    run.ledger.delete("archive", "snapshot = ?", (round,))
    run.ledger.append("archive", new.assign(snapshot=round))
    if next_round(run) == round:
        run.ledger.event("round_done", round, spent=run.trials_spent())
    return new, outcomes


def run_round(run: Run, *, children: int = 3, recombinations: int = 1, executor=None,
              progress: bool = True) -> RoundResult:
    """Run the next round end to end, resuming a round that was interrupted."""
    run._require_open()
    cold_start(run, executor=executor, progress=progress)
    r = next_round(run)
    started = run.events("round_started")
    started = started[started["round"] == r]
    committed = run.events("candidates_committed")
    committed = committed[committed["round"] == r]
    if not committed.empty:
        parent = started["payload"].iloc[-1]["parent"]
        cands = run.candidates()
        cands = cands[cands["round"] == r]
    else:
        _discard_round(run, r)
        run.evolver.reseed(int(np.random.default_rng([run.config.seed, r, 0]).integers(2**31)))
        parent = select(run, round=r)
        run.ledger.event("round_started", r, parent=parent)
        run.round_in_progress = r
        diagnosed = diagnose(run, failures(run, parent, round=r), parent=parent, round=r)
        patches = propose(run, parent, diagnosed, n=children, round=r)
        cands = pd.concat([commit(run, parent, patches, round=r),
                           recombine(run, parent, n=recombinations, round=r)],
                          ignore_index=True)
        run.ledger.event("candidates_committed", r, candidates=list(cands["candidate"]))
    run.score(list(cands["candidate"]), executor=executor, progress=progress, round=r)
    decided = credit(run, cands, round=r)
    new, outcomes = insert(run, decided, round=r)
    run.round_in_progress = None
    return RoundResult(r, parent, cands, decided, new, outcomes)


def evolve(run: Run, *, rounds: int, children_per_round: int = 3,
           recombinations_per_round: int = 1, trial_budget: int | None = None,
           executor=None, progress: bool = True) -> pd.DataFrame:
    """Run rounds until ``rounds`` rounds are done or ``trial_budget`` trials are spent.

    Rounds already completed (a resumed run) count towards ``rounds``. The budget is checked
    before each round starts, so the last round may overshoot it.

    Returns
    -------
    DataFrame
        Every decision of the run (the ledger's decisions with ``round``).
    """
    cold_start(run, executor=executor, progress=progress)
    while next_round(run) <= rounds:
        if trial_budget is not None and run.trials_spent() >= trial_budget:
            run.ledger.event("budget_reached", next_round(run), spent=run.trials_spent())
            break
        run_round(run, children=children_per_round, recombinations=recombinations_per_round,
                  executor=executor, progress=progress)
    return run.decisions()


def selected(run: Run) -> str:
    """The harness the run's policy reports: the archive's best elite (``gated``,
    ``greedy``) or the best train rate ever scored (``peak``); the baseline when none."""
    if run.config.policy == "peak":
        rates = stats.task_rates(run.trials(split="train"), split="train")
        rates = rates.groupby("candidate")["rate"].mean()  # as rate_child in the archive
        return str(rates.idxmax()) if len(rates) else BASELINE
    best = archive_lib.stats(run.archive())["best_candidate"].iloc[0]
    return BASELINE if best is None or pd.isna(best) else str(best)


def _record_candidates(run: Run, made: list[str], rows: list[dict], round: int) -> pd.DataFrame:
    if rows:
        run.ledger.append("proposals", pd.DataFrame(rows).assign(round=round))
    cands = run.repo.candidates()
    cands = cands[cands["candidate"].isin(made)].reset_index(drop=True)
    run.ledger.append("candidates", cands)
    return cands


def _refused_by_agent(run: Run, cand: str) -> str | None:
    """The agent's reason for refusing ``cand``'s harness (then the candidate is discarded)."""
    try:
        run.agent.check_harness(run.harness_dir(cand))
    except ValueError as err:
        run.discard(cand)
        return f"the agent cannot run this harness: {err}"
    return None


def _discard_round(run: Run, r: int) -> None:
    """Drop what an interrupted round left before its candidates were committed."""
    for table in ("diagnoses", "proposals"):
        run.ledger.delete(table, '"round" = ?', (r,))
    stale = run.repo.candidates()
    stale = list(stale.loc[stale["round"] == r, "candidate"])
    scored = sorted(set(stale) & set(run.trials()["candidate"]))
    if scored:
        raise RunError(
            f"round {r} was started step by step and its candidates {scored} are scored; "
            f"finish it with evolve.credit(run, ..., round={r}) and evolve.insert(...) first"
        )
    for cand in reversed(stale):
        run.discard(cand)


def _jsonable(row: dict) -> dict:
    return {k: (None if isinstance(v, float) and np.isnan(v) else
                v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
