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

Mixes. The catalogue above is the ``calibrated`` proposal mix. Nobody knows in advance
which mix a user's evolver lives in, so the simulator offers several (:data:`MIXES`), each a
:class:`Mix` that rescales what every mechanism does (:func:`effect_of`): how much of its
hazard reduction it keeps (``fix``), how much of its listed harm (``harm``), and a small risk
every acting change adds (``side_harm``). The baseline is the same in every mix; only what
patches do differs. See :data:`MIXES` for each mix and what was measured on it.

Unknown mechanisms (e.g. free text from an LLM evolver) get a small deterministic effect on
the failure mode their patch declares: ``factor = 1 - 0.1 * u`` with ``u`` in [0, 1) from a
hash of the mechanism name, trigger ``always``: the same name always does the same thing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

__all__ = ["CATALOGUE", "DEFAULT_MIX", "MIXES", "TRIGGERS", "Effect", "Mix", "effect_of"]

TRIGGERS = ("always", "submit", "onset", "named")


@dataclass(frozen=True)
class Mix:
    """A world of proposals: how strongly every mechanism of the catalogue acts.

    ``fix`` scales each hazard reduction (``factor -> 1 - fix * (1 - factor)``, floored
    at 0), ``hints`` the lift of train-task hints on the tasks they name (1 in every world
    but the null one: naming a task's answer helps whatever else works), ``harm`` scales
    each listed harm, and ``side_harm`` is added to the harm of every mechanism that acts
    (all but the ``cosmetic`` ones).

    Examples
    --------
    >>> MIXES["ineffective"].fix
    0.05
    >>> Mix("mine", fix=0.5).harm
    1.0
    """

    name: str
    fix: float = 1.0
    hints: float = 1.0
    harm: float = 1.0
    side_harm: float = 0.0


@dataclass(frozen=True)
class Effect:
    """The true effect of one mechanism; see the module docstring for each field.

    Examples
    --------
    >>> effect = CATALOGUE["submit-verify"]
    >>> effect.kind, effect.factor, effect.trigger
    ('targeted', 0.3, 'submit')
    """

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


MIXES: Mapping[str, Mix] = MappingProxyType({m.name: m for m in (
    Mix("calibrated"),
    Mix("weak", fix=0.3, harm=0.5, side_harm=0.004),
    Mix("ineffective", fix=0.05, harm=0.25, side_harm=0.01),
    Mix("harmful", fix=0.25, harm=1.5, side_harm=0.02),
    Mix("published", fix=1.6, harm=2.0, side_harm=0.02),
    Mix("null", fix=0.0, hints=0.0, harm=0.0),
)})
"""The proposal mixes by name (SIMULATED worlds; measured by
:func:`gsme.sim.shape.proposal_effects` over the rule evolver's template library on tb2,
appworld and swe-bench, suite seeds 0–4, and by whole greedy runs in
``benchmarks/evidence.py``):

* ``calibrated`` — the catalogue as listed: the targeted fix of a preset's dominant
  pathology is sized near 0.8× the paper's credited train Δ of its domain
  (:mod:`gsme.sim.shape`); most acting proposals help a little.
* ``weak`` — every fix keeps 30% of its power, harms half theirs, every acting change a
  0.4-point risk: proposals' mean true effect about 0, most of them tiny.
* ``ineffective`` — the diagnosed pathologies are mostly not what makes tasks fail: fixes
  keep 5% of their power, harms a quarter, every acting change a 1-point risk; mean true
  effect slightly below 0, so keeping noisy train gains ends below the baseline.
* ``harmful`` — fixes keep a quarter of their power, listed harms are 1.5× larger and
  every acting change carries a 2-point risk: about nine proposals in ten do not help,
  and most of them hurt.
* ``published`` — sized from published evidence rather than the paper alone. Real
  same-model harness changes move pass rates by +4 to +25 pp (SkillsBench, skills on
  versus off: median +17.6 pp; the paper's credited train gains +6 to +18 pp), while
  greedy prompt search commits changes that are not truly better 30–42% of the time
  (PACE). Here fixes are 1.6× the calibrated ones, listed harms 2× and every acting change
  carries a 2-point risk: larger wins, and more proposals that hurt.
* ``null`` — no proposal does anything (A/A): every child is its parent, truly, on every
  task of both splits; whatever a run keeps, credits or seals is noise.
"""


DEFAULT_MIX = "calibrated"
"""The proposal mix of every simulated agent unless one is chosen."""


def effect_of(mechanism: str, why: str, *, mix: str = DEFAULT_MIX) -> Effect:
    """The true effect of ``mechanism`` on a patch that declares failure mode ``why``.

    Parameters
    ----------
    mechanism : str
        The patch's mechanism (a :data:`CATALOGUE` key, or any other name).
    why : str
        The failure mode the patch declares (used for unknown mechanisms only).
    mix : str
        One of :data:`MIXES`: how strongly mechanisms act in this world (see :class:`Mix`).

    Examples
    --------
    >>> effect_of("submit-verify", "careless-submit").factor
    0.3
    >>> round(effect_of("submit-verify", "careless-submit", mix="ineffective").factor, 3)
    0.965
    >>> effect_of("some new idea", "looping") == effect_of("some new idea", "looping")
    True
    """
    if mix not in MIXES:
        raise ValueError(f"mix must be one of {list(MIXES)}, got {mix!r}")
    if mechanism in CATALOGUE:
        effect = CATALOGUE[mechanism]
    else:
        digest = hashlib.blake2b(mechanism.encode(), digest_size=8).digest()
        u = int.from_bytes(digest, "little") / 2**64
        effect = Effect(mechanism, why, "unknown", factor=1.0 - 0.1 * u)
    world = MIXES[mix]
    if world == Mix(DEFAULT_MIX):
        return effect
    side = 0.0 if effect.kind == "cosmetic" else world.side_harm
    strength = world.hints if effect.named_only else world.fix
    factor = max(0.0, 1.0 - strength * (1.0 - effect.factor))
    return replace(effect, factor=factor, harm=min(1.0, world.harm * effect.harm + side),
                   harm_hard=min(1.0, world.harm * effect.harm_hard + side))
