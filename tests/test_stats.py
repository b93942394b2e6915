import doctest
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from gsme import designs, experiments, gates, parent_trials, schema, stats
from gsme.settings import GateConfig

NORMAL = GateConfig(reference="normal", exact_below=0)
T_ONLY = GateConfig(reference="t", exact_below=0)


def make_trials(outcomes, *, split="train", infra_fail=None):
    """``outcomes[name]`` is an (n_tasks, K) array of 0/1 (NaN = slot not run)."""
    rows = []
    for name, grid in outcomes.items():
        grid = np.asarray(grid, dtype=float)
        for task, k in zip(*np.nonzero(~np.isnan(grid))):
            rows.append({"candidate": name, "task_id": f"t{task:03d}", "split": split,
                         "repeat": int(k), "attempt": 0, "passed": bool(grid[task, k]),
                         "infra_ok": True})
    frame = pd.DataFrame(rows)
    if infra_fail is not None:  # a failed first attempt, then a valid re-run
        failed = frame.sample(frac=infra_fail, random_state=0).index
        rerun = frame.loc[failed].assign(attempt=1)
        frame.loc[failed, ["infra_ok", "passed"]] = [False, False]
        frame = pd.concat([frame, rerun], ignore_index=True)
    return schema.as_trials(frame)


def reference_task_means(trials, name, split="train"):
    """Per-task means over valid repeats, the slow obvious way."""
    rows = trials[(trials["candidate"] == name) & (trials["split"] == split) & trials["infra_ok"]]
    rows = rows.sort_values("attempt").drop_duplicates(["task_id", "repeat"], keep="first")
    return rows.groupby("task_id")["passed"].mean()


def random_pair(rng, n_tasks=30, k=3, shift=0.15):
    base = rng.uniform(0.1, 0.9, n_tasks)
    parent = rng.random((n_tasks, k)) < base[:, None]
    child = rng.random((n_tasks, k)) < np.clip(base + shift, 0, 1)[:, None]
    return {"p": parent.astype(float), "c": child.astype(float)}


def test_docstring_examples_run():
    assert doctest.testmod(stats, raise_on_error=False).failed == 0


def test_task_rates_exclude_infra_failures_and_score_first_valid_attempt():
    trials = schema.as_trials(pd.DataFrame({
        "candidate": "a", "task_id": ["t1"] * 4 + ["t2"], "split": "train",
        "repeat": [0, 1, 1, 1, 0], "attempt": [0, 0, 1, 2, 0],
        "passed": [True, False, True, False], "infra_ok": [True, False, True, True],
    } | {"passed": [True, False, True, False, False],
         "infra_ok": [True, False, True, True, False]}))
    rates = stats.task_rates(trials).set_index("task_id")
    assert rates.loc["t1", ["n_slots", "n_valid", "n_passed"]].tolist() == [2, 2, 2]
    assert rates.loc["t1", "rate"] == 1.0  # repeat 1 scored by attempt 1, not the later attempt 2
    assert rates.loc["t2", "n_valid"] == 0 and np.isnan(rates.loc["t2", "rate"])


def test_task_rates_match_groupby_reference():
    rng = np.random.default_rng(1)
    trials = make_trials(random_pair(rng), infra_fail=0.1)
    rates = stats.task_rates(trials, split="train")
    for name in ("p", "c"):
        got = rates[rates["candidate"] == name].set_index("task_id")["rate"].sort_index()
        pd.testing.assert_series_equal(got, reference_task_means(trials, name),
                                       check_names=False, check_index_type=False)


