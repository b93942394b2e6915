"""The gate designs: boundaries, the adaptive schedule (wanted) and its look-by-look decision."""

import doctest

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from gsme import designs, gates, schema, stats
from gsme.settings import GateConfig

ADAPTIVE = GateConfig(design="adaptive")
Z975 = float(sps.norm.isf(0.025))
PAIRS = pd.DataFrame({"child": ["c"], "parent": ["p"]})


def frame(outcomes, *, borrowed=None, split="train"):
    """``outcomes[name]``: (n_tasks, K) array of 0/1, NaN where a slot was not run.

    ``borrowed[name]`` (optional): (n_tasks,) array of the candidate each task's trials
    were borrowed from (None: run by ``name`` itself).
    """
    parts = []
    for name, grid in outcomes.items():
        grid = np.asarray(grid, dtype=float)
        task, repeat = np.nonzero(~np.isnan(grid))
        lender = np.full(grid.shape[0], None, dtype=object)
        if borrowed and name in borrowed:
            lender = np.asarray(borrowed[name], dtype=object)
        parts.append(pd.DataFrame({
            "candidate": name, "task_id": [f"t{t:03d}" for t in task], "split": split,
            "repeat": repeat, "passed": grid[task, repeat].astype(bool),
            "borrowed_from": pd.Series(lender[task], dtype=object),
        }))
    return schema.as_trials(pd.concat(parts, ignore_index=True))


def tasks_frame(n_tasks, split="train"):
    return pd.DataFrame({"task_id": [f"t{t:03d}" for t in range(n_tasks)], "split": split})


def wanted_grid(want, name, n_tasks):
    mine = want[want["candidate"] == name].set_index("task_id")["repeats"]
    return mine.reindex([f"t{t:03d}" for t in range(n_tasks)]).to_numpy()


def score_loop(parent, child, config, pairs=PAIRS, draws=None):
    """Run the scoring loop (wanted → score what is missing → wanted …) on drawn outcomes.

    ``parent`` and ``child`` are (n_tasks, k_max) pass/fail draws of ``p`` and ``c``; or
    ``draws`` maps every candidate of ``pairs`` to its draws. Parents (candidates that are
    nobody's child) start scored at ``k``. Returns the trials at the fixed point and the
    number of passes.
    """
    draws = draws or {"p": parent, "c": child}
    n_tasks, k_max = next(iter(draws.values())).shape
    have = {name: np.full(n_tasks, 0 if name in set(pairs["child"]) else config.k)
            for name in draws}
    for passes in range(1, 12):
        grids = {name: np.where(np.arange(k_max)[None, :] < have[name][:, None],
                                draws[name], np.nan) for name in have}
        trials = frame({name: g for name, g in grids.items() if have[name].any()})
        want = designs.wanted(trials, pairs, tasks_frame(n_tasks), split="train",
                                 gate=config)
        new = {name: np.maximum(have[name], wanted_grid(want, name, n_tasks)) for name in have}
        if all((new[name] == have[name]).all() for name in have):
            return trials, passes
        have = new
    raise AssertionError("the scoring loop did not reach a fixed point")


@pytest.mark.parametrize("module", [designs.base, designs.fixed, designs.adaptive,
                                    designs.spending, designs.significance, designs.exact])
def test_docstring_examples_run(module):
    assert doctest.testmod(module, raise_on_error=False).failed == 0


def test_the_old_module_names_still_work_with_a_warning():
    from gsme import sequential

    with pytest.warns(DeprecationWarning, match="gsme.designs"):
        assert sequential.looks is designs.looks
    with pytest.warns(DeprecationWarning, match="gsme.designs.spending.planned"):
        assert sequential.planned is designs.spending.planned
    with pytest.raises(AttributeError, match="nope"):
        sequential.nope  # noqa: B018


# ------------------------------------------------------------------------------ boundaries

@pytest.mark.parametrize("fractions, published", [
    ((0.5, 1.0), (2.9626, 1.9686)),
    ((1 / 3, 2 / 3, 1.0), (3.7103, 2.5114, 1.9930)),
    ((0.25, 0.5, 0.75, 1.0), (4.3326, 2.9631, 2.3590, 2.0141)),
])
def test_boundaries_match_published_gsdesign_values(fractions, published):
    # gsDesign sfLDOF, one-sided alpha = 0.025, equally spaced looks
    got = designs.spending_boundaries(Z975, fractions)
    np.testing.assert_allclose(got, published, atol=5e-5)


