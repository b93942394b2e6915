"""The embedded default task agent: a *simulated* frozen model on simulated task suites.

Offline, fast and with known ground truth. ``preset(name)`` returns a :class:`SimAgent`;
every number it produces is simulated and its ``name`` says so.

Calibration. Each preset's baseline is shaped like real agent-benchmark runs (bimodal:
most tasks never or always pass, 15–43% borderline over 5 runs, a run-to-run spread of
1–4.7 pp, as on the Terminal-Bench leaderboard), and the true effect of the targeted fix
of its dominant pathology is sized after the paper's credited train Δ for its domain, the
only published evidence of effect sizes. :func:`calibration` tabulates both (SIMULATED,
beside the real ranges); :mod:`gsme.sim.shape` defines them.

Regimes. ``regime="calibrated"`` (default) is that world; ``regime="ineffective"`` keeps
the same baseline but makes every fix weak and every acting change a small risk, so the
proposals' mean true effect is about 0 and keeping noisy train gains ends below the
baseline (see :func:`gsme.sim.catalogue.effect_of`). Both are config keys:
``{"kind": "sim", "preset": "tb2", "regime": "ineffective"}``.
"""

from __future__ import annotations

from gsme.sim.agent import DEFAULT_INFRA_FAULT_RATE, SimAgent
from gsme.sim.catalogue import CATALOGUE, REGIMES
from gsme.sim.profiles import PROFILES, WHYS
from gsme.sim.shape import calibration
from gsme.sim.suite import PRESET_SPECS

PRESETS = tuple(PRESET_SPECS)
"""Names of the simulated suite presets."""


def preset(name: str, *, suite_seed: int = 0, profile: str | None = None,
           infra_fault_rate: float | None = None, test_canary: str | None = None,
           regime: str = "calibrated") -> SimAgent:
    """The simulated task agent of preset ``name``.

    Parameters
    ----------
    name : str
        One of :data:`PRESETS`: ``tb2, livecode, omni-math, browsecomp-plus, gdpval,
        appworld, swe-bench, tiny``.
    suite_seed : int
        Fixes the simulated suite (tasks, hidden difficulty, split).
    profile : str, optional
        One of :data:`PROFILES`; default: the preset's own profile.
    infra_fault_rate : float, optional
        Probability of an infrastructure fault per trial; default
        :data:`DEFAULT_INFRA_FAULT_RATE`.
    test_canary : str, optional
        A string planted in every test task's statement and transcripts (see
        :class:`SimAgent`).
    regime : {"calibrated", "ineffective"}
        What patches truly do: ``calibrated`` (targeted fixes sized after the paper's
        credited gains) or ``ineffective`` (proposals' mean true effect about 0); see
        :data:`REGIMES` and :func:`gsme.sim.catalogue.effect_of`.

    Examples
    --------
    >>> agent = preset("swe-bench")
    >>> int((agent.tasks()["split"] == "test").sum())
    26
    """
    if name not in PRESET_SPECS:
        raise ValueError(f"name must be one of {list(PRESETS)}, got {name!r}")
    rate = DEFAULT_INFRA_FAULT_RATE if infra_fault_rate is None else infra_fault_rate
    return SimAgent(name, suite_seed=suite_seed, profile=profile, infra_fault_rate=rate,
                    test_canary=test_canary, regime=regime)


__all__ = ["CATALOGUE", "PRESETS", "PROFILES", "REGIMES", "WHYS", "SimAgent", "calibration",
           "preset"]