def test_paired_z_equals_ttest_rel_and_p_equals_normal_tail():
    rng = np.random.default_rng(2)
    outcomes = random_pair(rng, n_tasks=40)
    outcomes["c"][3, 2] = np.nan  # unequal K
    trials = make_trials(outcomes, infra_fail=0.05)
    row = stats.paired_test(trials, parent="p", child="c", gate=NORMAL).iloc[0]
    both = pd.concat([reference_task_means(trials, "c"), reference_task_means(trials, "p")],
                     axis=1, join="inner")
    expected = sps.ttest_rel(both.iloc[:, 0], both.iloc[:, 1])
    assert row["z"] == pytest.approx(expected.statistic, rel=1e-9)
    assert row["p_value"] == pytest.approx(2 * sps.norm.sf(abs(expected.statistic)), rel=1e-9)
    diff = both.iloc[:, 0] - both.iloc[:, 1]
    assert row["delta_pp"] == pytest.approx(100 * diff.mean())
    assert row["se_pp"] == pytest.approx(100 * diff.std(ddof=1) / math.sqrt(len(diff)))
    assert row["n_changed"] == int((diff.abs() > 1e-12).sum())
    assert row["rate_child"] - row["rate_parent"] == pytest.approx(diff.mean())
    assert row["p_one_sided"] == pytest.approx(sps.norm.sf(expected.statistic), rel=1e-9)
    t_row = stats.paired_test(trials, parent="p", child="c", gate=T_ONLY).iloc[0]
    assert t_row["p_value"] == pytest.approx(expected.pvalue, rel=1e-9)
    greater = sps.ttest_rel(both.iloc[:, 0], both.iloc[:, 1], alternative="greater")
    assert t_row["p_one_sided"] == pytest.approx(greater.pvalue, rel=1e-9)
    assert t_row["z"] == pytest.approx(expected.statistic, rel=1e-9)
    assert row["n_changed"] >= 6  # the default config (exact below 6 changed) agrees too
    default = stats.paired_test(trials, parent="p", child="c").iloc[0]
    assert default["p_value"] == pytest.approx(expected.pvalue, rel=1e-9)


def test_decision_follows_z_against_critical_value():
    rng = np.random.default_rng(3)
    up = stats.paired_test(make_trials(random_pair(rng, 80, shift=0.3)), parent="p", child="c",
                           gate=NORMAL)
    down = stats.paired_test(make_trials(random_pair(rng, 80, shift=-0.3)), parent="p",
                             child="c", gate=NORMAL)
    assert up["z"].item() >= 1.96 and up["decision"].item() == "credit"
    assert down["z"].item() <= -1.96 and down["decision"].item() == "cull"
    assert up["reason"].isna().all() and down["reason"].isna().all()


def test_t_reference_is_stricter_at_small_n():
    # the normal reference credits about 3.1% of null comparisons at n = 26, not 2.5%
    assert sps.t.sf(1.96, 25) == pytest.approx(0.031, abs=0.001)
    n = 26  # per-task differences in thirds chosen so that 1.96 < z < t crit (2.06)
    diffs = np.r_[np.full(8, 1), np.full(2, -1), np.zeros(16)] / 3
    z = diffs.mean() / (diffs.std(ddof=1) / np.sqrt(n))
    assert 1.96 < z < sps.t.isf(0.025, n - 1)
    parent = np.zeros((n, 3))
    child = np.zeros((n, 3))
    child[diffs > 0, 0] = 1
    parent[diffs < 0, 0] = 1
    trials = make_trials({"p": parent, "c": child})
    normal = stats.paired_test(trials, parent="p", child="c", gate=NORMAL)
    student = stats.paired_test(trials, parent="p", child="c", gate=T_ONLY)
    assert normal["decision"].item() == "credit"
    assert student["decision"].item() == "inconclusive"
    assert student["z"].item() == pytest.approx(normal["z"].item())


def test_no_task_changed_is_inconclusive_with_zero_z():
    grid = np.tile([[1.0, 0.0, 1.0]], (12, 1))
    row = stats.paired_test(make_trials({"p": grid, "c": grid}), parent="p", child="c").iloc[0]
    assert (row["z"], row["p_value"], row["decision"]) == (0.0, 1.0, "inconclusive")
    assert "no paired task changed" in row["reason"]


def sign_flip_p(diffs):
    """Two-sided exact sign-flip p by enumerating all 2^n sign patterns."""
    observed = abs(diffs.sum())
    sums = [abs(np.dot(signs, diffs)) for signs in itertools.product([-1, 1], repeat=len(diffs))]
    return np.mean(np.array(sums) >= observed - 1e-12)


@pytest.mark.parametrize("n, decision", [(5, "inconclusive"), (12, "credit")])
def test_equal_nonzero_differences_use_exact_sign_flip(n, decision):
    parent = np.tile([[1.0, 0.0, 0.0]], (n, 1))  # 1/3 each task
    child = np.tile([[1.0, 1.0, 0.0]], (n, 1))  # 2/3: every difference is 1/3
    row = stats.paired_test(make_trials({"p": parent, "c": child}), parent="p", child="c",
                            gate=GateConfig(min_tasks=2)).iloc[0]
    assert row["p_value"] == pytest.approx(sign_flip_p(np.full(n, 1 / 3)))
    assert np.isfinite(row["z"]) and row["z"] > 0
    assert row["p_value"] == pytest.approx(2 * sps.norm.sf(row["z"]))
    assert row["se_pp"] == 0 and row["decision"] == decision
    assert "sign-flip" in row["reason"]


