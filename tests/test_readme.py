"""Every Python snippet in README.md runs as written (in a fresh folder)."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gsme.schema import BASELINE

README = Path(__file__).resolve().parents[1] / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)


def _your_trials(path: Path) -> None:
    """The reader's own ``trials.csv`` (what the first snippet reads): a baseline and a
    child ``v2``, 3 repeats of 40 train tasks, seeded."""
    rng = np.random.default_rng(0)
    skill = rng.uniform(0.1, 0.9, 40)
    rows = [{"candidate": name, "task_id": f"t{t:02d}", "split": "train", "repeat": r,
             "passed": bool(rng.random() < min(1.0, skill[t] + lift))}
            for name, lift in ((BASELINE, 0.0), ("v2", 0.15)) for t in range(40)
            for r in range(3)]
    pd.DataFrame(rows).to_csv(path, index=False)


def test_the_readme_has_snippets():
    assert len(SNIPPETS) >= 2


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_each_readme_snippet_runs_as_written(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _your_trials(tmp_path / "trials.csv")
    code = compile(SNIPPETS[index], f"README.md snippet {index + 1}", "exec")
    exec(code, {})  # noqa: S102 - the README is this project's own text
