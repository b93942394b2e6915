"""The group-sequential gate design: more repeats where they inform, boundaries per look.

``design="adaptive"`` is group-sequential. Look 1 uses ``k`` repeats per task and side.
After an interim look that does not stop, every task whose *pooled* child and parent
outcomes at look 1 are mixed (neither all pass nor all fail; for graded scores, not all
equal) gets ``k_step`` more repeats on both sides, up to ``k_max``; a task where the child's trials are the parent's own (borrowed:
same source) is identical on both sides and is never extended. The pooled rule is blind to
which arm is which, so under the null it cannot favour the child. Once mixed a task stays
mixed, so look ℓ uses r_ℓ = min(k + (ℓ − 1)·k_step, k_max) repeats on the extended tasks and
``k`` on the others; per task and side a look reads only the repeats below its count (a
parent's extra repeats made for another child never leak in).

* **Efficacy** — look ℓ credits when its statistic clears b_ℓ, the Lan–DeMets boundary with
  the O'Brien–Fleming-type spending function α(t) = 2 − 2Φ(z_{α/2} / √t) at the planned
  information fraction t_ℓ = r_ℓ / k_max, total one-sided level ``alpha``
  (:func:`~gsme.designs.spending.boundaries`, computed by recursive numerical integration). With the t reference or
  the exact sign-flip p, a look compares its one-sided p with the nominal level Φ(−b_ℓ).
  The planned fractions are fixed in advance, hence blind to the labels. Under the null the
  extended tasks were chosen for being mixed at look 1, which inflates their look-1
  variance: look 1 holds more of the final information than r_1 / k_max, the looks are
  more correlated than planned and the procedure is conservative. Simulated A/A false
  credit (``benchmarks/aa_designs.py``): 1.05%, 1.6% and 2.05% at n = 26, 45 and 80.
* **Cull** — at look 1 only, exactly as the fixed design culls: when the lower one-sided p
  is at most ``alpha`` (z ≤ −z_crit with the normal reference). Its level is that of one
  look, ``alpha``; later looks never cull (a harmful patch has almost always stopped for
  futility at look 1, and extra repeats are spent to find gains, not harm). The credit and
  the cull are each one-sided at ``alpha``, as in the fixed design.
* **Futility** (non-binding, the boundaries ignore it) — stop at an interim look whose z is
  below ``futility_z`` (None: never). The decision is ``inconclusive`` unless the look also
  crossed a boundary.
* The procedure also stops at look 1 when fewer than ``min_tasks`` tasks are paired or no
  task is left to extend (then every task difference is 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize

from gsme._checks import text
from gsme._renamed import call_extension, renamed_keywords
from gsme.designs.base import Design, Panel, panel_of
from gsme.designs.significance import decide, paired_frame, significance
from gsme.designs.spending import planned
from gsme.pairing import Paired, Slots, checked_slots, describe
from gsme.schema import LOOK_COLUMNS
from gsme.settings import GateConfig

__all__ = ["Adaptive"]


class Adaptive(Design):
    """Group-sequential: ``k`` repeats, then ``k_step`` more on the mixed tasks up to
    ``k_max``, looking after each step (see the module's description).

    See Also
    --------
    gsme.designs.fixed.Fixed : The paper's one-look design.
    gsme.designs.spending.boundaries : The boundary of each look.

    Examples
    --------
    >>> from gsme.settings import GateConfig
    >>> Adaptive().look_repeats(GateConfig(design="adaptive", k=3, k_step=3, k_max=9)).tolist()
    [3, 6, 9]
    >>> from gsme.designs import design_of
    >>> isinstance(design_of(GateConfig(design="adaptive")), Adaptive)
    True
    """

    summary = ("group-sequential: k repeats, then k_step more on tasks with mixed outcomes "
               "up to k_max, a look after each step")

    def look_repeats(self, gate):
        if gate.k_max == gate.k:
            return np.array([gate.k], dtype=np.int64)
        steps = np.arange(gate.k, gate.k_max, gate.k_step, dtype=np.int64)
        return np.r_[steps, gate.k_max].astype(np.int64)

    @renamed_keywords(config="gate")
    def decide(self, slots, pairs, *, split, gate):
        return _adaptive_decide(slots, pairs, split=split, gate=gate)

    @renamed_keywords(config="gate")
    def looks(self, slots, pairs, *, split, gate):
        return _adaptive_looks(slots, pairs, split=split, gate=gate)

    @renamed_keywords(config="gate")
    def decided_repeats(self, slots, child, parent, *, split, gate):
        panel = panel_of(slots, child, parent, split, gate)
        replay = _replay(panel, gate)
        stopped = _stopping_look(replay)[:, None]
        return panel.tasks, replay.repeats[np.where(replay.extended, stopped, 0)]

    @renamed_keywords(config="gate")
    def wanted(self, trials, child, parent, task_ids, *, gate):
        slots = trials.slots
        replay = _replay(panel_of(slots, child, parent, "train", gate, task_ids=task_ids),
                         gate)
        look = np.argmax(~replay.complete | replay.stop, axis=1)
        return replay.repeats[np.where(replay.extended, look[:, None], 0)]

    @renamed_keywords(config="gate")
    def plan(self, *, n_tasks, effect_pp, k, repeat_sd_pp, task_sd_pp, power, gate,
             simulations, rng=None):
        """Simulated through the gate: ``simulations`` comparisons of pass/fail outcomes
        (see :func:`gsme.compare.plan`), the MDE solved with the same draws at every
        effect."""
        rng = np.random.default_rng(0 if rng is None else rng)
        draws = (rng.random((simulations, n_tasks, gate.k_max, 2)),
                 rng.standard_normal((simulations, n_tasks)))
        trials, pairs = _simulated_pairs(draws, effect_pp, repeat_sd_pp, task_sd_pp)
        taken = call_extension(self.looks, checked_slots(trials), pairs, split="train",
                               gate=gate)
        last = taken.groupby("child", sort=False).tail(1)
        detected = float(last["decision"].isin(["credit", "cull"]).mean())
        per_side = float(last["child_trials"].mean())

        def gap(eff):  # the same draws at every effect, so power grows with it
            trials, pairs = _simulated_pairs(draws, eff, repeat_sd_pp, task_sd_pp)
            decided = call_extension(self.decide, checked_slots(trials), pairs,
                                     split="train", gate=gate)
            return float(decided["decision"].isin(["credit", "cull"]).mean()) - power

        mde = np.nan
        if gap(100.0) >= 0:
            mde = float(optimize.brentq(gap, 0.0, 100.0, xtol=0.5))
        return {"method": "simulated", "power": detected, "mde_pp": mde, "k_needed": np.nan,
                "n_tasks_needed": np.nan, "trials_per_side": per_side}


@dataclass(frozen=True)
class _Replay:
    """Every planned look of every pair (arrays are (pairs, looks) unless noted)."""

    tested: dict  # significance and decision columns, look-major: look * n_pairs + pair
    extended: np.ndarray  # (pairs, tasks)
    complete: np.ndarray  # all wanted slots present and settled (for wanted)
    available: np.ndarray  # the look's extended repeats are all present (for credit)
    stop: np.ndarray
    futile: np.ndarray
    child_trials: np.ndarray
    parent_trials: np.ndarray
    repeats: np.ndarray  # (looks,)
    bounds: np.ndarray  # (looks,)


class _Reader:
    """Each pair's counts per task at a look, for the child or the parent."""

    def __init__(self, panel: Panel):
        self._counts = panel.counts
        self._rows = {"child": panel.child, "parent": panel.parent}
        slots = panel.counts["slots"]
        later = (slots[-1] != slots[0]).any(axis=1)  # rows with slots past look 0's repeats
        self._later = {side: later[rows] for side, rows in self._rows.items()}

    def at(self, side: str, look: int, extended=None, first=None) -> dict[str, np.ndarray]:
        """(pairs, tasks) counts of ``side`` at ``look`` (0-based); with ``extended``
        (pairs, tasks), at ``look`` on the extended tasks only and as ``first`` (look 0's
        counts) on the others: ``first`` itself when no pair's side has more there."""
        rows = self._rows[side]
        if extended is None:
            return {name: a[look][rows] for name, a in self._counts.items()}
        some = np.flatnonzero(self._later[side] & extended.any(axis=1))
        if not len(some):
            return first
        out = {name: values.copy() for name, values in first.items()}
        for name, a in self._counts.items():
            out[name][some] = np.where(extended[some], a[look][rows[some]], first[name][some])
        return out


def _replay(panel: Panel, gate: GateConfig) -> _Replay:
    """Replay every planned look of every pair from the panel.

    A look whose counts equal look 1's on every task of a pair (none of its extended tasks
    has more repeats yet) has look 1's statistics: they are computed once and only its
    decision is taken at its own level.
    """
    repeats, bounds, levels = planned(gate)
    n_looks = len(repeats)
    n_pairs, n_tasks = panel.identical.shape
    reader = _Reader(panel)
    first = reader.at("child", 0), reader.at("parent", 0)
    c, p = first
    extended = ((c["valid"] > 0) & (p["valid"] > 0) & _mixed(panel, c, p)
                & ~panel.identical & (n_looks > 1))
    parts, n_either = [], []
    complete = np.zeros((n_pairs, n_looks), dtype=bool)
    available = np.ones((n_pairs, n_looks), dtype=bool)
    child_trials = np.zeros((n_pairs, n_looks), dtype=np.int64)
    parent_trials = np.zeros((n_pairs, n_looks), dtype=np.int64)
    tested_row = np.tile(np.arange(n_pairs), n_looks)  # each (look, pair): its test's row
    n_tested = 0
    for j in range(n_looks):  # a handful of looks; everything inside is vectorised
        moved = np.ones(n_pairs, dtype=bool)
        if j:
            level = np.where(extended, j, 0)
            c = reader.at("child", j, extended, first[0])
            p = reader.at("parent", j, extended, first[1])
            moved = _moved(c, first[0]) | _moved(p, first[1])
        need = repeats[j] if j == 0 else repeats[level]
        present = (c["slots"] == need) & (p["slots"] == need)
        complete[:, j] = (present & (c["pending"] + p["pending"] == 0)).all(axis=1)
        if j:
            available[:, j] = (~extended | present).all(axis=1)
        child_trials[:, j] = c["slots"].sum(axis=1)
        parent_trials[:, j] = p["slots"].sum(axis=1)
        rank = n_tested + np.cumsum(moved) - 1  # the test row of each moved pair
        tested_row[j * n_pairs + np.flatnonzero(moved)] = rank[moved]
        n_tested += int(moved.sum())
        n_either.append(((c["slots"] + p["slots"]) > 0).sum(axis=1)[moved])
        at = np.flatnonzero((c["valid"] > 0) & (p["valid"] > 0) & moved[:, None])
        parts.append((rank[at // max(n_tasks, 1)], c["valid"].ravel()[at],
                      c["passed"].ravel()[at], p["valid"].ravel()[at], p["passed"].ravel()[at],
                      *((c["total"].ravel()[at], p["total"].ravel()[at])
                        if "total" in c else ())))
    columns = [np.concatenate(a) for a in zip(*parts)]
    paired = Paired(n_tested, *columns[:5],
                            n_either=np.concatenate(n_either).astype(np.int64),
                            **dict(zip(("child_total", "parent_total"), columns[5:])))
    stats = significance(describe(paired), paired, gate=gate)
    tested = {name: a[tested_row] for name, a in stats.items()}
    cull_level = np.r_[np.full(n_pairs, gate.alpha), np.zeros((n_looks - 1) * n_pairs)]
    tested["decision"] = decide(tested, level=np.repeat(levels, n_pairs),
                                        cull_level=cull_level, gate=gate)
    tested["looks"] = np.repeat(np.arange(1, n_looks + 1), n_pairs).astype(np.int64)
    z = tested["z"].reshape(n_looks, n_pairs).T
    decided = (tested["decision"] != "inconclusive").reshape(n_looks, n_pairs).T
    n = tested["n_tasks"].reshape(n_looks, n_pairs).T
    last = np.arange(n_looks)[None, :] == n_looks - 1
    final = last | ~extended.any(axis=1)[:, None] | (n < gate.min_tasks)
    futile = np.zeros_like(final)
    if gate.futility_z is not None:
        with np.errstate(invalid="ignore"):
            futile = ~final & (z < gate.futility_z)
    return _Replay(tested, extended, complete, available, decided | final | futile,
                   futile & ~decided, child_trials, parent_trials, repeats, bounds)


def _mixed(panel: Panel, child: dict, parent: dict) -> np.ndarray:
    """(pairs, tasks): are the pooled child and parent values at look 1 not all equal?

    For pass/fail values: some pass and some fail among the valid repeats (``child`` and
    ``parent`` are look 1's counts); for graded scores: the least and greatest differ.
    """
    if panel.low is None:
        pooled_passed = child["passed"] + parent["passed"]
        return (pooled_passed > 0) & (pooled_passed < child["valid"] + parent["valid"])
    low = np.minimum(panel.low[panel.child], panel.low[panel.parent])
    high = np.maximum(panel.high[panel.child], panel.high[panel.parent])
    return low < high


def _moved(counts: dict, first: dict) -> np.ndarray:
    """Per pair: do a side's slot, valid, passed counts (or score sums) differ from look 1's
    on any task?"""
    if counts is first:
        return np.zeros(len(first["slots"]), dtype=bool)
    names = [name for name in ("slots", "valid", "passed", "total") if name in counts]
    return np.logical_or.reduce([counts[name] != first[name] for name in names]).any(axis=1)


def _stopping_look(replay: _Replay) -> np.ndarray:
    """Per pair, the 0-based look the procedure decides at (or awaits data after)."""
    awaiting = np.c_[~replay.available[:, 1:], np.zeros(len(replay.stop), dtype=bool)]
    return np.argmax(replay.stop | awaiting, axis=1)


def _look_reasons(replay: _Replay, look: np.ndarray, pairs_index: np.ndarray,
                  gate: GateConfig) -> tuple[np.ndarray, np.ndarray]:
    """Decision and reason of the given (pair, look) rows."""
    n_pairs = len(replay.stop)
    n_looks = len(replay.repeats)
    row = look * n_pairs + pairs_index
    decision = replay.tested["decision"][row]
    stat_reason = replay.tested["reason"][row]
    stopped = replay.stop[pairs_index, look]
    futile = replay.futile[pairs_index, look]
    of = (look + 1).astype(str).astype(object) + f" of {n_looks}"
    what = np.select(
        [decision == "credit", decision == "cull", futile, ~stopped,
         look == n_looks - 1],
        ["credited at look " + of, "culled at look " + of,
         "stopped for futility at look " + of + f" (z < futility_z={gate.futility_z})",
         "awaiting look " + (look + 2).astype(str).astype(object) + f" of {n_looks}: "
         "its repeats are not all scored",
         "no boundary crossed by look " + of],
        "stopped at look " + of,
    ).astype(object)
    decision[~stopped] = "inconclusive"
    has = pd.notna(stat_reason)
    reason = np.where(has, what + "; " + np.where(has, stat_reason, "").astype(object), what)
    return decision, reason.astype(object)


def _replayed(slots: Slots, pairs: pd.DataFrame, split: str, gate: GateConfig):
    """The pairs' children and parents, and every look of their comparisons replayed."""
    child = pairs["child"].to_numpy(dtype=object)
    parent = pairs["parent"].to_numpy(dtype=object)
    return child, parent, _replay(panel_of(slots, child, parent, split, gate), gate)


def _adaptive_decide(slots: Slots, pairs: pd.DataFrame, *, split: str,
                     gate: GateConfig) -> pd.DataFrame:
    child, parent, replay = _replayed(slots, pairs, split, gate)
    look = _stopping_look(replay)
    index = np.arange(len(child))
    row = look * len(child) + index
    tested = {name: a[row] for name, a in replay.tested.items()}
    tested["decision"], tested["reason"] = _look_reasons(replay, look, index, gate)
    return paired_frame(child, parent, split, tested)


def _adaptive_looks(slots: Slots, pairs: pd.DataFrame, *, split: str,
                    gate: GateConfig) -> pd.DataFrame:
    child, parent, replay = _replayed(slots, pairs, split, gate)
    stop = _stopping_look(replay)
    n_pairs = len(child)
    index = np.repeat(np.arange(n_pairs), stop + 1)
    look = np.arange(len(index)) - np.repeat(np.cumsum(stop + 1) - (stop + 1), stop + 1)
    decision, reason = _look_reasons(replay, look, index, gate)
    last = look == stop[index]
    decision = np.where(last & replay.stop[index, look], decision, "continue").astype(object)
    reason = np.where(last, reason, None).astype(object)
    row = look * n_pairs + index
    out = pd.DataFrame({
        "child": text(child[index]),
        "parent": text(parent[index]),
        "split": text([split] * len(index)),
        "look": (look + 1).astype(np.int64),
        "repeats": replay.repeats[look].astype(np.int64),
        "n_extended": np.where(look > 0, replay.extended.sum(axis=1)[index], 0).astype(np.int64),
        "child_trials": replay.child_trials[index, look],
        "parent_trials": replay.parent_trials[index, look],
    })
    for name in LOOK_COLUMNS[8:LOOK_COLUMNS.index("boundary")]:
        out[name] = replay.tested[name][row]
    out["boundary"] = replay.bounds[look]
    out["level"] = planned(gate)[2][look]
    out["decision"] = text(decision)
    out["reason"] = text(reason)
    return out[LOOK_COLUMNS]


def _simulated_pairs(draws, effect, repeat_sd, task_sd):
    """Every repeat (up to ``k_max``) of ``sims`` simulated parent/child pairs, as trials."""
    uniforms, spread = draws
    sims, n = uniforms.shape[:2]
    p_parent = np.full((sims, n), _base_rate(effect / 100, repeat_sd / 100))
    p_child = np.clip(p_parent + effect / 100 + task_sd / 100 * spread, 0, 1)
    passed = uniforms < np.stack([p_parent, p_child], axis=-1)[:, :, None, :]
    sim, task, repeat, side = (a.ravel() for a in np.indices(passed.shape))
    names = np.array([f"p{i}" for i in range(sims)] + [f"c{i}" for i in range(sims)],
                     dtype=object)
    size = passed.size
    trials = pd.DataFrame({
        "candidate": names[side * sims + sim],
        "task_id": np.array([f"t{i}" for i in range(n)], dtype=object)[task],
        "split": np.full(size, "train", dtype=object), "repeat": repeat.astype(np.int64),
        "attempt": np.zeros(size, np.int64), "passed": passed.ravel(),
        "infra_ok": np.ones(size, bool), "activated": np.zeros(size, bool),
        "beacons": np.full(size, "", dtype=object),
        **{c: np.full(size, np.nan) for c in ("tokens", "cost_usd", "seconds")},
        **{c: np.full(size, None, dtype=object)
           for c in ("pathology", "trajectory", "error", "borrowed_from")},
    })
    pairs = pd.DataFrame({"child": names[sims:], "parent": names[:sims]})
    return trials, pairs


def _base_rate(effect: float, repeat_sd: float) -> float:
    """Parent pass probability p with p(1−p) + q(1−q) = repeat_sd², q = p + effect."""
    effect = min(max(effect, -1.0), 1.0)
    low, high = max(0.0, -effect), min(1.0, 1.0 - effect)
    centre = (low + high) / 2

    def gap(p):
        q = p + effect
        return p * (1 - p) + q * (1 - q) - repeat_sd**2

    if gap(centre) <= 0:  # the largest spread these rates allow
        return centre
    return float(optimize.brentq(gap, low, centre)) if gap(low) < 0 else low