def test_equal_differences_stay_finite_for_many_tasks():
    n = 1500
    parent, child = np.zeros((n, 1)), np.ones((n, 1))
    row = stats.paired_test(make_trials({"p": parent, "c": child}), parent="p", child="c").iloc[0]
    assert np.isfinite(row["z"]) and row["z"] > 30 and row["decision"] == "credit"


def test_fewer_than_min_tasks_is_inconclusive_and_says_why():
    rng = np.random.default_rng(4)
    trials = make_trials(random_pair(rng, n_tasks=6, shift=0.8))
    row = stats.paired_test(trials, parent="p", child="c",
                            gate=GateConfig(min_tasks=10)).iloc[0]
    assert row["n_tasks"] == 6 and row["decision"] == "inconclusive"
    assert "min_tasks=10" in row["reason"]


def test_tasks_on_one_side_or_without_valid_repeat_are_dropped_and_counted():
    rng = np.random.default_rng(5)
    outcomes = random_pair(rng, n_tasks=20)
    outcomes["p"][:3] = np.nan  # tasks 0-2: child only
    outcomes["c"][17:] = np.nan  # tasks 17-19: parent only
    trials = make_trials(outcomes)
    trials.loc[(trials["candidate"] == "c") & (trials["task_id"] == "t005"), "infra_ok"] = False
    trials.loc[~trials["infra_ok"], "passed"] = False
    row = stats.paired_test(trials, parent="p", child="c").iloc[0]
    assert (row["n_tasks"], row["n_dropped"]) == (13, 7)


def test_unequal_k_weights_tasks_equally():
    parent = np.array([[0, 0, 0], [0, np.nan, np.nan]] * 6, dtype=float)
    child = np.array([[1, 1, 0], [1, np.nan, np.nan]] * 6, dtype=float)
    row = stats.paired_test(make_trials({"p": parent, "c": child}), parent="p", child="c").iloc[0]
    assert row["delta_pp"] == pytest.approx(100 * (2 / 3 + 1) / 2)
    assert row["k"] == 3


@settings(max_examples=12, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), n_tasks=st.integers(3, 25),
       exact_below=st.sampled_from([0, 6, 30]))
def test_swapping_parent_and_child_flips_the_test(seed, n_tasks, exact_below):
    trials = make_trials(random_pair(np.random.default_rng(seed), n_tasks=n_tasks))
    config = GateConfig(min_tasks=2, exact_below=exact_below)
    ab = stats.paired_test(trials, parent="p", child="c", gate=config).iloc[0]
    ba = stats.paired_test(trials, parent="c", child="p", gate=config).iloc[0]
    np.testing.assert_allclose([ba["z"], ba["delta_pp"]], [-ab["z"], -ab["delta_pp"]],
                               atol=1e-12)
    assert ba["p_value"] == pytest.approx(ab["p_value"], nan_ok=True)
    flipped = {"credit": "cull", "cull": "credit", "inconclusive": "inconclusive"}
    assert ba["decision"] == flipped[ab["decision"]]


@settings(max_examples=10, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000))
def test_relabelling_tasks_and_shuffling_rows_changes_nothing(seed):
    rng = np.random.default_rng(seed)
    trials = make_trials(random_pair(rng, n_tasks=15), infra_fail=0.1)
    names = trials["task_id"].unique()
    renamed = dict(zip(names, rng.permutation([f"x{i}" for i in range(len(names))])))
    shuffled = trials.assign(task_id=trials["task_id"].map(renamed)).sample(
        frac=1, random_state=seed).reset_index(drop=True)
    cols = ["n_tasks", "n_dropped", "n_changed", "k", "delta_pp", "se_pp", "z", "p_value"]
    a = stats.paired_test(trials, parent="p", child="c")[cols]
    b = stats.paired_test(shuffled, parent="p", child="c")[cols]
    pd.testing.assert_frame_equal(a, b, rtol=1e-12)


