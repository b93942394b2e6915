"""Typed, validated settings: the gate (:class:`GateConfig`), a run (:class:`RunConfig`) and
a run's schedule of rounds (:class:`Schedule`).

These hold the only defaults gsme has. The statistics and gate functions take a
``GateConfig``; a run embeds one in its ``RunConfig``, so re-gating a run's trials in a
notebook with ``gate=run.config.gate`` decides exactly as the run did. Every setting is
checked when it is made (:class:`pydantic.ValidationError` names the field, the value and
what is allowed; :func:`describe` turns it into one line per problem).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from gsme.registry import DESIGNS, POLICIES

__all__ = ["DEFAULT_ISOLATION", "EFFECT_PP", "ISOLATIONS", "LEARN_MATCHES", "MAX_CONFIG_BYTES",
           "MAX_EXACT_REPEATS", "MAX_K", "MAX_LOOKS", "MAX_SIMULATED_TRIALS", "MAX_TASKS",
           "PROMPT_FAILURES", "REPEAT_SD_PP", "SIMULATIONS", "STUDY_ROUNDS", "TARGET_POWER",
           "WORLD_PARTS", "ConfigError", "GateConfig", "KeepConfig", "RunConfig", "Schedule",
           "ValidationError", "describe", "learn_match_parts"]

_FROZEN = ConfigDict(frozen=True, extra="forbid", validate_default=True)

ISOLATIONS = ("sandbox", "none")
"""How a command agent's trials run: in a kernel sandbox (:mod:`gsme.sandbox`) or as plain
processes."""
DEFAULT_ISOLATION = "sandbox"
"""The isolation of a command agent's trials unless its config says otherwise; a config's
``[agent]`` table is stored with the isolation it used."""


TARGET_POWER = 0.8
"""The power a plan aims for (:func:`gsme.compare.plan`, :func:`gsme.power.mde`, ``gsme
plan --power``)."""
REPEAT_SD_PP = 100 * math.sqrt(0.5)
"""The sd of one repeat's child-minus-parent value that a plan assumes unless told (70.7
pp): the largest a pass/fail outcome, or a score in [0, 1], allows, so a plan errs towards
too little power, never too much."""
EFFECT_PP = 5.0
"""The true effect whose power :func:`gsme.compare.compare` reports beside its verdict."""
SIMULATIONS = 200
"""Simulated comparisons behind a simulated design's plan (:func:`gsme.compare.plan`)."""
MAX_K = 100
"""Most repeats per task and side a gate asks for (:class:`GateConfig` ``k``, ``k_max``) and
a plan considers for ``k_needed`` (:func:`gsme.compare.plan`)."""
MAX_EXACT_REPEATS = 40
"""Most valid repeats per task and side the exact sign-flip p handles
(:func:`gsme.designs.exact.exact_tails`); a gate that uses it (``exact_below`` > 0) asks for no
more (``k_max``)."""
MAX_LOOKS = 16
"""Most looks of the adaptive design (1 + ⌈(k_max − k) / k_step⌉). Each look takes a scoring
pass at least, and one more per round of re-runs of infrastructure failures; 16 looks at the
default ``max_reruns`` fit :data:`gsme.measure.MAX_SCORING_PASSES` (64)."""
MAX_TASKS = 1_000_000
"""Most tasks a plan considers for ``n_tasks_needed``, and most it is asked about
(:func:`gsme.compare.plan`)."""
MAX_SIMULATED_TRIALS = 4_000_000
"""Most trials a simulated plan draws (simulations × tasks × ``k_max`` × 2 sides): about 2 GB
and half a minute here (:func:`gsme.compare.plan`)."""
WORLD_PARTS = ("agent", "evolver", "harness", "task_model", "suite", "evolver_model",
               "prompt")
"""What a world is made of (:mod:`gsme.comparisons`): the agent's and evolver's names, the
agent's harness family and settings, its task model, the suite's digest, the evolver's model
and its prompt's digest."""
LEARN_MATCHES = ("world", "any")
"""``RunConfig.learn_match`` values besides a comma-separated list of :data:`WORLD_PARTS`."""
MAX_CONFIG_BYTES = 1 << 20
"""Largest config file read (1 MiB); a run config is a few lines (:func:`gsme.config.load`)."""
STUDY_ROUNDS = 3
"""Rounds of each run in a many-run study (:mod:`gsme.experiments`): fewer than a run's
:class:`Schedule`, as a study runs many."""
PROMPT_FAILURES = 12
"""Failing trials the Claude evolver shows in one prompt, sampled from the (at most
``RunConfig.max_failures``) failures the run hands it."""



