"""Simulated frozen-model profiles: a skill level and a base rate per failure mode.

Everything here is *simulated*: the profiles are made up to reproduce the qualitative
findings of the GSME paper (a careless-submit pathology shared by two model families, a
thinking-runaway pathology, a balanced model), not measured on any real model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from gsme.schema import FAILURE_MODES

__all__ = ["PROFILES", "WHYS", "Profile"]

WHYS = tuple(FAILURE_MODES)
"""The failure modes of the default why vocabulary, in the simulator's fixed order."""


@dataclass(frozen=True)
class Profile:
    """A simulated frozen model.

    Attributes
    ----------
    name : str
        Profile name, e.g. ``"qwen-careless"``.
    family : str
        Model family the profile imitates (two profiles may share a pathology across
        families).
    skill : float
        Logit-scale ability; a task's base pass probability is
        ``sigmoid(skill - difficulty)``.
    rates : Mapping[str, float]
        Base rate of each failure mode of :data:`WHYS`; they sum to 1 and split a task's
        failure probability between pathologies (weighted by the task's susceptibility).

    Examples
    --------
    >>> PROFILES["qwen-careless"].dominant
    'careless-submit'
    >>> p = Profile("even", "demo", 0.0, {w: 1.0 for w in WHYS})
    >>> round(p.rates["looping"], 4), p.dominant
    (0.1429, None)
    """

    name: str
    family: str
    skill: float
    rates: Mapping[str, float]

    def __post_init__(self):
        missing = [w for w in WHYS if w not in self.rates]
        if missing or set(self.rates) - set(WHYS):
            raise ValueError(
                f"rates of profile {self.name!r} must name exactly {list(WHYS)}; "
                f"got {sorted(self.rates)}"
            )
        total = sum(self.rates.values())
        normalised = {w: self.rates[w] / total for w in WHYS}
        object.__setattr__(self, "rates", MappingProxyType(normalised))

    @property
    def dominant(self) -> str | None:
        """The failure mode with the highest base rate; None when several share it."""
        top = max(self.rates.values())
        leaders = [w for w in WHYS if np.isclose(self.rates[w], top)]
        return leaders[0] if len(leaders) == 1 else None


def _profile(name, family, skill, **rates) -> Profile:
    return Profile(name, family, skill, {k.replace("_", "-"): v for k, v in rates.items()})


PROFILES: Mapping[str, Profile] = MappingProxyType(
    {
        p.name: p
        for p in (
            _profile("qwen-careless", "qwen", 0.2, careless_submit=0.42, thinking_runaway=0.10,
                     premature_finalization=0.12, tool_misuse=0.11, format_error=0.08,
                     looping=0.09, context_overflow=0.08),
            _profile("gemini-careless", "gemini", 0.5, careless_submit=0.38,
                     thinking_runaway=0.06, premature_finalization=0.16, tool_misuse=0.14,
                     format_error=0.10, looping=0.08, context_overflow=0.08),
            _profile("qwen-runaway", "qwen", 0.1, thinking_runaway=0.45, careless_submit=0.12,
                     premature_finalization=0.10, tool_misuse=0.09, format_error=0.08,
                     looping=0.08, context_overflow=0.08),
            _profile("balanced", "generic", 0.3, thinking_runaway=1, premature_finalization=1,
                     careless_submit=1, tool_misuse=1, format_error=1, looping=1,
                     context_overflow=1),
        )
    }
)
"""The simulated profiles by name."""
