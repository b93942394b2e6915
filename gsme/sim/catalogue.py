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
:class:`Mix` that rescales what mechanisms do (:func:`effect_of`), per kind of mechanism
(:data:`KINDS`) or all alike: how much of its hazard reduction it keeps (``fix``), how much
of its listed harm (``harm``), and a small risk every acting change adds (``side_harm``).
The baseline is the same in every mix; only what patches do differs. See :data:`MIXES` for
each mix and what was measured on it; :func:`register_mix` adds one.

Unknown mechanisms (e.g. free text from an LLM evolver) get a small deterministic effect on
the failure mode their patch declares: ``factor = 1 - 0.1 * u`` with ``u`` in [0, 1) from a
hash of the mechanism name, trigger ``always``: the same name always does the same thing.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import astuple, dataclass, fields, replace
from numbers import Real
from types import MappingProxyType

from gsme.registry import Registry, is_name

__all__ = ["CATALOGUE", "DEFAULT_MIX", "KINDS", "MIXES", "SCALES", "TRIGGERS", "Effect", "Mix",
           "Scale", "as_mix", "effect_of", "register_mix"]

TRIGGERS = ("always", "submit", "onset", "named")
KINDS = ("targeted", "weak", "harmful", "costly", "cosmetic", "overfit", "unknown")
"""The kinds of mechanism (:attr:`Effect.kind`); a :class:`Mix` may scale each its own way."""
SCALES = ("fix", "hints", "harm", "side_harm")
"""What a :class:`Mix` scales, for all kinds alike or per kind (:class:`Scale`)."""


@dataclass(frozen=True)
class Scale:
    """How strongly the mechanisms of one kind act in a :class:`Mix`; a field left ``None``
    is the mix's own.

    Examples
    --------
    >>> Mix("rare", fix=0.0, targeted=Scale(fix=1.5)).scale("targeted")
    Scale(fix=1.5, hints=1.0, harm=1.0, side_harm=0.0)
    """

    fix: float | None = None
    hints: float | None = None
    harm: float | None = None
    side_harm: float | None = None


_UNSCALED = Scale(fix=1.0, hints=1.0, harm=1.0, side_harm=0.0)


@dataclass(frozen=True)
class Mix:
    """A world of proposals: how strongly the mechanisms of the catalogue act.

    ``fix`` scales each hazard reduction (``factor -> 1 - fix * (1 - factor)``, floored
    at 0), ``hints`` the lift of train-task hints on the tasks they name (1 in most worlds:
    naming a task's answer helps whatever else works), ``harm`` scales
    each listed harm, and ``side_harm`` is added to the harm of every mechanism that acts
    (all but the ``cosmetic`` ones). These apply to every kind of mechanism (:data:`KINDS`)
    unless the kind has its own :class:`Scale` (a mapping is read as one): ``Mix("mine",
    fix=0.2, targeted={"fix": 1.5})`` makes targeted fixes strong and the others weak. A
    kind's own ``side_harm`` applies to ``cosmetic`` ones too. Every scale is a number ≥ 0,
    ``side_harm`` at most 1. ``dataclasses.asdict(mix)`` is its table (plain JSON: what a
    run's ``agent_spec`` can store, read back by :func:`as_mix`).

    Examples
    --------
    >>> MIXES["ineffective"].fix
    0.05
    >>> Mix("mine", fix=0.5).harm
    1.0
    >>> Mix("mine", fix=0.5, weak={"harm": 2.0}).scale("weak")
    Scale(fix=0.5, hints=1.0, harm=2.0, side_harm=0.0)
    """

    name: str
    fix: float = 1.0
    hints: float = 1.0
    harm: float = 1.0
    side_harm: float = 0.0
    targeted: Scale | None = None
    weak: Scale | None = None
    harmful: Scale | None = None
    costly: Scale | None = None
    cosmetic: Scale | None = None
    overfit: Scale | None = None
    unknown: Scale | None = None

    def __post_init__(self):
        if not is_name(self.name):
            raise ValueError(f"a mix's name must be an identifier, got {self.name!r}")
        for field in SCALES:
            _check_scale(self.name, field, getattr(self, field))
        for kind in KINDS:
            object.__setattr__(self, kind, _kind_scale(self.name, kind, getattr(self, kind)))

    def scale(self, kind: str) -> Scale:
        """How the mechanisms of ``kind`` act here: the kind's own scales, else the mix's
        (``side_harm`` 0 for ``cosmetic`` ones, which act on nothing)."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
        own = getattr(self, kind) or Scale()
        mix_wide = (self.fix, self.hints, self.harm, 0.0 if kind == "cosmetic" else self.side_harm)
        return Scale(*(m if o is None else o for o, m in zip(astuple(own), mix_wide)))


def _check_scale(name: str, field: str, value) -> None:
    """A ValueError naming ``field`` unless ``value`` is a number ≥ 0 (≤ 1 for side_harm)."""
    top = 1.0 if field.endswith("side_harm") else math.inf
    if (isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value)
            or not 0.0 <= value <= top):
        allowed = "in [0, 1]" if top == 1.0 else "≥ 0"
        raise ValueError(f"mix {name!r}: {field} must be a number {allowed}, got {value!r}")


def _kind_scale(name: str, kind: str, value) -> Scale | None:
    """A kind's :class:`Scale` (from a Scale, a mapping of :data:`SCALES` or None), checked."""
    if isinstance(value, Mapping):
        wrong = [key for key in value if key not in SCALES]
        if wrong:
            raise ValueError(f"mix {name!r}: {kind}.{wrong[0]} is not a scale; a kind's scales "
                             f"are {', '.join(SCALES)}")
        value = Scale(**value)
    if value is None:
        return None
    if not isinstance(value, Scale):
        raise ValueError(f"mix {name!r}: {kind} must be a table of scales "
                         f"({', '.join(SCALES)}), got {value!r}")
    for field in fields(value):
        if getattr(value, field.name) is not None:
            _check_scale(name, f"{kind}.{field.name}", getattr(value, field.name))
    return value


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
    kind: str  # one of KINDS
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


