"""Simulated task suites: tasks with hidden difficulty and susceptibility, and a fixed split.

Each preset is named after one of the GSME paper's domains and imitates its size and noise;
its tasks, features and difficulties are *simulated*. The public face of a suite is
:attr:`Suite.tasks` (ids, split, features, a short statement); difficulty and
per-pathology susceptibility stay private to the simulator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

from gsme.sim.profiles import WHYS

FLAGS = ("has_tests", "needs_tools", "long_context")
HARD_QUANTILE = 0.65  # tasks above this difficulty quantile carry the visible ``hard`` flag


@dataclass(frozen=True)
class PresetSpec:
    """Shape of one simulated suite.

    ``difficulty_mean``/``difficulty_sd`` are on the logit scale of the profile's skill: a
    small sd puts many tasks near a 50% pass rate, hence high run-to-run variance.
    ``flags`` gives the probability of each boolean feature; ``tokens`` the typical tokens of
    a clean trial; ``usd_per_mtok`` the price of a million tokens; ``tok_per_s`` the speed.
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
    usd_per_mtok: float = 0.6
    tok_per_s: float = 80.0


def _spec(name, n_train, n_test, categories, flags, mean, sd, profile, tokens, statement):
    return PresetSpec(name, n_train, n_test, tuple(categories),
                      MappingProxyType(dict(zip(FLAGS, flags))), mean, sd, profile,
                      tokens, statement)


PRESET_SPECS: Mapping[str, PresetSpec] = MappingProxyType({
    s.name: s for s in (
        _spec("tb2", 45, 44, ["build", "networking", "data", "security", "python"],
              (0.6, 0.9, 0.3), 0.2, 1.6, "balanced", 40_000,
              "In the terminal, {verb} for the {cat} job"),
        _spec("livecode", 100, 80, ["arrays", "graphs", "dp", "strings", "math"],
              (0.9, 0.2, 0.1), 0.1, 1.4, "qwen-runaway", 12_000,
              "Write a program that solves the {cat} problem: {verb}"),
        _spec("omni-math", 120, 100, ["algebra", "geometry", "number-theory", "combinatorics"],
              (0.1, 0.1, 0.1), 0.2, 1.5, "qwen-runaway", 8_000,
              "Prove or compute ({cat}): {verb}"),
        _spec("browsecomp-plus", 100, 80, ["people", "events", "science", "media"],
              (0.1, 0.95, 0.6), 0.3, 1.3, "balanced", 30_000,
              "Search the corpus ({cat}) and {verb}"),
        _spec("gdpval", 110, 110, ["finance", "legal", "health", "engineering", "sales"],
              (0.3, 0.5, 0.5), 0.4, 1.2, "gemini-careless", 25_000,
              "As a {cat} professional, {verb}"),
        _spec("appworld", 96, 72, ["email", "payments", "calendar", "shopping", "notes"],
              (0.7, 0.95, 0.2), 0.2, 0.5, "qwen-careless", 20_000,
              "Using the {cat} app APIs, {verb}"),
        _spec("swe-bench", 50, 26, ["django", "sympy", "astropy", "requests"],
              (0.95, 0.9, 0.4), 0.3, 1.4, "qwen-careless", 50_000,
              "Resolve the {cat} issue: {verb}"),
        _spec("tiny", 16, 8, ["python", "shell", "math"],
              (0.6, 0.5, 0.3), 0.2, 1.0, "qwen-careless", 5_000,
              "Small {cat} task: {verb}"),
    )
})
"""Every preset's shape, by name."""

_VERBS = ("fix the failing step", "produce the requested report", "find the missing value",
          "repair the broken configuration", "answer the question exactly",
          "update the records as asked", "compute the final quantity")


@dataclass(frozen=True)
class Suite:
    """A simulated suite: public ``tasks`` plus hidden ``difficulty``/``susceptibility``.

    ``susceptibility[i, j]`` scales how prone task ``i`` is to failure mode ``WHYS[j]``;
    ``index`` maps a task id to its row.
    """

    spec: PresetSpec
    suite_seed: int
    tasks: pd.DataFrame
    difficulty: np.ndarray
    susceptibility: np.ndarray
    index: Mapping[str, int]


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
    difficulty = rng.normal(spec.difficulty_mean, spec.difficulty_sd, size=n)
    hard = difficulty > np.quantile(difficulty, HARD_QUANTILE)
    susceptibility = _susceptibility(rng, cats, len(spec.categories), flags, hard)
    verbs = rng.choice(len(_VERBS), size=n)
    content = [spec.statement.format(verb=_VERBS[v], cat=spec.categories[c])
               for v, c in zip(verbs, cats)]
    split = _stratified_split(rng, cats * 2 + hard, spec.n_test)
    tasks = pd.DataFrame({
        "task_id": ids,
        "split": np.where(split, "test", "train"),
        "category": [spec.categories[c] for c in cats],
        **{f: flags[f] for f in FLAGS},
        "hard": hard,
        "content": content,
    })
    return Suite(spec, suite_seed, tasks, difficulty, susceptibility,
                     MappingProxyType({t: i for i, t in enumerate(ids)}))


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
