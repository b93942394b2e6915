"""Simulated task suites: tasks with hidden difficulty, reach and susceptibility, and a split.

Each preset is named after one of the GSME paper's domains and imitates its size; its tasks,
features and difficulties are *simulated*. The public face of a suite is
:attr:`Suite.tasks` (ids, split, features, a short statement); difficulty, reach and
per-pathology susceptibility stay private to the simulator.

Shape. Real agent benchmarks are bimodal: on Terminal-Bench (13 systems × 80 tasks × 5 real
runs) about half the tasks never pass, a quarter always pass and only 15–43% are
borderline. A suite reproduces that with two hidden layers per task:

* **reach** — a share ``out_of_reach`` of the tasks is beyond the frozen model: a
  capability gap no harness change addresses (they fail every trial, with a pathology's
  signature in the transcript, but no patch moves them). They are the tasks scoring
  highest on ``difficulty`` plus an independent standard-normal draw, so most of them are
  ``hard`` but not all;
* **difficulty** — on the others the fixable failure probability is
  ``1 - sigmoid(skill - difficulty)``; a wide ``difficulty_sd`` puts most of them near 0
  (solved) or near 1 (stuck on a pathology that a fix can address), the rest borderline.
  The difficulties are the suite's n normal quantiles in a random order (a stratified
  draw), so a small suite's level does not swing with its seed. The visible ``hard`` flag
  marks the top 35% by difficulty: in a bimodal suite those tasks almost never pass.

Breadth. How concentrated each failure mode is on a visible feature. ``breadth`` is
written as a fraction w/K with K at most :data:`MAX_AREAS` (:func:`areas`: 0.33 → 1/3,
0.6 → 3/5); every task belongs to one of K visible ``area`` values (``a0`` ...,
equal shares; no ``area`` column when K = 1), and every failure mode calls w of them
*home*, placed so that every area is home to at least one mode. Off its home a mode keeps
only :data:`OFF_HOME` of its susceptibility, so its failures sit on a share ``breadth``
of the tasks, and an evolver that gates a patch on the areas of the failures it diagnosed
(:func:`gsme.evolvers.rule.derive_gate`) acts on about that share, which is what borrowing
saves trials on (:mod:`gsme.scoring`). The world stays honest: a patch gated narrower
than its failure mode's home misses failing tasks and gains less. With seven failure
modes and every task failing with one of them, a home is at least about 1/7 of the tasks
whatever the knob says (0.1 gives homes of 1 or 2 areas of 10). A breadth changes which
failure mode a failure shows, never a task's pass probability under the baseline (the
shape below holds at every breadth); but a failure mode confined to a share b of the
tasks can cause at most about that share of the failures, so at narrow breadths the
dominant pathology's targeted fix gains less than the paper's Δ (at 0.33, 0.45–0.70× of
it over the calibrated presets, against about 0.8× unconcentrated), which is why the
default, :data:`DEFAULT_BREADTH`, is 1: the calibrated, unconcentrated world.

Growth. ``grown=n`` adds n *train* tasks after the suite's own (a v2 of the benchmark):
ids continue the numbering, they are drawn like the others from their own random stream,
and every original task, the split and the homes stay exactly as they were, so a run's
sealed test split is unchanged.

The presets' ``difficulty_mean``, ``difficulty_sd`` and ``out_of_reach`` were set so that
each baseline's shares of never-, always- and sometimes-passing tasks over 5 runs, and its
run-to-run spread, lie within what the 13 real Terminal-Bench systems show, and that the
true effect of the targeted fix of each preset's dominant pathology lies near the paper's
credited train Δ for its domain (see :mod:`gsme.sim.shape`, which measures both).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType

import numpy as np
import pandas as pd
from scipy.special import ndtri as _ndtri

from gsme.sim.profiles import WHYS

__all__ = ["DEFAULT_BREADTH", "FLAGS", "HARD_QUANTILE", "MAX_AREAS", "OFF_HOME", "PRESET_SPECS",
           "PresetSpec", "Suite", "areas", "build_suite"]

FLAGS = ("has_tests", "needs_tools", "long_context")
HARD_QUANTILE = 0.65  # tasks above this difficulty quantile carry the visible ``hard`` flag
MAX_AREAS = 10
"""Most values of the visible ``area`` feature (see :func:`areas`)."""
OFF_HOME = 0.005
"""The share of a failure mode's susceptibility it keeps on tasks outside its home areas."""
DEFAULT_BREADTH = 1.0
"""The default breadth: 1, the unconcentrated world the presets are calibrated in (every
failure mode can occur on every task; see the module docstring for why not narrower)."""


