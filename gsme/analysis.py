"""Descriptive summaries of trials that the notebooks and plots show."""

from __future__ import annotations

import numpy as np
import pandas as pd

from gsme import schema

__all__ = ["UNKNOWN_PATHOLOGY", "failing_trials", "pathology_shares"]

UNKNOWN_PATHOLOGY = "unknown"


def failing_trials(trials, *, split=None) -> pd.DataFrame:
    """The trials that failed on a healthy environment: the agent's own failures.

    An infrastructure failure (``infra_ok`` False) is the environment's, not a pathology of
    the agent, so it is left out.

    Parameters
    ----------
    trials : DataFrame
        A trials frame (:data:`gsme.schema.TRIALS`); extra columns are kept.
    split : {"train", "test"}, optional
        Keep only this split; all splits by default.

    Returns
    -------
    DataFrame
        The validated rows with ``passed`` False and ``infra_ok`` True, index reset.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": "c0", "task_id": ["a", "b"], "split": "train",
    ...                   "repeat": 0, "passed": [False, False], "infra_ok": [True, False]})
    >>> failing_trials(t)["task_id"].tolist()
    ['a']
    """
    frame = schema.as_trials(trials)
    if split is not None and split not in schema.SPLITS:
        raise ValueError(f"split must be one of {list(schema.SPLITS)} or None, got {split!r}")
    keep = ~frame["passed"] & frame["infra_ok"]
    if split is not None:
        keep &= frame["split"] == split
    return frame[keep].reset_index(drop=True)


def pathology_shares(trials, *, by="candidate", split=None) -> pd.DataFrame:
    """Count the pathologies of failing valid trials and their share within each group.

    A trial counts when it failed (``passed`` False) on a healthy environment
    (``infra_ok`` True); an infrastructure failure is not the agent's pathology. A failing
    trial without a label counts as ``"unknown"``, so shares always sum to 1 per group.
    Groups without a failing valid trial have no rows.

    Parameters
    ----------
    trials : DataFrame
        A trials frame (:data:`gsme.schema.TRIALS`); extra columns are kept, so ``by`` may
        be e.g. ``round`` after merging the candidates' rounds in.
    by : str
        The grouping column.
    split : {"train", "test"}, optional
        Count only this split; all splits by default.

    Returns
    -------
    DataFrame
        One row per (``by``, ``pathology``), sorted by ``by`` then most frequent first:

        * ``<by>`` -- the group;
        * ``pathology`` -- the label (``"unknown"`` when missing);
        * ``n`` -- failing valid trials with that label;
        * ``share`` -- ``n`` over the group's failing valid trials.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"candidate": "c0", "task_id": ["a", "b", "c"], "split": "train",
    ...                   "repeat": 0, "passed": [False, False, True],
    ...                   "pathology": ["careless", "careless", None]})
    >>> pathology_shares(t)
      candidate pathology  n  share
    0        c0  careless  2    1.0
    """
    failing = failing_trials(trials, split=split)
    if by not in failing.columns:
        raise schema.FrameError(
            f"trials have no column {by!r} to group by; it has {list(failing.columns)} "
            f"(merge the candidates' 'round' in to group by round)"
        )
    labels = failing["pathology"].astype(object).where(failing["pathology"].notna(),
                                                       UNKNOWN_PATHOLOGY)
    counts = (failing.assign(pathology=labels)
              .groupby([by, "pathology"], sort=False).size().rename("n").reset_index())
    counts["n"] = counts["n"].astype(np.int64)
    counts["share"] = counts["n"] / counts.groupby(by)["n"].transform("sum")
    counts = counts.sort_values([by, "n", "pathology"], ascending=[True, False, True])
    return counts.reset_index(drop=True)[[by, "pathology", "n", "share"]]
