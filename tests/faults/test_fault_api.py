"""Python API corners (issue 32): ``gsme.<module>`` reaches every public module README names
(imported on first use, so ``import gsme`` imports none), and calls that returned something
for a wrong question now refuse it, naming the argument."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gsme
from gsme import compare

ROOT = Path(__file__).resolve().parents[2]
# README and the docs' written pages (not the API reference a build generates in docs/api)
DOCS = [ROOT / "README.md", *sorted(page for page in (ROOT / "docs").rglob("*.rst")
                                    if page.relative_to(ROOT / "docs").parts[0] != "api")]
NAMED = {"measure"} | {name for page in DOCS
                       for name in re.findall(r"\bgsme\.([a-z]\w*)", page.read_text())}
PUBLIC = sorted(name for name in NAMED
                if (ROOT / "gsme" / f"{name}.py").is_file() or (ROOT / "gsme" / name).is_dir())


def test_every_module_readme_names_is_an_attribute_of_gsme():
    code = f"import gsme; print([getattr(gsme, n).__name__ for n in {PUBLIC!r}])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-300:]
    assert done.stdout.strip() == str([f"gsme.{name}" for name in PUBLIC])
    assert set(PUBLIC) <= set(gsme.__all__) <= set(dir(gsme))


def test_import_gsme_imports_no_submodule():
    code = "import sys, gsme; print(sorted(m for m in sys.modules if m.startswith('gsme.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]"


def _aa():
    rng = np.random.default_rng(2)
    return pd.DataFrame({"candidate": np.repeat(["a", "a2"], 60),
                         "task_id": np.tile(np.repeat([f"t{i}" for i in range(20)], 3), 2),
                         "split": "train", "repeat": np.tile([0, 1, 2], 40),
                         "passed": rng.random(120) < 0.5})


def test_corners_that_returned_now_refuse():
    with pytest.raises(ValueError, match="designs must name at least one design"):
        compare.plan(n_tasks=45, effect_pp=5, designs=[])  # was a raw KeyError
    with pytest.raises(ValueError, match="candidate and rerun are both 'a'"):
        compare.repeat_sd_from_aa(_aa(), candidate="a", rerun="a")  # was 0.0
    one = compare.plan(n_tasks=45, effect_pp=5, designs="fixed")  # was design 'f'
    assert one["design"].tolist() == ["fixed"]
