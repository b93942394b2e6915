"""The simulated frozen task agent: a :class:`~gsme.agents.TaskAgent` with known ground truth.

Its results are *simulated*: a suite preset (:mod:`gsme.sim.suite`), a model profile
(:mod:`gsme.sim.profiles`) and the hidden catalogue of patch effects
(:mod:`gsme.sim.catalogue`) decide every trial. It is the offline default that every test of
the evolution loop stands on, and the instrument that audits it: :meth:`SimAgent.true_rates`
and :meth:`SimAgent.true_effect` give exact pass probabilities the loop never sees.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import os
import struct
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from gsme.agents.base import TaskAgent, Trajectory
from gsme.envgate import parse
from gsme.patches import read_patches
from gsme.schema import SPLITS
from gsme.sim import transcripts
from gsme.sim.catalogue import DEFAULT_MIX, Mix, as_mix
from gsme.sim.model import HarnessModel, base_onset, compile_harness
from gsme.sim.profiles import PROFILES, WHYS
from gsme.sim.suite import DEFAULT_BREADTH, PRESET_SPECS, build_suite

__all__ = ["DEFAULT_INFRA_FAULT_RATE", "SimAgent"]

DEFAULT_INFRA_FAULT_RATE = 0.02
_NO_SUBMIT = {WHYS.index(w) for w in ("thinking-runaway", "looping", "context-overflow")}
_TOKEN_SCALE = {"thinking-runaway": 4.0, "looping": 2.5, "context-overflow": 3.0,
                "premature-finalization": 0.5}
_CACHE_SIZE = 256


class SimAgent(TaskAgent):
    """A simulated frozen model on a simulated task suite.

    A trial is random given (harness, task, repeat, attempt, run_seed) and reproducible:
    its random numbers are a blake2b hash of ``run_seed``, ``suite_seed``, the content
    fingerprint of the harness's ``patches/`` folder, the task and ``repeat`` (a
    counter-based generator), so two different harnesses never share random numbers.
    Infrastructure faults come from a hash of ``run_seed``, the task, ``repeat`` and
    ``attempt`` that leaves the harness out, so they do not depend on it; the outcome leaves
    ``attempt`` out, so a re-run after a fault yields what the faulted attempt would have
    yielded (faults delay a result, never change it). Only the patch manifests matter: a
    patch acts through its ``mechanism`` (looked up in the hidden catalogue), its
    ``env_gate`` and, for hints, the task ids it names.

    Parameters
    ----------
    preset : str
        A preset name, one of :data:`gsme.sim.PRESETS`.
    profile : str, optional
        A profile name, one of :data:`gsme.sim.PROFILES`; default: the preset's own.
    suite_seed : int
        Fixes the simulated suite: task features, hidden difficulty, the train/test split.
    infra_fault_rate : float
        Probability that a trial's environment fails (``infra_ok`` False).
    test_canary : str, optional
        A string planted in every test task's ``content`` (and so in its transcripts), for
        tests that check the test split stays sealed.
    mix : str, Mix or mapping
        The proposal mix: what patches truly do (:func:`gsme.sim.catalogue.effect_of`). A
        name of :data:`gsme.sim.MIXES` (``calibrated``, the default: the catalogue, whose
        targeted fixes are sized after the paper's credited train gains; the others are
        other worlds), a :class:`gsme.sim.catalogue.Mix` or a table of one
        (:func:`gsme.sim.catalogue.as_mix`). The baseline is the same in every mix. In a
        config: ``[agent] mix = "published"`` or ``mix = { name = "mine", fix = 0.5 }``.
        The agent's ``name`` ends in ``/<mix name>`` for any mix but ``calibrated``.
    breadth : float
        How concentrated each failure mode is on the visible ``area`` feature: the share of
        areas it calls home, in (0, 1] (see :mod:`gsme.sim.suite`); an evolver gating a
        patch on the areas of its diagnosed failures acts on about that share of tasks.
        Default :data:`gsme.sim.suite.DEFAULT_BREADTH`. In a config:
        ``[agent] breadth = 0.33``. The ``name`` says ``/breadth<b>`` when not the default.
    grown : int
        Train tasks added after the suite's own (a grown v2 of the benchmark; the test split
        and every original task are unchanged). The ``name`` says ``/grown<n>`` when > 0.

    Examples
    --------
    >>> agent = SimAgent("tiny", suite_seed=0)
    >>> agent.name, agent.simulated
    ('simulated:tiny/qwen-careless', True)
    """

    simulated = True
    honours_env_gates = True  # a patch acts only where its gate admits the task

    def __init__(self, preset: str = "tiny", *, profile: str | None = None, suite_seed: int = 0,
                 infra_fault_rate: float = DEFAULT_INFRA_FAULT_RATE,
                 test_canary: str | None = None, mix: str | Mix | Mapping = DEFAULT_MIX,
                 breadth: float = DEFAULT_BREADTH, grown: int = 0):
        if preset not in PRESET_SPECS:
            raise ValueError(f"preset must be one of {list(PRESET_SPECS)}, got {preset!r}")
        spec = PRESET_SPECS[preset]
        profile = spec.profile if profile is None else profile
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {list(PROFILES)}, got {profile!r}")
        if not 0.0 <= infra_fault_rate < 1.0:
            raise ValueError(f"infra_fault_rate must be in [0, 1), got {infra_fault_rate!r}")
        mix = as_mix(mix)
        self.suite = build_suite(spec, suite_seed=suite_seed, breadth=breadth, grown=grown)
        self._args = (preset, profile, int(suite_seed), float(infra_fault_rate), test_canary,
                      mix, float(breadth), int(grown))
        self.profile = PROFILES[profile]
        self.suite_seed = int(suite_seed)
        self.infra_fault_rate = float(infra_fault_rate)
        self.mix = mix
        self.name = f"simulated:{spec.name}/{profile}" + (
            "" if mix.name == DEFAULT_MIX else f"/{mix.name}") + (
            "" if breadth == DEFAULT_BREADTH else f"/breadth{breadth:g}") + (
            f"/grown{grown}" if grown else "")
        tasks = self.suite.tasks.copy()
        if test_canary is not None:
            test = tasks["split"] == "test"
            tasks.loc[test, "content"] = tasks.loc[test, "content"] + f" [{test_canary}]"
        self._tasks = tasks
        self._content = tasks["content"].tolist()
        self._task_keys = [f"{self.suite_seed}|{t}" for t in tasks["task_id"]]
        self._onset = base_onset(self.suite, self.profile)
        self._by_fingerprint: dict[str, HarnessModel] = {}
        self._gates: dict[str, np.ndarray] = {}

    def __reduce__(self):
        """Pickle as the constructor's arguments: small, and picklable by any executor."""
        return _rebuild, self._args

    def tasks(self) -> pd.DataFrame:
        """``task_id, split, category, has_tests, needs_tools, long_context, hard, area,
        content``."""
        return self._tasks.copy()

    def signature(self) -> dict[str, str]:
        """As :meth:`TaskAgent.signature`, the ``harness`` naming the preset, profile, suite
        seed, mix (with its values), breadth and grown tasks: every knob of the world."""
        from gsme.comparisons import digest

        preset, profile, suite_seed, _, _, mix, breadth, grown = self._args
        mix = f"{getattr(mix, 'name', mix)}:{digest(repr(mix))[:8]}"
        return {**super().signature(), "harness": f"simulated:{preset}/{profile}/suite_seed="
                f"{suite_seed}/mix={mix}/breadth={breadth:g}/grown={grown}"}

    def run(self, harness_dir: Path, task: Mapping, *, repeat: int, attempt: int,
            run_seed: int) -> Trajectory:
        """Run one simulated trial of ``task`` (a row of :meth:`tasks`) under ``harness_dir``."""
        i = self._row(task)
        fingerprint, model = self._harness(harness_dir)
        return self._trial(i, fingerprint, model, repeat=repeat, attempt=attempt,
                           run_seed=run_seed)

    def run_many(self, harness: Mapping[str, str], trials, *, run_seed: int) -> list[Trajectory]:
        """Run ``(task, repeat, attempt)`` trials under ``harness`` (its files) in one call.

        Each trial is exactly what :meth:`run` gives under a folder holding these files:
        the harness is compiled once, from its manifests, and nothing is written or read
        from disk.
        """
        fingerprint, model = self._model(_manifests(harness))
        return [self._trial(self._row(task), fingerprint, model, repeat=repeat,
                            attempt=attempt, run_seed=run_seed)
                for task, repeat, attempt in trials]

    def _trial(self, i: int, fingerprint: str, model: HarnessModel, *, repeat: int,
               attempt: int, run_seed: int) -> Trajectory:
        """One trial of task row ``i`` under a compiled harness (see the class docstring)."""
        spec = self.suite.spec
        key = f"{run_seed}|{self._task_keys[i]}|{repeat}"
        if _uniforms(f"{key}|{attempt}|infra", 1)[0] < self.infra_fault_rate:
            return Trajectory(
                passed=False, infra_ok=False, tokens=0.0, cost_usd=0.0, seconds=5.0,
                transcript=f"task: {self._content[i]}\n[environment] health check failed",
                error="simulated infrastructure fault: health check failed")
        u = _uniforms(f"{key}|{fingerprint}", 7)
        task = model.per_task[i]
        onset = bisect.bisect_right(task.onset_cumulative, u[0])
        onset = onset if onset < len(WHYS) else -1
        failed = onset >= 0 and u[1] < task.fail_given_onset[onset]
        why = WHYS[onset] if failed else None
        if not failed and u[2] < task.harm:
            failed, why = True, WHYS[task.harm_why]
        submitted = not (failed and WHYS.index(why) in _NO_SUBMIT)
        fired = tuple(b.name for b in task.beacons if (
            b.trigger in ("always", "named") or (b.trigger == "submit" and submitted)
            or (b.trigger == "onset" and b.why == onset)))
        tokens = spec.tokens * task.cost * math.exp(0.8 * (u[3] - 0.5))
        if why is not None:
            tokens *= _TOKEN_SCALE.get(why, 1.0)
        if why == "thinking-runaway":
            tokens *= task.runaway_cost
        text = transcripts.render(self._content[i], why, fired, u[4], u[5], tokens)
        return Trajectory(
            passed=not failed, infra_ok=True, beacons=fired, tokens=float(tokens),
            cost_usd=float(tokens * spec.usd_per_mtok / 1e6),
            seconds=float(tokens / spec.tok_per_s + 30.0 * u[6]),
            transcript=text, pathology=why)

    def true_rates(self, harness: Mapping[str, str], split: str) -> pd.DataFrame:
        """Exact pass probability of every task of ``split`` under ``harness`` (its files).

        Ground truth for audits only; the evolution loop never calls it.

        Returns
        -------
        DataFrame
            ``task_id`` and ``rate`` (probability of passing a valid trial), one row per task.
        """
        if split not in SPLITS:
            raise ValueError(f"split must be one of {list(SPLITS)}, got {split!r}")
        _, model = self._model({p: t for p, t in harness.items() if _is_manifest(p)})
        mask = (self._tasks["split"] == split).to_numpy()
        return pd.DataFrame({"task_id": self._tasks.loc[mask, "task_id"].to_numpy(),
                             "rate": model.pass_prob[mask]})

    def true_effect(self, child: Mapping[str, str], parent: Mapping[str, str],
                    split: str) -> float:
        """True effect of harness ``child`` over ``parent`` in pp, mean over ``split``'s tasks."""
        child_rates = self.true_rates(child, split)["rate"].to_numpy()
        parent_rates = self.true_rates(parent, split)["rate"].to_numpy()
        return float(100.0 * (child_rates - parent_rates).mean())

    def true_failure_shares(self, harness: Mapping[str, str], split: str) -> pd.DataFrame:
        """Exact share of ``split``'s failing trials that each failure mode causes.

        Ground truth for audits and calibration only. A trial fails with mode ``j`` with
        probability ``h0_j * m_j`` (onset not recovered) plus, for the mode a harmful patch
        causes, ``(1 - sum_k h0_k * m_k) * H`` (see :mod:`gsme.sim.model`).

        Returns
        -------
        DataFrame
            ``why`` (every failure mode of :data:`gsme.sim.WHYS`) and ``share`` (of all
            failing trials of the split, summing to 1), sorted by ``share`` descending.

        Examples
        --------
        >>> SimAgent("appworld").true_failure_shares({}, "train")["why"].iloc[0]
        'careless-submit'
        """
        if split not in SPLITS:
            raise ValueError(f"split must be one of {list(SPLITS)}, got {split!r}")
        _, model = self._model({p: t for p, t in harness.items() if _is_manifest(p)})
        mask = (self._tasks["split"] == split).to_numpy()
        by_onset = (model.onset * model.fail_given_onset)[mask]
        harmed = (1.0 - by_onset.sum(axis=1)) * model.harm[mask]
        mass = by_onset.sum(axis=0)
        np.add.at(mass, model.harm_why[mask], harmed)
        out = pd.DataFrame({"why": list(WHYS), "share": mass / mass.sum()})
        return out.sort_values("share", ascending=False, kind="stable").reset_index(drop=True)

    def _row(self, task: Mapping) -> int:
        task_id = task["task_id"]
        try:
            return self.suite.index[task_id]
        except KeyError:
            raise ValueError(
                f"task_id {task_id!r} is not a task of {self.name}; see tasks()") from None

    def _harness(self, harness_dir) -> tuple[str, HarnessModel]:
        """Fingerprint and compiled model of the harness in a folder (its manifests only)."""
        folder = os.path.join(os.fspath(harness_dir), "patches")
        try:
            with os.scandir(folder) as entries:
                manifests = {f"patches/{e.name}": Path(e.path).read_text(encoding="utf-8")
                             for e in entries if _is_manifest(f"patches/{e.name}")}
        except FileNotFoundError:
            manifests = {}
        return self._model(manifests)

    def _model(self, manifests: Mapping[str, str]) -> tuple[str, HarnessModel]:
        """Fingerprint and compiled model of a harness's manifests (cached by content)."""
        digest = hashlib.blake2b(digest_size=16)
        for name, text in sorted(manifests.items()):
            digest.update(name.encode() + b"\0" + text.encode() + b"\0")
        fingerprint = digest.hexdigest()
        if fingerprint not in self._by_fingerprint:
            model = compile_harness(read_patches(manifests), self.suite, self._onset,
                                    self._gate_mask, mix=self.mix)
            _bounded_put(self._by_fingerprint, fingerprint, model)
        return fingerprint, self._by_fingerprint[fingerprint]

    def _gate_mask(self, expr: str) -> np.ndarray:
        if expr not in self._gates:
            self._gates[expr] = np.asarray(parse(expr).mask(self._tasks), dtype=bool)
        return self._gates[expr]


