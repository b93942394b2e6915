"""Making the loop cheaper changed no result: digests pinned with the code before it.

Two kinds of check, each a SHA-256 of frames written as CSV (floats to 10 significant
digits, rows in the order the library returns them):

* the gates, the scoring plan and the statistics on synthetic trials (infrastructure
  failures and re-runs, borrowed rows, extended repeats, env-gated mutations): they depend
  on gsme's statistics and scoring only;
* whole simulated runs (fixed and adaptive designs; presets tiny, tb2 and swe-bench;
  policies greedy and gated): their trials, decisions and sealed results. These also
  depend on the simulator and the rule evolver, so a deliberate change there changes them.

Since 0.3.0 children are compared with a fresh block of parent trials by default; the
checks above run with ``parent_trials="stored"``, the comparison they were pinned with
(re-pinned when the decisions' ``expected_delta_pp``, which moved on purpose as the keep
rule's prior came to learn from the first look, was left out of the digest: the same
digests at 0.2's code and at 0.3.0's). Runs under fresh blocks are pinned apart.

A change meant to alter results re-pins them: ``python tests/test_identity.py`` prints
the digests of the code as it is.
"""

from __future__ import annotations

import hashlib
import tempfile

import numpy as np
import pandas as pd
import pytest

from gsme import _renamed, designs, experiments, gates, scoring, stats
from gsme.settings import GateConfig, RunConfig

STORED = {"parent_trials": "stored"}  # the comparison these digests were pinned with
DESIGNS = {
    "fixed": GateConfig(design="fixed", **STORED),
    "adaptive": GateConfig(**STORED),
    "adaptive-normal-exact": GateConfig(reference="normal", exact_below=12, futility_z=None,
                                        **STORED),
}
ADDED = ["first_delta_pp", "first_se_pp"]  # decision columns added since: digested apart
LEARNED = ["expected_delta_pp"]  # moved on purpose when the prior learned from the first look
RUNS = [("tiny", "fixed", "greedy"), ("tiny", "adaptive", "gated"),
        ("tb2", "adaptive", "greedy"), ("tb2", "fixed", "gated"),
        ("swe-bench", "adaptive", "gated"), ("swe-bench", "fixed", "greedy")]
FRESH_RUNS = [("tiny", "adaptive", "greedy"), ("tb2", "fixed", "gated")]
"""Runs under fresh parent trials (the default since 0.3.0), pinned when it came."""

PINNED_GATES = {"fixed": "9b411aea1f52d4b9", "adaptive": "a36b6c8d68373892",
                "adaptive-normal-exact": "389b2cfd43da1595", "rates": "4c3bec677de5ad5f"}
PINNED_RUNS = {"tiny-fixed-greedy": "e97be59cc1899d97",
               "tiny-adaptive-gated": "b69b98b60ddf01cb",
               "tb2-adaptive-greedy": "3f22c3afdaf31740",
               "tb2-fixed-gated": "8546a9ec1318d67e",
               "swe-bench-adaptive-gated": "3e7e6edd7ac2dd7d",
               "swe-bench-fixed-greedy": "4b4367bb81c0ebeb"}
PINNED_FRESH_RUNS = {"tiny-adaptive-greedy": "f379454e582227a0", "tb2-fixed-gated": "dd59a055f9e231a2"}


RENAMED = _renamed.COLUMNS  # columns renamed since the pinning: digested by the old name


def digest(*frames: pd.DataFrame) -> str:
    """SHA-256 of the frames' values (text as written to CSV, floats to 10 digits)."""
    h = hashlib.sha256()
    for frame in frames:
        h.update(frame.rename(columns=RENAMED).to_csv(index=False, float_format="%.10g")
                 .encode())
    return h.hexdigest()[:16]


