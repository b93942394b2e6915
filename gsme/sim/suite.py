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

The presets' ``difficulty_mean``, ``difficulty_sd`` and ``out_of_reach`` were set so that
each baseline's shares of never-, always- and sometimes-passing tasks over 5 runs, and its
run-to-run spread, lie within what the 13 real Terminal-Bench systems show, and that the
true effect of the targeted fix of each preset's dominant pathology lies near the paper's
credited train Δ for its domain (see :mod:`gsme.sim.shape`, which measures both).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd
from scipy.special import ndtri as _ndtri

from gsme.sim.profiles import WHYS

__all__ = ["FLAGS", "HARD_QUANTILE", "PRESET_SPECS", "PresetSpec", "Suite", "build_suite"]

FLAGS = ("has_tests", "needs_tools", "long_context")
HARD_QUANTILE = 0.65  # tasks above this difficulty quantile carry the visible ``hard`` flag


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
    """A simulated suite: public ``tasks`` plus hidden ``difficulty``, ``out_of_reach`` and
    ``susceptibility``.

    ``out_of_reach[i]`` is True when task ``i`` is beyond the model (a capability gap);
    ``susceptibility[i, j]`` scales how prone task ``i`` is to failure mode ``WHYS[j]``;
    ``index`` maps a task id to its row.
    """

    spec: PresetSpec
    suite_seed: int
    tasks: pd.DataFrame
    difficulty: np.ndarray
    susceptibility: np.ndarray
    index: Mapping[str, int]
    out_of_reach: np.ndarray


def build_suite(spec: PresetSpec, *, suite_seed: int) -> Suite:
    """Draw the tasks of ``spec`` from ``suite_seed``: features, hidden parameters, stratified split.

    Examples
    --------
    >>> b = build_suite(PRESET_SPECS["tiny"], suite_seed=0)
    >>> b.tasks["split"].value_counts().to_dict()
    {'train': 16, 'test': 8}
    """
    rng = np.random.default_rng([suite_seed, 0x5EED])
    n = spec.n_train + spec.n_test
    ids = [f"{spec.name}-{i:03d}" for i in range(n)]
    cats = rng.choice(len(spec.categories), size=n)
    flags = {f: rng.random(n) < p for f, p in spec.flags.items()}
    difficulty = _normal_quantiles(rng.normal(size=n), spec.difficulty_mean, spec.difficulty_sd)
    hard = difficulty > np.quantile(difficulty, HARD_QUANTILE)
    susceptibility = _susceptibility(rng, cats, len(spec.categories), flags, hard)
    verbs = rng.choice(len(_VERBS), size=n)
    content = [spec.statement.format(verb=_VERBS[v], cat=spec.categories[c])
               for v, c in zip(verbs, cats)]
    split = _stratified_split(rng, cats * 2 + hard, spec.n_test)
    out_of_reach = _out_of_reach(rng, difficulty, spec)  # drawn last: the rest is unchanged
    tasks = pd.DataFrame({
        "task_id": ids,
        "split": np.where(split, "test", "train"),
        "category": [spec.categories[c] for c in cats],
        **{f: flags[f] for f in FLAGS},
        "hard": hard,
        "content": content,
    })
    return Suite(spec, suite_seed, tasks, difficulty, susceptibility,
                 MappingProxyType({t: i for i, t in enumerate(ids)}), out_of_reach)


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
