"""The hidden catalogue of true patch effects in the simulator.

A patch's ``mechanism`` names what it does; here the simulator looks up what that
mechanism *really* does to the simulated model. Evolvers never read this module: like an
LLM proposer, they cannot tell a working fix from a cosmetic, harmful or overfit one.

How an effect acts on a task its patch's env gate admits:

* ``factor`` multiplies the hazard of the failure mode ``why`` (1: no effect). Several
  patches on the same failure mode have diminishing returns: sorted from the strongest, the
  r-th factor counts as ``factor ** (1 / r)``.
* ``harm`` (``harm_hard`` on tasks flagged ``hard``) is the probability that an otherwise
  passing trial now fails, attributed to ``harm_why``.
* ``cost`` multiplies tokens and time of every admitted trial (``runaway_cost`` those of a
  thinking-runaway trial).
* ``named_only``: the patch helps only the tasks it names (``predicted_tasks`` or task ids
  written into its files), cutting every hazard there by ``factor``: hints for train tasks.
  Its ``harm`` and ``cost`` (if any) act wherever its env gate admits the task.
* No patch moves a task out of the model's reach (see :mod:`gsme.sim.model`).
* ``trigger`` says when the patch's code path runs and its beacon fires: ``always``,
  ``submit`` (the agent reached its submission step), ``onset`` (the failure mode ``why``
  began in this trial, whether or not it was then recovered), ``named`` (a named task).

The mix follows what engineers (and LLM proposers) actually try: per failure mode, about
one fix in four or five works well; the others are weak, cosmetic, costly, harmful or
overfit (train-task hints lift the train rate only). Sizes: the targeted factors act on
suites calibrated so that the targeted fix of a preset's dominant pathology has a true train
effect near the paper's credited train Δ for its domain (within [0.5×, 1.25×] of it, mean
over suite seeds 0–4; see :mod:`gsme.sim.shape`).

Regimes. The catalogue above is the ``calibrated`` regime. The ``ineffective`` regime
(:func:`effect_of` with ``regime="ineffective"``, ``SimAgent(..., regime="ineffective")``)
is a world where the diagnosed pathologies are mostly not what makes tasks fail: every fix
keeps :data:`FIX_KEPT` of its power and every change that acts carries a small risk
:data:`SIDE_HARM`. Its baseline is the calibrated one; only what patches do differs.

Unknown mechanisms (e.g. free text from an LLM evolver) get a small deterministic effect on
the failure mode their patch declares: ``factor = 1 - 0.1 * u`` with ``u`` in [0, 1) from a
hash of the mechanism name, trigger ``always``: the same name always does the same thing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

__all__ = [
    "CATALOGUE",
    "FIX_KEPT",
    "HARM_KEPT",
    "REGIMES",
    "SIDE_HARM",
    "TRIGGERS",
    "Effect",
    "effect_of",
]

TRIGGERS = ("always", "submit", "onset", "named")
REGIMES = ("calibrated", "ineffective")
"""How the catalogue acts: as listed (``calibrated``), or ``ineffective`` (every fix
weak, every acting change a small risk); see :func:`effect_of`."""
FIX_KEPT = 0.05
"""In the ``ineffective`` regime, the share of a mechanism's hazard reduction it keeps."""
HARM_KEPT = 0.25
"""In the ``ineffective`` regime, the share of a mechanism's listed harm it keeps."""
SIDE_HARM = 0.01
"""In the ``ineffective`` regime, the harm every acting (not cosmetic) mechanism adds."""


@dataclass(frozen=True)
class Effect:
    """The true effect of one mechanism; see the module docstring for each field."""

    mechanism: str
    why: str | None
    kind: str  # targeted, weak, cosmetic, harmful, costly, overfit
    factor: float = 1.0
    trigger: str = "always"
    harm: float = 0.0
    harm_hard: float = 0.0
    harm_why: str = "premature-finalization"
    cost: float = 1.0
    runaway_cost: float = 1.0
    named_only: bool = False


def _fx(mechanism, why, kind, **kw) -> Effect:
    return Effect(mechanism, why, kind, **kw)