MIXES = Registry("mix", "gsme.mixes", {m.name: m for m in (
    Mix("calibrated"),
    Mix("weak", fix=0.3, harm=0.5, side_harm=0.004),
    Mix("ineffective", fix=0.05, harm=0.25, side_harm=0.01),
    Mix("harmful", fix=0.25, harm=1.5, side_harm=0.02),
    Mix("published", fix=1.6, harm=2.0, side_harm=0.02),
    Mix("null", fix=0.0, hints=0.0, harm=0.0),
    Mix("rare_big", fix=0.0, side_harm=0.01, targeted=Scale(fix=1.5, side_harm=0.0),
        cosmetic=Scale(side_harm=0.01)),
    Mix("many_small", fix=1.6, harm=0.0, targeted=Scale(fix=0.35), harmful=Scale(fix=0.5)),
    Mix("train_overfit", fix=0.5, overfit=Scale(hints=1.5, side_harm=0.04)),
    Mix("bimodal", fix=2.0, harm=3.0, side_harm=0.05, targeted=Scale(side_harm=0.0),
        weak=Scale(side_harm=0.0), costly=Scale(fix=0.0), cosmetic=Scale(side_harm=0.05)),
)})
"""The proposal mixes by name: a :class:`~gsme.registry.Registry` of :class:`Mix` objects
(``MIXES["weak"]``, ``list(MIXES)``; :func:`register_mix` adds one). SIMULATED worlds,
measured by :func:`gsme.sim.shape.proposal_effects` over the rule evolver's template library
on tb2, appworld and swe-bench, suite seeds 0–4, and by whole runs in
``benchmarks/evidence.py``:

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

The four below were measured on the same 465 proposals (31 templates × 15 suites; 105 of
them cosmetic); "true effect" is the true test Δ of a proposal alone:

* ``rare_big`` — rare big wins: targeted fixes 1.5× the calibrated ones and risk-free;
  every other change fixes nothing and carries a 1-point risk (cosmetic ones too), listed
  harms as listed. 23% of proposals help (the targeted ones, +5.8 pp on average), 77% hurt
  (−0.4 pp; harmful ones −2.3); mean +0.62 pp, median −0.42; 16% reach +3 pp.
* ``many_small`` — many small gains: fixes 1.6× the calibrated ones but targeted ones
  0.35× and the harmful kind's 0.5×, no listed harm: no proposal hurts, and acting ones
  (not cosmetic, not train-task hints) help by a median +1.0 pp, two in three by +0.5 to
  +2.5 pp; mean over all +0.80 pp, 5% reach +3 pp.
* ``train_overfit`` — train-task hints lift the tasks they name 1.5× the calibrated lift and
  carry a 4-point risk wherever their env gate admits a task; fixes keep half their power.
  Hints naming every failing train task: +22 pp true train Δ, −1.7 pp true test Δ; mean over
  all +0.07 pp (45% help, 32% hurt).
* ``bimodal`` — bimodal with large harms: fixes 2× (targeted +6.2 pp, weak +2.1 pp on
  average), listed harms 3× (harmful ones −6.5 pp), every cosmetic, costly or hint change a
  5-point risk (−2.1 pp). 39% help, 61% hurt, 1% lie within 0.5 pp of 0; 20% reach +3 pp and
  19% −3 pp or worse; mean −0.39 pp, median −2.0.
"""


DEFAULT_MIX = "calibrated"
"""The proposal mix of every simulated agent unless one is chosen."""