def test_paired_test_rejects_bad_arguments():
    trials = make_trials(random_pair(np.random.default_rng(6)))
    with pytest.raises(ValueError, match="reference"):
        GateConfig(reference="z")
    with pytest.raises(TypeError, match="GateConfig"):
        stats.paired_test(trials, parent="p", child="c", gate={"reference": "t"})
    with pytest.raises(ValueError, match="parent and child must differ"):
        stats.paired_test(trials, parent="p", child="p")
    with pytest.raises(ValueError, match="child 'nope' has no trials on split 'train'"):
        stats.paired_test(trials, parent="p", child="nope")
    with pytest.raises(ValueError, match="min_tasks"):
        GateConfig(min_tasks=1)
    with pytest.raises(ValueError, match="z_crit"):
        GateConfig(z_crit=0)
    with pytest.raises(ValueError, match="split"):
        stats.paired_test(trials, parent="p", child="c", split="dev")
    bad = trials.astype({"passed": object})
    bad.loc[2, "passed"] = np.nan
    with pytest.raises(schema.FrameError, match="passed"):
        stats.paired_test(bad, parent="p", child="c")


def test_paired_test_does_not_mutate_input():
    trials = make_trials(random_pair(np.random.default_rng(7)), infra_fail=0.1)
    before = trials.copy()
    stats.paired_test(trials, parent="p", child="c")
    pd.testing.assert_frame_equal(trials, before)


def test_paired_tasks_lists_the_pairing():
    rng = np.random.default_rng(8)
    outcomes = random_pair(rng, n_tasks=10)
    outcomes["p"][0] = np.nan
    trials = make_trials(outcomes)
    tasks = stats.paired_tasks(trials, parent="p", child="c").set_index("task_id")
    child, parent = reference_task_means(trials, "c"), reference_task_means(trials, "p")
    assert sorted(tasks.index) == sorted(set(child.index) & set(parent.index))
    np.testing.assert_allclose(tasks["diff"], (child - parent).loc[tasks.index])
    row = stats.paired_test(trials, parent="p", child="c").iloc[0]
    assert 100 * tasks["diff"].mean() == pytest.approx(row["delta_pp"])


def brute_pass_at_k(n, c, k):
    samples = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(samples, k))
    return sum(any(s) for s in subsets) / len(subsets)


def test_pass_at_k_estimate_matches_subset_enumeration():
    for n in range(1, 8):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert stats.pass_at_k_estimate(n, c, k) == pytest.approx(
                    brute_pass_at_k(n, c, k), abs=1e-12)


def test_pass_at_k_estimate_is_vectorised_and_stable():
    assert str(stats.pass_at_k_estimate(5, 0, 2)) == "0.0"
    n = np.array([3, 200, 10_000])
    c = np.array([1, 0, 1])
    got = stats.pass_at_k_estimate(n, c, 1)
    np.testing.assert_allclose(got, c / n, rtol=1e-12)
    exact = 1 - math.comb(10_000 - 5, 100) / math.comb(10_000, 100)
    assert stats.pass_at_k_estimate(10_000, 5, 100) == pytest.approx(exact, rel=1e-10)
    with pytest.raises(ValueError, match="n >= k=4"):
        stats.pass_at_k_estimate([3], [1], 4)
    with pytest.raises(ValueError, match="0 <= n_passed <= n"):
        stats.pass_at_k_estimate(3, 5, 1)
    with pytest.raises(ValueError, match="k must be"):
        stats.pass_at_k_estimate(3, 1, 0)


def test_pass_at_k_per_candidate_and_split():
    rng = np.random.default_rng(9)
    outcomes = random_pair(rng, n_tasks=12)
    outcomes["c"][0, 1:] = np.nan  # one task with a single repeat: too few for k = 2
    trials = make_trials(outcomes)
    out = stats.pass_at_k(trials, k=2).set_index("candidate")
    assert out.loc["c", ["n_tasks", "n_dropped", "k"]].tolist() == [11, 1, 2]
    rates = stats.task_rates(trials)
    c_rates = rates[(rates["candidate"] == "c") & (rates["n_valid"] >= 2)]
    expected = np.mean([brute_pass_at_k(n, c, 2)
                        for n, c in zip(c_rates["n_valid"], c_rates["n_passed"])])
    assert out.loc["c", "pass_at_k"] == pytest.approx(expected)
    at_1 = stats.pass_at_k(trials, k=1).set_index("candidate")
    assert at_1.loc["p", "pass_at_k"] == pytest.approx(reference_task_means(trials, "p").mean())


