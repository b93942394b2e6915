"""report.cost_table on a simulated run whose evolver records synthetic API calls."""

import math

import numpy as np
import pandas as pd
import pytest

from gsme import evolve, measure, report, sim
from gsme.evolvers.rule import RuleEvolver
from gsme.run import Run
from gsme.settings import RunConfig, Schedule

COLUMNS = ["round", "evolver_calls", "evolver_input_tokens", "evolver_output_tokens",
           "evolver_usd", "trials", "trial_tokens", "trial_usd", "total_usd"]


class CallingEvolver(RuleEvolver):
    """A rule evolver that logs one synthetic API call per diagnose and per propose."""

    def diagnose(self, failures, *, log=None, **kwargs):
        log(call("diagnose", input_tokens=100, output_tokens=10,
                 cache_creation_input_tokens=1000, cost_usd=0.25))
        return super().diagnose(failures, **kwargs)

    def propose(self, diagnoses, *, log=None, **kwargs):
        log(call("propose", input_tokens=50, output_tokens=20,
                 cache_read_input_tokens=1000, cost_usd=0.5))
        return super().propose(diagnoses, **kwargs)


def call(kind, *, cost_usd, **tokens):
    counts = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
              "cache_read_input_tokens": 0, **tokens}
    return {"call_id": kind, "kind": kind, "model": "m", **counts, "cost_usd": cost_usd}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("cost") / "run"
    # failure modes concentrated on a third of the tasks: narrow env gates, borrowed trials
    run = Run.create(path, agent=sim.SimAgent("tiny", suite_seed=1, breadth=0.33),
                     evolver=CallingEvolver(seed=1), run_config=RunConfig(run_seed=1),
                     schedule=Schedule(children_per_round=3, recombinations_per_round=1))
    run.record("calls", call("warm-up", input_tokens=7, cost_usd=0.125), round=None)  # no round
    evolve.evolve(run, rounds=2, progress=False)
    measure.finalize(run, progress=False)
    yield run
    run.close()


def test_evolver_calls_are_recorded_with_their_round(run):
    calls = run.calls()
    assert calls["kind"].tolist() == ["warm-up"] + ["diagnose", "propose"] * 2
    assert [None if pd.isna(r) else r for r in calls["round"]] == [None, 1, 1, 2, 2]


def test_cost_per_round_adds_up_calls_and_unborrowed_trials(run):
    table = report.cost_table(run)
    assert list(table.columns) == COLUMNS
    assert table["round"].tolist()[:4] == [0, 1, 2, -1] and pd.isna(table["round"].iloc[4])
    rows = table.iloc[:4].set_index("round")
    assert rows["evolver_calls"].tolist() == [0, 2, 2, 0]
    assert rows["evolver_input_tokens"].tolist() == [0, 2150, 2150, 0]
    assert rows["evolver_output_tokens"].tolist() == [0, 30, 30, 0]
    assert rows["evolver_usd"].tolist() == [0, 0.75, 0.75, 0]
    trials = run.trials()
    assert trials["borrowed_from"].notna().any()  # so leaving them out is tested
    own = trials[trials["borrowed_from"].isna()]
    expected = own.groupby("round").agg(trials=("tokens", "size"), trial_tokens=("tokens", "sum"),
                                        trial_usd=("cost_usd", "sum"))
    assert own[["cost_usd", "tokens"]].notna().all().all() and own["cost_usd"].sum() > 0
    for column in ("trials", "trial_tokens", "trial_usd"):
        np.testing.assert_allclose(rows[column].to_numpy(np.float64),
                                   expected.loc[[0, 1, 2, -1], column].to_numpy(np.float64))
    assert rows["trials"].sum() == run.trials_spent()
    np.testing.assert_allclose(rows["total_usd"], rows["evolver_usd"] + rows["trial_usd"])
    warm_up = table.iloc[[4]]
    assert warm_up[["evolver_calls", "evolver_input_tokens", "trials", "total_usd"]].values.tolist() \
        == [[1, 7, 0, 0.125]]
    assert table["evolver_calls"].dtype == np.int64 and table["trials"].dtype == np.int64


def test_an_unknown_cost_is_nan_for_its_round_not_zero(tmp_path):
    run = Run.create(tmp_path / "r", agent=sim.SimAgent("tiny", suite_seed=1),
                     evolver=CallingEvolver(seed=1))
    evolve.cold_start(run, progress=False)
    run.record("calls", call("diagnose", input_tokens=1, cost_usd=math.nan), round=1)
    run.record("calls", call("propose", input_tokens=1, cost_usd=0.5), round=1)
    table = report.cost_table(run)
    assert list(table.columns) == COLUMNS and table["round"].tolist() == [0, 1]
    assert table["evolver_calls"].tolist() == [0, 2] and table["trials"].tolist() == [
        len(run.trials()), 0]
    assert table["evolver_input_tokens"].tolist() == [0, 2]
    assert table["total_usd"].iloc[0] == pytest.approx(run.trials()["cost_usd"].sum())
    assert table["evolver_usd"].iloc[0] == 0
    assert math.isnan(table["evolver_usd"].iloc[1]) and math.isnan(table["total_usd"].iloc[1])