@pytest.mark.parametrize("fractions", [(1 / 3, 2 / 3, 1.0), (0.2, 0.7, 1.0), (3 / 8, 6 / 8, 1.0)])
def test_boundaries_spend_the_obf_function_by_multivariate_normal(fractions):
    bounds = np.array(designs.spending_boundaries(Z975, fractions))
    t = np.array(fractions)
    corr = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    spent = designs.obf_spending(0.025, t)
    for j in range(1, len(t) + 1):  # P(some Z_i >= b_i, i <= j) = alpha(t_j)
        mvn = sps.multivariate_normal(np.zeros(j), corr[:j, :j], seed=0, abseps=1e-8,
                                      releps=1e-8, maxpts=2_000_000)
        cross = 1.0 - mvn.cdf(bounds[:j])
        assert cross == pytest.approx(spent[j - 1], abs=3e-6)
    assert spent[-1] == pytest.approx(0.025)


def test_boundaries_frame_per_design():
    fixed = designs.boundaries(GateConfig(design="fixed"))
    assert fixed[["look", "repeats"]].values.tolist() == [[1, 3]]
    assert fixed["boundary"].item() == 1.96 and fixed["level"].item() == GateConfig().alpha
    plan = designs.boundaries(GateConfig(design="adaptive", k=2, k_step=3, k_max=7))
    assert plan["repeats"].tolist() == [2, 5, 7]
    np.testing.assert_allclose(plan["fraction"], [2 / 7, 5 / 7, 1])
    assert plan["boundary"].is_monotonic_decreasing
    np.testing.assert_allclose(plan["level"], sps.norm.sf(plan["boundary"]))
    assert plan["alpha_spent"].iloc[-1] == pytest.approx(GateConfig().alpha)
    single = designs.boundaries(GateConfig(design="adaptive", k=3, k_max=3))
    assert len(single) == 1 and single["boundary"].item() == 1.96


def test_far_tail_levels_give_finite_conservative_boundaries():
    for z_crit in (7.5, 30.0, 50.0):
        bounds = designs.spending_boundaries(z_crit, (1 / 3, 2 / 3, 1.0))
        assert np.all(np.isfinite(bounds)) and bounds[0] > bounds[1] > bounds[2] >= z_crit


# ------------------------------------------------------------------------------ wanted

def test_fixed_design_wants_k_of_every_task_for_children_and_parents():
    pairs = pd.DataFrame({"child": ["baseline", "c1", "c2"],
                          "parent": [None, "baseline", "c1"]})
    want = designs.wanted(schema.empty("trials"), pairs, tasks_frame(4), split="train",
                             gate=GateConfig(k=2))
    assert want["candidate"].unique().tolist() == ["baseline", "c1", "c2"]
    assert (want["repeats"] == 2).all() and len(want) == 12
    assert list(want.columns) == ["candidate", "task_id", "split", "repeats"]


def test_adaptive_wants_k_until_look_one_is_complete_then_extends_mixed_tasks():
    config = GateConfig(design="adaptive", min_tasks=2, futility_z=None)
    nan = np.nan
    parent = np.array([[1, 0, 0], [0, 0, 0], [1, 1, 1], [0, 0, 0]], dtype=float)
    child = np.array([[1, 1, 0], [0, 0, 0], [1, 1, 1], [1, 0, nan]], dtype=float)
    tasks = tasks_frame(4)
    want = designs.wanted(frame({"p": parent, "c": child}), PAIRS, tasks, split="train",
                             gate=config)
    assert (want["repeats"] == 3).all()  # task 3's third child repeat is missing
    child[3, 2] = 0
    want = designs.wanted(frame({"p": parent, "c": child}), PAIRS, tasks, split="train",
                             gate=config)
    for name in ("c", "p"):  # mixed pooled: tasks 0 and 3; unanimous: 1 (fail), 2 (pass)
        assert wanted_grid(want, name, 4).tolist() == [6, 3, 3, 6]
    sealed = designs.wanted(frame({"p": parent, "c": child}, split="test"), PAIRS,
                               tasks_frame(4, split="test"), split="test", gate=config)
    assert len(sealed) == 8 and (sealed["repeats"] == 3).all()  # the test split is not adaptive


