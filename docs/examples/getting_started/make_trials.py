"""Write two trials files, ``baseline.csv`` and ``v2.csv``, as your own eval would.

One row per trial: the harness (``candidate``), the task, its split, the repeat and whether
it passed. Here v2 passes each of 40 tasks 15 points more often than the baseline over
3 repeats (SIMULATED, seeded); replace them with your own results.
"""

import numpy as np
import pandas as pd

rng = np.random.default_rng(0)
skill = rng.uniform(0.1, 0.9, 40)  # each task's pass rate under the baseline
for name, lift in (("baseline", 0.0), ("v2", 0.15)):
    rows = [{"candidate": name, "task_id": f"t{task:02d}", "split": "train", "repeat": repeat,
             "passed": bool(rng.random() < min(1.0, skill[task] + lift))}
            for task in range(40) for repeat in range(3)]
    pd.DataFrame(rows).to_csv(f"{name}.csv", index=False)