def test_retention_and_p_value():
    assert stats.retention(6.3, 9.3) == pytest.approx(100 * 9.3 / 6.3)
    np.testing.assert_allclose(stats.retention([10, 0, -2], [5, 1, 1]), [50, np.nan, np.nan])
    assert stats.p_value(2.13) == pytest.approx(0.0332, abs=1e-4)
    assert stats.p_value(6.44) < 1e-4
    assert stats.p_value(-1.5) == stats.p_value(1.5)
    assert stats.p_value(2.0, reference="t", df=25) == pytest.approx(2 * sps.t.sf(2.0, 25))
    assert stats.p_value(-1.5, alternative="greater") == pytest.approx(sps.norm.sf(-1.5))
    assert stats.p_value(2.0, reference="t", df=25, alternative="greater") == pytest.approx(
        sps.t.sf(2.0, 25))
    with pytest.raises(ValueError, match="df is required"):
        stats.p_value(2.0, reference="t")
    with pytest.raises(ValueError, match="alternative must be one of"):
        stats.p_value(2.0, alternative="less")


def test_aa_test_reports_noise_floor():
    rng = np.random.default_rng(11)
    base = rng.uniform(0.1, 0.9, 60)
    outcomes = {name: (rng.random((60, 3)) < base[:, None]).astype(float)
                for name in ("base", "base-rerun")}
    out = stats.aa_test(make_trials(outcomes), candidate="base", rerun="base-rerun").iloc[0]
    assert (out["child"], out["parent"]) == ("base-rerun", "base")
    assert out["decision"] == "inconclusive"
    assert out["sd_pp"] == pytest.approx(out["se_pp"] * np.sqrt(60))
    assert out["mde_pp"] == pytest.approx(
        stats.mde(n_tasks=60, repeat_sd_pp=out["sd_pp"], k=1))


def brute_sign_flip(diffs):
    """One-sided (upper, lower) and two-sided p of the paired t by enumerating 2^m flips."""
    diffs = np.asarray(diffs, dtype=float)
    nonzero = diffs[np.abs(diffs) > 1e-12]
    n = len(diffs)

    def t_of(d):
        sd = d.std(ddof=1)
        return d.mean() / (sd / np.sqrt(n)) if sd > 0 else np.sign(d.mean()) * np.inf

    observed = t_of(diffs)
    flips = np.array(list(itertools.product([-1.0, 1.0], repeat=len(nonzero))))
    ts = np.array([t_of(np.r_[signs * nonzero, np.zeros(n - len(nonzero))]) for signs in flips])
    tol = 1e-9 * max(1.0, abs(observed)) if np.isfinite(observed) else 0
    return (np.mean(ts >= observed - tol), np.mean(ts <= observed + tol),
            np.mean(np.abs(ts) >= abs(observed) - tol))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), n_tasks=st.integers(5, 14))
def test_exact_sign_flip_p_equals_full_enumeration_of_t(seed, n_tasks):
    rng = np.random.default_rng(seed)
    outcomes = random_pair(rng, n_tasks=n_tasks, k=3, shift=rng.uniform(-0.3, 0.3))
    outcomes["c"][0, 2] = np.nan  # unequal K: differences in sixths and thirds
    outcomes["p"][1, 1:] = np.nan
    trials = make_trials(outcomes)
    config = GateConfig(exact_below=100, min_tasks=2)
    row = stats.paired_test(trials, parent="p", child="c", gate=config).iloc[0]
    diffs = stats.paired_tasks(trials, parent="p", child="c")["diff"].to_numpy()
    upper, lower, two = brute_sign_flip(diffs)
    if row["n_changed"] == 0:
        assert row["p_value"] == 1.0 and row["decision"] == "inconclusive"
        return
    assert row["p_value"] == pytest.approx(two, abs=1e-12)
    assert row["p_one_sided"] == pytest.approx(upper, abs=1e-12)
    expected = ("credit" if upper <= config.alpha else
                "cull" if lower <= config.alpha else "inconclusive")
    assert row["decision"] == expected