def learn_match_parts(match: str) -> list[str]:
    """The world parts a ``learn_match`` value compares ([] for ``world`` and ``any``).

    Raises
    ------
    ValueError
        ``match`` is neither one of :data:`LEARN_MATCHES` nor a list of
        :data:`WORLD_PARTS`.

    Examples
    --------
    >>> learn_match_parts("task_model, suite")
    ['task_model', 'suite']
    """
    if match in LEARN_MATCHES:
        return []
    parts = [p.strip() for p in str(match).split(",") if p.strip()]
    bad = [p for p in parts if p not in WORLD_PARTS]
    if not parts or bad:
        raise ValueError(f"learn_match must be one of {list(LEARN_MATCHES)} or a "
                         f"comma-separated list of {list(WORLD_PARTS)}, got {match!r}")
    return parts

class ConfigError(ValueError):
    """A setting, a config file or a plugin spec is invalid; the message names the key.

    See Also
    --------
    gsme.config.load : Reads a run config file, raising this error.

    Examples
    --------
    >>> from gsme.config import load
    >>> _ = open("bad.toml", "w").write('[run]\\ndir = "runs/bad"\\nrounds = -1\\n')
    >>> try:
    ...     load("bad.toml")
    ... except ConfigError as err:
    ...     print(err)
    bad.toml: [run] rounds = -1: Input should be greater than or equal to 0
    """


