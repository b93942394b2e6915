"""The evolution loop, as visible steps a notebook can run one at a time.

One round: choose a parent → its failing train trials → the evolver diagnoses → the evolver
proposes → candidates committed to git → recombinations of archive elites → score → gates →
archive. :func:`run_round` chains the steps; :func:`evolve` runs rounds until the schedule's
round count or trial budget is reached. Every step reads and records through the run's
named methods (:class:`gsme.run.Run`), scoring goes through :func:`gsme.measure.measure`, and
every decision comes from a pure function
(:mod:`gsme.gates`, :mod:`gsme.policy`, :mod:`gsme.archive`), so a run killed mid-round
resumes from its last completed step with the same result.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import pandas as pd

from gsme import archive as archive_lib
from gsme import budget, gates, policy, schema
from gsme._rounds import RoundResult, committed_round, empty_reason, empty_stop, round_summary
from gsme.evolvers.base import RoundView
from gsme.measure import measure
from gsme.patches import Patch
from gsme.run import Run
from gsme.schema import BASELINE
from gsme.settings import Schedule

__all__ = ["RoundResult", "choose_parent", "cold_start", "commit", "credit", "diagnose",
           "empty_reason", "empty_stop", "evolve", "failures", "insert", "next_round",
           "propose", "recombine", "round_summary", "run_round"]



def cold_start(run: Run, *, executor=None, progress: bool = True) -> pd.DataFrame:
    """Score the baseline on the full train split (idempotent); return its trials.

    Examples
    --------
    >>> from gsme import sim
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> trials = cold_start(run, progress=False)
    >>> trials["candidate"].unique().tolist(), len(trials)
    (['baseline'], 49)
    >>> run.close()
    """
    return measure(run, [BASELINE], executor=executor, progress=progress, round=0)


def next_round(run: Run) -> int:
    """The round to run next: one past the last completed round (rounds count from 1).

    Examples
    --------
    >>> from gsme import sim
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> next_round(run)
    1
    >>> run.close()
    """
    return run.rounds_done() + 1


def choose_parent(run: Run, *, round: int) -> str:
    """The parent of ``round``'s children: the archive's global best (quality-biased).

    Examples
    --------
    >>> from gsme import sim
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> _ = cold_start(run, progress=False)
    >>> choose_parent(run, round=1)
    'baseline'
    >>> run.close()
    """
    rng = np.random.default_rng([run.config.run_seed, round, 1])
    return archive_lib.select_parent(run.archive(), rng=rng, explore=run.config.explore)


def failures(run: Run, parent: str, *, round: int) -> pd.DataFrame:
    """The parent's failing valid *train* trials the evolver will read.

    A trial fails when it did not pass or, where it has a graded score, scored below 1.

    Returns
    -------
    DataFrame
        The failures frame: ``candidate, task_id, repeat, transcript`` plus the task's
        feature columns; at most ``config.max_failures`` rows, sampled reproducibly;
        empty when the parent failed no train trial. Never a test task, never the
        ground-truth ``pathology``.

    Examples
    --------
    >>> from gsme import sim
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> _ = cold_start(run, progress=False)
    >>> failed = failures(run, "baseline", round=1)
    >>> failed.columns.tolist()[:4], len(failed)
    (['candidate', 'task_id', 'repeat', 'category'], 23)
    >>> run.close()
    """
    trials = run.trials(split="train", candidate=parent)
    failed = trials[trials["infra_ok"] & (~trials["passed"] | (trials["score"] < 1))]
    if len(failed) > run.config.max_failures:
        rng = np.random.default_rng([run.config.run_seed, round, 2])
        pick = np.sort(rng.choice(len(failed), run.config.max_failures, replace=False))
        failed = failed.iloc[pick]
    features = run.tasks("train").drop(columns=["split"])
    out = failed[["candidate", "task_id", "repeat", "trajectory"]].merge(features, on="task_id")
    out["transcript"] = pd.Series([run.transcript(ref) for ref in out["trajectory"]],
                                  index=out.index, dtype=object)
    return schema.validate(out.drop(columns="trajectory").reset_index(drop=True), "failures")


def diagnose(run: Run, failed: pd.DataFrame, *, parent: str, round: int) -> pd.DataFrame:
    """Ask the evolver what went wrong with ``parent``; the diagnoses are recorded.

    An evolver that reads whole rounds (``reads_round``) is first shown the round: every
    valid train trial of the parent, earlier diagnoses and decisions, history and archive
    (:class:`~gsme.evolvers.base.RoundView`).

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolvers import RuleEvolver
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
    >>> _ = cold_start(run, progress=False)
    >>> found = diagnose(run, failures(run, "baseline", round=1), parent="baseline", round=1)
    >>> found.columns.tolist()[3:7], len(found)
    (['where', 'why', 'evidence', 'confidence'], 23)
    >>> run.close()
    """
    vocabulary = run.vocabulary
    if run.evolver.reads_round:
        run.evolver.begin_round(_round_view(run, parent, round=round))
    result = run.evolver.diagnose(failed, harness=run.harness(parent), vocabulary=vocabulary,
                                  log=partial(run.record, "calls", round=round))
    run.vocabulary = vocabulary
    run.record("diagnoses", result, round=round)
    return result


def propose(run: Run, parent: str, diagnoses: pd.DataFrame, *, n: int,
            round: int) -> list[Patch]:
    """Ask the evolver for up to ``n`` patches of ``parent`` (vocabulary changes are kept).

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolvers import RuleEvolver
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
    >>> _ = cold_start(run, progress=False)
    >>> found = diagnose(run, failures(run, "baseline", round=1), parent="baseline", round=1)
    >>> [patch.mechanism for patch in propose(run, "baseline", found, n=2, round=1)]
    ['recheck-loop', 'drop-tool-outputs']
    >>> run.close()
    """
    vocabulary = run.vocabulary
    patches = run.evolver.propose(diagnoses, harness=run.harness(parent),
                                  archive=run.archive(), vocabulary=vocabulary, n=n,
                                  history=run.history(),
                                  log=partial(run.record, "calls", round=round))
    run.vocabulary = vocabulary
    return list(patches)[:n]


def commit(run: Run, parent: str, patches: list[Patch], *, round: int) -> list[str]:
    """Commit each patch as a child of ``parent``; a patch that does not apply, or that the
    agent refuses, is recorded with its reason. Returns the new candidates.

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolvers import RuleEvolver
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
    >>> _ = cold_start(run, progress=False)
    >>> found = diagnose(run, failures(run, "baseline", round=1), parent="baseline", round=1)
    >>> patches = propose(run, "baseline", found, n=2, round=1)
    >>> commit(run, "baseline", patches, round=1)
    ['c0001', 'c0002']
    >>> run.close()
    """
    made, rows = [], []
    for patch in patches:
        cand, reason = run.add_candidate([parent], patch=patch, round=round)
        made += [] if cand is None else [cand]
        rows.append(_proposal("mutation", cand, parent, reason and f"{patch.id}: {reason}"))
    run.record("proposals", pd.DataFrame(rows), round=round)
    return made


def recombine(run: Run, base: str, *, n: int, round: int) -> list[str]:
    """Stack elites of other cells onto ``base`` (git merges); failures are recorded.

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolvers import RuleEvolver
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
    >>> _ = evolve(run, rounds=3, progress=False)
    >>> run.archive()["candidate"].tolist()
    ['c0008', 'c0007', 'c0001']
    >>> recombine(run, "baseline", n=1, round=4)
    ['c0010']
    >>> run.proposals()["parents"].iloc[-1]
    'baseline,c0008,c0001'
    >>> run.close()
    """
    if n <= 0:
        return []
    options = archive_lib.recombinations(run.archive(), base=base,
                                         lineage=_lineage(run.candidates(), base),
                                         proposed=_tried_recombinations(run.proposals()))
    made, rows = [], []
    for elites in options["elites"].head(n):
        cand, reason = run.add_candidate([base, *schema.split_ids(elites)], round=round)
        made += [] if cand is None else [cand]
        rows.append(_proposal("recombination", cand,
                              schema.join_ids([base, *schema.split_ids(elites)]), reason))
    run.record("proposals", pd.DataFrame(rows), round=round)
    return made


def credit(run: Run, candidates: pd.DataFrame, *, round: int) -> pd.DataFrame:
    """Run the three gates on ``candidates`` vs their parents; decide which are kept; record.

    Returns
    -------
    DataFrame
        The decisions frame of :func:`gsme.gates.credit` with the run's gate settings, plus
        ``kept`` (whether the run's policy keeps the child, :func:`gsme.policy.screen`,
        which for the ``learned`` policy learns from :meth:`~gsme.run.Run.comparisons` of
        the rounds before this one and this round's decisions) and ``expected_delta_pp`` (the
        child's expected true effect under the proposal mix learned so far, whatever the
        policy; NaN for invalid and inactive children).

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolvers import RuleEvolver
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
    >>> _ = cold_start(run, progress=False)
    >>> found = diagnose(run, failures(run, "baseline", round=1), parent="baseline", round=1)
    >>> made = commit(run, "baseline", propose(run, "baseline", found, n=2, round=1), round=1)
    >>> _ = measure(run, made, progress=False, round=1)
    >>> decided = credit(run, run.candidates().query("round == 1"), round=1)
    >>> decided[["child", "decision", "kept"]].values.tolist()
    [['c0001', 'inconclusive', False], ['c0002', 'inconclusive', False]]
    >>> run.close()
    """
    if candidates.empty:
        return schema.empty("decisions").assign(kept=pd.Series(dtype=bool),
                                                expected_delta_pp=pd.Series(dtype=float))
    decided = gates.credit(run.checked_trials(split="train"), candidates, split="train",
                           gate=run.config.gate)
    screened = policy.screen(decided, policy=run.config.policy,
                             past=run.comparisons(before_round=round), keep=run.config.keep)
    decided = decided.assign(kept=screened["kept"],
                             expected_delta_pp=screened["expected_delta_pp"])
    run.record("decisions", decided, round=round)
    return decided


def insert(run: Run, decided: pd.DataFrame, *, round: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Insert the kept children into the archive; snapshot it; end the round.

    The archive takes the kept children (``kept``) and marks which of its elites were
    credited, so kept and credited stay apart. This is a round's last step: a round run
    step by step counts like one of :func:`run_round`.

    Returns
    -------
    tuple of DataFrame
        The archive after the round, and the outcomes frame of :func:`gsme.archive.insert`.

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolvers import RuleEvolver
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
    >>> _ = cold_start(run, progress=False)
    >>> found = diagnose(run, failures(run, "baseline", round=1), parent="baseline", round=1)
    >>> made = commit(run, "baseline", propose(run, "baseline", found, n=2, round=1), round=1)
    >>> _ = measure(run, made, progress=False, round=1)
    >>> decided = credit(run, run.candidates().query("round == 1"), round=1)
    >>> archive, outcomes = insert(run, decided, round=1)
    >>> len(archive), outcomes["reason"].tolist(), next_round(run)
    (0, ['not kept (decision inconclusive)', 'not kept (decision inconclusive)'], 2)
    >>> run.close()
    """
    new, outcomes = archive_lib.insert(run.archive(), decided, run.candidates(), round=round)
    run.record("archive", new, round=round)
    run.mark("round_done", round)
    return new, outcomes


