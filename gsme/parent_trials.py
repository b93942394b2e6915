"""Which trials of its parent a child is compared with: a fresh block, or those stored.

A parent is a parent because its trials looked good: it was kept on them, or (the
baseline) nothing beat them. Comparing its children with those same trials carries the
winner's curse: the parent's measured rate sits above its truth and every child's Δ below
its true effect (``benchmarks/reference_bias.py``). Under ``GateConfig(parent_trials=
"fresh")``, the default, the children of a round are compared with a **block** of parent
trials scored alongside them: repeats ``first .. first + S - 1`` of the parent, where ``S``
is the most repeats the design takes (:func:`stride`: ``k`` fixed, ``k_max`` adaptive) and
``first = S * round``, the children's round (block 0, the cold start's round, holds the
parent's own trials: a child reads only its repeats ``0 .. S - 1``). No selection has read a block
before its comparison: the evolver reads a parent's failures before the round's children
are proposed, and the block is scored after. ``parent_trials="stored"`` compares with the
parent's stored trials, as the paper does (runs made before 0.3.0 read so).

Borrowing keeps its power and loses its bias: a child borrows a slot where it behaves as its
parent only from its block (its repeat ``r`` from the parent's ``first + r``), never from
the stored trials, and a block borrows nothing (:func:`lenders`).

The statistics run unchanged on a view of the trials (:func:`view`): each block appears as
a candidate of its own, :func:`label` ``parent@first``, its repeats counted from 0, and each
child is paired with its block.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gsme import designs, pairing, schema
from gsme._renamed import renamed_keywords
from gsme.settings import GateConfig

__all__ = ["label", "lenders", "of_child", "pairs", "require_blocks", "stride", "unview",
           "view"]


@renamed_keywords(config="gate")
def stride(gate: GateConfig) -> int:
    """Repeats a block spans: the most repeats a comparison of the design reads.

    Examples
    --------
    >>> stride(GateConfig(design="fixed")), stride(GateConfig(design="adaptive"))
    (3, 9)
    """
    return int(designs.design_of(gate).look_repeats(gate)[-1])


def label(parent, first) -> str:
    """The view's name of the block of ``parent`` starting at repeat ``first``.

    Examples
    --------
    >>> label("c0003", 18)
    'c0003@18'
    """
    return f"{parent}@{int(first)}"


@renamed_keywords(config="gate")
def pairs(candidates: pd.DataFrame, names=None, *, split: str = "train",
          gate: GateConfig) -> pd.DataFrame:
    """Each candidate with its first parent and the parent trials it is compared with.

    Parameters
    ----------
    candidates : DataFrame
        Candidates (``candidate, parents, kind, round``).
    names : list of str, optional
        The candidates wanted (default: every non-baseline one), in this order; the
        baseline gets ``parent`` None.
    split : {"train", "test"}
        Blocks exist on the train split only; on the test split ``first`` is 0.
    gate : GateConfig
        Its ``parent_trials`` and design (for :func:`stride`).

    Returns
    -------
    DataFrame
        ``child, parent, first, reference``: ``first`` the parent repeat that the
        child's repeat 0 is paired with (0: the stored trials), ``reference`` the parent's
        name in the view (:func:`label` of a block, or the parent itself when ``first`` is 0).

    Examples
    --------
    >>> c = pd.DataFrame({"candidate": ["baseline", "c1", "c2", "c3"],
    ...                   "parents": ["", "baseline", "baseline", "baseline"],
    ...                   "kind": ["baseline", "mutation", "mutation", "mutation"],
    ...                   "round": [0, 1, 1, 2]})
    >>> pairs(c, gate=GateConfig(design="fixed"))
      child    parent  first   reference
    0    c1  baseline      3  baseline@3
    1    c2  baseline      3  baseline@3
    2    c3  baseline      6  baseline@6
    >>> pairs(c, gate=GateConfig(design="fixed", parent_trials="stored"))["reference"].tolist()
    ['baseline', 'baseline', 'baseline']
    """
    schema.require(candidates, ["candidate", "parents", "kind", "round"], "candidates")
    candidate = candidates["candidate"].to_numpy(dtype=object)
    parent = np.array([(schema.split_ids(p) or [None])[0] for p in candidates["parents"]],
                      dtype=object)
    parent[(candidates["kind"] == "baseline").to_numpy()] = None
    has = pd.notna(parent)
    fresh = gate.parent_trials == "fresh" and split == "train"
    first = np.where(has & fresh, candidates["round"].to_numpy(np.int64) * stride(gate),
                     0).astype(np.int64)
    if names is None:
        rows = np.flatnonzero(has)
    else:
        rows = pd.Index(candidate, dtype=object).get_indexer(pd.Index(list(names), dtype=object))
        if (rows < 0).any():
            missing = [n for n, w in zip(names, rows) if w < 0]
            raise KeyError(f"unknown candidate(s) {missing}")
    candidate, parent, first = candidate[rows], parent[rows], first[rows]
    reference = [p if p is None or f == 0 else label(p, f)
                 for p, f in zip(parent, first.tolist())]
    return pd.DataFrame({"child": candidate, "parent": parent, "first": first,
                         "reference": np.asarray(reference, dtype=object)})


@renamed_keywords(config="gate")
def view(trials: pd.DataFrame | pairing.Checked, paired: pd.DataFrame, *,
         gate: GateConfig) -> pd.DataFrame | pairing.Checked:
    """The trials a comparison reads: each candidate's own, and each block of ``paired``
    as a candidate of its own.

    Under ``parent_trials="fresh"`` a candidate's own train trials are its repeats below
    :func:`stride` (block 0); a block's rows are the parent's train trials of repeats
    ``first .. first + S - 1``, renamed :func:`label` and renumbered from 0,
    ``borrowed_from`` the parent (so a child's slot borrowed from its block counts as the
    same trial). Under ``"stored"`` the trials are returned as they are. Given a
    :class:`gsme.pairing.Checked`, the view is checked too: its own rows as they are
    (:meth:`gsme.pairing.Checked.rows`) and the blocks' rows checked on their own
    (:meth:`gsme.pairing.Checked.extended`); given a frame, a frame.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": "p", "task_id": "t1", "split": "train",
    ...                   "repeat": [0, 1, 2, 3], "passed": [1, 1, 0, 0]})
    >>> paired = pd.DataFrame({"parent": ["p"], "first": [2]})
    >>> view(t, paired, gate=GateConfig(design="fixed", k=2))[["candidate", "repeat",
    ...                                                          "passed"]]
      candidate  repeat  passed
    0         p       0       1
    1         p       1       1
    2       p@2       0       0
    3       p@2       1       0
    """
    if gate.parent_trials == "stored":
        return trials
    span = stride(gate)
    fresh = paired["first"].to_numpy() > 0
    blocks = list(dict.fromkeys(zip(paired["parent"].to_numpy(dtype=object)[fresh].tolist(),
                                    paired["first"].to_numpy()[fresh].tolist())))  # once each
    checked = trials if isinstance(trials, pairing.Checked) else None
    trials = trials.frame if checked is not None else trials
    own = (trials["split"] != "train") | (trials["repeat"] < span)
    if checked is not None and not blocks:
        return checked.rows(own.to_numpy())
    parts = [] if checked is not None else [trials[own]]
    for parent, first in blocks:
        rows = trials[(trials["candidate"] == parent) & (trials["split"] == "train")
                      & (trials["repeat"] >= first) & (trials["repeat"] < first + span)]
        lent = (rows["borrowed_from"] if "borrowed_from" in rows
                else pd.Series(None, index=rows.index, dtype=object))
        parts.append(rows.assign(candidate=label(parent, first), repeat=rows["repeat"] - first,
                                 borrowed_from=lent.where(lent.notna(), parent)))
    if checked is not None:
        return checked.rows(own.to_numpy()).extended(pd.concat(parts, ignore_index=True))
    return pd.concat(parts, ignore_index=True)


def require_blocks(seen: pd.DataFrame, paired: pd.DataFrame) -> None:
    """Refuse pairs whose block holds no trial while their parent has stored ones: trials
    scored outside gsme's loop (by hand, from logs) have no fresh blocks.

    Raises
    ------
    gsme.schema.FrameError
        Naming the first such child, its parent and the block's repeats.

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": ["p", "c"], "repeat": 0})
    >>> paired = pd.DataFrame({"child": ["c"], "parent": ["p"], "first": [3],
    ...                        "reference": ["p@3"]})
    >>> require_blocks(t, paired)
    Traceback (most recent call last):
    ...
    gsme.schema.FrameError: candidate 'c': its parent 'p' has no trials in the fresh block ...
    """
    blocks = paired[paired["first"].to_numpy() > 0]
    if blocks.empty:
        return
    present = set(seen["candidate"].unique())
    lacking = blocks[~blocks["reference"].isin(present) & blocks["parent"].isin(present)]
    if len(lacking):
        row = lacking.iloc[0]
        raise schema.FrameError(
            f"candidate {row['child']!r}: its parent {row['parent']!r} has no trials in "
            f"the fresh block it is compared with (repeats from {row['first']}, scored "
            "alongside it by gsme's loop: GateConfig.parent_trials='fresh'); to gate trials "
            "scored otherwise pass GateConfig(parent_trials='stored')")


@renamed_keywords(config="gate")
def of_child(trials: pd.DataFrame, candidates: pd.DataFrame, child: str, *,
             split: str = "train", gate: GateConfig) -> tuple[pd.DataFrame, str]:
    """The trials ``child``'s comparison reads (:func:`view`) and its parent's name there,
    for one comparison replayed task by task (:func:`gsme.stats.paired_tasks`).

    Examples
    --------
    >>> t = pd.DataFrame({"candidate": ["p"] * 4 + ["c"] * 2, "task_id": "t1",
    ...                   "split": "train", "repeat": [0, 1, 2, 3, 0, 1],
    ...                   "passed": [1, 1, 0, 0, 1, 0]})
    >>> c = pd.DataFrame({"candidate": ["p", "c"], "parents": ["", "p"],
    ...                   "kind": ["baseline", "mutation"], "round": [0, 1]})
    >>> seen, parent = of_child(t, c, "c", gate=GateConfig(design="fixed", k=2))
    >>> parent, seen.loc[seen["candidate"] == parent, "passed"].tolist()
    ('p@2', [0, 0])
    """
    paired = pairs(candidates, [child], split=split, gate=gate)
    return view(trials, paired, gate=gate), paired["reference"].iloc[0]


def unview(wanted: pd.DataFrame, paired: pd.DataFrame) -> pd.DataFrame:
    """Wanted repeats of the view (:func:`gsme.designs.wanted`) as the parent's own.

    Returns
    -------
    DataFrame
        ``candidate, task_id, split, repeats, first``: a block's rows name its parent with
        the block's ``first``; every other row has ``first`` 0 (repeats ``first ..
        first + repeats - 1`` are wanted).

    Examples
    --------
    >>> paired = pd.DataFrame({"child": ["c"], "parent": ["p"], "first": [9],
    ...                        "reference": ["p@9"]})
    >>> wanted = pd.DataFrame({"candidate": ["c", "p@9"], "task_id": "t1", "split": "train",
    ...                        "repeats": 3})
    >>> unview(wanted, paired)[["candidate", "repeats", "first"]].values.tolist()
    [['c', 3, 0], ['p', 3, 9]]
    """
    blocks = paired[paired["first"].to_numpy() > 0]
    of = dict(zip(blocks["reference"], zip(blocks["parent"], blocks["first"])))
    names = wanted["candidate"].to_numpy(dtype=object)
    parent = np.array([of.get(n, (n, 0))[0] for n in names], dtype=object)
    first = np.array([of.get(n, (n, 0))[1] for n in names], dtype=np.int64)
    return wanted.assign(candidate=parent, first=first)


def lenders(paired: pd.DataFrame) -> pd.DataFrame:
    """Who may lend to whom: each child with a block borrows only from its parent, at the
    repeat shifted by the block's ``first``.

    Returns
    -------
    DataFrame
        ``candidate, lender, shift``: one row per pair with a block.

    Examples
    --------
    >>> paired = pd.DataFrame({"child": ["c", "b"], "parent": ["p", None],
    ...                        "first": [9, 0], "reference": ["p@9", None]})
    >>> lenders(paired).values.tolist()
    [['c', 'p', 9]]
    """
    blocks = paired[paired["first"].to_numpy() > 0]
    return pd.DataFrame({"candidate": blocks["child"].to_numpy(dtype=object),
                         "lender": blocks["parent"].to_numpy(dtype=object),
                         "shift": blocks["first"].to_numpy(np.int64)})