def test_four_of_26_tasks_gaining_one_pass_in_three_is_not_credited():
    n = 26
    parent = np.tile([[1.0, 1.0, 1.0]], (n, 1))
    parent[::2] = 0.0  # 13 tasks never pass, 13 always pass
    child = parent.copy()
    parent[:4] = [1, 0, 0]  # four tasks: 1/3 -> 2/3, none lose
    child[:4] = [1, 1, 0]
    trials = make_trials({"p": parent, "c": child})
    student = stats.paired_test(trials, parent="p", child="c", gate=T_ONLY).iloc[0]
    assert student["z"] == pytest.approx(2.13, abs=0.01) and student["decision"] == "credit"
    row = stats.paired_test(trials, parent="p", child="c").iloc[0]
    assert row["n_changed"] == 4 and row["decision"] == "inconclusive"
    assert row["p_value"] == pytest.approx(2 / 16)  # P(|S*| >= |S|): 2 of the 16 flips
    assert "exact sign-flip p: only 4 of 26 paired tasks changed (exact_below=6)" in row["reason"]
    assert row["z"] == pytest.approx(student["z"])  # z stays the t statistic


def test_exact_p_needs_enough_changed_tasks_to_credit():
    # m tasks move up by one pass in three: the exact one-sided p is 2^-m
    for m, decision in [(5, "inconclusive"), (6, "credit")]:
        parent = np.zeros((20, 3))
        child = parent.copy()
        child[:m, 0] = 1
        config = GateConfig(exact_below=50)
        row = stats.paired_test(make_trials({"p": parent, "c": child}), parent="p", child="c",
                                gate=config).iloc[0]
        assert row["p_value"] == pytest.approx(2.0 ** (1 - m))
        assert row["decision"] == decision


@settings(max_examples=40, deadline=None, derandomize=True)
@given(values=st.lists(st.integers(-6, 6).filter(bool), min_size=1, max_size=11),
       groups=st.integers(1, 3))
def test_sign_flip_tails_equal_enumeration(values, groups):
    from gsme.designs import exact

    values = np.array(values)
    group = np.sort(np.arange(len(values)) % groups)
    got = exact.sign_flip_tails(group, values, groups)
    for g in range(groups):
        v = values[group == g]
        if not len(v):
            assert [a[g] for a in got] == [1.0, 1.0, 1.0]
            continue
        sums = np.array([np.dot(s, np.abs(v)) for s in itertools.product([-1, 1], repeat=len(v))])
        observed = v.sum()
        assert got[0][g] == np.mean(sums >= observed)
        assert got[1][g] == np.mean(sums <= observed)
        assert got[2][g] == np.mean(np.abs(sums) >= abs(observed))


# ------------------------------------------------ reporting that matches the decisions

ENUMERATED = GateConfig(design="adaptive", k=2, k_step=1, k_max=4, futility_z=None)


@pytest.fixture(scope="module")
def enumerated_run():
    """Every outcome sequence of one task over ``k_max`` repeats of both arms (2^8), each
    as its own task of one child/parent pair, scored the way a run scores them: look 1's
    ``k`` repeats, then whatever :func:`gsme.designs.wanted` asks for, until nothing.

    The sequences are closed under swapping the arms, so every look's mean difference is 0
    and the procedure never stops early: every task mixed at look 1 gets ``k_max``."""
    n = ENUMERATED.k_max
    outcomes = np.array(list(itertools.product([0, 1], repeat=2 * n)))  # child, then parent
    names = [f"s{i:03d}" for i in range(len(outcomes))]
    side, task, repeat = (a.ravel() for a in np.indices((2, len(outcomes), n)))
    full = schema.as_trials(pd.DataFrame({
        "candidate": np.array(["c", "p"])[side], "task_id": np.array(names)[task],
        "split": "train", "repeat": repeat,
        "passed": outcomes.reshape(len(outcomes), 2, n)[task, side, repeat].astype(bool)}))
    pairs = pd.DataFrame({"child": ["c"], "parent": ["p"]})
    tasks = pd.DataFrame({"task_id": names, "split": "train"})
    scored = full[full["repeat"] < ENUMERATED.k]
    while True:
        want = designs.wanted(scored, pairs, tasks, split="train", gate=ENUMERATED)
        more = full.merge(want[["candidate", "task_id", "repeats"]])
        more = more[more["repeat"] < more["repeats"]].drop(columns="repeats")
        if len(more) == len(scored):
            return outcomes, scored.reset_index(drop=True)
        scored = more