def run_round(run: Run, *, children: int | None = None, recombinations: int | None = None,
              executor=None, progress: bool = True) -> RoundResult:
    """Run the next round end to end, resuming a round that was interrupted.

    ``children`` and ``recombinations`` default to the run's schedule.

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolvers import RuleEvolver
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
    >>> result = run_round(run, children=2, recombinations=0, progress=False)
    >>> result.decisions[["child", "decision"]].values.tolist()
    [['c0001', 'inconclusive'], ['c0002', 'inconclusive']]
    >>> run.close()
    """
    schedule = run.schedule or Schedule()
    children = schedule.children_per_round if children is None else children
    recombinations = (schedule.recombinations_per_round if recombinations is None
                      else recombinations)
    cold_start(run, executor=executor, progress=progress)
    r = next_round(run)
    committed = committed_round(run, r)
    if committed is None:
        run.evolver.reseed(int(np.random.default_rng([run.config.run_seed, r, 0])
                               .integers(2**31)))
        parent = choose_parent(run, round=r)
        run.mark("round_started", r, parent=parent)
        failed = failures(run, parent, round=r)
        made = []
        if len(failed):  # a parent that failed nothing leaves nothing to diagnose
            diagnosed = diagnose(run, failed, parent=parent, round=r)
            patches = propose(run, parent, diagnosed, n=children, round=r)
            made = commit(run, parent, patches, round=r)
            made += recombine(run, parent, n=recombinations, round=r)
        run.mark("candidates_committed", r, candidates=made, failures=len(failed))
        committed = parent, len(failed)
    parent, n_failed = committed
    cands = run.candidates()
    cands = cands[cands["round"] == r].reset_index(drop=True)
    measure(run, list(cands["candidate"]), executor=executor, progress=progress, round=r)
    decided = credit(run, cands, round=r)
    new, outcomes = insert(run, decided, round=r)
    return RoundResult(r, parent, cands, decided, new, outcomes, n_failed)


