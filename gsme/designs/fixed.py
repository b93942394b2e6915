"""The paper's gate design: ``k`` repeats of every task on each side, one look.

It scores every task ``k`` times on each side and looks once, at one-sided level ``alpha``
each way (credit / cull): the test of :func:`gsme.designs.significance.one_look`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gsme import power as power_mod
from gsme._renamed import renamed_keywords
from gsme.designs.base import Design, candidate_codes, panel_of
from gsme.designs.significance import one_look
from gsme.pairing import Slots
from gsme.schema import LOOK_COLUMNS
from gsme.settings import MAX_K, MAX_TASKS, GateConfig

__all__ = ["Fixed"]


class Fixed(Design):
    """The paper's gate: ``k`` repeats of every task on each side, one look at ``alpha``.

    See Also
    --------
    gsme.designs.adaptive.Adaptive : The group-sequential design.

    Examples
    --------
    >>> from gsme.settings import GateConfig
    >>> Fixed().look_repeats(GateConfig(k=5)).tolist()
    [5]
    >>> plan = Fixed().plan(n_tasks=50, effect_pp=10.0, k=3, repeat_sd_pp=40.0,
    ...                     task_sd_pp=10.0, power=0.8, gate=GateConfig(), simulations=0)
    >>> round(plan["power"], 3), plan["k_needed"], plan["n_tasks_needed"]
    (0.786, 4.0, 52.0)
    """

    summary = "the paper gate: k repeats of every task on each side, one look"

    def look_repeats(self, gate):
        return np.array([gate.k], dtype=np.int64)

    @renamed_keywords(config="gate")
    def decide(self, slots, pairs, *, split, gate):
        return one_look(slots, pairs, split=split, gate=gate)

    @renamed_keywords(config="gate")
    def looks(self, slots, pairs, *, split, gate):
        return _one_look(slots, pairs, split=split, gate=gate)

    @renamed_keywords(config="gate")
    def decided_repeats(self, slots, child, parent, *, split, gate):
        panel = panel_of(slots, child, parent, split, gate)
        split_code = slots.splits.get_indexer([split])[0] if len(slots.splits) else -1
        on = slots.split == split_code
        top = np.zeros((len(slots.candidates) + 1, len(slots.tasks)), dtype=np.int64)
        np.maximum.at(top, (slots.candidate[on], slots.task[on]), slots.repeat[on] + 1)
        top = top[:, slots.tasks.get_indexer(pd.Index(panel.tasks, dtype=object))]
        return panel.tasks, np.maximum(top[candidate_codes(slots, child)],
                                       top[candidate_codes(slots, parent)])

    @renamed_keywords(config="gate")
    def plan(self, *, n_tasks, effect_pp, k, repeat_sd_pp, task_sd_pp, power, gate,
             simulations, rng=None):
        """Analytic (:mod:`gsme.power`), with the fewest K and tasks reaching ``power``."""
        def reach(n, kk):
            return power_mod.power(n_tasks=n, effect_pp=effect_pp, repeat_sd_pp=repeat_sd_pp,
                                   task_sd_pp=task_sd_pp, k=kk, gate=gate)

        ks = np.arange(1, MAX_K + 1)
        enough = np.array([reach(n_tasks, int(kk)) for kk in ks]) >= power
        n_needed = np.nan
        if effect_pp != 0:
            high = 2
            while reach(high, k) < power and high < MAX_TASKS:
                high *= 2
            if reach(high, k) >= power:
                low = max(2, high // 2)
                while low < high:  # fewest n reaching the target (power grows with n)
                    mid = (low + high) // 2
                    low, high = (mid + 1, high) if reach(mid, k) < power else (low, mid)
                n_needed = float(high)
        return {"method": "analytic", "power": reach(n_tasks, k),
                "mde_pp": power_mod.mde(n_tasks=n_tasks, repeat_sd_pp=repeat_sd_pp,
                                        task_sd_pp=task_sd_pp, k=k, power=power,
                                        gate=gate),
                "k_needed": float(ks[enough][0]) if enough.any() else np.nan,
                "n_tasks_needed": n_needed, "trials_per_side": float(n_tasks * k)}


def _one_look(slots: Slots, pairs: pd.DataFrame, *, split: str,
              gate: GateConfig) -> pd.DataFrame:
    """The fixed design's one look over every repeat, as its gate reads it."""
    child = pairs["child"].to_numpy(dtype=object)
    parent = pairs["parent"].to_numpy(dtype=object)
    out = one_look(slots, pairs, split=split, gate=gate)
    out.insert(3, "look", np.ones(len(out), dtype=np.int64))
    out.insert(4, "repeats", np.full(len(out), gate.k, dtype=np.int64))
    out.insert(5, "n_extended", np.zeros(len(out), dtype=np.int64))
    out.insert(6, "child_trials", _all_slots(slots, child, split))
    out.insert(7, "parent_trials", _all_slots(slots, parent, split))
    out["boundary"] = gate.z_crit
    out["level"] = gate.alpha
    return out[LOOK_COLUMNS]


def _all_slots(slots: Slots, names, split: str) -> np.ndarray:
    split_code = slots.splits.get_indexer([split])[0] if len(slots.splits) else -1
    on_split = slots.candidate[slots.split == split_code]
    per = np.bincount(on_split, minlength=len(slots.candidates) + 1)
    codes = candidate_codes(slots, names)
    return np.where(codes >= 0, per[codes], 0).astype(np.int64)