def _expected(outcomes, per_task, p_child, p_parent):
    """E[value] over the sequences: each task (sequence) weighted by its probability."""
    n = outcomes.shape[1] // 2
    prob = np.r_[np.full(n, p_child), np.full(n, p_parent)]
    weight = np.prod(np.where(outcomes == 1, prob, 1 - prob), axis=1)
    index = [f"s{i:03d}" for i in range(len(outcomes))]
    return {side: float(weight @ per_task[side].reindex(index).to_numpy())
            for side in ("c", "p")}


def _per_task_pass_at(trials, k):
    """pass@k of every (side, task): each task made its own candidate."""
    split = trials.assign(candidate=trials["candidate"] + "/" + trials["task_id"])
    out = stats.pass_at_k(split, k=k)
    side, task = (out["candidate"].str.split("/", expand=True)[i].to_numpy() for i in (0, 1))
    return {name: pd.Series(out["pass_at_k"].to_numpy()[side == name],
                            index=task[side == name]) for name in ("c", "p")}


def _per_task_rate(trials):
    rates = stats.task_rates(trials)
    return {name: rates[rates["candidate"] == name].set_index("task_id")["rate"]
            for name in ("c", "p")}


@pytest.mark.parametrize("p_child, p_parent", [(0.3, 0.3), (0.5, 0.5), (0.8, 0.8), (0.2, 0.6)])
def test_first_k_rates_and_pass_at_k_are_unbiased_under_the_adaptive_design(
        enumerated_run, p_child, p_parent):
    outcomes, scored = enumerated_run
    counts = scored.groupby(["candidate", "task_id"]).size()
    assert set(counts) == {ENUMERATED.k, ENUMERATED.k_max}  # the design did extend
    truth = {"c": p_child, "p": p_parent}
    first = stats.first_repeats(scored, k=ENUMERATED.k)
    reported = _expected(outcomes, _per_task_rate(first), p_child, p_parent)
    every = _expected(outcomes, _per_task_rate(scored), p_child, p_parent)
    for side, p in truth.items():
        assert reported[side] == pytest.approx(p, abs=1e-12)
    for k in range(1, ENUMERATED.k + 1):
        reported = _expected(outcomes, _per_task_pass_at(first, k), p_child, p_parent)
        for side, p in truth.items():
            assert reported[side] == pytest.approx(1 - (1 - p) ** k, abs=1e-12)
    # every repeat (what the run table read before): the rate or pass@k off by over a point
    at_k = _expected(outcomes, _per_task_pass_at(scored, ENUMERATED.k), p_child, p_parent)
    for side, p in truth.items():
        assert max(abs(every[side] - p),
                   abs(at_k[side] - (1 - (1 - p) ** ENUMERATED.k))) > 0.01


def test_all_repeats_rate_bias_has_its_closed_form(enumerated_run):
    # a task mixed at look 1 reads 4 repeats, else 2: E[rate] - p = p(1-p)/2 (p^3 - (1-p)^3)
    outcomes, scored = enumerated_run
    for p in (0.1, 0.3, 0.5, 0.8):
        every = _expected(outcomes, _per_task_rate(scored), p, p)["c"]
        assert every - p == pytest.approx(p * (1 - p) / 2 * (p**3 - (1 - p) ** 3), abs=1e-12)


def test_first_repeats_keeps_attempts_and_never_replaces_an_invalid_slot():
    t = schema.as_trials(pd.DataFrame({
        "candidate": "a", "task_id": "t1", "split": "train",
        "repeat": [0, 1, 1, 1, 2, 3, 4], "attempt": [0, 0, 1, 2, 0, 0, 0],
        "passed": [True, False, False, False, True, True, True],
        "infra_ok": [True, False, False, False, True, True, True]}))
    kept = stats.first_repeats(t, k=3)
    assert kept["repeat"].tolist() == [0, 1, 1, 1, 2]
    rates = stats.task_rates(kept).iloc[0]
    assert (rates["n_slots"], rates["n_valid"], rates["n_passed"]) == (3, 2, 2)
    with pytest.raises(ValueError, match="k must be a whole number >= 1"):
        stats.first_repeats(t, k=0)