def evolve(run: Run, *, rounds: int | None = None, executor=None, progress: bool = True,
           on_round: Callable[[RoundResult], None] | None = None) -> pd.DataFrame:
    """Run rounds until ``rounds`` are done, a budget of the schedule is reached or the
    last ``schedule.empty_rounds`` rounds made no child (:func:`empty_stop`; at once when
    a round's parent failed no train trial): the run then goes on to its sealed test.

    ``rounds`` defaults to the run's schedule. Rounds already completed (a resumed run)
    count towards it. The budgets are checked before each round starts: the trial budget
    stops the run once spent (the last round may overshoot it); ``budget_usd`` and
    ``budget_hours`` stop it when the next round would exceed them with the sealed test's
    cost reserved (:func:`gsme.budget.over_budget`). Either is recorded as a
    ``budget_reached`` event (with the dollar or hour budget's ``reason``); the run then
    goes on to its sealed test. ``on_round`` is called with each round's :class:`RoundResult` as it
    ends (the command line prints :func:`round_summary` of it).

    Returns
    -------
    DataFrame
        Every decision of the run (the ledger's decisions with ``round`` and ``kept``).

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolvers import RuleEvolver
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
    >>> decisions = evolve(run, rounds=2, progress=False)
    >>> decisions["round"].unique().tolist(), run.rounds_done()
    ([1, 2], 2)
    >>> run.close()
    """
    schedule = run.schedule or Schedule()
    rounds = schedule.rounds if rounds is None else rounds
    cold_start(run, executor=executor, progress=progress)
    bar = _progress(rounds, progress, done=run.rounds_done())
    try:
        while next_round(run) <= rounds and empty_stop(run) is None:
            if (schedule.trial_budget is not None
                    and run.trials_spent() >= schedule.trial_budget):
                run.mark("budget_reached", next_round(run))
                break
            over = budget.over_budget(run)
            if over is not None:
                run.mark("budget_reached", next_round(run), reason=over)
                break
            result = run_round(run, executor=executor, progress=progress)
            bar.update(1)
            if on_round is not None:
                on_round(result)
    finally:
        bar.close()
    return run.decisions()



