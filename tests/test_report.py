import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from gsme import experiments, report, stats
from gsme.schema import BASELINE


def test_paper_table_has_the_seed_rows():
    table = report.paper_table()
    assert table["benchmark"].tolist() == [
        "TB2", "LiveCode", "Omni-MATH", "BrowseComp+", "GDPval", "AppWorld", "SWE-bench"]
    assert table["preliminary"].tolist() == [False] * 6 + [True]
    assert table.loc[0, ["train_delta_pp", "sealed_delta_pp", "z", "retention_pct"]].tolist() \
        == [6.3, 9.3, 2.71, 147]


def test_recomputed_retention_agrees_within_the_tables_rounding():
    table = report.paper_table()
    gap = (table["retention_pct"] - table["retention_pct_gsme"]).abs()
    assert (gap <= table["retention_tolerance_pp"]).all()
    # the tolerance is tight: it is not satisfied by, say, sealed / (train + 1)
    wrong = stats.retention(table["train_delta_pp"] + 1, table["sealed_delta_pp"])
    assert ((table["retention_pct"] - wrong).abs() > table["retention_tolerance_pp"]).any()


def test_recomputed_p_values_match_the_papers_range():
    table = report.paper_table().set_index("benchmark")
    assert table.loc["GDPval", "p_value_gsme"] == pytest.approx(0.033, abs=5e-4)
    assert table.loc["AppWorld", "p_value_gsme"] < 1e-4
    np.testing.assert_allclose(table["p_value_gsme"], 2 * sps.norm.sf(table["z"].abs()))
    credited = table[table["credited"]]
    assert len(credited) == 6 and "SWE-bench" not in credited.index
    assert credited["p_value_gsme"].max() == pytest.approx(0.033, abs=5e-4)
    np.testing.assert_allclose(table["p_one_sided_gsme"], sps.norm.sf(table["z"]))
    np.testing.assert_array_equal(table["credited"], table["p_one_sided_gsme"] <= 0.025)


@pytest.fixture(scope="module")
def sealed_run(tmp_path_factory):
    run = experiments.simulated_run("tb2", rounds=1, root=tmp_path_factory.mktemp("report"))
    yield run
    run.close()


def _first_k_counts(trials, candidate, split, k):
    """Per task, valid repeats and passes among repeats 0..k-1, the slow obvious way."""
    rows = trials[(trials["candidate"] == candidate) & (trials["split"] == split)
                  & (trials["repeat"] < k) & trials["infra_ok"]]
    rows = rows.sort_values("attempt").drop_duplicates(["task_id", "repeat"])
    return rows.groupby("task_id")["passed"].agg(["size", "sum"])


def test_run_table_reads_the_first_k_repeats_with_one_sided_p(sealed_run):
    run = sealed_run
    table = report.run_table(run).iloc[0]
    gate, trials, chosen = run.config.gate, run.trials(), table["selected"]
    assert gate.design == "adaptive" and chosen != BASELINE
    extended = trials[(trials["split"] == "train") & (trials["repeat"] >= gate.k)]
    assert {BASELINE, chosen} <= set(extended["candidate"])  # every repeat would differ
    for split, name in (("train", "train"), ("test", "sealed")):
        counts = {side: _first_k_counts(trials, who, split, gate.k)
                  for side, who in (("base", BASELINE), ("selected", chosen))}
        rates = {side: c["sum"] / c["size"] for side, c in counts.items()}
        paired = rates["base"].index.intersection(rates["selected"].index)
        d = (rates["selected"] - rates["base"])[paired].to_numpy()
        t = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
        for side in ("base", "selected"):
            assert table[f"rate_{name}_{side}"] == pytest.approx(rates[side][paired].mean())
            usable = counts[side][counts[side]["size"] >= gate.k]
            at_k = [1 - math.comb(n - c, gate.k) / math.comb(n, gate.k)
                    for n, c in zip(usable["size"], usable["sum"])]
            assert table[f"pass_at_{gate.k}_{split}_{side}"] == pytest.approx(np.mean(at_k))
        assert table[f"{name}_delta_pp"] == pytest.approx(100 * d.mean())
        assert table[f"{name}_z"] == pytest.approx(t)
        if (np.abs(d) > 1e-12).sum() >= gate.exact_below:  # else the exact sign-flip p
            assert table[f"{name}_p_one_sided"] == pytest.approx(sps.t.sf(t, len(d) - 1))
    assert (table["sealed_decision"] == "credit") == (table["sealed_p_one_sided"] <= gate.alpha)
    assert table["false_credits_if_null"] == pytest.approx(
        table["significance_tests"] * gate.alpha)
    assert not {"train_p", "sealed_p", "expected_false_credits", "false_credits_bound"} \
        & set(table.index)


