import math

import numpy as np
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
    assert table["false_credits_bound"] == pytest.approx(
        table["significance_tests"] * gate.alpha)
    assert not {"train_p", "sealed_p", "expected_false_credits"} & set(table.index)


def test_false_credit_and_keep_estimates_sum_the_posterior_probability_of_no_gain(sealed_run):
    from gsme import prior

    row = report.run_table(sealed_run).iloc[0]
    decided = sealed_run.decisions()
    measured = decided[decided["decision"].isin(prior.LEARNED_DECISIONS)]
    mix = prior.fit(measured, config=sealed_run.config.keep)  # nothing learned from before
    post = prior.posterior(decided, mix, config=sealed_run.config.keep)
    no_gain = np.where(decided["decision"].isin(prior.LEARNED_DECISIONS),
                       1.0 - post["p_positive"], np.nan)
    credited = (decided["decision"] == "credit").to_numpy()
    assert row["false_credits_estimate"] == pytest.approx(np.nansum(no_gain[credited]))
    assert row["false_keeps_estimate"] == pytest.approx(
        np.nansum(no_gain[decided["kept"].to_numpy(bool)]))
    assert row["kept"] >= 1 and 0 < row["false_keeps_estimate"] <= row["kept"]
