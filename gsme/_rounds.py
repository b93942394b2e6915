"""What an evolution round produced, and how it is told: its result, its summary in
numbers, and why a round made no child (read from the ledger's records of the round).
:mod:`gsme.evolve` runs the rounds and re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import pandas as pd

from gsme import archive as archive_lib
from gsme import stats
from gsme.report import number
from gsme.run import Run
from gsme.schema import BASELINE
from gsme.settings import Schedule

__all__ = ["RoundResult", "committed_round", "empty_reason", "empty_stop", "round_summary"]


@dataclass
class RoundResult:
    """What one round produced: its parent, candidates, decisions and the archive after it.

    ``failures`` counts the parent's failing train trials the evolver read (at most
    ``config.max_failures``); 0 means the parent failed no train trial, so nothing was
    proposed and evolution stops there (:func:`gsme.evolve.evolve`).

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolve import run_round
    >>> from gsme.evolvers import RuleEvolver
    >>> from gsme.run import Run
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
    >>> result = run_round(run, children=2, recombinations=0, progress=False)
    >>> result.round, result.parent, len(result.candidates)
    (1, 'baseline', 2)
    >>> run.close()
    """

    round: int
    parent: str
    candidates: pd.DataFrame
    decisions: pd.DataFrame
    archive: pd.DataFrame
    outcomes: pd.DataFrame
    failures: int

    def _repr_html_(self) -> str:
        shown = ["child", "parent", "n_tasks", "delta_pp", "z", "p_one_sided", "decision",
                 "expected_delta_pp", "kept", "reason"]
        table = self.decisions[[c for c in shown if c in self.decisions.columns]]
        kept = int(table["kept"].sum()) if "kept" in table else 0
        credited = int((table["decision"] == "credit").sum()) if "decision" in table else 0
        return (f"<p><b>round {self.round}</b>: {len(self.candidates)} candidate(s) of "
                f"<code>{self.parent}</code>: {kept} kept, {credited} credited; "
                f"{len(self.archive)} elite(s) after it</p>"
                + table.to_html(index=False, na_rep="n/a", formatters={
                    c: partial(number, p=c == "p_one_sided") for c in table.columns
                    if c not in ("child", "parent", "decision", "reason")}))


def round_summary(run: Run, result: RoundResult) -> dict:
    """One round in numbers, as the command line prints it after each round.

    Returns
    -------
    dict
        ``round, parent, failures`` (the parent's failing train trials the evolver read;
        0: nothing was proposed), ``children`` (candidates made), ``empty_reason`` (why
        none was made, :func:`empty_reason`; None when some were), ``kept, credited,
        culled``,
        ``trials_spent`` (the run's so far) and ``trial_budget`` (None without one),
        ``best`` (the archive's best elite, None when empty) and ``best_delta_pp``: its
        train rate minus the baseline's, both over the first ``k`` repeats of every task
        (:func:`gsme.stats.candidate_rates`; NaN when the archive is empty), and ``k``.

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolve import run_round
    >>> from gsme.evolvers import RuleEvolver
    >>> from gsme.run import Run
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
    >>> result = run_round(run, children=2, recombinations=0, progress=False)
    >>> summary = round_summary(run, result)
    >>> summary["round"], summary["children"], summary["kept"], summary["best"]
    (1, 2, 1, 'c0001')
    >>> run.close()
    """
    decided = result.decisions
    best = archive_lib.summary(result.archive)["best_candidate"].iloc[0]
    rates = stats.candidate_rates(run.trials(split="train"), k=run.config.gate.k)
    rate = dict(zip(rates["candidate"], rates["rate"]))
    budget = None if run.schedule is None else run.schedule.trial_budget
    return {"round": result.round, "parent": result.parent, "failures": result.failures,
            "children": len(result.candidates),
            "empty_reason": empty_reason(run, result.round) if result.candidates.empty
            else None,
            "kept": int(decided["kept"].sum()),
            "credited": int((decided["decision"] == "credit").sum()),
            "culled": int((decided["decision"] == "cull").sum()),
            "trials_spent": run.trials_spent(), "trial_budget": budget, "best": best,
            "best_delta_pp": (100.0 * (rate[best] - rate[BASELINE]) if best in rate
                              else float("nan")), "k": run.config.gate.k}


def empty_reason(run: Run, round: int) -> str | None:
    """Why ``round`` made no child, in words; None when it made one (or is not committed).

    The reasons, from the ledger: the parent failed no train trial; the evolver diagnosed
    or proposed nothing; every proposed patch was refused (it did not apply, changed a
    frozen setting, the agent cannot run it: the first refusal is quoted); no
    recombination was left to try, or every one failed (a merge conflict).

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolve import run_round
    >>> from gsme.evolvers import RuleEvolver
    >>> from gsme.run import Run
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
    >>> result = run_round(run, children=0, recombinations=0, progress=False)
    >>> empty_reason(run, 1)
    'the evolver proposed no patch from 23 diagnoses; no recombination of archive elites left to try'
    >>> run.close()
    """
    committed = run.events("candidates_committed")
    mine = committed.loc[committed["round"] == round, "payload"]
    if mine.empty or mine.iloc[-1].get("candidates"):
        return None
    parent = committed_round(run, round)[0]
    if mine.iloc[-1].get("failures", 1) == 0:
        return f"{parent} failed no train trial: nothing to fix"
    proposals = run.proposals()
    proposals = proposals[proposals["round"] == round]
    mutations = proposals[proposals["kind"] == "mutation"]
    merges = proposals[proposals["kind"] == "recombination"]
    diagnosed = int((run.diagnoses()["round"] == round).sum())
    parts = [_refused("proposed patch", mutations) if len(mutations) else
             "the evolver diagnosed none of the failures it read" if diagnosed == 0 else
             f"the evolver proposed no patch from {diagnosed} diagnoses"]
    parts.append(_refused("recombination", merges) if len(merges) else
                 "no recombination of archive elites left to try")
    return "; ".join(parts)


def _refused(what: str, proposals: pd.DataFrame) -> str:
    """``every <what> was refused (n): <first reason>``, a refusal summed up in one line."""
    reasons = proposals.loc[~proposals["ok"].astype(bool), "reason"].dropna()
    first = str(reasons.iloc[0]).splitlines()[0][:120] if len(reasons) else "no reason given"
    return f"every {what} was refused ({len(proposals)}; first: {first})"


def empty_stop(run: Run) -> str | None:
    """Why evolution stops for lack of children, or None: the last round's parent failed
    no train trial, or the last ``schedule.empty_rounds`` rounds all made no child.

    Returns
    -------
    str or None
        One line: how many rounds in a row made no child and the last one's reason.

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolve import evolve
    >>> from gsme.evolvers import RuleEvolver
    >>> from gsme.run import Run
    >>> from gsme.settings import Schedule
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0),
    ...                  schedule=Schedule(children_per_round=0, recombinations_per_round=0))
    >>> _ = evolve(run, rounds=5, progress=False)
    >>> run.rounds_done(), empty_stop(run)
    (2, '2 rounds in a row made no child (round 2: the evolver proposed no patch from 23 diagnoses; no recombination of archive elites left to try)')
    >>> run.close()
    """
    done, limit = run.rounds_done(), (run.schedule or Schedule()).empty_rounds
    streak = 0
    while streak < done and empty_reason(run, done - streak) is not None:
        streak += 1
    if streak == 0:
        return None
    last = empty_reason(run, done)
    if streak < limit and not last.endswith("nothing to fix"):
        return None
    if streak == 1:
        return f"round {done} made no child ({last})"
    return f"{streak} rounds in a row made no child (round {done}: {last})"


def committed_round(run: Run, round: int) -> tuple[str, int] | None:
    """``(parent, failures read)`` of ``round`` once its candidates are all committed (the
    round resumes at scoring them), else None. Rounds recorded before failures were
    counted read some (their parent failed)."""
    committed = run.events("candidates_committed")
    mine = committed.loc[committed["round"] == round, "payload"]
    if mine.empty:
        return None
    started = run.events("round_started")
    parent = started.loc[started["round"] == round, "payload"].iloc[-1]["parent"]
    return parent, int(mine.iloc[-1].get("failures", run.config.max_failures))