def effect_of(mechanism: str, why: str, *, mix: str | Mix = DEFAULT_MIX) -> Effect:
    """The true effect of ``mechanism`` on a patch that declares failure mode ``why``.

    Parameters
    ----------
    mechanism : str
        The patch's mechanism (a :data:`CATALOGUE` key, or any other name).
    why : str
        The failure mode the patch declares (used for unknown mechanisms only).
    mix : str, Mix or mapping
        How strongly mechanisms act in this world: a name of :data:`MIXES`, a :class:`Mix`
        or a table of one (see :func:`as_mix`).

    Examples
    --------
    >>> effect_of("submit-verify", "careless-submit").factor
    0.3
    >>> round(effect_of("submit-verify", "careless-submit", mix="ineffective").factor, 3)
    0.965
    >>> effect_of("some new idea", "looping") == effect_of("some new idea", "looping")
    True
    """
    if mechanism in CATALOGUE:
        effect = CATALOGUE[mechanism]
    else:
        digest = hashlib.blake2b(mechanism.encode(), digest_size=8).digest()
        u = int.from_bytes(digest, "little") / 2**64
        effect = Effect(mechanism, why, "unknown", factor=1.0 - 0.1 * u)
    scale = as_mix(mix).scale(effect.kind)
    if scale == _UNSCALED:
        return effect
    strength = scale.hints if effect.named_only else scale.fix
    factor = max(0.0, 1.0 - strength * (1.0 - effect.factor))
    return replace(effect, factor=factor,
                   harm=min(1.0, scale.harm * effect.harm + scale.side_harm),
                   harm_hard=min(1.0, scale.harm * effect.harm_hard + scale.side_harm))


def as_mix(mix: str | Mix | Mapping) -> Mix:
    """The :class:`Mix` that ``mix`` names or states.

    Parameters
    ----------
    mix : str, Mix or mapping
        A name of :data:`MIXES`; a :class:`Mix`; or a table of one (``name``, any of
        :data:`SCALES`, and per kind of :data:`KINDS` a table of scales), as a config's
        ``[agent] mix = { name = "mine", fix = 0.5, targeted = { fix = 1.5 } }``. A stated
        mix may not take a registered mix's name with other values.

    Raises
    ------
    ValueError
        One line naming what is wrong: an unknown name (listing the registered ones), a
        field that is neither a scale nor a kind, a scale out of range.

    Examples
    --------
    >>> as_mix("weak").side_harm
    0.004
    >>> as_mix({"name": "mine", "targeted": {"fix": 1.5}}).scale("targeted").fix
    1.5
    >>> as_mix({"name": "mine", "tagreted": {"fix": 1.5}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: mix 'mine': 'tagreted' is neither a scale (...) nor a kind of mechanism (...)
    """
    if isinstance(mix, str):
        found = MIXES.get(mix)
        if isinstance(found, Mix) and found.name != mix:
            raise ValueError(f"the mix registered as {mix!r} is named {found.name!r}")
    else:
        found = _from_table(mix) if isinstance(mix, Mapping) else mix
        if isinstance(found, Mix) and found.name in MIXES and MIXES[found.name] != found:
            raise ValueError(f"mix {found.name!r} is registered with other values; give yours "
                             "another name")
    if not isinstance(found, Mix):
        raise ValueError(f"mix must be a name of {list(MIXES)}, a Mix or a table of one, "
                         f"got {type(found).__name__}")
    return found


def register_mix(mix: Mix | Mapping, *, replace: bool = False) -> Mix:
    """Register ``mix`` (a :class:`Mix` or a table of one) under its name; return it.

    It can then be named wherever a mix is chosen (``sim.preset(..., mix="mine")``,
    ``gsme demo --mix mine`` in the same process, ``benchmarks/evidence.py --mixes``);
    packages register theirs through the ``gsme.mixes`` entry point group.

    Examples
    --------
    >>> register_mix(Mix("rare_example", fix=0.0, targeted=Scale(fix=2.0))).name
    'rare_example'
    >>> "rare_example" in MIXES
    True
    >>> MIXES.unregister("rare_example")
    """
    stated = _from_table(mix) if isinstance(mix, Mapping) else mix
    if not isinstance(stated, Mix):
        raise ValueError(f"mix must be a Mix or a table of one, got {type(mix).__name__}")
    MIXES.register(stated.name, stated, replace=replace)
    return stated


def _from_table(table: Mapping) -> Mix:
    """A :class:`Mix` from a table: ``name``, :data:`SCALES` and :data:`KINDS` keys only."""
    name = table.get("name")
    wrong = [key for key in table if key not in ("name", *SCALES, *KINDS)]
    if wrong:
        raise ValueError(f"mix {name!r}: {wrong[0]!r} is neither a scale ({', '.join(SCALES)}) "
                         f"nor a kind of mechanism ({', '.join(KINDS)})")
    if name is None:
        raise ValueError(f"a mix table needs a name (registered: {list(MIXES)})")
    return Mix(**table)