CATALOGUE: Mapping[str, Effect] = MappingProxyType({e.mechanism: e for e in (
    # careless-submit
    _fx("submit-verify", "careless-submit", "targeted", factor=0.3, trigger="submit", cost=1.15),
    _fx("verify-reminder", "careless-submit", "weak", factor=0.85),
    _fx("recheck-loop", "careless-submit", "harmful", factor=0.9, harm=0.04, harm_hard=0.12,
        harm_why="looping", cost=1.3),
    # thinking-runaway
    _fx("runaway-recovery", "thinking-runaway", "targeted", factor=0.3, trigger="onset",
        cost=1.05),
    _fx("thinking-off", "thinking-runaway", "harmful", factor=0.3, harm=0.05, harm_hard=0.7,
        cost=0.6),
    _fx("token-budget-16x", "thinking-runaway", "costly", factor=0.85, cost=2.5,
        runaway_cost=16.0),
    _fx("concise-reasoning", "thinking-runaway", "weak", factor=0.9),
    _fx("reasoning-style-guide", None, "cosmetic"),
    # premature-finalization
    _fx("completion-checklist", "premature-finalization", "targeted", factor=0.55,
        trigger="submit", cost=1.1),
    _fx("keep-going-nudge", "premature-finalization", "weak", factor=0.85, trigger="submit"),
    _fx("answer-deadline", "premature-finalization", "harmful", factor=1.0, harm=0.05,
        harm_hard=0.2),
    # format-error
    _fx("format-validator", "format-error", "targeted", factor=0.25, trigger="submit"),
    _fx("format-example", "format-error", "weak", factor=0.75),
    _fx("strict-answer-schema", "format-error", "harmful", factor=0.9, harm=0.04,
        harm_hard=0.1, harm_why="format-error"),
    # tool-misuse
    _fx("tool-schema-hints", "tool-misuse", "targeted", factor=0.45),
    _fx("tool-retry", "tool-misuse", "weak", factor=0.85, trigger="onset"),
    _fx("tool-list-reformat", None, "cosmetic"),
    # looping
    _fx("loop-breaker", "looping", "targeted", factor=0.3, trigger="onset"),
    _fx("turn-limit-cut", "looping", "harmful", factor=0.6, harm=0.03, harm_hard=0.3,
        cost=0.8),
    _fx("repeat-warning", None, "cosmetic"),
    # context-overflow
    _fx("context-summarizer", "context-overflow", "targeted", factor=0.35, trigger="onset",
        cost=1.1),
    _fx("context-window-raise", "context-overflow", "costly", factor=0.8, cost=1.8),
    _fx("drop-tool-outputs", "context-overflow", "harmful", factor=0.6, harm=0.05,
        harm_hard=0.1, harm_why="tool-misuse", cost=0.7),
    # no effect, any pathology
    _fx("polite-tone", None, "cosmetic"),
    _fx("emphatic-instructions", None, "cosmetic"),
    _fx("answer-self-check", "premature-finalization", "weak", factor=0.95),
    # overfit
    _fx("train-task-hints", None, "overfit", factor=0.6, trigger="named", named_only=True),
)})
"""Mechanism name → true effect. Hidden from evolvers."""


def effect_of(mechanism: str, why: str, *, regime: str = "calibrated") -> Effect:
    """The true effect of ``mechanism`` on a patch that declares failure mode ``why``.

    Parameters
    ----------
    mechanism : str
        The patch's mechanism (a :data:`CATALOGUE` key, or any other name).
    why : str
        The failure mode the patch declares (used for unknown mechanisms only).
    regime : {"calibrated", "ineffective"}
        ``calibrated``: the catalogue as listed. ``ineffective``: a world where the
        diagnosed pathologies are mostly not what makes tasks fail, so fixes barely help
        and any change that acts is a small risk. Every hazard reduction keeps
        :data:`FIX_KEPT` of its size (``factor -> 1 - FIX_KEPT * (1 - factor)``), every
        listed harm :data:`HARM_KEPT` of its size, and every mechanism that acts (all but
        the ``cosmetic`` ones, hints included) adds :data:`SIDE_HARM` to ``harm`` and
        ``harm_hard``; train-task hints (``named_only``) keep their factor: they still
        lift the train tasks they name, and now cost a little everywhere else. Measured
        when the values were set (SIMULATED, :func:`gsme.sim.shape.proposal_effects`):
        over the rule evolver's template library the mean true test effect is -0.2 to
        -0.4 pp per preset ("about 0"; +0.5 to +2.0 pp when calibrated), most acting
        proposals hurt a little, and the targeted fix of the dominant pathology nets
        -0.2 to +0.3 pp (it helps in 26 of 40 preset × suite-seed cases), so keeping
        noisy train gains ends below the baseline: the ``greedy`` policy's true sealed Δ
        was -0.3 to -0.5 pp on tb2, livecode, gdpval and appworld (rule evolver, 5
        rounds, 8 seeds each; below 0 in 26 of 32 runs). "About 0" is tested as a mean
        within ±0.5 pp, a fraction of one comparison's standard error at K=3 (2–3 pp).
        The mean is slightly negative on purpose: the evolver aims at the dominant
        pathology, so with a mean of exactly 0 its fix would still help and greedy
        would end level with the baseline, not below it.

    Examples
    --------
    >>> effect_of("submit-verify", "careless-submit").factor
    0.3
    >>> round(effect_of("submit-verify", "careless-submit", regime="ineffective").factor, 3)
    0.965
    >>> effect_of("some new idea", "looping") == effect_of("some new idea", "looping")
    True
    """
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {list(REGIMES)}, got {regime!r}")
    if mechanism in CATALOGUE:
        effect = CATALOGUE[mechanism]
    else:
        digest = hashlib.blake2b(mechanism.encode(), digest_size=8).digest()
        u = int.from_bytes(digest, "little") / 2**64
        effect = Effect(mechanism, why, "unknown", factor=1.0 - 0.1 * u)
    if regime == "calibrated":
        return effect
    side = 0.0 if effect.kind == "cosmetic" else SIDE_HARM
    if effect.named_only:  # hints still lift the tasks they name
        return replace(effect, harm=effect.harm + side, harm_hard=effect.harm_hard + side)
    return replace(effect, factor=1.0 - FIX_KEPT * (1.0 - effect.factor),
                   harm=HARM_KEPT * effect.harm + side,
                   harm_hard=HARM_KEPT * effect.harm_hard + side)