@dataclass(frozen=True)
class PresetSpec:
    """Shape of one simulated suite.

    ``difficulty_mean``/``difficulty_sd`` are on the logit scale of the profile's skill: a
    small sd puts many tasks near a 50% pass rate, hence high run-to-run variance; a wide
    one makes the reachable tasks bimodal. ``out_of_reach`` is the share of tasks beyond
    the model's reach (see the module docstring).
    ``flags`` gives the probability of each boolean feature; ``tokens`` the typical tokens of
    a clean trial; ``usd_per_mtok`` the price of a million tokens; ``tok_per_s`` the speed;
    ``paper_benchmark`` the row of the paper's results table (``data/paper_table.csv``) the
    preset is named after (None for ``tiny``).

    Examples
    --------
    >>> spec = PRESET_SPECS["tiny"]
    >>> spec.n_train, spec.n_test, spec.categories
    (16, 8, ('python', 'shell', 'math'))
    """

    name: str
    n_train: int
    n_test: int
    categories: tuple[str, ...]
    flags: Mapping[str, float]
    difficulty_mean: float
    difficulty_sd: float
    profile: str
    tokens: float
    statement: str
    out_of_reach: float = 0.0
    paper_benchmark: str | None = None
    usd_per_mtok: float = 0.6
    tok_per_s: float = 80.0


def _spec(name, paper, n_train, n_test, categories, flags, mean, sd, gap, profile, tokens,
          statement):
    return PresetSpec(name, n_train, n_test, tuple(categories),
                      MappingProxyType(dict(zip(FLAGS, flags))), mean, sd, profile,
                      tokens, statement, out_of_reach=gap, paper_benchmark=paper)


PRESET_SPECS: Mapping[str, PresetSpec] = MappingProxyType({
    s.name: s for s in (
        # name, paper benchmark, n_train, n_test, categories, flag probabilities (has_tests,
        # needs_tools, long_context), difficulty mean, sd, out_of_reach, profile, tokens,
        # statement
        _spec("tb2", "TB2", 45, 44,
              ["build", "networking", "data", "security", "python"],
              (0.6, 0.9, 0.3), 1.0, 4.9, 0.19, "balanced", 40_000,
              "In the terminal, {verb} for the {cat} job"),
        _spec("livecode", "LiveCode", 100, 80,
              ["arrays", "graphs", "dp", "strings", "math"],
              (0.9, 0.2, 0.1), 0.6, 4.8, 0.15, "qwen-runaway", 12_000,
              "Write a program that solves the {cat} problem: {verb}"),
        _spec("omni-math", "Omni-MATH", 120, 100,
              ["algebra", "geometry", "number-theory", "combinatorics"],
              (0.1, 0.1, 0.1), 0.3, 3.5, 0.39, "qwen-runaway", 8_000,
              "Prove or compute ({cat}): {verb}"),
        _spec("browsecomp-plus", "BrowseComp+", 100, 80,
              ["people", "events", "science", "media"],
              (0.1, 0.95, 0.9), 2.2, 4.8, 0.01, "balanced", 30_000,
              "Search the corpus ({cat}) and {verb}"),
        _spec("gdpval", "GDPval", 110, 110,
              ["finance", "legal", "health", "engineering", "sales"],
              (0.5, 0.5, 0.5), 0.3, 5.1, 0.25, "gemini-careless", 25_000,
              "As a {cat} professional, {verb}"),
        _spec("appworld", "AppWorld", 96, 72,
              ["email", "payments", "calendar", "shopping", "notes"],
              (0.7, 0.95, 0.2), 0.8, 4.0, 0.02, "qwen-careless", 20_000,
              "Using the {cat} app APIs, {verb}"),
        _spec("swe-bench", "SWE-bench", 50, 26,
              ["django", "sympy", "astropy", "requests"],
              (0.95, 0.9, 0.4), 1.1, 4.5, 0.24, "qwen-careless", 50_000,
              "Resolve the {cat} issue: {verb}"),
        _spec("tiny", None, 16, 8,
              ["python", "shell", "math"],
              (0.6, 0.5, 0.3), 0.7, 4.8, 0.21, "qwen-careless", 5_000,
              "Small {cat} task: {verb}"),
    )
})
"""Every preset's shape, by name."""