def _round_view(run: Run, parent: str, *, round: int) -> RoundView:
    """What an evolver that reads whole rounds is shown (train only, no ``pathology``)."""
    trials = run.trials(split="train", candidate=parent)
    trials = trials[trials["infra_ok"]]
    features = run.tasks("train").drop(columns=["split"])
    shown = trials[["candidate", "task_id", "repeat", "passed", "score", "error",
                    "trajectory"]].merge(features, on="task_id")
    shown["transcript"] = pd.Series([run.transcript(ref) for ref in shown["trajectory"]],
                                    index=shown.index, dtype=object)
    earlier = {name: frame[frame["round"] < round].reset_index(drop=True)
               for name, frame in (("diagnoses", run.diagnoses()),
                                   ("decisions", run.decisions()))}
    return RoundView(round=round, parent=parent,
                     trials=shown.drop(columns="trajectory").reset_index(drop=True),
                     history=run.history(), archive=run.archive(),
                     children=(run.schedule or Schedule()).children_per_round, **earlier)


def _proposal(kind: str, candidate: str | None, parents: str, reason: str | None) -> dict:
    return {"kind": kind, "candidate": candidate, "parents": parents,
            "ok": candidate is not None, "reason": reason or None}



def _lineage(candidates: pd.DataFrame, candidate: str) -> list[str]:
    """Every ancestor of ``candidate`` and itself, ancestors first (all parents followed,
    ties in parent order), from the candidates frame's ``parents``."""
    parents = dict(zip(candidates["candidate"], candidates["parents"]))
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        for parent in schema.split_ids(parents[name]):
            visit(parent)
        order.append(name)

    visit(candidate)
    return order


def _tried_recombinations(proposals: pd.DataFrame) -> set[frozenset]:
    """Every parent set a recombination was proposed with (committed or not)."""
    proposals = proposals[proposals["kind"] == "recombination"]
    return {frozenset(schema.split_ids(p)) for p in proposals["parents"]}


def _progress(total: int, enabled: bool, *, done: int):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=min(done, total), desc="rounds", unit="round",
                disable=None if enabled else True)  # None: on a terminal only
