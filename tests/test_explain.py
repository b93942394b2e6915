"""gsme.explain: a candidate's patch detail and its trials beside its parent's."""

import subprocess

import numpy as np
import pandas as pd
import pytest

from gsme import explain
from gsme.experiments import simulated_run
from gsme.schema import BASELINE


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    with simulated_run("tiny", root=tmp_path_factory.mktemp("runs"), seed=0, rounds=1) as run:
        yield run


def git_diff(run, a, b):
    commit = run.candidates().set_index("candidate")["commit"]
    return subprocess.run(["git", "-C", str(run.path / run.REPO), "diff", commit[a], commit[b],
                           "--"], check=True, capture_output=True, text=True).stdout


def test_diff_equals_git_diff_of_the_two_commits(run):
    details = explain.patch_details(run)
    assert details["candidate"].tolist() == run.candidates()["candidate"].tolist()
    for row in details.itertuples():
        if row.candidate == BASELINE:
            assert row.parent is None or pd.isna(row.parent)
            assert row.diff.startswith("diff --git") and "new file mode" in row.diff
            continue
        expected = git_diff(run, row.parent, row.candidate)
        assert row.diff == expected and row.diff.strip()
        assert f"+beacon = \"{row.beacon}\"" in row.diff  # the patch's own manifest


def test_patch_detail_carries_the_decision_and_the_activation_rate(run):
    details = explain.patch_details(run).set_index("candidate")
    decisions = run.decisions().set_index("child")
    trials = run.trials(split="train")
    for name, decision in decisions.iterrows():
        row = details.loc[name]
        assert (row["parent"], row["decision"]) == (decision["parent"], decision["decision"])
        assert row["z"] == pytest.approx(decision["z"])
        assert row["p_one_sided"] == pytest.approx(decision["p_one_sided"])
        assert bool(row["kept"]) == bool(decision["kept"])
        own = trials[(trials["candidate"] == name) & trials["infra_ok"]]
        assert row["n_trials"] == len(own)
        assert row["activation_rate"] == pytest.approx(own["activated"].mean())
        assert row["rationale"] == run.candidates().set_index("candidate").at[name, "rationale"]
    assert np.isnan(details.at[BASELINE, "activation_rate"])
    assert pd.isna(details.at[BASELINE, "decision"])
    one = explain.patch_details(run, candidates=["c0002"])
    assert one["candidate"].tolist() == ["c0002"]
    with pytest.raises(ValueError, match="c9999"):
        explain.patch_details(run, candidates=["c9999"])


def test_side_by_side_rows_match_the_trials_frame(run):
    trials = run.trials(split="train")
    pairs = explain.paired_trials(trials, parent=BASELINE, child="c0001")
    for side, name in (("parent", BASELINE), ("child", "c0001")):
        own = (trials[trials["candidate"] == name].sort_values("attempt")  # re-runs replace
               .drop_duplicates(["task_id", "repeat"], keep="last")
               .set_index(["task_id", "repeat"]))
        present = pairs[pairs[f"passed_{side}"].notna()]
        assert len(present) == len(own)
        for r in present.itertuples():
            trial = own.loc[(r.task_id, r.repeat)]
            assert getattr(r, f"passed_{side}") == trial["passed"]
            assert getattr(r, f"trajectory_{side}") == trial["trajectory"]
            label = getattr(r, f"pathology_{side}")
            assert (pd.isna(label) and pd.isna(trial["pathology"])) or label == trial["pathology"]
    both = pairs.dropna(subset=["passed_parent", "passed_child"])
    fixed = both[~both["passed_parent"].astype(bool) & both["passed_child"].astype(bool)]
    assert (fixed["change"] == "fixed").all() and (pairs["change"] == "fixed").sum() == len(fixed)
    assert set(pairs["change"]) <= set(explain.CHANGES)


def test_filters_by_task_pathology_and_change(run):
    trials = run.trials(split="train")
    every = explain.paired_trials(trials, parent=BASELINE, child="c0001")
    task = every["task_id"].iloc[0]
    assert set(explain.paired_trials(trials, parent=BASELINE, child="c0001",
                                     task_id=task)["task_id"]) == {task}
    label = every["pathology_parent"].dropna().iloc[0]
    hit = explain.paired_trials(trials, parent=BASELINE, child="c0001", pathology=label)
    assert len(hit) and ((hit["pathology_parent"] == label) | (hit["pathology_child"] == label)).all()
    moved = explain.paired_trials(trials, parent=BASELINE, child="c0001",
                                  change=["fixed", "broken"])
    assert len(moved) == every["change"].isin(["fixed", "broken"]).sum()
    with pytest.raises(ValueError, match="change must be among"):
        explain.paired_trials(trials, parent=BASELINE, child="c0001", change="better")


def test_archive_progress_and_why_levels(run):
    whys = explain.why_levels(run)
    assert whys[:len(run.vocabulary.labels)] == run.vocabulary.labels
    progress = explain.archive_progress(run)
    assert progress["round"].tolist() == [0, 1]
    last = run.archive()
    assert progress["num_elites"].iloc[-1] == len(last)
    assert progress["coverage"].iloc[-1] == pytest.approx(len(last) / (4 * len(whys)))
    names = explain.elite_names(last, why_levels=whys)
    for row in last.itertuples():
        assert names.loc[row.where, row.why] == row.candidate
    assert names.notna().sum().sum() == len(last)