class GateConfig(BaseModel):
    """How candidates are judged: the three gates and the design of the paired test.

    ``design="fixed"`` is the paper's gate: every task scored ``k`` times on each side, one
    look. ``design="adaptive"`` scores ``k`` repeats first, then adds ``k_step`` repeats on
    both sides to the tasks whose pooled child and parent outcomes are mixed, up to
    ``k_max``, looking after each step with group-sequential boundaries (see
    :mod:`gsme.designs`). Both credit at one-sided level ``Φ(−z_crit)`` (2.5%) and cull
    at the same level on the other side.

    The defaults come from the A/A and power simulation of ``benchmarks/aa_designs.py``
    (bimodal tasks shaped like Terminal-Bench: 46% never pass, 27% always pass; 2,000 null
    pairs per size):

    * ``reference="t"``: the normal reference over-credits the fixed design at small n
      (3.1% [2.4, 4.0] of null pairs at n = 26 instead of 2.5%); Student t keeps both
      designs within 2.5% at n = 26, 45 and 80.
    * ``exact_below=6``: with 5 or fewer changed tasks no sign pattern is rare enough to
      reach 2.5% (2^-5 = 3.1%), yet the t statistic can clear its critical value: "4 of 26
      tasks gain one pass in three, none lose" gives t = 2.13 and is credited by the t test;
      the exact sign-flip p (1/16) never credits it. A higher threshold buys little
      validity on realistic tasks and costs power, the exact test being discrete (n = 26,
      +8 pp, fixed design: 37% with t, 31% exact below 6, 26% exact below 12).
    * ``futility_z=0.0``: stopping at an interim look whose z is negative saves about a
      fifth of an adaptive comparison's child trials under the null (n = 80: 302 instead
      of 380) and costs under one point of power.
    * ``design="adaptive"``: on those tasks it credits a true +4 pp gain 43% of the time at
      n = 45 and 68% at n = 80, against 22% and 37% for the paper's fixed design and 31%
      and 46% for a fixed design with ``k=4``, which costs more child trials (180 and 320,
      against 173 and 302 under the null). In whole simulated runs
      (``benchmarks/evidence.py``, 20 seeds × 4 rounds) it keeps the baseline in fewer
      runs (tb2: 15% against 35%) and finds a larger true sealed gain (tb2 +4.5 against
      +2.0 pp, swe-bench +13.1 against +8.6, appworld +18.4 against +15.4) for 1.4–1.8×
      the trials, with no false credit in the calibrated world. ``design="fixed"`` is the
      paper's gate, one setting away.

    Attributes
    ----------
    design : str
        A registered gate design (:data:`gsme.registry.DESIGNS`): ``"fixed"``,
        ``"adaptive"`` or one a package registers.
    k : int
        Repeats per task and side at the first look (and on the sealed test).
    k_max, k_step : int
        Adaptive design only: most repeats per task and side, and repeats added per look.
        Bounded whatever the design, by what the statistics support: ``k ≤ k_max ≤``
        :data:`MAX_K` (:data:`MAX_EXACT_REPEATS` while ``exact_below`` > 0), at most
        :data:`MAX_LOOKS` looks.
    z_crit : float
        Critical value of the one-look test; fixes the one-sided level α = 1 − Φ(z_crit).
    reference : {"normal", "t"}
        Reference distribution of the test statistic (``t``: Student t, n − 1 df).
    exact_below : int
        When fewer than this many paired tasks changed their rate, the p-value is the exact
        sign-flip (permutation) p of the task differences (0: never).
    futility_z : float or None
        Adaptive design only: stop adding repeats when the statistic at an interim look is
        below this (None: never stop early for futility). Non-binding: the boundaries do not
        count on it.
    min_tasks : int
        Fewest paired tasks a comparison needs to decide at all.
    min_activations : int
        Fewest trials in which a child's beacon must fire (activation gate).
    max_dropped_frac : float
        Largest share of unpaired tasks a valid comparison may have (validity gate).
    max_reruns : int
        Re-runs of a trial after an infrastructure failure (validity gate).
    parent_trials : {"fresh", "stored"}
        Which trials of its parent a child is compared with on the train split: a block
        scored alongside the round's children (``fresh``, free of the winner's curse on
        the parent) or the parent's stored trials (``stored``, the paper's; runs made
        before 0.3.0 read so). See :mod:`gsme.parent_trials`.

    Examples
    --------
    >>> GateConfig().k, GateConfig(design="adaptive").k_max
    (3, 9)
    >>> GateConfig().reference, GateConfig().exact_below
    ('t', 6)
    """

    model_config = _FROZEN

    design: str = "adaptive"
    k: int = Field(3, ge=1, le=MAX_K)
    k_max: int = Field(9, ge=1, le=MAX_K)
    k_step: int = Field(3, ge=1)
    z_crit: float = Field(1.96, gt=0, allow_inf_nan=False)
    reference: Literal["normal", "t"] = "t"
    exact_below: int = Field(6, ge=0)
    futility_z: float | None = Field(0.0, allow_inf_nan=False)
    min_tasks: int = Field(5, ge=2)
    min_activations: int = Field(1, ge=1)
    max_dropped_frac: float = Field(0.2, ge=0, lt=1)
    max_reruns: int = Field(2, ge=0)
    parent_trials: Literal["fresh", "stored"] = "fresh"

    @field_validator("design")
    @classmethod
    def _registered_design(cls, design: str) -> str:
        return DESIGNS.check(design)

    @model_validator(mode="after")
    def _repeats_fit(self) -> GateConfig:
        if self.k_max < self.k:
            raise ValueError(f"k_max ({self.k_max}) must be >= k ({self.k})")
        if self.exact_below > 0 and self.k_max > MAX_EXACT_REPEATS:
            raise ValueError(f"k_max ({self.k_max}) must be <= {MAX_EXACT_REPEATS}, the most "
                             "repeats the exact sign-flip p handles; or set exact_below = 0")
        looks = 1 + math.ceil((self.k_max - self.k) / self.k_step)
        if looks > MAX_LOOKS:
            raise ValueError(f"k = {self.k}, k_step = {self.k_step}, k_max = {self.k_max} make "
                             f"{looks} looks, more than {MAX_LOOKS}; raise k_step or lower k_max")
        return self

    @property
    def alpha(self) -> float:
        """The one-sided level of a credit: 1 − Φ(z_crit)."""
        from scipy.stats import norm

        return float(norm.sf(self.z_crit))