_VERBS = ("fix the failing step", "produce the requested report", "find the missing value",
          "repair the broken configuration", "answer the question exactly",
          "update the records as asked", "compute the final quantity")


@dataclass(frozen=True)
class Suite:
    """A simulated suite: public ``tasks`` plus hidden ``difficulty``, ``out_of_reach``,
    ``susceptibility`` and ``home``.

    ``out_of_reach[i]`` is True when task ``i`` is beyond the model (a capability gap);
    ``susceptibility[i, j]`` scales how prone task ``i`` is to failure mode ``WHYS[j]``;
    ``home[j, a]`` is True when area ``a`` is a home of failure mode ``WHYS[j]``;
    ``index`` maps a task id to its row. ``breadth`` and ``grown`` are the knobs it was
    built with (see the module docstring).

    Examples
    --------
    >>> suite = build_suite(PRESET_SPECS["tiny"], suite_seed=0)
    >>> len(suite.tasks), suite.difficulty.shape, suite.index["tiny-000"]
    (24, (24,), 0)
    """

    spec: PresetSpec
    suite_seed: int
    tasks: pd.DataFrame
    difficulty: np.ndarray
    susceptibility: np.ndarray
    index: Mapping[str, int]
    out_of_reach: np.ndarray
    home: np.ndarray
    breadth: float = DEFAULT_BREADTH
    grown: int = 0


