"""The embedded default task agent: a *simulated* frozen model on simulated task suites.

Offline, fast and with known ground truth. ``preset(name)`` returns a :class:`SimAgent`;
every number it produces is simulated and its ``name`` says so.

Calibration. Each preset's baseline is shaped like real agent-benchmark runs (bimodal:
most tasks never or always pass, 15–43% borderline over 5 runs, a run-to-run spread of
1–4.7 pp, as on the Terminal-Bench leaderboard), and the true effect of the targeted fix
of its dominant pathology is sized after the paper's credited train Δ for its domain, the
only published evidence of effect sizes. :func:`calibration` tabulates both (SIMULATED,
beside the real ranges); :mod:`gsme.sim.shape` defines them.

Mixes. ``mix="calibrated"`` (the default, :data:`DEFAULT_MIX`) is that world; the other
mixes of :data:`MIXES` keep the same baseline and change what patches truly do, from
proposals that barely matter to proposals that mostly hurt, rare big wins or many small
gains. A design is judged across mixes, since nobody knows which one a user's evolver lives
in. A user states their own as a :class:`~gsme.sim.catalogue.Mix` (per kind of mechanism,
or all alike), registers it with :func:`register_mix`, or writes it in a config:
``[agent] mix = "published"`` or ``mix = { name = "mine", fix = 0.2, targeted = { fix = 1.5 } }``.
"""

from __future__ import annotations

from gsme.sim.agent import DEFAULT_INFRA_FAULT_RATE, SimAgent
from gsme.sim.catalogue import CATALOGUE, DEFAULT_MIX, MIXES, Mix, register_mix
from gsme.sim.profiles import PROFILES, WHYS
from gsme.sim.shape import calibration
from gsme.sim.suite import DEFAULT_BREADTH, PRESET_SPECS

PRESETS = tuple(PRESET_SPECS)
"""Names of the simulated suite presets."""


def preset(name: str, *, suite_seed: int = 0, profile: str | None = None,
           infra_fault_rate: float | None = None, test_canary: str | None = None,
           mix: str | Mix | dict = DEFAULT_MIX, breadth: float = DEFAULT_BREADTH,
           grown: int = 0) -> SimAgent:
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
    mix : str, Mix or dict
        What patches truly do: a name of :data:`MIXES` (default ``calibrated``: targeted
        fixes sized after the paper's credited gains), a :class:`~gsme.sim.catalogue.Mix`
        or a table of one (see :func:`gsme.sim.catalogue.as_mix`).
    breadth : float
        The share of the visible ``area`` values each failure mode concentrates on, in
        (0, 1]: how narrow a patch gated on its diagnosed failures is (see
        :mod:`gsme.sim.suite`); default :data:`gsme.sim.suite.DEFAULT_BREADTH`.
    grown : int
        Train tasks added to the suite (a grown v2; the test split is unchanged).

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
                    test_canary=test_canary, mix=mix, breadth=breadth, grown=grown)


__all__ = ["CATALOGUE", "DEFAULT_MIX", "MIXES", "PRESETS", "PROFILES", "WHYS", "Mix", "SimAgent",
           "calibration", "preset", "register_mix"]
