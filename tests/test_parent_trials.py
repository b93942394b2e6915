"""gsme.parent_trials: children compared with a fresh block of their parent's trials."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from gsme import experiments, gates, parent_trials
from gsme._run_dir import stored_config
from gsme.settings import GateConfig

FIXED = GateConfig(design="fixed", min_tasks=2)


def _candidates(rounds=(1,)):
    rows = [{"candidate": "p", "parents": "", "kind": "baseline", "round": 0}]
    rows += [{"candidate": f"c{r}", "parents": "p", "kind": "mutation", "round": r}
             for r in rounds]
    frame = pd.DataFrame(rows)
    for column in ("where", "why", "patch_id", "beacon", "env_gate", "commit", "branch",
                   "rationale"):
        frame[column] = None
    return frame


def _trials(parent: np.ndarray, child: np.ndarray) -> pd.DataFrame:
    """Parent outcomes (tasks × repeats, every block) and child outcomes (tasks × k)."""
    rows = []
    for name, grid in (("p", parent), ("c1", child)):
        for (t, r), passed in np.ndenumerate(grid):
            rows.append({"candidate": name, "task_id": f"t{t}", "split": "train",
                         "repeat": r, "passed": bool(passed), "activated": name == "c1"})
    return pd.DataFrame(rows)


def _sign_flip_p(d: np.ndarray) -> float:
    """The exact one-sided p of mean(d) by enumerating every sign flip (brute force)."""
    observed = d.mean()
    flips = np.array(list(itertools.product([1, -1], repeat=len(d))))
    return float(((flips * d).mean(axis=1) >= observed - 1e-12).mean())


@pytest.mark.parametrize("mode,block", [("fresh", slice(3, 6)), ("stored", slice(0, 6))])
def test_fresh_comparison_reads_the_block_brute_force(mode, block):
    rng = np.random.default_rng(5)
    parent = rng.random((5, 6)) < np.array([[0.9], [0.2], [0.6], [0.5], [0.8]])
    child = rng.random((5, 3)) < 0.7
    config = FIXED.model_copy(update={"parent_trials": mode})
    decided = gates.credit(_trials(parent, child), _candidates(), gate=config).iloc[0]
    d = child.mean(axis=1) - parent[:, block].mean(axis=1)
    assert decided["parent"] == "p"
    assert decided["delta_pp"] == pytest.approx(100 * d.mean(), abs=1e-9)
    assert decided["rate_parent"] == pytest.approx(parent[:, block].mean())
    assert decided["se_pp"] == pytest.approx(100 * d.std(ddof=1) / np.sqrt(len(d)))
    changed = int((d != 0).sum())
    expected = (_sign_flip_p(d[d != 0]) if changed < config.exact_below else
                sps.ttest_1samp(d, 0, alternative="greater").pvalue)
    assert decided["p_one_sided"] == pytest.approx(expected)


def test_blocks_follow_the_round_and_the_design():
    cands = _candidates(rounds=(1, 1, 3))
    cands.loc[2, "candidate"] = "c1b"
    adaptive = GateConfig(design="adaptive", k=3, k_max=9)
    got = parent_trials.pairs(cands, gate=adaptive)
    assert got["first"].tolist() == [9, 9, 27]
    assert got["reference"].tolist() == ["p@9", "p@9", "p@27"]
    on_test = parent_trials.pairs(cands, split="test", gate=adaptive)
    assert on_test["first"].tolist() == [0, 0, 0]
    with pytest.raises(KeyError, match="unknown candidate"):
        parent_trials.pairs(cands, ["c9"], gate=adaptive)


def test_old_runs_read_stored_and_new_ones_keep_their_setting():
    assert stored_config({"gate": {"k": 3}})["gate"] == {"k": 3, "parent_trials": "stored"}
    assert stored_config({})["gate"] == {"parent_trials": "stored"}
    kept = {"gate": {"parent_trials": "fresh"}}
    assert stored_config(kept) is kept


@pytest.fixture(scope="module")
def fresh_run(tmp_path_factory):
    run = experiments.simulated_run(  # SIMULATED
        "tiny", root=tmp_path_factory.mktemp("fresh"), seed=4, rounds=3, finalize=False,
        gate=GateConfig(design="adaptive"))
    yield run
    run.close()


def test_children_borrow_only_from_their_block_and_blocks_never_borrow(fresh_run):
    trials = fresh_run.trials(split="train")
    stride = parent_trials.stride(fresh_run.config.gate)
    paired = parent_trials.pairs(fresh_run.candidates(), gate=fresh_run.config.gate)
    first = dict(zip(paired["child"], paired["first"]))
    parent = dict(zip(paired["child"], paired["parent"]))
    blocks = trials[trials["repeat"] >= stride]
    assert len(blocks) and blocks["borrowed_from"].isna().all()
    lent = trials[trials["borrowed_from"].notna()]
    assert len(lent)
    assert (lent["borrowed_from"] == lent["candidate"].map(parent)).all()
    source = trials.set_index(["candidate", "task_id", "repeat", "attempt"])["passed"]
    for row in lent.itertuples():
        assert source[(row.borrowed_from, row.task_id, row.repeat + first[row.candidate],
                       row.attempt)] == row.passed


def test_replayed_decisions_equal_the_recorded_ones(fresh_run):
    again = gates.credit(fresh_run.trials(split="train"), fresh_run.candidates(),
                         gate=fresh_run.config.gate)
    recorded = fresh_run.decisions()
    assert again["decision"].tolist() == recorded["decision"].tolist()
    np.testing.assert_allclose(again["delta_pp"], recorded["delta_pp"])
    np.testing.assert_allclose(again["first_delta_pp"], recorded["first_delta_pp"])


def test_first_look_delta_is_the_fixed_design_on_the_first_k(fresh_run):
    gate = fresh_run.config.gate
    trials = fresh_run.trials(split="train")
    paired = parent_trials.pairs(fresh_run.candidates(), gate=gate)
    seen = parent_trials.view(trials, paired, gate=gate)
    first_k = seen[seen["repeat"] < gate.k]
    fixed = gate.model_copy(update={"design": "fixed", "parent_trials": "stored"})
    pairs = paired.rename(columns={"parent": "real", "reference": "parent"})
    by_hand = gates.significance_gate(first_k, pairs[["child", "parent"]], gate=fixed)
    decided = fresh_run.decisions()
    measured = decided["decision"].isin(["credit", "cull", "inconclusive"]).to_numpy()
    assert measured.any()
    np.testing.assert_allclose(decided["first_delta_pp"].to_numpy()[measured],
                               by_hand["delta_pp"].to_numpy()[measured])
