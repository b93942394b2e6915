"""Tables of results, beside the published ones they should reproduce."""

from __future__ import annotations

import numpy as np
import pandas as pd

from gsme import stats
from gsme._paths import DATA_DIR

PAPER_TABLE = DATA_DIR / "paper_table.csv"


def paper_table(*, z_crit: float = 1.96) -> pd.DataFrame:
    """The seed paper's results table with retention and p recomputed by gsme beside it.

    The published columns come from ``data/paper_table.csv`` as printed (deltas rounded
    to 0.1 pp, z to 0.01, retention to whole percent; the paper computed retention from
    unrounded deltas, so the recomputed value may differ by that rounding).

    Parameters
    ----------
    z_crit : float
        Critical value for ``credited``.

    Returns
    -------
    DataFrame
        ``benchmark, train_delta_pp, sealed_delta_pp, z, retention_pct, preliminary``
        (published) and ``retention_pct_gsme`` (:func:`gsme.stats.retention` of the
        published deltas), ``retention_tolerance_pp`` (the largest gap between the two
        that the printed rounding explains: each delta off by up to 0.05 pp, propagated
        to first order, plus 0.5 for the whole-percent retention), ``p_value_gsme``
        (two-sided p of the published z) and ``credited`` (z ≥ ``z_crit``).

    Examples
    --------
    >>> table = paper_table()
    >>> table.loc[table["benchmark"] == "GDPval", "p_value_gsme"].round(3).item()
    0.033
    """
    table = pd.read_csv(PAPER_TABLE, dtype={"benchmark": object})
    table["preliminary"] = table["preliminary"].astype(bool)
    table["retention_pct_gsme"] = stats.retention(
        table["train_delta_pp"].to_numpy(), table["sealed_delta_pp"].to_numpy()
    )
    table["retention_tolerance_pp"] = _rounding_tolerance(table)
    table["p_value_gsme"] = stats.p_value(table["z"].to_numpy())
    table["credited"] = table["z"].to_numpy() >= z_crit
    return table


def _rounding_tolerance(table: pd.DataFrame) -> np.ndarray:
    train = table["train_delta_pp"].to_numpy(np.float64)
    sealed = table["sealed_delta_pp"].to_numpy(np.float64)
    ratio = 100.0 * np.abs(sealed / train)
    return ratio * (0.05 / np.abs(sealed) + 0.05 / np.abs(train)) + 0.5
