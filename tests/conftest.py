"""Test-wide settings and canonical frames.

Hypothesis runs derandomised (the same examples every run: CI never flakes on a new draw;
found counterexamples are pinned with ``@example`` in the tests). The canonical frames are
small, valid instances of the contracts in :mod:`gsme.schema`, built with a fixed seed.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import settings

from gsme import schema

settings.register_profile("gsme", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("gsme")


@pytest.fixture
def trials_frame() -> pd.DataFrame:
    """A baseline and two children on 12 train tasks at K=3, with a re-run infra fault."""
    rng = np.random.default_rng(0)
    rows = []
    for cand, shift in (("baseline", 0.0), ("c0001", 0.25), ("c0002", -0.1)):
        for t in range(12):
            p = np.clip(0.3 + 0.04 * t + shift, 0, 1)
            for r in range(3):
                rows.append({"candidate": cand, "task_id": f"t{t:02d}", "split": "train",
                             "repeat": r, "passed": bool(rng.random() < p),
                             "activated": cand != "baseline"})
    rows.append({**rows[0], "attempt": 1})
    rows[0].update(infra_ok=False, passed=False, error="container died")
    return schema.as_trials(pd.DataFrame(rows))


@pytest.fixture
def candidates_frame() -> pd.DataFrame:
    """The baseline and two mutations of it, as git records them."""
    rows = [("baseline", "", "baseline", None, None, None, None, None, 0),
            ("c0001", "baseline", "mutation", "runtime", "careless-submit", "p1", "b1", "", 1),
            ("c0002", "baseline", "mutation", "prompt", "looping", "p2", "b2",
             'category == "x"', 1)]
    frame = pd.DataFrame(rows, columns=["candidate", "parents", "kind", "where", "why",
                                        "patch_id", "beacon", "env_gate", "round"], dtype=object)
    frame = frame.assign(commit=None, branch=None, rationale=None)
    frame["round"] = frame["round"].astype(np.int64)
    return schema.validate(frame[schema.columns("candidates")], "candidates")
