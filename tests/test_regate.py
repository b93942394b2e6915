"""Re-gating a run's trials with its own gate settings reproduces its decisions exactly, on
every simulated preset and for both gate designs; replaying a run's keep rule round by
round reproduces which children it kept, for every policy."""

import numpy as np
import pandas as pd
import pytest

from gsme import evolve, experiments, gates, policy, sim
from gsme.evolvers.rule import RuleEvolver
from gsme.run import Run
from gsme.settings import GateConfig, RunConfig


@pytest.mark.parametrize("design", ["fixed", "adaptive"])
@pytest.mark.parametrize("preset", sim.PRESETS)
def test_credit_with_the_run_config_reproduces_the_runs_decisions(tmp_path, preset, design):
    config = RunConfig(run_seed=2, gate=GateConfig(design=design))
    with Run.create(tmp_path / "r", agent=sim.preset(preset, suite_seed=2),
                    evolver=RuleEvolver(seed=2), run_config=config) as run:
        evolve.run_round(run, children=2, recombinations=0, progress=False)
        stored = run.decisions()
        again = gates.credit(run.trials(split="train"), run.candidates(), split="train",
                             gate=run.config.gate)
    assert len(stored) >= 1
    pd.testing.assert_frame_equal(
        stored.drop(columns=["round", "kept", "expected_delta_pp"]), again)


@pytest.mark.parametrize("name", policy.POLICIES)
def test_replaying_the_keep_rule_reproduces_what_the_run_kept(tmp_path, name):
    with experiments.simulated_run("tb2", root=tmp_path, seed=4, rounds=3, policy=name,
                                   finalize=False) as run:
        stored = run.decisions()
        regated = gates.credit(run.trials(split="train"), run.candidates(), split="train",
                               gate=run.config.gate)
        replayed = []
        for r in sorted(stored["round"].unique()):
            mine = stored["round"] == r
            decided = regated.set_index("child").loc[stored.loc[mine, "child"]]
            decided = decided.reset_index()
            replayed.append(policy.screen(decided, policy=name,
                                          past=run.comparisons(before_round=r),
                                          keep=run.config.keep))
        replayed = pd.concat(replayed, ignore_index=True)
    assert len(stored) >= 6
    assert stored["kept"].tolist() == replayed["kept"].tolist()
    np.testing.assert_allclose(stored["expected_delta_pp"], replayed["expected_delta_pp"])