def test_selected_is_the_sealed_harness(run):
    sealed = run.sealed_result
    assert explain.selected(run) == sealed.loc[sealed["role"] == "selected", "candidate"].iloc[0]


def test_transcripts_list_each_stored_transcript_once(run):
    frame = explain.transcripts(run)
    trials = run.trials()
    assert set(frame["trajectory"]) == set(trials["trajectory"].dropna())
    assert frame["trajectory"].is_unique
    first = frame.iloc[0]
    assert first["text"] == run.transcript(first["trajectory"])


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    """A 3-round learned run on tb2 (SIMULATED) with kept-but-uncredited children."""
    with simulated_run("tb2", root=tmp_path_factory.mktemp("learned"), seed=0, rounds=3,
                       finalize=False) as run:
        yield run


def test_keep_reasons_refit_the_mix_the_loop_read(learned):
    decided = learned.decisions()
    reasons = explain.keep_reasons(learned)
    assert reasons["child"].tolist() == decided["child"].tolist()
    np.testing.assert_allclose(reasons["expected_delta_pp"].to_numpy(float),
                               decided["expected_delta_pp"].to_numpy(float), equal_nan=True)
    assert (reasons["kept"] == decided["kept"].astype(bool)).all()
    measured = decided["decision"].isin(["credit", "cull", "inconclusive"])
    # the mix learns from every measured comparison of the rounds up to the decision's own
    for r, count in reasons.groupby("round")["comparisons"].first().items():
        assert count == int((measured & (decided["round"] <= r)).sum())
    inside = reasons.dropna(subset=["expected_delta_pp"])
    assert (inside["expected_low_pp"] <= inside["expected_delta_pp"] + 1e-9).all()
    assert (inside["expected_delta_pp"] <= inside["expected_high_pp"] + 1e-9).all()


def test_each_decision_has_the_boundary_of_the_look_that_made_it(learned):
    from gsme import designs

    bounds = designs.boundaries(learned.config.gate).set_index("look")["boundary"]
    reasons = explain.keep_reasons(learned)
    looked = reasons.dropna(subset=["look"])
    assert len(looked) and (looked["look"] == learned.decisions().loc[looked.index, "looks"]).all()
    np.testing.assert_allclose(looked["boundary"], bounds.loc[looked["look"]].to_numpy())
    assert set(looked["look"]) > {1}  # the adaptive design decides at several looks


def test_a_kept_but_uncredited_child_says_why(learned):
    reasons = explain.keep_reasons(learned)
    uncredited = reasons[reasons["kept"] & ~reasons["credited"]]
    assert len(uncredited), "the seed should keep a child without a credit"
    row = uncredited.iloc[0]
    assert row["expected_delta_pp"] > row["worth_pp"] == learned.config.keep.worth_pp
    text = row["keep_reason"]
    assert text.startswith("kept without a credit: expected Δ above worth_pp. Gate: "
                           f"{row['decision']}")
    assert f"Learned mix ({row['comparisons']} comparisons): expected Δ +" in text
    assert "worth_pp 0.25" in text and f"look {row['look']}" in text
    dropped = reasons[~reasons["kept"] & reasons["decision"].isin(["inconclusive"])]
    assert dropped["keep_reason"].str.startswith("not kept: not credited").all()


def test_posterior_interval_on_a_two_point_mix_by_hand():
    from gsme.settings import KeepConfig

    mix = pd.DataFrame({"effect_pp": [0.0, 10.0], "weight": [0.5, 0.5]})
    # delta 5 with se 2.5: each side has likelihood exp(-2); the interval spans both points
    low, high = explain._posterior_interval(
        pd.DataFrame({"delta_pp": [5.0, 10.0, np.nan], "se_pp": [2.5, 1.0, 1.0]}), mix,
        KeepConfig())
    assert low[:2].tolist() == [0.0, 10.0] and high[:2].tolist() == [10.0, 10.0]
    assert np.isnan(low[2]) and np.isnan(high[2])


def test_one_train_rate_per_harness_everywhere(learned):
    from gsme import stats

    rates = explain.train_rates(learned).set_index("candidate")
    first = stats.first_repeats(learned.trials(split="train"), k=learned.config.gate.k)
    valid = first[first["infra_ok"]].sort_values("attempt").drop_duplicates(
        ["candidate", "task_id", "repeat"], keep="last")
    by_hand = valid.groupby(["candidate", "task_id"])["passed"].mean().groupby("candidate").mean()
    np.testing.assert_allclose(rates.loc[by_hand.index, "rate"], by_hand)
    table = explain.archive_table(learned)
    assert (table["rate"].to_numpy() == rates.loc[table["candidate"], "rate"].to_numpy()).all()
    assert not np.allclose(table["rate"], learned.archive()["rate"])  # the decision's repeats
    details = explain.patch_details(learned).set_index("candidate")
    assert (details.loc[table["candidate"], "train_rate"].to_numpy()
            == table["rate"].to_numpy()).all()