def build_suite(spec: PresetSpec, *, suite_seed: int, breadth: float = DEFAULT_BREADTH,
                grown: int = 0) -> Suite:
    """Draw the tasks of ``spec`` from ``suite_seed``: features, hidden parameters, stratified split.

    Parameters
    ----------
    spec : PresetSpec
    suite_seed : int
        Fixes every task, the split and the failure modes' homes.
    breadth : float
        The share of the ``area`` values each failure mode calls home, in (0, 1]; see the
        module docstring.
    grown : int
        Train tasks added after the suite's own (a grown v2 of the suite), >= 0.

    Examples
    --------
    >>> b = build_suite(PRESET_SPECS["tiny"], suite_seed=0)
    >>> b.tasks["split"].value_counts().to_dict()
    {'train': 16, 'test': 8}
    >>> build_suite(PRESET_SPECS["tiny"], suite_seed=0, grown=4).tasks["split"].value_counts().to_dict()
    {'train': 20, 'test': 8}
    """
    if not 0.0 < breadth <= 1.0:
        raise ValueError(f"breadth must be in (0, 1], got {breadth!r}")
    if isinstance(grown, bool) or not isinstance(grown, (int, np.integer)) or grown < 0:
        raise ValueError(f"grown must be a whole number >= 0, got {grown!r}")
    rng = np.random.default_rng([suite_seed, 0x5EED])
    n = spec.n_train + spec.n_test
    cats = rng.choice(len(spec.categories), size=n)
    flags = {f: rng.random(n) < p for f, p in spec.flags.items()}
    difficulty = _normal_quantiles(rng.normal(size=n), spec.difficulty_mean, spec.difficulty_sd)
    threshold = np.quantile(difficulty, HARD_QUANTILE)
    hard = difficulty > threshold
    susceptibility = _susceptibility(rng, cats, len(spec.categories), flags, hard)
    verbs = rng.choice(len(_VERBS), size=n)
    split = _stratified_split(rng, cats * 2 + hard, spec.n_test)
    out_of_reach = _out_of_reach(rng, difficulty, spec)  # drawn last: the rest is unchanged
    n_areas, width = areas(breadth)
    places = np.random.default_rng([suite_seed, 0xA2EA])  # areas and homes: their own stream
    area = places.permutation(n) % n_areas
    home = _homes(places, n_areas, width)
    own = _Drawn(cats, flags, difficulty, hard, susceptibility, verbs, out_of_reach, area,
                 np.where(split, "test", "train"))
    drawn = own if not grown else _joined(own, _grown(spec, suite_seed, int(grown), threshold,
                                                      n_areas))
    susceptibility = drawn.susceptibility * np.where(home[:, drawn.area].T, 1.0, OFF_HOME)
    ids = [f"{spec.name}-{i:03d}" for i in range(len(drawn.area))]
    tasks = pd.DataFrame({
        "task_id": ids,
        "split": drawn.split,
        "category": [spec.categories[c] for c in drawn.cats],
        **{f: drawn.flags[f] for f in FLAGS},
        "hard": drawn.hard,
        **({"area": [f"a{a}" for a in drawn.area]} if n_areas > 1 else {}),
        "content": [spec.statement.format(verb=_VERBS[v], cat=spec.categories[c])
                    for v, c in zip(drawn.verbs, drawn.cats)],
    })
    return Suite(spec, suite_seed, tasks, drawn.difficulty, susceptibility,
                 MappingProxyType({t: i for i, t in enumerate(ids)}), drawn.out_of_reach,
                 home, float(breadth), int(grown))


@dataclass(frozen=True)
class _Drawn:
    """The per-task draws of a suite (or of its grown tasks), row-aligned."""

    cats: np.ndarray
    flags: Mapping[str, np.ndarray]
    difficulty: np.ndarray
    hard: np.ndarray
    susceptibility: np.ndarray
    verbs: np.ndarray
    out_of_reach: np.ndarray
    area: np.ndarray
    split: np.ndarray


def _grown(spec: PresetSpec, suite_seed: int, n: int, threshold: float,
           n_areas: int) -> _Drawn:
    """``n`` train tasks drawn like the suite's own, from their own stream.

    Difficulties are the n normal quantiles (stratified, as for the suite); ``hard`` uses
    the suite's own threshold; exactly ``round(out_of_reach * n)`` are out of reach.
    """
    rng = np.random.default_rng([suite_seed, 0x6207])
    cats = rng.choice(len(spec.categories), size=n)
    flags = {f: rng.random(n) < p for f, p in spec.flags.items()}
    difficulty = _normal_quantiles(rng.normal(size=n), spec.difficulty_mean, spec.difficulty_sd)
    hard = difficulty > threshold
    susceptibility = _susceptibility(rng, cats, len(spec.categories), flags, hard)
    verbs = rng.choice(len(_VERBS), size=n)
    out_of_reach = _out_of_reach(rng, difficulty, spec)
    area = rng.permutation(n) % n_areas
    return _Drawn(cats, flags, difficulty, hard, susceptibility, verbs, out_of_reach, area,
                  np.full(n, "train", dtype=object))


def _joined(first: _Drawn, second: _Drawn) -> _Drawn:
    """The rows of ``first`` followed by those of ``second``."""
    return _Drawn(**{
        name: ({f: np.concatenate([first.flags[f], second.flags[f]]) for f in first.flags}
               if name == "flags" else
               np.concatenate([getattr(first, name), getattr(second, name)]))
        for name in _Drawn.__dataclass_fields__})


