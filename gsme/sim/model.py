"""The simulator's outcome model: a harness's patches compiled into per-task probabilities.

For a task ``i`` within the model's reach the frozen model fails with base probability
``1 - sigmoid(skill - d_i)``, split between failure modes in proportion to
``rate_j * susceptibility_ij``: this is the *onset* hazard ``h0_ij``. A patch admitted on
task ``i`` lets an onset of its failure mode end in failure only with probability ``m_ij``
(its catalogue factor, with diminishing returns), and a harmful patch makes an otherwise
passing trial fail with probability ``H_i``. Hence the exact pass probability

    p_i = (1 - sum_j h0_ij * m_ij) * (1 - H_i),

which :meth:`HarnessModel.pass_prob` gives to audits and the agent samples trial by trial.
A task *out of reach* (:attr:`gsme.sim.suite.Suite.out_of_reach`, a capability gap) has
onset hazards summing to 1 and ``m_ij = 1`` under every harness: it fails every trial, its
failures still carry a pathology (and its transcripts that pathology's signature), and no
patch moves it. Everything here is simulated.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from gsme.sim.catalogue import DEFAULT_MIX, Mix, as_mix, effect_of
from gsme.sim.profiles import WHYS, Profile
from gsme.sim.suite import Suite

__all__ = ["WHY_INDEX", "Beacon", "HarnessModel", "TaskModel", "base_onset", "compile_harness"]

WHY_INDEX = {w: j for j, w in enumerate(WHYS)}


@dataclass(frozen=True)
class Beacon:
    """One patch's beacon: fires on admitted tasks when ``trigger`` happens (see catalogue).

    Examples
    --------
    >>> b = Beacon("verify-beacon", "submit", WHY_INDEX["careless-submit"], np.array([True, False]))
    >>> b.trigger, int(b.admitted.sum())
    ('submit', 1)
    """

    name: str
    trigger: str
    why: int  # index into WHYS, -1 when the effect targets no failure mode
    admitted: np.ndarray  # bool per task: env gate admits, and (``named``) the task is named


@dataclass(frozen=True)
class HarnessModel:
    """A harness compiled against one suite and profile (arrays indexed by task row).

    Examples
    --------
    >>> from gsme.sim.profiles import PROFILES
    >>> from gsme.sim.suite import PRESET_SPECS, build_suite
    >>> suite = build_suite(PRESET_SPECS["tiny"], suite_seed=0)
    >>> onset = base_onset(suite, PROFILES["qwen-careless"])
    >>> model = compile_harness([], suite, onset, lambda expr: np.ones(len(suite.tasks), bool))
    >>> model.pass_prob.shape, round(float(model.pass_prob.mean()), 3)
    ((24,), 0.456)
    >>> bool((model.pass_prob[model.out_of_reach] == 0).all())
    True
    """

    onset: np.ndarray  # (n_tasks, n_whys) onset hazards h0
    fail_given_onset: np.ndarray  # (n_tasks, n_whys) m
    harm: np.ndarray  # (n_tasks,) H
    harm_why: np.ndarray  # (n_tasks,) index into WHYS of a harm-induced failure
    cost: np.ndarray  # (n_tasks,) token multiplier
    runaway_cost: np.ndarray  # (n_tasks,) extra multiplier on thinking-runaway trials
    beacons: tuple[Beacon, ...]
    onset_cumulative: tuple[list[float], ...]  # per task, running sum of ``onset`` (sampling)
    out_of_reach: np.ndarray  # (n_tasks,) bool: a capability gap, never passes

    @property
    def pass_prob(self) -> np.ndarray:
        """Exact pass probability per task (no infrastructure faults)."""
        fail = (self.onset * self.fail_given_onset).sum(axis=1)
        p = np.clip((1.0 - fail) * (1.0 - self.harm), 0.0, 1.0)
        return np.where(self.out_of_reach, 0.0, p)  # exactly 0, whatever the rounding

    @functools.cached_property
    def per_task(self) -> tuple[TaskModel, ...]:
        """Each task's part of the model as Python values: what a trial samples (a NumPy
        array read a scalar at a time was a tenth of the simulator's time).

        Examples
        --------
        >>> from gsme.sim.profiles import PROFILES
        >>> from gsme.sim.suite import PRESET_SPECS, build_suite
        >>> suite = build_suite(PRESET_SPECS["tiny"], suite_seed=0)
        >>> onset = base_onset(suite, PROFILES["qwen-careless"])
        >>> model = compile_harness([], suite, onset, lambda expr: np.ones(len(suite.tasks), bool))
        >>> task = model.per_task[0]
        >>> task.harm == float(model.harm[0]), task.beacons
        (True, ())
        """
        fail = self.fail_given_onset.tolist()
        admitted = [b.admitted.tolist() for b in self.beacons]
        return tuple(
            TaskModel(cumulative, fail[i], harm, harm_why, cost, runaway_cost,
                      tuple(b for b, a in zip(self.beacons, admitted, strict=True) if a[i]))
            for i, (cumulative, harm, harm_why, cost, runaway_cost) in enumerate(zip(
                self.onset_cumulative, self.harm.tolist(), self.harm_why.tolist(),
                self.cost.tolist(), self.runaway_cost.tolist(), strict=True)))


class TaskModel(NamedTuple):
    """One task's row of a :class:`HarnessModel` (:attr:`HarnessModel.per_task`)."""

    onset_cumulative: list[float]
    fail_given_onset: list[float]
    harm: float
    harm_why: int
    cost: float
    runaway_cost: float
    beacons: tuple[Beacon, ...]  # those admitted on the task, in the model's order