def synthetic(seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Trials, candidates and tasks of a small run with every kind of row."""
    rng = np.random.default_rng(seed)
    n_cand, n_train, n_test = 12, 24, 6
    names = ["baseline"] + [f"m{i:02d}" for i in range(1, n_cand)]
    parent = [None] + [names[int(rng.integers(0, i))] for i in range(1, n_cand)]
    gate = [None] + [str(rng.choice(["", "hard", "not hard", 'category == "a"']))
                     for _ in range(1, n_cand)]
    candidates = pd.DataFrame({
        "candidate": names, "parents": [p or "" for p in parent],
        "kind": ["baseline"] + ["mutation"] * (n_cand - 1),
        "where": [None] + ["prompt"] * (n_cand - 1), "why": None, "patch_id": None,
        "beacon": [None] + [f"b{i}" for i in range(1, n_cand)], "env_gate": gate,
        "commit": None, "branch": None, "round": np.arange(n_cand), "rationale": None,
    })
    ids = [f"t{j:02d}" for j in range(n_train + n_test)]
    tasks = pd.DataFrame({"task_id": ids, "split": ["train"] * n_train + ["test"] * n_test,
                          "category": rng.choice(["a", "b"], len(ids)),
                          "hard": rng.random(len(ids)) < 0.4})
    rows = []
    for c, name in enumerate(names[:-2]):  # the last two are not scored yet
        effect = rng.normal(0, 0.15)
        for j, task in enumerate(ids):
            split = tasks["split"][j]
            if split == "test" and c > 1:
                continue
            extra = 6 if rng.random() < 0.3 else 0
            for repeat in range(3 + extra):
                lent = c > 0 and rng.random() < 0.15
                for attempt in range(3):
                    ok = rng.random() > 0.1
                    rows.append({"candidate": name, "task_id": task, "split": split,
                                 "repeat": repeat, "attempt": attempt,
                                 "passed": ok and rng.random() < 0.5 + effect,
                                 "infra_ok": ok, "activated": c > 0 and rng.random() < 0.5,
                                 "beacons": f"b{c}" if c else "", "tokens": rng.random(),
                                 "borrowed_from": parent[c] if lent else None})
                    if ok or rng.random() < 0.02:  # else re-run; a few wait for theirs
                        break
    return pd.DataFrame(rows), candidates, tasks


def gate_digests() -> dict[str, str]:
    trials, candidates, tasks = synthetic()
    children = candidates[candidates["kind"] != "baseline"]
    pairs = pd.DataFrame({"child": children["candidate"], "parent": children["parents"]})
    out = {}
    for name, config in DESIGNS.items():
        wanted = designs.wanted(trials, pairs, tasks, split="train", gate=config)
        plan = scoring.plan_trials(trials, candidates, tasks, wanted,
                                   run_config=RunConfig(gate=config))
        specs = pd.DataFrame([vars(s) for s in plan.specs])
        out[name] = digest(
            gates.credit(trials, candidates, gate=config).drop(columns=ADDED),
            designs.looks(trials, pairs, gate=config),
            designs.decided_repeats(trials, pairs, gate=config),
            gates.validity_gate(trials, gate=config),
            stats.paired_test(trials, parent="baseline", child="m01", gate=config),
            wanted, specs, plan.borrowed)
    out["rates"] = digest(stats.task_rates(trials), scoring.behaviour(candidates, tasks))
    return out


def run_digest(preset: str, design: str, policy: str, root, *, fresh: bool = False) -> str:
    gate = (DESIGNS[design].model_copy(update={"parent_trials": "fresh"}) if fresh
            else DESIGNS[design])
    run = experiments.simulated_run(preset, root=root, seed=1, rounds=3, policy=policy,
                                    gate=gate)
    try:
        trials = run.trials()
        assert not trials["score"].notna().any()  # simulated trials carry no graded score
        # the ledger's score column came later: an empty one digests as none
        decisions = run.decisions()
        if fresh:
            return digest(trials.drop(columns="score"), decisions, run.sealed_result)
        return digest(trials.drop(columns="score"), decisions.drop(columns=ADDED + LEARNED),
                      run.sealed_result)
    finally:
        run.close()


def test_gates_plans_and_statistics_are_those_pinned():
    assert gate_digests() == PINNED_GATES


@pytest.mark.parametrize("preset,design,policy", RUNS)
def test_simulated_runs_end_with_the_pinned_trials_decisions_and_sealed_result(
        preset, design, policy, tmp_path):
    pinned = PINNED_RUNS[f"{preset}-{design}-{policy}"]
    assert run_digest(preset, design, policy, tmp_path) == pinned


@pytest.mark.parametrize("preset,design,policy", FRESH_RUNS)
def test_runs_under_fresh_parent_trials_are_those_pinned(preset, design, policy, tmp_path):
    pinned = PINNED_FRESH_RUNS[f"{preset}-{design}-{policy}"]
    assert run_digest(preset, design, policy, tmp_path, fresh=True) == pinned


if __name__ == "__main__":  # print the digests of the code as it is, to pin them
    print("PINNED_GATES =", gate_digests())
    print("PINNED_RUNS =", {f"{p}-{d}-{q}": run_digest(p, d, q, tempfile.mkdtemp())
                            for p, d, q in RUNS})
    print("PINNED_FRESH_RUNS =", {f"{p}-{d}-{q}": run_digest(p, d, q, tempfile.mkdtemp(),
                                                             fresh=True)
                                  for p, d, q in FRESH_RUNS})
