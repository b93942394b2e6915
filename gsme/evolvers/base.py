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
    def diagnose(self, failures: pd.DataFrame) -> pd.DataFrame:
        """One row per failure: ``candidate, task_id, k, where, why, evidence, confidence``."""

    @abc.abstractmethod
    def propose(
        self,
        parent: Path,
        diagnoses: pd.DataFrame,
        archive: pd.DataFrame,
        vocabulary,
        *,
        n: int,
    ) -> list[Patch]:
        """Up to ``n`` patches for the harness checked out at ``parent``."""

    def reseed(self, seed: int) -> None:
        """Restart the evolver's randomness from ``seed``.

        The loop calls this at the start of every round with a seed derived from the run's
        seed and the round number, so a resumed run proposes exactly what an uninterrupted
        run would. Evolvers without randomness need not override it.
        """