def test_candidate_rates_average_tasks_over_the_first_k():
    rng = np.random.default_rng(21)
    outcomes = random_pair(rng, n_tasks=15, k=6)
    outcomes["c"][0] = np.nan  # no repeat at all: not a task of c
    outcomes["p"][1, :3] = np.nan  # only repeats 3..5: no valid repeat among the first 3
    trials = make_trials(outcomes)
    out = stats.candidate_rates(trials, k=3).set_index("candidate")
    first = trials[trials["repeat"] < 3]
    for name in ("p", "c"):
        means = reference_task_means(first, name)
        assert out.loc[name, "rate"] == pytest.approx(means.mean())
        assert out.loc[name, "n_tasks"] == len(means)
    assert out.loc["p", "n_dropped"] == 1 and out.loc["c", "n_dropped"] == 0


@pytest.fixture(scope="module")
def adaptive_run():
    run = experiments.simulated_run("tb2", rounds=2, finalize=False)
    yield run.decisions(), run.trials(split="train"), run.config.gate, run.candidates()
    run.close()


def test_paired_tasks_average_to_every_decision(adaptive_run):
    decisions, trials, gate, candidates = adaptive_run
    assert gate.design == "adaptive" and (decisions["looks"] > 1).any()
    every_repeat = gate.model_copy(update={"design": "fixed"})
    differs = 0
    for row in decisions.itertuples():
        seen, parent = parent_trials.of_child(trials, candidates, row.child, gate=gate)
        tasks = stats.paired_tasks(seen, parent=parent, child=row.child, gate=gate)
        assert len(tasks) == row.n_tasks
        assert 100 * tasks["diff"].mean() == pytest.approx(row.delta_pp, abs=1e-9)
        assert tasks["rate_child"].mean() == pytest.approx(row.rate_child, abs=1e-12)
        assert tasks["rate_parent"].mean() == pytest.approx(row.rate_parent, abs=1e-12)
        looks = set(designs.look_repeats(gate)[: row.looks]) | {gate.k}
        assert set(tasks["repeats"]) <= looks
        assert (tasks[["n_parent", "n_child"]].max(axis=1) <= tasks["repeats"]).all()
        old = stats.paired_tasks(seen, parent=parent, child=row.child,
                                 gate=every_repeat)
        differs += abs(100 * old["diff"].mean() - row.delta_pp) > 1e-6
    assert differs >= 1  # reading every repeat would not match: the test can fail


def test_credit_exactly_when_the_one_sided_p_clears_the_looks_level(adaptive_run):
    decisions, trials, gate, _ = adaptive_run
    level = designs.boundaries(gate)["level"].to_numpy()[decisions["looks"] - 1]
    tested = decisions["gate_failed"].isna() | (decisions["gate_failed"] == "significance")
    tested &= decisions["n_tasks"] >= gate.min_tasks
    assert tested.any() and (decisions["decision"] == "credit").any()
    np.testing.assert_array_equal(
        (decisions["decision"] == "credit")[tested],
        (decisions["p_one_sided"] <= level * (1 + 1e-12))[tested])
    taken = designs.looks(trials, decisions[["child", "parent"]], gate=gate)
    final = taken[taken["decision"] != "continue"]
    np.testing.assert_array_equal(final["decision"] == "credit",
                                  final["p_one_sided"] <= final["level"] * (1 + 1e-12))


@pytest.mark.parametrize("config", [NORMAL, T_ONLY, GateConfig(exact_below=12, min_tasks=2)])
def test_one_look_credits_exactly_when_p_one_sided_is_at_most_alpha(config):
    rng = np.random.default_rng(5)
    frames, pairs = [], []
    for i in range(60):
        outcomes = random_pair(rng, n_tasks=int(rng.integers(8, 40)), shift=rng.uniform(-0.3, 0.4))
        outcomes = {f"{name}{i}": grid for name, grid in outcomes.items()}
        frames.append(make_trials(outcomes))
        pairs.append((f"c{i}", f"p{i}"))
    trials = pd.concat(frames, ignore_index=True)
    pairs = pd.DataFrame(pairs, columns=["child", "parent"])
    out = gates.significance_gate(trials, pairs, gate=config.model_copy(
        update={"design": "fixed"}))
    assert {"credit", "inconclusive"} <= set(out["decision"])
    enough = (out["n_tasks"] >= config.min_tasks) & (out["n_changed"] > 0)
    np.testing.assert_array_equal((out["decision"] == "credit")[enough],
                                  (out["p_one_sided"] <= config.alpha * (1 + 1e-12))[enough])