class KeepConfig(BaseModel):
    """How the ``learned`` policy keeps children: its starting mix and the grid it learns on.

    The ``learned`` policy (:mod:`gsme.policy`) keeps a child when it is credited, or when
    its expected true effect is above ``worth_pp`` under the mix of proposal effects learned
    from every comparison available (:mod:`gsme.prior`). Before there is evidence it assumes the starting mix: a share
    ``start_null`` of proposals does nothing, the rest acts with effects drawn from
    Normal(``start_mean_pp``, ``start_sd_pp``²). That mix counts as ``start_weight``
    comparisons; measured comparisons outweigh it as they accumulate.

    The defaults are cautious: half of all proposals do nothing and those that act hurt by
    2 pp on average, with a spread (4 pp) wide enough that a large measured gain overcomes
    it. Before any comparison, a child with a standard error of 3.5 pp (a 45-task suite at
    K = 3) is expected to be worth more than 0 from a measured gain of about 1.5 pp
    (z ≈ 0.45): stricter than greedy keeping, far more lenient than crediting, where a toy
    model of the keep-rule study put the best fixed threshold across mixes (z > 0.5).

    ``worth_pp`` = 0.25: on simulated runs (tb2 and swe-bench, five proposal mixes, 8 seeds,
    ``benchmarks/evidence.py`` for the full grid) keeping every child expected to be worth
    more than 0 kept as many children that were truly no better as greedy did (0.75–2.6 per
    run), while a quarter of a point cut them to 0.1–0.6 and cost at most 1.9 pp of true
    sealed gain against greedy on any mix (tb2, calibrated); half a point cost 3.4 pp there,
    and requiring P(θ > 0) > 0.5 as well cost 4.7 pp.

    Attributes
    ----------
    start_null : float
        Share of the starting mix at exactly 0.
    start_mean_pp, start_sd_pp : float
        Mean and spread of the acting part of the starting mix (pp).
    start_weight : float
        How many comparisons the starting mix counts as.
    grid_step_pp, grid_max_pp : float
        The grid of effects the mix lives on: 0, ±step, ..., ±max (pp).
    se_floor_pp : float
        Smallest standard error a comparison is taken to have (pp).
    worth_pp : float
        Smallest expected true effect (pp) for which an uncredited child is kept. A change
        measured on the train split carries what that split cannot show (fitting its tasks
        rather than the task family, side effects elsewhere), so a child must be expected
        to be worth at least this much to be kept on evidence weaker than a credit.
    history_runs : int
        Most earlier runs the history (``learn_from``) may hold, the latest ones: runs, not
        comparisons, are the unit, so a long past cannot outweigh a changed world.
    history_alpha : float
        Level of the check of a run's comparisons against the history's predictive
        distribution (:func:`gsme.prior.check_history`); below it the history is dropped.

    Examples
    --------
    >>> KeepConfig().start_null
    0.5
    """

    model_config = _FROZEN

    start_null: float = Field(0.5, ge=0, lt=1)
    start_mean_pp: float = Field(-2.0, allow_inf_nan=False)
    start_sd_pp: float = Field(4.0, gt=0, allow_inf_nan=False)
    start_weight: float = Field(8.0, gt=0, allow_inf_nan=False)
    grid_step_pp: float = Field(0.5, gt=0, allow_inf_nan=False)
    grid_max_pp: float = Field(40.0, gt=0, le=100)
    se_floor_pp: float = Field(0.5, gt=0, allow_inf_nan=False)
    worth_pp: float = Field(0.25, ge=0, allow_inf_nan=False)
    history_runs: int = Field(5, ge=0)
    history_alpha: float = Field(0.05, gt=0, lt=1)


class RunConfig(BaseModel):
    """Settings of one run, fixed when it is created.

    Attributes
    ----------
    run_seed : int
        ≥ 0. Seeds everything random in the run: trial outcomes the agent draws, the parent
        choice, which failures the evolver reads, and the evolver (reseeded per round).
    policy : str
        Which children are kept: a registered keep policy (:data:`gsme.registry.POLICIES`:
        ``"gated"``, ``"greedy"``, ``"peak"``, ``"learned"``, see :mod:`gsme.policy`).
    gate : GateConfig
    keep : KeepConfig
        The ``learned`` policy's starting mix and grid.
    learn_from : str or None
        A comparisons file (CSV, :mod:`gsme.comparisons`) of earlier runs: the ``learned``
        policy learns the proposal mix from the rows of the same agent and evolver as this
        run, beside the run's own comparisons. Read once when the run is created (the run
        keeps its own copy); the run's comparisons are appended to it when it is sealed.
    learn_match : str
        Which rows of ``learn_from`` are learned from: ``"world"`` (the default: those of
        this run's world, :func:`gsme.comparisons.signature`), ``"any"``, or a
        comma-separated list of the world's parts that must be equal (``"agent,evolver"``:
        by name, as before 0.3.0).
    borrow : bool
        Borrow trials from a scored candidate that behaves identically on a task.
    allow_same_model : bool
        Let the evolver run the agent's frozen task model. False (the default) refuses
        such a run when it is created: the paper's evolver is a stronger model (D ≠ M).
    max_failures : int
        Most failing trials the evolver reads per round.
    explore : float
        Probability of extending another elite than the global best.
    batch_size, workers : int
        Trials that land between two health checks (:func:`gsme.scoring.execute`), and
        threads of the default executor (and the default ``workers`` of the others,
        :mod:`gsme.executors.pool`). How many trials a task carries is the executor's
        ``chunk`` (``[executor] chunk``, default 1).
    flush_trials, flush_seconds : int, float
        Completed trials are written to the ledger in one transaction per ``flush_trials``
        trials or once the oldest waiting has waited ``flush_seconds``, whichever comes
        first (and always before a health-check verdict and when scoring stops).

    See Also
    --------
    GateConfig, KeepConfig : Its gate and keep settings.
    Schedule : How long the run evolves.

    Examples
    --------
    >>> c = RunConfig(run_seed=7, policy="gated", gate=GateConfig(design="adaptive"))
    >>> c.policy, c.gate.design, c.gate.k, c.max_failures
    ('gated', 'adaptive', 3, 40)
    >>> try:
    ...     RunConfig(policy="best")
    ... except ValidationError as err:
    ...     print(describe(err, table="run"))
    [run] policy = 'best': Value error, policy must be one of ['gated', 'greedy', 'peak', 'learned'], got 'best'
    """

    model_config = _FROZEN

    run_seed: int = Field(0, ge=0)
    policy: str = "learned"
    gate: GateConfig = GateConfig()
    keep: KeepConfig = KeepConfig()
    learn_from: str | None = None
    learn_match: str = "world"
    borrow: bool = True
    allow_same_model: bool = False
    max_failures: int = Field(40, ge=1)
    explore: float = Field(0.0, ge=0, le=1)
    batch_size: int = Field(64, ge=1)
    workers: int = Field(4, ge=1)
    flush_trials: int = Field(256, ge=1)
    flush_seconds: float = Field(0.005, gt=0, allow_inf_nan=False)

    @field_validator("policy")
    @classmethod
    def _registered_policy(cls, policy: str) -> str:
        return POLICIES.check(policy)

    @field_validator("learn_match")
    @classmethod
    def _known_parts(cls, match: str) -> str:
        learn_match_parts(match)
        return match

    @model_validator(mode="before")
    @classmethod
    def _stored_before_0_3(cls, values):
        """Runs created before 0.3.0 stored ``remote_chunk`` (trials per task of a
        non-default executor), now the executor's own ``chunk``: read and dropped."""
        if isinstance(values, dict) and "remote_chunk" in values:
            values = {k: v for k, v in values.items() if k != "remote_chunk"}
        return values