def base_onset(suite: Suite, profile: Profile) -> np.ndarray:
    """Onset hazard of each failure mode per task, before any patch (rows of out-of-reach
    tasks sum to 1).

    Examples
    --------
    >>> from gsme.sim.profiles import PROFILES
    >>> from gsme.sim.suite import PRESET_SPECS, build_suite
    >>> suite = build_suite(PRESET_SPECS["tiny"], suite_seed=0)
    >>> onset = base_onset(suite, PROFILES["qwen-careless"])
    >>> onset.shape == (len(suite.tasks), len(WHYS))
    True
    >>> bool(np.allclose(onset[suite.out_of_reach].sum(axis=1), 1.0))
    True
    """
    fail = 1.0 - 1.0 / (1.0 + np.exp(-(profile.skill - suite.difficulty)))
    fail = np.where(suite.out_of_reach, 1.0, fail)
    weights = suite.susceptibility * np.array([profile.rates[w] for w in WHYS])
    return fail[:, None] * weights / weights.sum(axis=1, keepdims=True)


def compile_harness(patches, suite: Suite, onset: np.ndarray, gate_mask, *,
                    mix: str | Mix = DEFAULT_MIX) -> HarnessModel:
    """Compile ``patches`` (a harness's manifests) into a :class:`HarnessModel`.

    ``gate_mask(expr)`` returns the bool mask of the suite's tasks an env gate admits;
    ``mix`` is the proposal mix (a name of :data:`gsme.sim.catalogue.MIXES` or a
    :class:`~gsme.sim.catalogue.Mix`).

    Examples
    --------
    With no patches every task keeps its base failure probability:

    >>> from gsme.sim.profiles import PROFILES
    >>> from gsme.sim.suite import PRESET_SPECS, build_suite
    >>> suite = build_suite(PRESET_SPECS["tiny"], suite_seed=0)
    >>> onset = base_onset(suite, PROFILES["qwen-careless"])
    >>> everywhere = lambda expr: np.ones(len(suite.tasks), bool)
    >>> model = compile_harness([], suite, onset, everywhere)
    >>> bool(np.allclose(model.pass_prob, np.where(suite.out_of_reach, 0, 1 - onset.sum(axis=1))))
    True
    >>> model.beacons
    ()
    """
    n = len(suite.tasks)
    factors: dict[int, list[tuple[float, np.ndarray]]] = {}
    named_factor = np.ones(n)
    survive = np.ones(n)
    harm_why = np.full(n, WHY_INDEX["premature-finalization"])
    harm_best = np.zeros(n)
    cost, runaway_cost = np.ones(n), np.ones(n)
    hard = suite.tasks["hard"].to_numpy(dtype=bool)
    beacons = []
    mix = as_mix(mix)
    for patch in patches:
        effect = effect_of(patch.mechanism, patch.why, mix=mix)
        admitted = np.asarray(gate_mask(patch.env_gate), dtype=bool)
        why = WHY_INDEX.get(effect.why if effect.why is not None else "", -1)
        helped = admitted
        if effect.named_only:
            helped = admitted & _named(patch, suite)
            named_factor = np.where(helped, named_factor * effect.factor, named_factor)
        elif why >= 0 and effect.factor != 1.0:
            factors.setdefault(why, []).append((effect.factor, admitted))
        harm = np.where(admitted, np.where(hard, effect.harm_hard, effect.harm), 0.0)
        survive *= 1.0 - harm
        harm_why = np.where(harm > harm_best, WHY_INDEX[effect.harm_why], harm_why)
        harm_best = np.maximum(harm, harm_best)
        cost = np.where(admitted, cost * effect.cost, cost)
        runaway_cost = np.where(admitted, runaway_cost * effect.runaway_cost, runaway_cost)
        beacons.append(Beacon(patch.beacon, effect.trigger, why, helped))
    m = np.ones_like(onset)
    for why, items in factors.items():
        m[:, why] = _diminishing(items, n)
    gap = suite.out_of_reach
    m = np.where(gap[:, None], 1.0, m * named_factor[:, None])  # no patch reaches a gap
    cumulative = np.cumsum(onset, axis=1)
    cumulative[gap, -1] = 1.0  # exactly: an out-of-reach task never passes
    return HarnessModel(onset, m, 1.0 - survive, harm_why, cost, runaway_cost,
                        tuple(beacons), tuple(cumulative.tolist()), gap)


def _diminishing(items, n) -> np.ndarray:
    """Per task: sorted from the strongest, the r-th admitted factor counts as f ** (1/r)."""
    stacked = np.vstack([np.where(adm, f, 1.0) for f, adm in items])  # (n_patches, n)
    stacked = np.sort(stacked, axis=0)
    powers = 1.0 / np.arange(1, len(items) + 1)[:, None]
    return np.prod(stacked ** powers, axis=0)


def _named(patch, suite: Suite) -> np.ndarray:
    """Tasks a patch names, in ``predicted_tasks`` or anywhere in the text it writes."""
    text = " ".join(change.new for change in patch.changes)
    pattern = re.escape(suite.spec.name) + r"-\d{3}"
    names = set(patch.predicted_tasks) | set(re.findall(pattern, text))
    mask = np.zeros(len(suite.tasks), dtype=bool)
    mask[[suite.index[t] for t in names if t in suite.index]] = True
    return mask
