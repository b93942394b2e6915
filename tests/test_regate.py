"""Re-gating a run's trials with its own gate settings reproduces its decisions exactly, on
every simulated preset and for both gate designs."""

import pandas as pd
import pytest

from gsme import evolve, gates, sim
from gsme.evolvers.rule import RuleEvolver
from gsme.run import Run
from gsme.settings import GateConfig, RunConfig


@pytest.mark.parametrize("design", ["fixed", "adaptive"])
@pytest.mark.parametrize("preset", sim.PRESETS)
def test_credit_with_the_run_config_reproduces_the_runs_decisions(tmp_path, preset, design):
    config = RunConfig(run_seed=2, gate=GateConfig(design=design))
    with Run.create(tmp_path / "r", agent=sim.preset(preset, suite_seed=2),
                    evolver=RuleEvolver(seed=2), config=config) as run:
        evolve.run_round(run, children=2, recombinations=0, progress=False)
        stored = run.decisions()
        again = gates.credit(run.trials(split="train"), run.candidates(), split="train",
                             config=run.config.gate)
    assert len(stored) >= 1
    pd.testing.assert_frame_equal(stored.drop(columns=["round", "kept"]), again)
