"""Keep rules: which children a run keeps, and which harness it reports and seals.

Three words stay apart. **Kept**: the working harness moves on to the child (it enters the
archive, and the next round may extend it). **Credited**: the paired gate, at its nominal
level, says the child beats its parent (``decision == "credit"``). **Sealed**: the one test
of the reported harness against the baseline on the sealed split, at the end. A keep rule
may be more lenient than the credit rule, as the screening stage of a screen-then-confirm
design is, because the sealed test protects the run's final claim.

Pure functions of frames, used by the loop (:mod:`gsme.evolve`), by the run when it is
sealed (:func:`gsme.measure.finalize`), and by notebooks that compare policies.

* ``gated`` — the paper's: a child is kept only when the three gates credit it.
* ``greedy`` — what prior systems do: any child whose train rate rose is kept.
* ``peak`` — like greedy, and the reported harness is the best train rate ever scored.
* ``learned`` — a child is kept when it is credited, or when its measured Δ is positive
  and its expected true effect is worth keeping (above ``KeepConfig.worth_pp``, a quarter
  of a point) under the mix of proposal effects learned from every comparison available:
  the run's own so far and those of the latest earlier runs of the same world, when this
  run's comparisons agree with them (empirical Bayes, :mod:`gsme.prior`). Lenient where
  proposals have been helping, strict where they have been hurting, cautious before there
  is evidence (:class:`~gsme.settings.KeepConfig`).

Every policy but ``peak`` reports the archive's best elite.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gsme import archive as archive_lib
from gsme import prior, schema, stats
from gsme._renamed import call_extension, renamed_keywords
from gsme.registry import POLICIES
from gsme.schema import BASELINE
from gsme.settings import KeepConfig

__all__ = ["POLICIES", "Gated", "Greedy", "Learned", "Peak", "Policy", "expected_effects",
           "history_check", "kept", "learned_mix", "reported", "screen"]


@renamed_keywords(config="keep")
def expected_effects(decisions: pd.DataFrame, *, past: pd.DataFrame | None = None,
                     keep: KeepConfig | None = None) -> pd.DataFrame:
    """Each decided child's true effect as the mix learned from all comparisons sees it.

    The mix is fitted (:func:`gsme.prior.fit`) on the comparisons of ``past`` and of
    ``decisions`` whose decision measured an effect (credit, cull, inconclusive), each by
    its first-K Δ where it has one (:func:`gsme.prior.learned_from`); invalid and inactive
    children get NaN. Rows of ``past`` not marked ``own`` are history (earlier runs): only
    its latest ``keep.history_runs`` runs count, and it is dropped when this run's
    comparisons (its ``own`` rows and ``decisions``) fail the check against it
    (:func:`history_check`).

    Parameters
    ----------
    decisions : DataFrame
        ``decision, delta_pp, se_pp`` (a decisions frame; ``first_delta_pp, first_se_pp``
        when it has them).
    past : DataFrame, optional
        Earlier comparisons (``delta_pp, se_pp``, and ``decision``, ``run``, ``own`` if
        known): earlier runs of the same world and the run's earlier rounds
        (:meth:`gsme.run.Run.comparisons`).
    keep : KeepConfig, optional

    Returns
    -------
    DataFrame
        One row per decision, same index: ``expected_delta_pp``, ``p_positive``, ``lfsr``
        (see :func:`gsme.prior.posterior`, of the child's own ``delta_pp, se_pp``).

    Examples
    --------
    >>> d = pd.DataFrame({"decision": ["inconclusive"], "delta_pp": [1.0], "se_pp": [3.5]})
    >>> helped = pd.DataFrame({"delta_pp": [6.0, 9.0, 4.0, 7.0] * 20, "se_pp": 3.5})
    >>> float(expected_effects(d)["expected_delta_pp"].iloc[0]) < 0   # cautious, alone
    True
    >>> float(expected_effects(d, past=helped)["expected_delta_pp"].iloc[0]) > 0
    True
    """
    keep = keep or KeepConfig()
    schema.require(decisions, ["decision", *prior.COMPARISON_COLUMNS], "decisions")
    measured = decisions["decision"].isin(prior.LEARNED_DECISIONS).to_numpy()
    mix, _ = learned_mix(decisions, past=past, keep=keep)
    out = prior.posterior(decisions[prior.COMPARISON_COLUMNS], mix, keep=keep)
    out.loc[~measured] = np.nan
    return out


@renamed_keywords(config="keep")
def learned_mix(decisions: pd.DataFrame, *, past: pd.DataFrame | None = None,
                keep: KeepConfig | None = None) -> tuple[pd.DataFrame, int]:
    """The mix of proposal effects :func:`expected_effects` learns for ``decisions``, and
    how many comparisons it learned from.

    The history in ``past`` (rows not marked ``own``) counts when its check passes
    (:func:`history_check`), capped at its latest ``keep.history_runs`` runs; then the
    run's own rows and ``decisions``; of each, the rows that measured an effect, by their
    first-look Δ where known (:func:`gsme.prior.learned_from`).

    Returns
    -------
    tuple
        The mix (:func:`gsme.prior.fit`: ``effect_pp, weight``) and the number of
        comparisons it was fitted on.

    Examples
    --------
    >>> d = pd.DataFrame({"decision": ["inconclusive"], "delta_pp": [1.0], "se_pp": [3.5]})
    >>> mix, learned = learned_mix(d)
    >>> learned, round(float(mix["weight"].sum()), 6)
    (1, 1.0)
    """
    keep = keep or KeepConfig()
    history, own = _split(past)
    check = prior.check_history(history, pd.concat([own, decisions]), keep=keep)
    kept_history = (prior.recent_runs(history, keep.history_runs) if check["used"]
                    else history.iloc[:0])
    evidence = [prior.learned_from(frame.loc[_learned(frame)])
                for frame in (kept_history, own, decisions) if len(frame)]
    evidence = (pd.concat(evidence, ignore_index=True) if evidence
                else pd.DataFrame(columns=prior.COMPARISON_COLUMNS))
    return prior.fit(evidence, keep=keep), int(evidence.dropna().shape[0])


@renamed_keywords(config="keep")
def history_check(decisions: pd.DataFrame, *, past: pd.DataFrame | None = None,
                  keep: KeepConfig | None = None) -> dict:
    """The check :func:`expected_effects` makes of ``past``'s history before learning from it.

    :func:`gsme.prior.check_history` of the rows of ``past`` not marked ``own`` against the
    run's own rows and ``decisions``; a run records it as a ``history_checked`` event.

    Examples
    --------
    >>> d = pd.DataFrame({"decision": "inconclusive", "delta_pp": [-4.0, -2.0, -5.0, -3.0],
    ...                   "se_pp": 3.5})
    >>> kind = pd.DataFrame({"run": "r1", "own": False, "decision": "inconclusive",
    ...                      "delta_pp": [6.0, 9.0, 4.0, 7.0] * 10, "se_pp": 3.5})
    >>> check = history_check(d, past=kind)
    >>> check["runs"], check["current"], check["used"]
    (1, 4, False)
    """
    history, own = _split(past)
    return prior.check_history(history, pd.concat([own, decisions]),
                               keep=keep or KeepConfig())


def _split(past: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``past`` as (history, own rows): rows marked ``own`` are the run's; the rest history."""
    if past is None or not len(past):
        empty = pd.DataFrame(columns=prior.COMPARISON_COLUMNS)
        return empty, empty
    schema.require(past, prior.COMPARISON_COLUMNS, "past")
    own = past["own"].astype(bool) if "own" in past else pd.Series(False, index=past.index)
    return past[~own], past[own]


def _learned(frame: pd.DataFrame) -> np.ndarray:
    """Rows whose decision measured an effect (every row of a frame without decisions)."""
    if "decision" not in frame:
        return np.ones(len(frame), dtype=bool)
    return frame["decision"].isin(prior.LEARNED_DECISIONS).to_numpy()


@renamed_keywords(config="keep")
def screen(decisions: pd.DataFrame, *, policy: str, past: pd.DataFrame | None = None,
           keep: KeepConfig | None = None) -> pd.DataFrame:
    """Which decided children ``policy`` keeps, and what each is expected to be worth.

    ``past`` and ``keep`` are those of :func:`expected_effects`. The ``learned`` policy
    keeps a credited child always, and any other child whose decision measured an effect
    when its expected true effect is above ``keep.worth_pp``.

    Returns
    -------
    DataFrame
        One row per decision, same index: ``kept`` (bool) and the columns of
        :func:`expected_effects` (``expected_delta_pp, p_positive, lfsr``), computed for
        every policy so that a run's table can show them.

    See Also
    --------
    kept : The ``kept`` column alone.
    expected_effects : What each child is expected to be worth.
    gsme.prior.fit : The learned mix of proposal effects.
    gsme.gates.credit : The decisions it screens.

    Examples
    --------
    >>> from gsme import experiments
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> decisions = run.decisions()
    >>> gated = screen(decisions, policy="gated")
    >>> bool((gated["kept"] == (decisions["decision"] == "credit")).all())
    True
    >>> run.close()
    """
    rule = POLICIES.get(policy)
    schema.require(decisions, ["decision", "delta_pp"], "decisions")
    out = expected_effects(decisions, past=past, keep=keep)
    chosen = call_extension(rule.keep, decisions, out, keep=keep or KeepConfig())
    out.insert(0, "kept", np.asarray(chosen, dtype=bool))
    return out


@renamed_keywords(config="keep")
def kept(decisions: pd.DataFrame, *, policy: str, past: pd.DataFrame | None = None,
         keep: KeepConfig | None = None) -> np.ndarray:
    """Which decided children ``policy`` keeps, one bool per row (see :func:`screen`).

    Examples
    --------
    >>> d = pd.DataFrame({"decision": ["credit", "inconclusive"], "delta_pp": [5.0, 1.0],
    ...                   "se_pp": [2.0, 3.5]})
    >>> kept(d, policy="gated").tolist(), kept(d, policy="greedy").tolist()
    ([True, False], [True, True])
    >>> kept(d, policy="learned").tolist()   # no evidence yet: cautious
    [True, False]
    """
    return screen(decisions, policy=policy, past=past, keep=keep)["kept"].to_numpy()


def reported(archive: pd.DataFrame, trials: pd.DataFrame, *, policy: str, k: int) -> str:
    """The harness ``policy`` reports (and seals): its id, the baseline when none.

    ``peak`` reports the candidate with the highest mean per-task train rate over the first
    ``k`` repeats of each task (:func:`gsme.stats.candidate_rates`: unbiased under the
    adaptive design, which extends some tasks); every other policy the archive's best elite.

    See Also
    --------
    gsme.archive.summary : The archive's best elite.

    Examples
    --------
    ``peak`` may report a child that was never kept (here ``c3``, the best train rate):

    >>> a = pd.DataFrame({"where": ["prompt", "runtime"], "why": ["looping", "looping"],
    ...                   "candidate": ["c1", "c2"], "rate": [0.6, 0.7],
    ...                   "delta_pp": [5.0, 8.0], "z": [2.1, 2.5], "round": [1, 2],
    ...                   "credited": True})
    >>> t = pd.DataFrame({"candidate": np.repeat(["baseline", "c1", "c2", "c3"], 2),
    ...                   "task_id": ["t1", "t2"] * 4, "split": "train", "repeat": 0,
    ...                   "passed": [1, 0, 1, 0, 1, 0, 1, 1]})
    >>> reported(a, t, policy="gated", k=1), reported(a, t, policy="peak", k=1)
    ('c2', 'c3')
    """
    return POLICIES.get(policy).reported(archive, trials, k=k)


class Policy:
    """A keep rule: which decided children a run keeps, and which harness it reports.

    gsme's are :class:`Gated`, :class:`Greedy`, :class:`Peak` and :class:`Learned`. A new
    rule subclasses this (or one of them) and registers under a name
    (:data:`gsme.registry.POLICIES`: entry point group ``gsme.policies``, or
    ``POLICIES.register(name, policy)``); ``RunConfig(policy=name)`` and ``gsme demo
    --policy name`` then use it.

    Attributes
    ----------
    summary : str
        One line saying what the rule keeps (shown by ``gsme demo --help``).

    See Also
    --------
    screen, kept : Apply a registered rule by name.

    Examples
    --------
    A rule that keeps nothing, registered and used by name:

    >>> from gsme.registry import POLICIES
    >>> class Never(Policy):
    ...     summary = "keeps nothing"
    ...     def keep(self, decisions, expected, *, keep):
    ...         return np.zeros(len(decisions), dtype=bool)
    >>> POLICIES.register("never", Never)
    >>> d = pd.DataFrame({"decision": ["credit", "inconclusive", "cull"],
    ...                   "delta_pp": [5.0, 1.0, -4.0], "se_pp": [2.0, 3.5, 1.5]})
    >>> kept(d, policy="never").tolist()
    [False, False, False]
    >>> POLICIES.unregister("never")
    """

    summary = ""

    def keep(self, decisions: pd.DataFrame, expected: pd.DataFrame, *,
             keep: KeepConfig) -> np.ndarray:
        """One bool per decision: is the child kept? ``decisions`` is a decisions frame,
        ``expected`` the :func:`expected_effects` of its rows (same index), ``keep`` the
        run's settings. (A rule written before 0.3.0, taking ``config=``, still gets them
        so until 0.4.0, with a DeprecationWarning.)"""
        raise NotImplementedError

    def reported(self, archive: pd.DataFrame, trials: pd.DataFrame, *, k: int) -> str:
        """The harness the run reports and seals: the archive's best elite (the baseline
        when there is none)."""
        best = archive_lib.summary(archive)["best_candidate"].iloc[0]
        return BASELINE if best is None or pd.isna(best) else str(best)


def _credited(decisions: pd.DataFrame) -> np.ndarray:
    return (decisions["decision"] == "credit").to_numpy()


class Gated(Policy):
    """The paper's: a child is kept only when the three gates credit it.

    Examples
    --------
    >>> from gsme.settings import KeepConfig
    >>> d = pd.DataFrame({"decision": ["credit", "inconclusive", "cull"],
    ...                   "delta_pp": [5.0, 1.0, -4.0], "se_pp": [2.0, 3.5, 1.5]})
    >>> Gated().keep(d, expected_effects(d), keep=KeepConfig()).tolist()
    [True, False, False]
    """

    summary = "kept when credited by the paper's gates"

    @renamed_keywords(config="keep")
    def keep(self, decisions, expected, *, keep):
        return _credited(decisions)


class Greedy(Policy):
    """What prior systems do: any child whose train rate rose is kept.

    Examples
    --------
    >>> from gsme.settings import KeepConfig
    >>> d = pd.DataFrame({"decision": ["credit", "inconclusive", "cull"],
    ...                   "delta_pp": [5.0, 1.0, -4.0], "se_pp": [2.0, 3.5, 1.5]})
    >>> Greedy().keep(d, expected_effects(d), keep=KeepConfig()).tolist()
    [True, True, False]
    """

    summary = "kept after any train gain"

    @renamed_keywords(config="keep")
    def keep(self, decisions, expected, *, keep):
        # a tie computed as a sum of thirds can come out 1e-16 above 0: round first
        return (decisions["delta_pp"].fillna(0).round(9) > 0).to_numpy()


class Peak(Greedy):
    """Like greedy, and the reported harness is the best train rate ever scored (over the
    first ``k`` repeats of each task: :func:`gsme.stats.candidate_rates`).

    Examples
    --------
    >>> a = pd.DataFrame({"where": ["prompt", "runtime"], "why": ["looping", "looping"],
    ...                   "candidate": ["c1", "c2"], "rate": [0.6, 0.7],
    ...                   "delta_pp": [5.0, 8.0], "z": [2.1, 2.5], "round": [1, 2],
    ...                   "credited": True})
    >>> t = pd.DataFrame({"candidate": np.repeat(["baseline", "c1", "c2", "c3"], 2),
    ...                   "task_id": ["t1", "t2"] * 4, "split": "train", "repeat": 0,
    ...                   "passed": [1, 0, 1, 0, 1, 0, 1, 1]})
    >>> Peak().reported(a, t, k=1), Greedy().reported(a, t, k=1)
    ('c3', 'c2')
    """

    summary = "kept after any train gain; reports the best train rate ever scored"

    def reported(self, archive, trials, *, k):
        means = stats.candidate_rates(trials, k=k, split="train").set_index("candidate")["rate"]
        return str(means.idxmax()) if len(means) else BASELINE


class Learned(Policy):
    """Kept when credited, or when its measured Δ is above 0 and its expected true effect
    under the proposal mix learned so far is above ``KeepConfig.worth_pp`` (a child that
    measured no gain is never kept without a credit, however kind the mix).

    Examples
    --------
    Before there is evidence the rule is cautious: it keeps the credited child only.

    >>> from gsme.settings import KeepConfig
    >>> d = pd.DataFrame({"decision": ["credit", "inconclusive", "cull"],
    ...                   "delta_pp": [5.0, 1.0, -4.0], "se_pp": [2.0, 3.5, 1.5]})
    >>> Learned().keep(d, expected_effects(d), keep=KeepConfig()).tolist()
    [True, False, False]
    """

    summary = "kept when credited or worth keeping under the proposal mix learned so far"

    @renamed_keywords(config="keep")
    def keep(self, decisions, expected, *, keep):
        worth = expected["expected_delta_pp"].fillna(-np.inf).round(9) > keep.worth_pp
        gained = decisions["delta_pp"].fillna(0).round(9) > 0
        return _credited(decisions) | (worth & gained).to_numpy()