class Schedule(BaseModel):
    """How long a run evolves: rounds, children per round, and optional budgets.

    A budget is checked before each round (:func:`gsme.evolve.evolve`); None is no budget.
    ``trial_budget`` stops the run once it is spent (the last round may overshoot it).
    ``budget_usd`` and ``budget_hours`` stop it when the next round would exceed them, the
    sealed test's cost being reserved up front (:func:`gsme.budget.over_budget`).

    Attributes
    ----------
    rounds, children_per_round, recombinations_per_round : int
        Evolution rounds, children the evolver proposes per round, recombinations per round.
    trial_budget : int or None
        Trials actually run (borrowed ones cost nothing).
    budget_usd : float or None
        Dollars: trials (``cost_usd``) and evolver calls.
    budget_hours : float or None
        Wall hours at the run's concurrency: trial seconds / trials in flight
        (:func:`gsme.budget.concurrency`).
    empty_rounds : int
        Rounds in a row that made no child (no failure to read, every proposal refused,
        nothing proposed) after which evolution stops and the run goes to its sealed test
        (:func:`gsme.evolve.empty_stop`); a round whose parent failed nothing stops it at
        once.

    Examples
    --------
    >>> Schedule(rounds=2).trial_budget, Schedule(rounds=2).budget_usd
    (None, None)
    >>> Schedule(rounds=2).model_copy(update={"trial_budget": 500}).trial_budget
    500
    """

    model_config = _FROZEN

    rounds: int = Field(5, ge=0)
    children_per_round: int = Field(3, ge=0)
    recombinations_per_round: int = Field(1, ge=0)
    trial_budget: int | None = Field(None, ge=1)
    budget_usd: float | None = Field(None, gt=0, allow_inf_nan=False)
    budget_hours: float | None = Field(None, gt=0, allow_inf_nan=False)
    empty_rounds: int = Field(2, ge=1)


def describe(err: ValidationError, *, table: str | None = None) -> str:
    """One line per problem of a :class:`ValidationError`: ``[table] key = value: why``.

    Problems are joined with ``"; "``.

    Examples
    --------
    >>> try:
    ...     RunConfig(max_failures=0, explore=2.0)
    ... except ValidationError as err:
    ...     print(describe(err, table="run"))
    [run] max_failures = 0: Input should be greater than or equal to 1; [run] explore = 2.0: Input should be less than or equal to 1
    """
    where = f"[{table}] " if table else ""
    lines = []
    for problem in err.errors():
        key = ".".join(str(p) for p in problem["loc"]) or "(settings)"
        value = problem.get("input")
        shown = "" if problem["type"] == "missing" or isinstance(value, dict) else f" = {value!r}"
        lines.append(f"{where}{key}{shown}: {problem['msg']}")
    return "; ".join(lines)
