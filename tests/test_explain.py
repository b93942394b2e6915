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
    decisions = run.decisions().set_index("candidate")
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
