"""The evolver interface: diagnose failing trajectories, propose patches. It never credits."""

from __future__ import annotations

import abc
from pathlib import Path

import pandas as pd

from gsme.patch import Patch

DIAGNOSIS_COLUMNS = ["candidate", "task_id", "k", "where", "why", "evidence", "confidence"]


class Evolver(abc.ABC):
    """Reads failures, names their pathology (where × why), proposes env-gated patches.

    ``failures`` holds failing *train* trials of the parent: ``candidate, task_id, k,
    transcript`` plus the task's feature columns. It never holds a test task or a
    ground-truth pathology label.
    """

    name: str = "evolver"

    @abc.abstractmethod
    def diagnose(self, failures: pd.DataFrame, *, parent: Path | None = None,
                 vocabulary=None) -> pd.DataFrame:
        """One row per failure: ``candidate, task_id, k, where, why, evidence, confidence``.

        ``parent`` is the checked-out harness that failed and ``vocabulary`` the run's why
        vocabulary (a new label may be added to it); evolvers that need neither ignore them.
        """

    @abc.abstractmethod
    def propose(
        self,
        parent: Path,
        diagnoses: pd.DataFrame,
        archive: pd.DataFrame,
        vocabulary,
        *,
        n: int,
        history: pd.DataFrame | None = None,
    ) -> list[Patch]:
        """Up to ``n`` patches for the harness checked out at ``parent``.

        ``history`` holds what the run already tried and how the gates judged it
        (``candidate, mechanism, where, why, decision, delta_pp``), so an evolver need not
        repeat a failure.
        """

    def reseed(self, seed: int) -> None:
        """Restart the evolver's randomness from ``seed``.

        The loop calls this at the start of every round with a seed derived from the run's
        seed and the round number, so a resumed run proposes exactly what an uninterrupted
        run would. Evolvers without randomness need not override it.
        """