def areas(breadth: float) -> tuple[int, int]:
    """How many ``area`` values a suite of ``breadth`` has, and how many each failure mode
    calls home: ``breadth`` as a fraction with a denominator of at most :data:`MAX_AREAS`.

    Examples
    --------
    >>> areas(0.33), areas(0.6), areas(1.0)
    ((3, 1), (5, 3), (1, 1))
    """
    share = Fraction(breadth).limit_denominator(MAX_AREAS)
    return share.denominator, max(1, share.numerator)


def _homes(rng, n_areas: int, width: int) -> np.ndarray:
    """``home[j, a]``: the ``width`` home areas of each failure mode ``j``.

    Modes sit at evenly spaced starts on a circle of the areas, in a random order, and
    each covers ``width`` areas from its start, or up to the next mode's start when that
    is further: every area is home to at least one mode.
    """
    n_modes = len(WHYS)
    starts = np.arange(n_modes) * n_areas // n_modes
    reach = np.maximum(width, np.diff(np.append(starts, n_areas)))
    home = np.zeros((n_modes, n_areas), dtype=bool)
    for slot, mode in enumerate(rng.permutation(n_modes)):
        home[mode, (starts[slot] + np.arange(reach[slot])) % n_areas] = True
    return home


def _normal_quantiles(z: np.ndarray, mean: float, sd: float) -> np.ndarray:
    """The n quantiles of N(mean, sd²) at (rank + 0.5) / n, in the order of ``z``.

    A stratified draw: the suite's difficulties always span the distribution evenly, so a
    small suite's level does not swing with the seed; only their order is random.
    """
    n = len(z)
    ranks = np.argsort(np.argsort(z, kind="stable"), kind="stable")
    return mean + sd * _ndtri((ranks + 0.5) / n)


def _out_of_reach(rng, difficulty: np.ndarray, spec: PresetSpec) -> np.ndarray:
    """Exactly ``round(out_of_reach * n)`` tasks: the highest standardised difficulty plus noise."""
    n = len(difficulty)
    score = (difficulty - spec.difficulty_mean) / spec.difficulty_sd + rng.normal(size=n)
    gap = np.zeros(n, dtype=bool)
    gap[np.argsort(-score, kind="stable")[:round(spec.out_of_reach * n)]] = True
    return gap


def _susceptibility(rng, cats, n_cats, flags, hard) -> np.ndarray:
    n = len(cats)
    col = {w: j for j, w in enumerate(WHYS)}
    s = rng.lognormal(0.0, 0.4, size=(n, len(WHYS)))
    s *= rng.lognormal(0.0, 0.5, size=(n_cats, len(WHYS)))[cats]  # category character
    s[:, col["careless-submit"]] *= np.where(flags["has_tests"], 2.5, 0.4)
    s[:, col["tool-misuse"]] *= np.where(flags["needs_tools"], 2.5, 0.3)
    s[:, col["looping"]] *= np.where(flags["needs_tools"], 1.8, 0.6)
    s[:, col["context-overflow"]] *= np.where(flags["long_context"], 4.0, 0.4)
    s[:, col["thinking-runaway"]] *= np.where(hard, 2.0, 0.8)
    s[:, col["premature-finalization"]] *= np.where(hard, 1.5, 1.0)
    return s


def _stratified_split(rng, strata: np.ndarray, n_test: int) -> np.ndarray:
    """Exactly ``n_test`` test tasks, spread over strata in proportion (systematic sampling)."""
    n = len(strata)
    order = np.lexsort((rng.permutation(n), strata))
    pick = np.floor(np.arange(1, n + 1) * n_test / n) > np.floor(np.arange(n) * n_test / n)
    test = np.zeros(n, dtype=bool)
    test[order[pick]] = True
    return test