def test_adaptive_waits_for_infrastructure_reruns_before_the_next_look():
    config = GateConfig(design="adaptive", min_tasks=2, futility_z=None, max_reruns=1)
    parent = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0]], dtype=float)
    child = np.array([[1, 1, 0], [0, 1, 1], [0, 0, 0]], dtype=float)
    trials = frame({"p": parent, "c": child})
    failed = (trials["candidate"] == "c") & (trials["task_id"] == "t002") & (trials["repeat"] == 0)
    trials.loc[failed, ["infra_ok", "passed"]] = [False, False]
    want = designs.wanted(trials, PAIRS, tasks_frame(3), split="train", gate=config)
    assert (want["repeats"] == 3).all()  # the failed slot may still be re-run
    rerun = trials[failed].assign(attempt=1)
    exhausted = schema.as_trials(pd.concat([trials, rerun], ignore_index=True))
    want = designs.wanted(exhausted, PAIRS, tasks_frame(3), split="train", gate=config)
    assert wanted_grid(want, "c", 3).tolist() == [6, 6, 3]  # excluded now: look 2 goes ahead


def test_a_task_borrowed_from_the_parent_is_never_extended():
    config = GateConfig(design="adaptive", min_tasks=2, futility_z=None)
    parent = np.array([[1, 0, 0], [1, 0, 1], [0, 1, 0]], dtype=float)
    child = np.array([[1, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float)
    lent = {"c": np.array([None, "p", None], dtype=object)}  # task 1: the parent's trials
    want = designs.wanted(frame({"p": parent, "c": child}, borrowed=lent), PAIRS,
                             tasks_frame(3), split="train", gate=config)
    assert wanted_grid(want, "c", 3).tolist() == [6, 3, 6]
    # the parent's trial was itself borrowed from the grandparent: still the same trial
    lent = {"c": np.array([None, "g", None], dtype=object),
            "p": np.array([None, "g", None], dtype=object)}
    want = designs.wanted(frame({"p": parent, "c": child}, borrowed=lent), PAIRS,
                             tasks_frame(3), split="train", gate=config)
    assert wanted_grid(want, "c", 3).tolist() == [6, 3, 6]
    # borrowed from someone else than the parent's source: not identical, extended
    lent = {"c": np.array([None, "g", None], dtype=object)}
    want = designs.wanted(frame({"p": parent, "c": child}, borrowed=lent), PAIRS,
                             tasks_frame(3), split="train", gate=config)
    assert wanted_grid(want, "c", 3).tolist() == [6, 6, 6]


def test_a_parent_shared_by_two_children_gets_the_most_either_wants():
    config = GateConfig(design="adaptive", min_tasks=2, futility_z=None)
    parent = np.array([[1, 0, 0], [1, 1, 1], [0, 0, 0]], dtype=float)
    one = np.array([[1, 1, 0], [1, 1, 1], [0, 0, 0]], dtype=float)  # task 0 mixed
    two = np.array([[1, 0, 0], [1, 1, 1], [0, 0, 1]], dtype=float)  # tasks 0 and 2 mixed
    pairs = pd.DataFrame({"child": ["c1", "c2"], "parent": ["p", "p"]})
    want = designs.wanted(frame({"p": parent, "c1": one, "c2": two}), pairs, tasks_frame(3),
                             split="train", gate=config)
    assert wanted_grid(want, "c1", 3).tolist() == [6, 3, 3]
    assert wanted_grid(want, "c2", 3).tolist() == [6, 3, 6]
    assert wanted_grid(want, "p", 3).tolist() == [6, 3, 6]


@settings(max_examples=15, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000))
def test_which_tasks_are_extended_is_blind_to_which_side_is_the_child(seed):
    rng = np.random.default_rng(seed)
    p = rng.choice([0.0, 0.3, 0.7, 1.0], 12)
    a = (rng.random((12, 3)) < p[:, None]).astype(float)
    b = (rng.random((12, 3)) < p[:, None]).astype(float)
    config = GateConfig(design="adaptive", min_tasks=2, futility_z=None)
    forward = designs.wanted(frame({"p": a, "c": b}), PAIRS, tasks_frame(12),
                                split="train", gate=config)
    swapped = designs.wanted(frame({"p": b, "c": a}), PAIRS, tasks_frame(12),
                                split="train", gate=config)
    looks = designs.looks(frame({"p": a, "c": b}), PAIRS, gate=config)
    if looks["decision"].iloc[0] == "continue":  # neither side crossed at look 1
        np.testing.assert_array_equal(wanted_grid(forward, "c", 12),
                                      wanted_grid(swapped, "c", 12))
    pooled = a.sum(1) + b.sum(1)
    mixed = (pooled > 0) & (pooled < 6)
    if looks["decision"].iloc[0] == "continue" and mixed.any():
        assert (wanted_grid(forward, "c", 12) == np.where(mixed, 6, 3)).all()


# ------------------------------------------------------------------------------ the looks

def draws(rng, p_parent, p_child, k_max=9):
    n = len(p_parent)
    return ((rng.random((n, k_max)) < p_parent[:, None]).astype(float),
            (rng.random((n, k_max)) < p_child[:, None]).astype(float))


@pytest.mark.parametrize("seed, shift, futility", [(0, 0.0, 0.0), (1, 0.15, 0.0),
                                                     (2, 0.15, None), (3, -0.2, 0.0),
                                                     (4, 0.35, 0.0)])
def test_scoring_loop_reaches_a_fixed_point_and_credit_replays_its_decision(seed, shift,
                                                                              futility):
    rng = np.random.default_rng(seed)
    base = rng.beta(0.3, 0.3, 40)
    parent, child = draws(rng, base, np.clip(base + shift * (base > 0.05), 0, 1))
    config = GateConfig(design="adaptive", futility_z=futility)
    trials, passes = score_loop(parent, child, config)
    taken = designs.looks(trials, PAIRS, gate=config)
    decided = gates.significance_gate(trials, PAIRS, gate=config).iloc[0]
    last = taken.iloc[-1]
    assert passes == len(taken) + 1  # one pass per look, one more to see nothing is new
    assert decided["looks"] == len(taken) == last["look"]
    assert decided["decision"] == last["decision"] != "continue"
    assert decided["z"] == pytest.approx(last["z"])
    assert (taken["decision"].iloc[:-1] == "continue").all()
    mine = trials[trials["candidate"] == "c"]
    assert len(mine) == last["child_trials"]
    # the decision a look takes uses only repeats below its count: the full draws agree
    pooled = parent[:, :3].sum(1) + child[:, :3].sum(1)
    repeats = np.where((pooled > 0) & (pooled < 6), 9, 3)
    full = frame({name: np.where(np.arange(9)[None, :] < repeats[:, None], grid, np.nan)
                  for name, grid in (("p", parent), ("c", child))})
    again = gates.significance_gate(full, PAIRS, gate=config).iloc[0]
    assert (again["decision"], again["looks"], again["z"]) == (
        decided["decision"], decided["looks"], pytest.approx(decided["z"]))


def test_parent_repeats_made_for_another_child_do_not_leak_into_a_look():
    rng = np.random.default_rng(5)
    base = rng.beta(0.3, 0.3, 30)
    parent, child = draws(rng, base, base)
    config = GateConfig(design="adaptive", futility_z=None)
    trials, _ = score_loop(parent, child, config)
    before = designs.looks(trials, PAIRS, gate=config)
    have = trials[trials["candidate"] == "p"].groupby("task_id").size().to_numpy()
    assert (have == 3).any()  # tasks this child never extended: another child may have
    extra = frame({"p": np.where((np.arange(9)[None, :] >= 3) & (have[:, None] == 3),
                                 1.0 - parent, np.nan)})
    leaky = schema.as_trials(pd.concat([trials, extra], ignore_index=True))
    after = designs.looks(leaky, PAIRS, gate=config)
    cols = ["look", "z", "delta_pp", "rate_parent", "decision"]
    pd.testing.assert_frame_equal(before[cols], after[cols])


def test_strong_gain_is_credited_early_and_says_at_which_look():
    parent = np.zeros((20, 9))
    child = np.zeros((20, 9))
    child[:, :2] = 1  # every task 0/3 -> 2/3
    config = GateConfig(design="adaptive")
    out = gates.significance_gate(frame({"p": parent, "c": child}), PAIRS, gate=config)
    row = out.iloc[0]
    assert (row["decision"], row["looks"]) == ("credit", 1)
    assert row["reason"].startswith("credited at look 1 of 3")


def test_negative_look_one_stops_for_futility_and_harm_is_culled_at_look_one():
    rng = np.random.default_rng(6)
    base = rng.uniform(0.3, 0.7, 40)
    parent, child = draws(rng, base, base - 0.05)
    config = GateConfig(design="adaptive")
    taken = designs.looks(frame({"p": parent, "c": child}), PAIRS, gate=config)
    assert len(taken) == 1 and taken["z"].item() < 0
    assert taken["decision"].item() == "inconclusive"
    assert taken["reason"].item().startswith("stopped for futility at look 1 of 3")
    parent, child = draws(rng, base, base - 0.3)
    out = gates.significance_gate(frame({"p": parent, "c": child}), PAIRS, gate=config).iloc[0]
    one_look = stats.paired_test(frame({"p": parent[:, :3], "c": child[:, :3]}), parent="p",
                                 child="c").iloc[0]
    assert (out["decision"], out["looks"]) == ("cull", 1) == (one_look["decision"], 1)
    assert out["reason"].startswith("culled at look 1 of 3")


def test_credit_on_a_look_not_yet_scored_is_inconclusive_and_says_so():
    rng = np.random.default_rng(7)
    base = rng.uniform(0.2, 0.8, 30)
    parent, child = draws(rng, base, np.clip(base + 0.1, 0, 1), k_max=3)
    trials = frame({"p": parent, "c": child})
    config = GateConfig(design="adaptive", futility_z=None)
    row = gates.significance_gate(trials, PAIRS, gate=config).iloc[0]
    taken = designs.looks(trials, PAIRS, gate=config)
    assert row["decision"] == "inconclusive" and row["looks"] == 1
    assert row["reason"].startswith("awaiting look 2 of 3")
    assert taken["decision"].tolist() == ["continue"]


def test_looks_lists_every_look_with_its_boundary():
    rng = np.random.default_rng(8)
    base = rng.beta(0.3, 0.3, 45)
    parent, child = draws(rng, base, base)
    config = GateConfig(design="adaptive", futility_z=None)
    trials, _ = score_loop(parent, child, config)
    taken = designs.looks(trials, PAIRS, gate=config)
    assert list(taken.columns) == schema.LOOK_COLUMNS
    assert taken["look"].tolist() == [1, 2, 3] and taken["repeats"].tolist() == [3, 6, 9]
    plan = designs.boundaries(config)
    np.testing.assert_allclose(taken["boundary"], plan["boundary"])
    n_ext = taken["n_extended"].iloc[1]
    assert taken["n_extended"].iloc[0] == 0 and n_ext > 0
    assert taken["child_trials"].tolist() == [135, 135 + 3 * n_ext, 135 + 6 * n_ext]
    assert taken["parent_trials"].tolist() == taken["child_trials"].tolist()
    fixed = designs.looks(trials, PAIRS, gate=GateConfig(design="fixed"))
    one = stats.paired_test(trials, parent="p", child="c").iloc[0]
    assert len(fixed) == 1 and fixed["z"].item() == pytest.approx(one["z"])
    assert fixed["child_trials"].item() == len(trials[trials["candidate"] == "c"])


def test_credit_with_the_run_config_reproduces_the_adaptive_decisions():
    rng = np.random.default_rng(9)
    base = rng.beta(0.3, 0.3, 30)
    effects = {"good": 0.35, "null": 0.0, "bad": -0.35}
    config = GateConfig(design="adaptive")
    draws_ = {"base": draws(rng, base, base)[0]}
    for name, effect in effects.items():
        draws_[name] = draws(rng, base, np.clip(base + effect * (base > 0.05), 0, 1))[1]
    pairs = pd.DataFrame({"child": list(effects), "parent": "base"})
    trials, _ = score_loop(None, None, config, pairs=pairs, draws=draws_)
    trials["activated"] = trials["candidate"] != "base"
    candidates = pd.DataFrame({
        "candidate": ["base", *effects], "parents": ["", "base", "base", "base"],
        "kind": ["baseline", "mutation", "mutation", "mutation"],
        "where": [None, "prompt", "prompt", "prompt"], "why": None, "patch_id": None,
        "beacon": None, "env_gate": None, "commit": None, "branch": None,
        "round": [0, 1, 1, 1], "rationale": None,
    })
    stored = config.model_copy(update={"parent_trials": "stored"})  # scored here, no blocks
    decided = gates.credit(trials, candidates, gate=stored).set_index("child")
    taken = designs.looks(trials, pairs, gate=config).groupby("child").tail(1)
    for last in taken.itertuples():
        assert decided.loc[last.child, "looks"] == last.look
        assert decided.loc[last.child, "z"] == pytest.approx(last.z)
        assert decided.loc[last.child, "decision"] == last.decision
    assert decided.loc["good", "decision"] == "credit"
    assert decided.loc["bad", "decision"] == "cull"
    fixed = gates.credit(trials, candidates,
                         gate=GateConfig(design="fixed")).set_index("child")
    assert (fixed["looks"] == 1).all()
    schema.validate(decided.reset_index(), "decisions")


# ------------------------------------------------------------------------------ validity

def aa_pairs(seed, n_pairs, n_tasks):
    """Null pairs on bimodal tasks, with every repeat the adaptive design could read."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.155, 0.231, (n_pairs, n_tasks))
    parent = rng.random((n_pairs, n_tasks, 9)) < p[..., None]
    child = rng.random((n_pairs, n_tasks, 9)) < p[..., None]
    pooled = parent[..., :3].sum(-1) + child[..., :3].sum(-1)
    repeats = np.where((pooled > 0) & (pooled < 6), 9, 3)
    parts = []
    for side, draws_ in (("p", parent), ("c", child)):
        pair, task, rep = np.nonzero(np.arange(9)[None, None, :] < repeats[..., None])
        parts.append(pd.DataFrame({
            "candidate": np.char.add(side, pair.astype(str)).astype(object),
            "task_id": np.char.add("t", task.astype(str)).astype(object),
            "split": "train", "repeat": rep, "passed": draws_[pair, task, rep]}))
    trials = schema.as_trials(pd.concat(parts, ignore_index=True))
    pairs = pd.DataFrame({"child": [f"c{i}" for i in range(n_pairs)],
                          "parent": [f"p{i}" for i in range(n_pairs)]})
    return trials, pairs


def test_adaptive_a_a_false_credit_stays_near_the_level():
    trials, pairs = aa_pairs(seed=11, n_pairs=400, n_tasks=80)
    lenient = GateConfig(design="adaptive", reference="normal", exact_below=0, futility_z=None)
    for config in (lenient, ADAPTIVE):
        out = gates.significance_gate(trials, pairs, gate=config)
        # Seeded, so it cannot flake: 6 credits here (2.5% of 400 is 10). An allocation that
        # looks at the sign of a task's difference (say, never extending the tasks where the
        # child did better at look 1) credits 130 of these 400 null pairs. The boundaries
        # themselves are checked exactly against the multivariate normal above.
        assert (out["decision"] == "credit").sum() <= 16
        assert (out["decision"] == "cull").sum() <= 20  # look 1 only, at level alpha
    naive = GateConfig(design="adaptive", reference="normal", exact_below=0, futility_z=None,
                       k_max=3)  # a single look: the fixed test on the first 3 repeats
    one_look = gates.significance_gate(trials, pairs, gate=naive)
    assert (one_look["decision"] == "credit").sum() <= 16


@pytest.mark.parametrize("design", ["fixed", "adaptive"])
def test_wanted_refuses_a_task_listed_twice_on_the_split(design):
    tasks = pd.DataFrame({"task_id": ["t1", "t2", "t1"], "split": "train"})
    pairs = pd.DataFrame({"child": ["c"], "parent": ["p"]})
    trials = pd.DataFrame({"candidate": "p", "task_id": ["t1", "t2"], "split": "train",
                           "repeat": 0, "passed": True})
    with pytest.raises(schema.FrameError, match="repeats ids on split 'train'.*t1"):
        designs.wanted(trials, pairs, tasks, split="train", gate=GateConfig(design=design))
