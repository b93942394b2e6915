"""The data gsme ships: the seed harness, the ``pyfunc`` task suite and the paper's table.

They live in the repository's top-level ``data/`` folder, installed as the package
``gsme.data`` (see ``pyproject.toml``), and are found with :mod:`importlib.resources`, so a
wheel install works from any folder.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["DATA_DIR", "PAPER_TABLE", "PYFUNC_TASKS", "SEED_HARNESS"]

DATA_DIR = Path(str(files("gsme.data")))
SEED_HARNESS = DATA_DIR / "harnesses" / "seed"
"""The baseline harness every run starts from unless told otherwise."""
PYFUNC_TASKS = DATA_DIR / "suites" / "pyfunc" / "tasks"
PAPER_TABLE = DATA_DIR / "paper_table.csv"
