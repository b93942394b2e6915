"""Audits of a simulated run against the simulator's ground truth, which the loop never sees.

Every number here is simulated: the true effects come from :meth:`SimAgent.true_effect`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["audit_decisions"]


def audit_decisions(run) -> pd.DataFrame:
    """The run's decisions beside the simulator's true effect of each child on its parent.

    Parameters
    ----------
    run : gsme.run.Run
        A run whose agent has ground truth (``true_effect``), i.e. a simulated one.

    Returns
    -------
    DataFrame
        :meth:`gsme.run.Run.decisions` (with ``round`` and ``kept``) plus ``mechanism``
        (of the patch the child adds; None for a recombination), ``true_delta_pp`` (the
        exact effect of the child over its parent on the decision's split, in pp),
        ``true_sealed_delta_pp`` (the same on the test split, from ground truth: nothing is
        scored), ``false_keep`` (kept although its true effect is ≤ 0), ``false_credit``
        (credited although its true effect is ≤ 0) and ``overfit`` (kept, truly better on
        the decision's split but not on the test split).

    Raises
    ------
    TypeError
        When the run's agent has no ground truth.

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.evolve import evolve
    >>> from gsme.evolvers import RuleEvolver
    >>> from gsme.run import Run
    >>> run = Run.create("run", agent=sim.preset("tiny"), evolver=RuleEvolver(seed=0))
    >>> _ = evolve(run, rounds=1, progress=False)
    >>> audit = audit_decisions(run)
    >>> audit[["mechanism", "kept", "false_keep"]].head(3)
                mechanism   kept  false_keep
    0       submit-verify   True       False
    1  context-summarizer  False       False
    2    format-validator  False       False
    >>> run.close()
    """
    if not hasattr(run.agent, "true_effect"):
        raise TypeError(f"run.agent {run.agent.name!r} has no ground truth (true_effect); "
                        "audits need a simulated agent (gsme.sim): reopen the run with "
                        "Run.open(path, agent=gsme.sim.preset(...)) if it was built in Python")
    decided = run.decisions()
    history = run.history()
    mechanisms = dict(zip(history["candidate"], history["mechanism"]))
    files = {c: run.harness(c) for c in set(decided["child"]) | set(decided["parent"])}
    true = [run.agent.true_effect(files[c], files[p], s)
            for c, p, s in zip(decided["child"], decided["parent"], decided["split"])]
    sealed = [run.agent.true_effect(files[c], files[p], "test")
              for c, p in zip(decided["child"], decided["parent"])]
    out = decided.assign(
        mechanism=pd.Series([mechanisms.get(c) for c in decided["child"]],
                            index=decided.index, dtype=object),
        true_delta_pp=np.asarray(true, dtype=np.float64),
        true_sealed_delta_pp=np.asarray(sealed, dtype=np.float64))
    kept = out["kept"].astype(bool)
    out["false_keep"] = kept & (out["true_delta_pp"] <= 0)
    out["false_credit"] = (out["decision"] == "credit") & (out["true_delta_pp"] <= 0)
    out["overfit"] = kept & (out["true_delta_pp"] > 0) & (out["true_sealed_delta_pp"] <= 0)
    return out
