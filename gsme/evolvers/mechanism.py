"""An evolver that proposes exactly the mechanisms it is given, for controlled experiments."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from gsme.comparisons import digest
from gsme.evolvers.base import Evolver
from gsme.evolvers.templates import FALLBACK, TEMPLATES, changes
from gsme.patches import Patch, lever_files
from gsme.schema import empty

__all__ = ["MechanismEvolver", "mechanism_patch"]


def mechanism_patch(mechanism: str, harness: Mapping[str, str], *, why: str | None = None,
                    env_gate: str = "") -> Patch:
    """A patch that applies the template of ``mechanism`` to ``harness`` (its files).

    The patch's id and beacon are the mechanism's name; its lever is the template's.

    Parameters
    ----------
    mechanism : str
        A mechanism with a template in :mod:`gsme.evolvers.templates` (e.g.
        ``"runaway-recovery"``, ``"thinking-off"``).
    harness : mapping of str to str
        The harness the patch will apply to (its files decide the concrete changes).
    why : str, optional
        The failure mode the patch declares; default the one the template library lists
        the mechanism under.
    env_gate : str
        The patch's env gate (empty: every task).

    Raises
    ------
    ValueError
        When the mechanism has no template, no failure mode is known for it, or the
        template cannot change this harness (e.g. the setting is already at its target).

    Examples
    --------
    >>> from gsme.patches import harness_files
    >>> from gsme.resources import SEED_HARNESS
    >>> patch = mechanism_patch("thinking-off", harness_files(SEED_HARNESS))
    >>> patch.where, patch.why, patch.changes[0].new
    ('config', 'thinking-runaway', 'thinking_budget = 0')
    """
    known: dict = {}
    for why_listed, group in (*TEMPLATES.items(), (None, FALLBACK)):
        for template in group:
            known.setdefault(template.mechanism, (why_listed, template))
    if mechanism not in known:
        raise ValueError(f"mechanism {mechanism!r} has no template; known: {sorted(known)}")
    listed, template = known[mechanism]
    why = why or listed
    if why is None:
        raise ValueError(f"mechanism {mechanism!r} is listed under no failure mode; pass "
                         "why=...")
    made = changes(template, lever_files(harness), beacon=mechanism, why=why, tasks=())
    if not made:
        raise ValueError(f"mechanism {mechanism!r} changes nothing in this harness")
    return Patch(id=mechanism, where=template.where, why=why, mechanism=mechanism,
                 beacon=mechanism, env_gate=env_gate, changes=made,
                 rationale=f"{mechanism} applied as an experiment, not from a diagnosis.")


class MechanismEvolver(Evolver):
    """Proposes exactly the named mechanisms, for controlled experiments (an ablation).

    It diagnoses nothing and proposes :func:`mechanism_patch` of each mechanism, in order,
    for whatever parent it is given; the loop then scores and gates the children like any
    others.

    Parameters
    ----------
    mechanisms : sequence of str
        Mechanisms with a template (see :func:`mechanism_patch`).
    env_gate : str
        Env gate of every proposed patch.

    Examples
    --------
    >>> from gsme.patches import harness_files
    >>> from gsme.resources import SEED_HARNESS
    >>> ev = MechanismEvolver(["thinking-off"])
    >>> [p.mechanism for p in ev.propose(None, harness=harness_files(SEED_HARNESS), n=3)]
    ['thinking-off']
    """

    name = "mechanisms"

    def __init__(self, mechanisms: list[str], *, env_gate: str = ""):
        self.mechanisms = tuple(mechanisms)
        if not self.mechanisms:
            raise ValueError("mechanisms must name at least one mechanism")
        self.env_gate = env_gate

    def signature(self) -> dict[str, str]:
        """No model; ``prompt`` a digest of its mechanisms and env gate."""
        return {"evolver_model": "", "prompt": digest([self.mechanisms, self.env_gate])}

    def diagnose(self, failures, *, harness=None, vocabulary=None, log=None) -> pd.DataFrame:
        """No diagnosis: an empty diagnoses frame."""
        return empty("diagnoses")

    def propose(self, diagnoses, *, harness, archive=None, vocabulary=None, n: int,
                history=None, log=None) -> list[Patch]:
        """The first ``n`` mechanisms as patches of ``harness``."""
        return [mechanism_patch(m, harness, env_gate=self.env_gate)
                for m in self.mechanisms[:n]]
