"""A log format of your own: one ``task_id verdict`` line per trial, a file per harness.

A format subclasses :class:`gsme.importers.Format`: ``read(path, *, candidate, split)``
returns :class:`gsme.importers.Imported` (the trials and the rows it dropped), and
``guess_can_open(path)`` lets ``gsme compare`` detect it. Registered under a name, ``gsme
compare a.lines b.lines`` reads it (or ``--format lines``).
"""

from pathlib import Path

import numpy as np
import pandas as pd

from gsme import schema
from gsme.cli import main
from gsme.importers import Format, Imported
from gsme.registry import FORMATS


class Lines(Format):
    """``task_id pass|fail`` per line; a task's lines are its repeats, in order."""

    summary = "task and verdict per line (an example)"

    def read(self, path, *, candidate=None, split="train"):
        rows = [line.split() for line in Path(path).read_text().splitlines() if line.strip()]
        trials = pd.DataFrame({"candidate": candidate or Path(path).stem,
                               "task_id": [task for task, _ in rows], "split": split,
                               "passed": [verdict == "pass" for _, verdict in rows]})
        trials["repeat"] = trials.groupby("task_id").cumcount()
        dropped = pd.DataFrame(columns=["candidate", "source", "task_id", "reason"])
        return Imported(schema.as_trials(trials), dropped)

    def guess_can_open(self, path):
        return Path(path).suffix == ".lines"


FORMATS.register("lines", Lines)
rng = np.random.default_rng(0)
for name, rate in (("baseline", 0.3), ("v2", 0.7)):
    Path(f"{name}.lines").write_text("\n".join(
        f"t{task:02d} {'pass' if rng.random() < rate else 'fail'}"
        for task in range(30) for _ in range(3)))
main(["compare", "baseline.lines", "v2.lines"])  # detected by guess_can_open
FORMATS.unregister("lines")
