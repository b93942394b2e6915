"""Trials frames saved as CSV."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gsme import io, schema
from gsme.importers._common import Format, Imported, check_split, dropped_frame, expand
from gsme.settings import ConfigError

__all__ = ["CSV", "read_trials_csv"]


def read_trials_csv(path, *, candidate: str | None = None, split: str = "train") -> Imported:
    """A trials frame saved as CSV (columns of :data:`gsme.schema.FRAMES` ``["trials"]``),
    read as :func:`gsme.io.read_trials` reads it (:func:`gsme.io.read_columns`: task ids
    and other text stay text).

    ``candidate`` renames the file's one candidate (a file holding several is refused);
    a missing ``candidate`` column needs it. A missing ``split`` column is filled with
    ``split``.

    Examples
    --------
    >>> pd.DataFrame({"candidate": "x", "task_id": ["t1", "t2"], "repeat": 0,
    ...               "passed": [1, 0]}).to_csv("child.csv", index=False)
    >>> imported = read_trials_csv("child.csv", candidate="v2")
    >>> imported.trials[["candidate", "task_id", "split", "passed"]]
      candidate task_id  split  passed
    0        v2      t1  train    True
    1        v2      t2  train   False
    >>> len(imported.dropped)
    0
    """
    check_split(split)
    frames = []
    for file in expand(path, "*.csv", "trials CSV"):
        frame = io.read_columns(file, format="csv")  # ids stay text: 001 is not 1
        if "split" not in frame.columns:
            frame["split"] = split
        if candidate is not None:
            names = frame["candidate"].dropna().unique() if "candidate" in frame else []
            if len(names) > 1:
                raise ConfigError(f"{file} holds several candidates {sorted(names)[:10]}; "
                                  "it cannot be renamed to one")
            frame["candidate"] = candidate
        frames.append(frame)
    return Imported(schema.as_trials(pd.concat(frames, ignore_index=True)), dropped_frame([]))


class CSV(Format):
    """The ``csv`` format: :func:`read_trials_csv`.

    Examples
    --------
    >>> pd.DataFrame({"candidate": "a", "task_id": ["t1"], "repeat": 0,
    ...               "passed": [1]}).to_csv("trials.csv", index=False)
    >>> CSV().guess_can_open(Path("trials.csv")), len(CSV().read("trials.csv").trials)
    (True, 1)
    """

    summary = "a trials frame saved as CSV"

    def read(self, path, **options) -> Imported:
        return read_trials_csv(path, **options)

    def guess_can_open(self, path: Path) -> bool:
        return path.suffix.lower() == ".csv" or (path.is_dir() and any(path.glob("*.csv")))
