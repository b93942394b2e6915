"""The GSME archive: one elite per (where, why) pathology cell.

Pure functions over the archive frame (``where, why, candidate, rate, delta_pp, z,
round, credited``, see :mod:`gsme.schema`); none mutates its inputs.

Which children enter is the run's keep rule (:mod:`gsme.policy`): under the paper's
``gated`` policy only credited children are kept, so every elite is credited; a more
lenient rule keeps children the gate did not credit, and the archive says which elites were
credited (``credited``), so the two words never blur.

Which cell a candidate competes for:

* a mutation: its own ``(where, why)``;
* a recombination: the cell of its base (its first parent), found recursively, or, when
  the base is the baseline, the cell of its first elite. A recombination stacks other
  cells' patches onto the lineage it extends, so it competes with that lineage's elite;
  in the usual flow the base is the global best, so a kept recombination replaces
  it and becomes the global best that :func:`select_parent` extends, while the merged
  elites keep their own cells.

The archive is MAP-Elites' [1]_ with a categorical map: its cells are pathologies, not
bins of a continuous behaviour descriptor, so they never drift as data arrives.

References
----------
.. [1] J.-B. Mouret and J. Clune, "Illuminating search spaces by mapping elites",
       arXiv:1504.04909, 2015.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from gsme.schema import BASELINE, LEVERS, FrameError, join_ids, split_ids, validate
from gsme.schema import empty as empty_frame

__all__ = ["empty", "insert", "occupancy", "recombinations", "select_parent", "summary"]

_COLUMNS = empty_frame("archive").columns.tolist()


def empty() -> pd.DataFrame:
    """An archive with no elites (the archive contract's columns and dtypes).

    See Also
    --------
    insert : Offer decided candidates to an archive.

    Examples
    --------
    >>> empty().columns.tolist()
    ['where', 'why', 'candidate', 'rate', 'delta_pp', 'z', 'round', 'credited']
    >>> len(empty())
    0
    """
    return empty_frame("archive")


def insert(archive: pd.DataFrame, decisions: pd.DataFrame, candidates: pd.DataFrame, *,
           round: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Offer every decided candidate to the archive; only kept train decisions enter.

    Decisions are taken in their row order. A candidate is kept when its ``kept`` column
    says so (the run's keep rule, :func:`gsme.policy.kept`); without that column, when it
    was credited (the paper's rule). A kept candidate fills an empty cell, or replaces the
    cell's elite when its ``rate_child`` is strictly higher (a tie keeps the elite). See the
    module docstring for a recombination's cell.

    See Also
    --------
    select_parent : The parent of the next children, from this archive.
    recombinations : Cross-cell recombinations of its elites.
    gsme.policy.kept : The keep rule that fills the ``kept`` column.

    Parameters
    ----------
    archive, decisions, candidates
        Frames of their contracts (``decisions`` may add a bool ``kept``); every decided
        candidate must be a row of ``candidates``, and a candidate is decided at most once.
    round
        The round stored for the entering elites; default each candidate's own round.

    Returns
    -------
    tuple of DataFrame
        The new archive, sorted by ``where, why`` (``credited`` says whether each elite's
        decision was a credit); and one outcome per decision with columns ``candidate,
        where, why, status`` (new_cell, improved or not_added), ``improvement`` (rate minus
        the elite's rate it was compared with; the rate itself for a new cell; NaN when it
        was not compared) and ``reason``.

    Examples
    --------
    Offering a simulated run's decisions to an empty archive rebuilds the run's archive:

    >>> from gsme import experiments
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> new, outcomes = insert(empty(), run.decisions(), run.candidates())
    >>> outcomes[["candidate", "status", "reason"]]
      candidate     status                            reason
    0     c0001   new_cell                               NaN
    1     c0002  not_added  not kept (decision inconclusive)
    2     c0003  not_added  not kept (decision inconclusive)
    >>> new["candidate"].tolist() == run.archive()["candidate"].tolist()
    True
    >>> run.close()
    """
    validate(archive, "archive")
    decisions = validate(decisions, "decisions")
    validate(candidates, "candidates")
    if round is not None and (isinstance(round, bool) or not isinstance(round, (int, np.integer))
                              or round < 0):
        raise ValueError(f"round must be None or a whole number >= 0, got {round!r}")
    repeated = decisions["child"].duplicated(keep=False)
    if repeated.any():
        twice = sorted(set(decisions.loc[repeated, "child"]))
        raise FrameError(f"decisions decide candidate(s) {twice} more than once; insert "
                         f"needs one decision per candidate")
    rows = candidates.set_index("candidate", drop=False)
    unknown = sorted(set(decisions["child"]) - set(rows.index))
    if unknown:
        raise FrameError(f"decided candidate(s) {unknown} are not rows of candidates")
    kept = _kept(decisions)
    cells = {(r["where"], r["why"]): dict(r) for r in archive[_COLUMNS].to_dict("records")}
    outcomes = []
    for decision, keep in zip(decisions.to_dict("records"), kept):
        name = decision["child"]
        cell = _cell(name, rows)
        outcome = {"candidate": name, "where": cell[0] if cell else None,
                   "why": cell[1] if cell else None, "status": "not_added",
                   "improvement": np.nan, "reason": None}
        outcomes.append(outcome)
        rate = decision["rate_child"]
        if not keep:
            outcome["reason"] = f"not kept (decision {decision['decision']})"
            continue
        if decision["split"] != "train":
            outcome["reason"] = f"decided on split {decision['split']}; only train enters"
            continue
        if cell is None:
            outcome["reason"] = "no cell: neither it nor an ancestor names a where and why"
            continue
        if pd.isna(rate):
            raise FrameError(f"kept decision of {name!r} has no rate_child")
        elite = cells.get(cell)
        if elite is not None and rate <= elite["rate"]:
            outcome["improvement"] = rate - elite["rate"]
            outcome["reason"] = (f"rate {rate:.4g} does not beat elite {elite['candidate']} "
                                 f"({elite['rate']:.4g})")
            continue
        outcome["status"] = "new_cell" if elite is None else "improved"
        outcome["improvement"] = rate if elite is None else rate - elite["rate"]
        outcome["reason"] = None if elite is None else f"replaces {elite['candidate']}"
        cells[cell] = {"where": cell[0], "why": cell[1], "candidate": name, "rate": rate,
                       "delta_pp": decision["delta_pp"], "z": decision["z"],
                       "round": int(rows.loc[name, "round"] if round is None else round),
                       "credited": decision["decision"] == "credit"}
    new = _frame(list(cells.values()))
    report = pd.DataFrame(outcomes, columns=empty_frame("outcomes").columns)
    report = report.astype(empty_frame("outcomes").dtypes.to_dict())
    return validate(new, "archive"), validate(report, "outcomes")


def _kept(decisions: pd.DataFrame) -> np.ndarray:
    """The ``kept`` column as bools (missing: credited); NaN in it is an error."""
    if "kept" not in decisions.columns:
        return (decisions["decision"] == "credit").to_numpy()
    kept = decisions["kept"]
    if kept.isna().any() or not set(kept.unique()) <= {True, False}:
        raise FrameError(f"decisions column 'kept' must hold only True/False:\n"
                         f"{decisions.loc[~kept.isin([True, False]), ['child', 'kept']]}")
    return kept.to_numpy(dtype=bool)


def select_parent(archive: pd.DataFrame, *, rng: np.random.Generator,
                  baseline: str = BASELINE, explore: float = 0.0) -> str:
    """The candidate the next child extends: the global best, now and then another elite.

    The global best is the elite with the highest ``rate`` (ties: higher ``z``, then
    earlier ``round``, then candidate id). With probability ``explore`` another elite,
    drawn uniformly, is returned instead. An empty archive gives ``baseline`` and draws
    nothing from ``rng``. Called once per child, it checks only the columns it reads
    (the full contract check costs more than the selection).

    See Also
    --------
    insert : How elites enter the archive.
    recombinations : Stacks of other cells' elites to merge onto the chosen parent.

    Examples
    --------
    >>> a = pd.DataFrame({"where": ["prompt", "runtime"], "why": ["looping", "looping"],
    ...                   "candidate": ["c1", "c2"], "rate": [0.6, 0.7],
    ...                   "delta_pp": [5.0, 8.0], "z": [2.1, 2.5], "round": [1, 2],
    ...                   "credited": True})
    >>> select_parent(a, rng=np.random.default_rng(0))
    'c2'
    >>> [select_parent(a, rng=np.random.default_rng(s), explore=0.5) for s in range(4)]
    ['c2', 'c2', 'c1', 'c1']
    >>> select_parent(empty(), rng=np.random.default_rng(0))
    'baseline'
    """
    if not isinstance(archive, pd.DataFrame):
        raise TypeError(f"archive must be a pandas DataFrame, got {type(archive).__name__}")
    missing = [c for c in ("candidate", "rate", "z", "round") if c not in archive.columns]
    if missing:
        raise FrameError(f"archive frame is missing column(s) {missing}; it has "
                         f"{list(archive.columns)}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator (np.random.default_rng(seed)), "
                        f"got {type(rng).__name__}")
    if not 0.0 <= explore <= 1.0:
        raise ValueError(f"explore must be a probability in [0, 1], got {explore!r}")
    if archive.empty:
        return baseline
    ranked = _ranked(archive)["candidate"].tolist()
    if explore > 0 and len(ranked) > 1 and rng.random() < explore:
        others = sorted(ranked[1:])
        return others[int(rng.integers(len(others)))]
    return ranked[0]


def recombinations(archive: pd.DataFrame, *, base: str, lineage, proposed=(),
                   max_size: int = 2, limit: int | None = None) -> pd.DataFrame:
    """Stacks of elites from distinct cells to merge onto ``base``, best first.

    An elite in ``lineage`` (the base's ancestors, e.g. ``HarnessRepo.lineage(base)``) or
    equal to ``base`` is left out: its patch is already there. A stack whose
    ``frozenset({base, *elites})`` is in ``proposed`` is left out too, so no stack is
    proposed twice onto one base.

    Returns
    -------
    DataFrame
        Columns ``base, elites`` (comma-separated, by score then id), ``cells``
        (``where/why`` per elite, same order), ``size`` and ``score`` (the sum of the
        elites' ``delta_pp``: their measured lifts, taken as additive). Sorted by
        ``score`` descending, then ``size``, then ``elites``; at most ``limit`` rows.

    See Also
    --------
    select_parent : The base a recombination usually extends (the global best).

    Examples
    --------
    >>> a = pd.DataFrame({"where": ["prompt", "runtime", "runtime"],
    ...                   "why": ["looping", "looping", "format-error"],
    ...                   "candidate": ["c1", "c2", "c3"], "rate": [0.6, 0.7, 0.55],
    ...                   "delta_pp": [5.0, 8.0, 3.0], "z": [2.1, 2.5, 2.0],
    ...                   "round": [1, 2, 2], "credited": True})
    >>> recombinations(a, base="c2", lineage=["baseline"])
      base elites                                cells  size  score
    0   c2  c1,c3  prompt/looping,runtime/format-error     2    8.0
    1   c2     c1                       prompt/looping     1    5.0
    2   c2     c3                 runtime/format-error     1    3.0

    A stack already proposed onto this base is not offered again:

    >>> again = recombinations(a, base="c2", lineage=["baseline"], proposed=[{"c2", "c1"}])
    >>> again["elites"].tolist()
    ['c1,c3', 'c3']
    """
    validate(archive, "archive")
    if isinstance(lineage, str):
        raise TypeError("lineage must be a list or set of candidate ids, not a string")
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1:
        raise ValueError(f"max_size must be a whole number >= 1, got {max_size!r}")
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be None or a whole number >= 0, got {limit!r}")
    seen = {frozenset(p) for p in proposed}
    skip = set(lineage) | {base}
    pool = archive.loc[~archive["candidate"].isin(skip)].copy()
    pool = pool.sort_values(["delta_pp", "candidate"], ascending=[False, True],
                            na_position="last")
    elites = pool.to_dict("records")
    rows = []
    for size in range(1, min(max_size, len(elites)) + 1):
        for stack in combinations(elites, size):
            names = [e["candidate"] for e in stack]
            if frozenset([base, *names]) in seen:
                continue
            rows.append({"base": base, "elites": join_ids(names),
                         "cells": join_ids(f"{e['where']}/{e['why']}" for e in stack),
                         "size": size, "score": float(np.nansum([e["delta_pp"] for e in stack]))})
    out = pd.DataFrame(rows, columns=["base", "elites", "cells", "size", "score"])
    out = out.astype({"base": object, "elites": object, "cells": object, "size": np.int64,
                      "score": np.float64})
    out = out.sort_values(["score", "size", "elites"], ascending=[False, True, True],
                          kind="stable").reset_index(drop=True)
    return out if limit is None else out.head(limit)


def occupancy(archive: pd.DataFrame, *, where_levels=LEVERS, why_levels=None,
              value: str = "rate") -> pd.DataFrame:
    """A where × why table of one column of the elites, for heatmaps.

    Parameters
    ----------
    archive : DataFrame
    where_levels, why_levels : sequence of str
        Rows and columns (``why_levels`` default: the archive's labels sorted).
    value : {"rate", "delta_pp", "z", "credited"}
        Which column of each elite fills its cell (``credited``: whether the elite was
        credited or only kept, as 1.0 / 0.0).

    Returns
    -------
    DataFrame
        Index ``where`` (``where_levels``), columns ``why`` (``why_levels``); each cell the
        elite's ``value``, NaN when empty.

    Raises
    ------
    ValueError
        An elite's where or why is not among the levels given, or ``value`` is not one of
        the columns above.

    See Also
    --------
    summary : The archive in one row.
    gsme.plot.occupancy : The heatmap drawn from this table.

    Examples
    --------
    >>> a = pd.DataFrame({"where": ["prompt", "runtime", "runtime"],
    ...                   "why": ["looping", "looping", "format-error"],
    ...                   "candidate": ["c1", "c2", "c3"], "rate": [0.6, 0.7, 0.55],
    ...                   "delta_pp": [5.0, 8.0, 3.0], "z": [2.1, 2.5, 2.0],
    ...                   "round": [1, 2, 2], "credited": True})
    >>> occupancy(a)  # doctest: +NORMALIZE_WHITESPACE
    why        format-error  looping
    where
    prompt              NaN      0.6
    knowledge           NaN      NaN
    runtime            0.55      0.7
    config              NaN      NaN
    """
    validate(archive, "archive")
    if value not in ("rate", "delta_pp", "z", "credited"):
        raise ValueError(f"value must be one of ['rate', 'delta_pp', 'z', 'credited'], "
                         f"got {value!r}")
    where_levels = list(where_levels)
    why_levels = sorted(set(archive["why"])) if why_levels is None else list(why_levels)
    for column, levels in (("where", where_levels), ("why", why_levels)):
        outside = sorted(set(archive[column]) - set(levels))
        if outside:
            raise ValueError(f"archive {column} value(s) {outside} are not in {column}_levels "
                             f"{levels}")
    table = pd.DataFrame(np.nan, index=pd.Index(where_levels, name="where", dtype=object),
                         columns=pd.Index(why_levels, name="why", dtype=object))
    for where, why, cell in zip(archive["where"], archive["why"], archive[value]):
        table.loc[where, why] = float(cell)
    return table


def summary(archive: pd.DataFrame, *, n_cells: int | None = None) -> pd.DataFrame:
    """Summary of the archive in one row.

    Returns
    -------
    DataFrame
        One row: ``num_elites``; ``coverage`` (num_elites / ``n_cells``, NaN when
        ``n_cells`` is None); ``qd_score`` (sum of the elites' rates); ``best_rate`` and
        ``best_candidate`` (the global best, as in :func:`select_parent`; NaN/None when
        empty).

    See Also
    --------
    occupancy : The archive as a where × why table.

    Examples
    --------
    >>> summary(empty(), n_cells=24)[["num_elites", "coverage", "qd_score"]]
       num_elites  coverage  qd_score
    0           0       0.0       0.0
    """
    validate(archive, "archive")
    if n_cells is not None and (isinstance(n_cells, bool) or not isinstance(n_cells, int)
                                or n_cells < max(1, len(archive))):
        raise ValueError(f"n_cells must be a whole number >= the {len(archive)} elites "
                         f"(and >= 1), got {n_cells!r}")
    best = _ranked(archive).head(1)
    return pd.DataFrame({
        "num_elites": pd.Series([len(archive)], dtype=np.int64),
        "coverage": [len(archive) / n_cells if n_cells else np.nan],
        "qd_score": [float(archive["rate"].sum())],
        "best_rate": [float(best["rate"].iloc[0]) if len(best) else np.nan],
        "best_candidate": pd.Series([best["candidate"].iloc[0] if len(best) else None],
                                    dtype=object),
    })


def _cell(name: str, rows: pd.DataFrame, seen: frozenset = frozenset()) -> tuple | None:
    row = rows.loc[name]
    if row["kind"] != "recombination":
        return None if pd.isna(row["where"]) or pd.isna(row["why"]) else (row["where"],
                                                                          row["why"])
    for parent in split_ids(row["parents"]):  # base first; the baseline has no cell
        if parent in rows.index and parent not in seen:
            cell = _cell(parent, rows, seen | {name})
            if cell is not None:
                return cell
    return None


def _ranked(archive: pd.DataFrame) -> pd.DataFrame:
    return archive.sort_values(["rate", "z", "round", "candidate"],
                               ascending=[False, False, True, True], na_position="last")


def _frame(records: list[dict]) -> pd.DataFrame:
    if not records:
        return empty()
    frame = pd.DataFrame(records, columns=_COLUMNS)
    frame = frame.astype({"where": object, "why": object, "candidate": object,
                          "rate": np.float64, "delta_pp": np.float64, "z": np.float64,
                          "round": np.int64, "credited": bool})
    return frame.sort_values(["where", "why"]).reset_index(drop=True)
