"""Gate designs: which repeats a comparison needs, look by look.

``design="fixed"`` (the paper's gate) wants ``k`` repeats of every task on both sides and
looks once. The adaptive design is added here too (see :class:`gsme.settings.GateConfig`).
"""

from __future__ import annotations

import pandas as pd

from gsme import schema
from gsme.settings import GateConfig

__all__ = ["wanted"]


def wanted(trials: pd.DataFrame, pairs: pd.DataFrame, tasks: pd.DataFrame, *, split: str,
           config: GateConfig) -> pd.DataFrame:
    """The repeats each candidate of ``pairs`` (and its parent) needs on ``split``.

    Parameters
    ----------
    trials : DataFrame
        The trials so far.
    pairs : DataFrame
        ``candidate, parent`` (parent None: the candidate is scored alone, e.g. the
        baseline).
    tasks : DataFrame
        ``task_id, split`` of the run.
    split : {"train", "test"}
    config : GateConfig

    Returns
    -------
    DataFrame
        ``candidate, task_id, split, repeats``: repeats ``0 .. repeats-1`` are wanted.
    """
    schema.require(pairs, ["candidate", "parent"], "pairs")
    names = list(dict.fromkeys([*pairs["candidate"], *pairs["parent"].dropna()]))
    ids = tasks.loc[tasks["split"] == split, "task_id"].astype(object)
    grid = pd.MultiIndex.from_product([names, ids], names=["candidate", "task_id"])
    return grid.to_frame(index=False).assign(split=split, repeats=int(config.k))
