"""Crediting policies: which children a run keeps, and which harness it reports and seals.

Pure functions of frames, used by the loop (:mod:`gsme.evolve`) and by the run when it is
sealed (:meth:`gsme.run.Run.finalize`), and by notebooks that compare policies.

* ``gated`` — the paper's: a child is kept only when the three gates credit it; the
  reported harness is the archive's best elite.
* ``greedy`` — what prior systems do: any child whose train rate rose is kept; the
  reported harness is the archive's best elite.
* ``peak`` — like greedy, and the reported harness is the best train rate ever scored.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gsme import archive as archive_lib
from gsme import schema, stats
from gsme.schema import BASELINE, POLICIES

__all__ = ["POLICIES", "kept", "reported"]


def kept(decisions: pd.DataFrame, *, policy: str) -> np.ndarray:
    """Which decided children ``policy`` keeps, one bool per row of ``decisions``.

    Examples
    --------
    >>> d = pd.DataFrame({"decision": ["credit", "inconclusive"], "delta_pp": [5.0, 2.0]})
    >>> kept(d, policy="gated").tolist(), kept(d, policy="greedy").tolist()
    ([True, False], [True, True])
    """
    _check(policy)
    schema.require(decisions, ["decision", "delta_pp"], "decisions")
    if policy == "gated":
        return (decisions["decision"] == "credit").to_numpy()
    # a tie computed as a sum of thirds can come out 1e-16 above 0: round before comparing
    return (decisions["delta_pp"].fillna(0).round(9) > 0).to_numpy()


def reported(archive: pd.DataFrame, trials: pd.DataFrame, *, policy: str) -> str:
    """The harness ``policy`` reports (and seals): its id, the baseline when none.

    ``gated`` and ``greedy`` report the archive's best elite; ``peak`` the candidate with
    the highest mean per-task train rate among ``trials`` (as ``rate_child`` counts).
    """
    _check(policy)
    if policy == "peak":
        rates = stats.task_rates(trials, split="train")
        means = rates.groupby("candidate")["rate"].mean()
        return str(means.idxmax()) if len(means) else BASELINE
    best = archive_lib.summary(archive)["best_candidate"].iloc[0]
    return BASELINE if best is None or pd.isna(best) else str(best)


def _check(policy: str) -> None:
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {list(POLICIES)}, got {policy!r}")