def _rebuild(preset, profile, suite_seed, infra_fault_rate, test_canary,
             mix=DEFAULT_MIX, breadth=DEFAULT_BREADTH, grown=0) -> SimAgent:
    return SimAgent(preset, profile=profile, suite_seed=suite_seed,
                    infra_fault_rate=infra_fault_rate, test_canary=test_canary, mix=mix,
                    breadth=breadth, grown=grown)


def _uniforms(key: str, n: int) -> list[float]:
    """``n`` (at most 8) uniforms in [0, 1) from a stable hash of ``key``.

    A counter-based generator: the same key always gives the same numbers, in any order
    and any thread, and different keys give independent ones.
    """
    digest = hashlib.blake2b(key.encode(), digest_size=8 * n).digest()
    return [(w >> 11) * 2.0**-53 for w in struct.unpack(f"<{n}Q", digest)]


def _manifests(files: Mapping[str, str]) -> dict[str, str]:
    """A harness's patch manifests as :meth:`SimAgent.run` reads them from a folder (the
    text mode's universal newlines included), so both paths fingerprint them alike."""
    return {path: text.replace("\r\n", "\n").replace("\r", "\n")
            for path, text in files.items() if _is_manifest(path)}


def _is_manifest(path: str) -> bool:
    folder, _, name = path.partition("/")
    return folder == "patches" and "/" not in name and name.endswith(".toml")


def _bounded_put(cache: dict, key, value) -> None:
    if len(cache) >= _CACHE_SIZE:
        try:  # another thread may be evicting at the same moment
            cache.pop(next(iter(cache)), None)
        except (StopIteration, RuntimeError):
            pass
    cache[key] = value
