"""The evolver interface: diagnose failing trajectories, propose patches. It never credits."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import ClassVar

import pandas as pd

from gsme.comparisons import digest
from gsme.patches import Patch
from gsme.schema import columns

__all__ = ["DIAGNOSIS_COLUMNS", "Evolver", "Log", "RoundView", "prompt_digest"]

DIAGNOSIS_COLUMNS = columns("diagnoses")
"""The columns every diagnosis frame starts with (see :mod:`gsme.schema`)."""

Log = Callable[[dict], None]
"""Where an evolver reports each model call it makes (tokens, cost, ...): the run's ledger."""


@dataclass(frozen=True)
class RoundView:
    """What a run shows an evolver that reads whole rounds (:attr:`Evolver.reads_round`).

    Train data only, never a test task nor a ground-truth ``pathology``.

    Attributes
    ----------
    round : int
        The round about to be diagnosed.
    parent : str
        The candidate whose failures it diagnoses.
    trials : DataFrame
        Every valid train trial of the parent, passing or not: ``candidate, task_id,
        repeat, passed, score, error, transcript`` plus the task's feature columns.
    diagnoses, decisions, history, archive : DataFrame
        The run's diagnoses and gate decisions of earlier rounds, the mechanisms tried
        (the history frame) and the archive as it stands.
    children : int
        How many patches the round asks for (the schedule's ``children_per_round``).

    Examples
    --------
    >>> view = RoundView(round=1, parent="baseline", trials=pd.DataFrame(),
    ...                  diagnoses=pd.DataFrame(), decisions=pd.DataFrame(),
    ...                  history=pd.DataFrame(), archive=pd.DataFrame(), children=2)
    >>> view.parent, view.children
    ('baseline', 2)
    """

    round: int
    parent: str
    trials: pd.DataFrame
    diagnoses: pd.DataFrame
    decisions: pd.DataFrame
    history: pd.DataFrame
    archive: pd.DataFrame
    children: int


class Evolver(abc.ABC):
    """Reads failures, names their pathology (where × why), proposes env-gated patches.

    ``failures`` holds failing *train* trials of the parent: ``candidate, task_id, repeat,
    transcript`` plus the task's feature columns. It never holds a test task or a
    ground-truth pathology label. ``harness`` is the parent's committed harness as a
    mapping of paths to text (read from git, never from a working tree). ``log``, when
    given, receives one record per model call, as it happens.

    Examples
    --------
    A minimal evolver that blames every failure on careless submits and proposes nothing:

    >>> class Blame(Evolver):
    ...     name = "blame"
    ...     def diagnose(self, failures, *, harness=None, vocabulary=None, log=None):
    ...         return failures[["candidate", "task_id", "repeat"]].assign(
    ...             where="prompt", why="careless-submit", evidence="", confidence=0.5)
    ...     def propose(self, diagnoses, *, harness, archive=None, vocabulary=None, n,
    ...                 history=None, log=None):
    ...         return []
    >>> failures = pd.DataFrame({"candidate": "baseline", "task_id": ["t1"], "repeat": [0],
    ...                          "transcript": ["submit()"]})
    >>> Blame().diagnose(failures)[["task_id", "why"]]
      task_id              why
    0      t1  careless-submit
    >>> Blame().secrets()
    {}
    """

    name: str = "evolver"
    model: str | None = None  # the model it asks, where it has one (never the task model)
    reads_round: ClassVar[bool] = False
    """True for an evolver that reads whole rounds: the loop calls :meth:`begin_round`
    with a :class:`RoundView` before :meth:`diagnose` (building one reads every
    transcript of the parent, so the others are not given one)."""

    @abc.abstractmethod
    def diagnose(self, failures: pd.DataFrame, *, harness: Mapping[str, str] | None = None,
                 vocabulary=None, log: Log | None = None) -> pd.DataFrame:
        """One row per failure: ``candidate, task_id, repeat, where, why, evidence,
        confidence``.

        ``vocabulary`` is the run's why vocabulary (a new label may be added to it);
        evolvers that need neither it nor the harness ignore them.
        """

    @abc.abstractmethod
    def propose(self, diagnoses: pd.DataFrame, *, harness: Mapping[str, str],
                archive: pd.DataFrame | None = None, vocabulary=None, n: int,
                history: pd.DataFrame | None = None, log: Log | None = None) -> list[Patch]:
        """Up to ``n`` patches for ``harness``.

        ``history`` holds what the run already tried and how the gates judged it (the
        history frame: ``candidate, mechanism, where, why, decision, delta_pp``), so an
        evolver need not repeat a failure.
        """

    def begin_round(self, view: RoundView) -> None:
        """Take what the run shows of the round ahead (only when :attr:`reads_round`).

        The default ignores it.
        """

    def signature(self) -> dict[str, str]:
        """This evolver's part of the world its runs measure
        (:func:`gsme.comparisons.signature`): ``evolver_model`` (``""`` without one) and
        ``prompt``, a digest of what decides its proposals besides its seed (its prompt
        and settings; by default its class)."""
        return {"evolver_model": str(self.model or ""), "prompt": digest(type(self).__qualname__)}

    def secrets(self) -> dict[str, str]:
        """The secrets this evolver uses (an API key), by variable name: a run redacts
        their values from everything it stores (:mod:`gsme.redact`). The default uses none."""
        return {}

    def reseed(self, seed: int) -> None:
        """Restart the evolver's randomness from ``seed``.

        The loop calls this at the start of every round with a seed derived from the run's
        seed and the round number, so a resumed run proposes exactly what an uninterrupted
        run would. Evolvers without randomness need not override it.
        """


def prompt_digest(*names: str, **settings) -> str:
    """A digest of the prompt texts ``gsme/prompts/<name>.txt`` and ``settings``: an
    evolver's ``prompt`` part of its :meth:`Evolver.signature`.

    Examples
    --------
    >>> prompt_digest("propose", max_failures=40) != prompt_digest("propose", max_failures=20)
    True
    """
    texts = [(resources.files("gsme") / "prompts" / f"{n}.txt").read_text(encoding="utf-8")
             for n in names]
    return digest({"texts": texts, **settings})

