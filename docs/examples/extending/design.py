"""A gate design of your own: the fixed design, crediting at a one-sided 10%.

A design subclasses :class:`gsme.designs.Fixed` or :class:`gsme.designs.Adaptive` (or
:class:`gsme.designs.Design`, implementing every method), and is registered under a name;
``GateConfig(design="lenient")``, ``gsme compare --design lenient`` and ``gsme plan`` then
use it. Run in an empty folder: it writes two trials files and gates them.
"""

import numpy as np
import pandas as pd

from gsme.cli import main
from gsme.designs import Fixed
from gsme.registry import DESIGNS


class Lenient(Fixed):
    """The paper's one look, at a one-sided 10% (z > 1.2816) instead of 2.5%."""

    summary = "one look at a one-sided 10% (an example)"

    def decide(self, slots, pairs, *, split, gate):
        lenient = gate.model_copy(update={"z_crit": 1.2816})
        return super().decide(slots, pairs, split=split, gate=lenient)


DESIGNS.register("lenient", Lenient)

# v2 is 8 points better per task: too little for 30 tasks at 2.5%, enough at 10%
rng = np.random.default_rng(1)
skill = rng.uniform(0.2, 0.8, 30)
for name, lift in (("baseline", 0.0), ("v2", 0.08)):
    pd.DataFrame([{"candidate": name, "task_id": f"t{task:02d}", "split": "train",
                   "repeat": repeat, "passed": bool(rng.random() < skill[task] + lift)}
                  for task in range(30) for repeat in range(3)]).to_csv(f"{name}.csv",
                                                                       index=False)
for design in ("fixed", "lenient"):
    main(["compare", "baseline.csv", "v2.csv", "--design", design])

DESIGNS.unregister("lenient")  # a script leaves the registry as it found it