def test_sealed_interval_is_the_t_interval_of_the_first_k_task_differences(sealed_run):
    run = sealed_run
    table = report.run_table(run).iloc[0]
    gate, trials, chosen = run.config.gate, run.trials(), table["selected"]
    counts = {who: _first_k_counts(trials, who, "test", gate.k) for who in (BASELINE, chosen)}
    rates = {who: c["sum"] / c["size"] for who, c in counts.items()}
    d = 100 * (rates[chosen] - rates[BASELINE]).dropna().to_numpy()
    half = sps.t.isf(gate.alpha, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
    assert table["sealed_ci_low_pp"] == pytest.approx(d.mean() - half)
    assert table["sealed_ci_high_pp"] == pytest.approx(d.mean() + half)
    if (np.abs(d) > 1e-9).sum() >= gate.exact_below:  # the t reference decided
        assert (table["sealed_ci_low_pp"] > 0) == (table["sealed_decision"] == "credit")


def _sealed_row(selected="c0003", decision="inconclusive", delta=1.2, p=0.29):
    return pd.DataFrame([{"selected": selected, "n_test": 40, "sealed_decision": decision,
                          "sealed_delta_pp": delta, "sealed_ci_low_pp": delta - 4.0,
                          "sealed_ci_high_pp": delta + 4.0, "sealed_p_one_sided": p}])


@pytest.mark.parametrize("decision, delta, p, ships", [
    ("credit", 9.0, 0.001, {"always", "sealed_credit", "sealed_positive", "sealed_p20"}),
    ("inconclusive", 1.2, 0.15, {"always", "sealed_positive", "sealed_p20"}),
    ("inconclusive", 0.4, 0.45, {"always", "sealed_positive"}),
    ("inconclusive", 0.0, 0.5, {"always"}),
    ("cull", -6.0, 0.999, {"always"}),
])
def test_each_ship_rule_ships_the_selected_harness_only_on_its_outcomes(decision, delta, p,
                                                                       ships):
    row = _sealed_row(decision=decision, delta=delta, p=p)
    for rule in report.SHIP_RULES:
        rec = report.recommendation(row, rule=rule).iloc[0]
        assert rec["shipped"] == ("c0003" if rule in ships else BASELINE), rule
        assert bool(rec["ships"]) == (rule in ships)


def test_recommendation_keeps_the_fallback_and_says_why():
    rec = report.recommendation(_sealed_row(), fallback="c0001")
    assert rec.loc[0, "shipped"] == "c0001"
    line = report.ship_line(rec)
    assert line.startswith("keep c0001: the sealed test does not credit c0003")
    assert "+1.2 pp vs baseline [-2.8, +5.2] on 40 sealed tasks, one-sided p = 0.290" in line
    credited = report.ship_line(report.recommendation(_sealed_row(decision="credit", p=2e-5)))
    assert credited.startswith("ship c0003: the sealed test credits c0003;")
    assert credited.endswith("p < 0.001")
    chose_baseline = report.recommendation(_sealed_row(selected=BASELINE, decision="credit"))
    assert report.ship_line(chose_baseline).startswith("keep the baseline: the run kept no")
    with pytest.raises(ValueError, match="rule must be one of"):
        report.recommendation(_sealed_row(), rule="vibes")


def test_the_run_ship_line_is_the_recommendation_of_its_table(sealed_run):
    table = report.run_table(sealed_run)
    rec = report.recommendation(table).iloc[0]
    shipped = table.loc[0, "selected"] if table.loc[0, "sealed_decision"] == "credit" \
        else BASELINE
    assert rec["shipped"] == shipped
    assert report.run_ship_line(sealed_run) == report.ship_line(report.recommendation(table))


@pytest.mark.parametrize("value, p, text", [
    (0.0007035, True, "< 0.001"), (0.0, True, "< 0.001"), (0.05, True, "0.050"),
    (float("nan"), True, "n/a"), (None, False, "n/a"), (pd.NA, False, "n/a"),
    (np.float64(-1e-12), False, "0"), (123.4, False, "123"), (0.6443, False, "0.644"),
])
def test_one_formatter_for_p_and_missing_values(value, p, text):
    assert report.number(value, p=p) == text


def test_false_credit_and_keep_estimates_sum_the_posterior_probability_of_no_gain(sealed_run):
    from gsme import prior

    row = report.run_table(sealed_run).iloc[0]
    decided = sealed_run.decisions()
    measured = decided[decided["decision"].isin(prior.LEARNED_DECISIONS)]
    mix = prior.fit(prior.learned_from(measured),  # by first-K Δ; nothing learned before
                    keep=sealed_run.config.keep)
    post = prior.posterior(decided, mix, keep=sealed_run.config.keep)
    no_gain = np.where(decided["decision"].isin(prior.LEARNED_DECISIONS),
                       1.0 - post["p_positive"], np.nan)
    credited = (decided["decision"] == "credit").to_numpy()
    assert row["false_credits_estimate"] == pytest.approx(np.nansum(no_gain[credited]))
    assert row["false_keeps_estimate"] == pytest.approx(
        np.nansum(no_gain[decided["kept"].to_numpy(bool)]))
    assert row["kept"] >= 1 and 0 < row["false_keeps_estimate"] <= row["kept"]
