"""Budgets in dollars and hours (gsme.budget): a run stops at a round boundary when the next
round and the sealed test's reserve would exceed them, seals anyway, keeps its budget when
resumed; gsme status and gsme plan show the figures. All on the simulator (its trials carry
cost_usd and seconds)."""

import dataclasses
import json
import math

import pandas as pd
import pytest

from gsme import budget, evolve, measure, sim
from gsme.cli import main
from gsme.config import load
from gsme.evolvers.rule import RuleEvolver
from gsme.run import Run, RunError
from gsme.settings import ConfigError, GateConfig, RunConfig, Schedule

SEED = 3
CONFIG = RunConfig(run_seed=SEED, policy="gated", gate=GateConfig(design="fixed"))


def _run(path, **budgets):
    return Run.create(path, agent=sim.SimAgent("tiny", suite_seed=SEED),
                      evolver=RuleEvolver(seed=SEED), run_config=CONFIG,
                      schedule=Schedule(rounds=3, **budgets),
                      agent_spec={"kind": "sim", "preset": "tiny", "suite_seed": SEED},
                      evolver_spec={"kind": "rule", "seed": SEED})


@pytest.fixture(scope="module")
def needs(tmp_path_factory):
    """For dollars and hours, what the checks before rounds 1 and 2 of an unbudgeted run
    compare with a budget (spent + next round + sealed reserve), and the sealed reserve
    before round 2."""
    with _run(tmp_path_factory.mktemp("reference") / "run") as run:
        evolve.evolve(run, rounds=0, progress=False)
        first = budget.account(run).iloc[0]
        evolve.evolve(run, rounds=1, progress=False)
        second = budget.account(run).iloc[0]
        ran = run.trials().query("borrowed_from.isna()")
    # the account adds up the trials as they are recorded
    assert second["usd"] == pytest.approx(ran["cost_usd"].sum())
    assert second["hours"] == pytest.approx(ran["seconds"].sum() / 3600 / CONFIG.workers)
    out = {}
    for figure in ("usd", "hours"):
        total = [row[figure] + row[f"round_{figure}"] + row[f"seal_{figure}"]
                 for row in (first, second)]
        out[figure] = total[0], total[1], second[f"seal_{figure}"]
    return out


@pytest.mark.parametrize("figure", ["usd", "hours"])
def test_a_budget_stops_at_the_round_boundary_the_sealed_reserve_decides_and_the_run_seals(
        tmp_path, figure, needs):
    need1, need2, seal = needs[figure]
    limit = need2 - seal / 2  # round 2 fits without the sealed test's reserve, not with it
    assert need1 <= limit < need2 and need2 - seal <= limit
    with _run(tmp_path / "budgeted", **{f"budget_{figure}": limit}) as run:
        evolve.evolve(run, progress=False)
        assert run.rounds_done() == 1
        stop = run.events("budget_reached")
        assert stop["round"].tolist() == [2]
        assert stop["payload"].iloc[0]["reason"].startswith(f"budget_{figure} ")
        measure.finalize(run, progress=False)
        assert run.sealed_result is not None  # the seal is never skipped
        assert len(run.trials(split="test")) > 0
    with _run(tmp_path / "roomy", **{f"budget_{figure}": need2 * 1.001}) as run:
        evolve.evolve(run, rounds=2, progress=False)
        assert run.rounds_done() == 2  # the same run with room for round 2 runs it
        assert run.events("budget_reached").empty


def test_a_resumed_run_keeps_its_budget_and_runs_nothing_more(tmp_path, needs):
    _, need2, seal = needs["usd"]
    with _run(tmp_path / "run", budget_usd=need2 - seal / 2) as run:
        evolve.evolve(run, progress=False)
        spent = run.trials_spent()
    with Run.open(tmp_path / "run") as again:
        assert again.schedule.budget_usd == pytest.approx(need2 - seal / 2)
        evolve.evolve(again, progress=False)
        assert again.rounds_done() == 1 and again.trials_spent() == spent
        measure.finalize(again, progress=False)
        assert again.sealed_result is not None


class _NoCost(sim.SimAgent):
    """A simulated agent whose trials report no dollars (as a runner without a price)."""

    def _trial(self, *args, **kwargs):
        return dataclasses.replace(super()._trial(*args, **kwargs), cost_usd=math.nan)


def test_a_dollar_budget_without_trial_costs_stops_before_the_first_round_and_says_so(
        tmp_path):
    with Run.create(tmp_path / "run", agent=_NoCost("tiny", suite_seed=SEED),
                    evolver=RuleEvolver(seed=SEED), run_config=CONFIG,
                    schedule=Schedule(rounds=2, budget_usd=1000.0)) as run:
        evolve.evolve(run, progress=False)
        assert run.rounds_done() == 0
        reason = run.events("budget_reached")["payload"].iloc[0]["reason"]
        assert "no trial of the run reports its cost_usd" in reason
        measure.finalize(run, progress=False)
        assert run.sealed_result is not None


def test_status_shows_dollars_and_hours_spent_of_the_budget(tmp_path, capsys, needs):
    _, need2, seal = needs["usd"]
    limit = need2 - seal / 2
    with _run(tmp_path / "run", budget_usd=limit, budget_hours=1000.0) as run:
        evolve.evolve(run, progress=False)
        row = budget.account(run).iloc[0]
    capsys.readouterr()
    assert main(["status", str(tmp_path / "run"), "--json"]) == 0
    state = json.loads(capsys.readouterr().out)
    assert state["usd_spent"] == pytest.approx(row["usd"])
    assert state["hours_spent"] == pytest.approx(row["hours"])
    assert state["budget_usd"] == pytest.approx(limit) and state["budget_hours"] == 1000.0
    assert state["budget_stop"].startswith("budget_usd ")
    assert main(["status", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert f"$ spent: {row['usd']:.3g} of {limit:g}" in out
    assert "hours spent: " in out and "of 1000" in out
    assert "evolution stopped by its budget: budget_usd" in out
    assert main(["resume", str(tmp_path / "run"), "--quiet"]) == 0  # runs no round, seals
    assert f"evolution stopped by its budget: {state['budget_stop']}" in capsys.readouterr().out


def test_budgets_are_read_from_the_run_table_and_bad_ones_are_one_line(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[run]\ndir = "r"\nbudget_usd = 250\nbudget_hours = 12.5\n')
    spec = load(path)
    assert (spec.schedule.budget_usd, spec.schedule.budget_hours) == (250.0, 12.5)
    for bad, why in (("budget_usd = -1", "greater than 0"),
                     ("budget_hours = true", "needs a number, not a boolean")):
        path.write_text(f'[run]\ndir = "r"\n{bad}\n')
        with pytest.raises(ConfigError, match=why) as err:
            load(path)
        assert "\n" not in str(err.value)


def test_run_plan_counts_a_round_and_a_run_by_hand():
    plan = budget.run_plan(n_tasks=89, test_tasks=30, effect_pp=5, cost_per_trial_usd=0.5,
                           minutes_per_trial=6, concurrency=32, rounds=5, children=3,
                           recombinations=1, designs=["fixed"]).iloc[0]
    n_train, k = 59, 3
    round_trials = 4 * n_train * k + n_train * k  # every child at k, the parent's fresh block
    run_trials = n_train * k + 5 * round_trials + 2 * 30 * k  # cold start, rounds, seal
    assert (plan["n_train"], plan["round_trials"], plan["run_trials"]) == (
        n_train, round_trials, run_trials)
    assert plan["run_usd"] == pytest.approx(0.5 * run_trials)
    assert plan["run_hours"] == pytest.approx(run_trials * 6 / 60 / 32)
    stored = budget.run_plan(n_tasks=89, test_tasks=30, effect_pp=5, children=3,
                             recombinations=1, designs=["fixed"],
                             gate=GateConfig(design="fixed", parent_trials="stored")).iloc[0]
    assert stored["round_trials"] == 4 * n_train * k  # the parent's stored trials: no block
    other = budget.run_plan(n_tasks=89, test_tasks=30, test_dataset=True, effect_pp=5,
                            designs=["fixed"]).iloc[0]
    assert other["n_train"] == 89 and other["power"] > plan["power"]  # a whole other test set
    assert math.isnan(other["run_usd"])  # no cost given: unknown, not 0


def test_gsme_plan_prints_cost_and_refuses_bad_figures(capsys):
    argv = ["plan", "--tasks", "89", "--effect", "5", "--design", "fixed",
            "--cost-per-trial", "0.5", "--minutes-per-trial", "6", "--concurrency", "32",
            "--test-tasks", "30"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    row = pd.DataFrame(out["designs"]).iloc[0]
    assert (out["concurrency"], out["candidates_per_round"], out["rounds"]) == (32, 4, 5)
    assert row["run_trials"] == 59 * 3 + 5 * 5 * 59 * 3 + 2 * 30 * 3  # 4 children + a block
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "run_usd" in text and "sealed split: 30 of them" in text
    for bad in (["--test-tasks", "88"], ["--concurrency", "0"], ["--cost-per-trial", "-1"],
                ["--test-dataset"]):
        assert main(["plan", "--tasks", "89", "--effect", "5", "--design", "fixed", *bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("gsme: error: ") and err.count("\n") == 1


# ---------------------------------------------------------------- small suites: [split]

def _suite(tmp_path, split_table='[split]\ntest_dataset = "test.csv"\n', agent_kind="command"):
    pd.DataFrame({"task_id": [f"t{i}" for i in range(6)], "split": ["train", "test"] * 3,
                  "level": range(6)}).to_csv(tmp_path / "pool.csv", index=False)
    pd.DataFrame({"task_id": ["u1", "u2", "u3"], "level": [7, 8, 9]}).to_csv(
        tmp_path / "test.csv", index=False)
    agent = ('[agent]\nkind = "command"\ncommand = "{python} run.py {task_id} {out}"\n'
             'tasks = "pool.csv"\nisolation = "none"\nworkdir = "."\n'
             if agent_kind == "command" else '[agent]\nkind = "sim"\npreset = "tiny"\n')
    path = tmp_path / "run.toml"
    path.write_text(f'[run]\ndir = "runs/r"\n\n{agent}\n{split_table}')
    return path


def test_a_test_dataset_is_the_whole_sealed_split_and_a_resumed_run_reads_the_same(tmp_path):
    from gsme import plugins

    spec = load(_suite(tmp_path))
    assert spec.agent["test_tasks"] == str((tmp_path / "test.csv").resolve())
    agent = plugins.build_agent(spec.agent)
    with Run.create(spec.dir, agent=agent, run_config=spec.config, schedule=spec.schedule,
                    agent_spec=spec.agent, evolver_spec=spec.evolver) as run:
        assert run.tasks("test")["task_id"].tolist() == ["u1", "u2", "u3"]
        assert run.tasks("train")["task_id"].tolist() == [f"t{i}" for i in range(6)]
    with Run.open(spec.dir) as again:  # the agent is rebuilt from its stored spec
        assert again.tasks("test")["task_id"].tolist() == ["u1", "u2", "u3"]
    pd.DataFrame({"task_id": ["u1", "u2", "u4"]}).to_csv(tmp_path / "test.csv", index=False)
    with pytest.raises(RunError, match="test split differs"):
        Run.open(spec.dir)


@pytest.mark.parametrize("table, kind, why", [
    ('[split]\ntest_dataset = "test.csv"\n', "sim", 'needs an agent that reads its tasks'),
    ('[split]\ntest_set = "test.csv"\n', "command", r"\[split\] has unknown key"),
    ('[split]\ntest_dataset = 3\n', "command", "needs a tasks file"),
    ('[split]\ntest_dataset = "pool.csv"\n', "command", "share task ids"),
])
def test_a_bad_split_table_is_one_line(tmp_path, table, kind, why):
    with pytest.raises(ConfigError, match=why) as err:
        load(_suite(tmp_path, table, kind))
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------- dollars from gsme.prices

@pytest.mark.parametrize("model, given, expected", [
    ("anthropic/claude-sonnet-4-5", None, (9_000 * 3.0 + 1_000 * 0.30 + 500 * 15.0) / 1e6),
    ("claude-sonnet-4-5-20250929", None, (9_000 * 3.0 + 1_000 * 0.30 + 500 * 15.0) / 1e6),
    ("some-local-model", None, math.nan),  # no price: unknown, never 0
    ("anthropic/claude-sonnet-4-5", 0.25, 0.25),  # Harbor's own dollars win
])
def test_a_harbor_trial_with_tokens_and_no_dollars_is_priced_by_its_model(model, given,
                                                                          expected):
    from gsme.importers.terminal_bench import harbor_trial

    usage = {"n_input_tokens": 10_000, "n_cache_tokens": 1_000, "n_output_tokens": 500,
             "cost_usd": given}
    row = harbor_trial({"task_name": "t", "verifier_result": {"rewards": {"reward": 1.0}},
                        "config": {"agent": {"model_name": model}}, "agent_result": usage},
                       source="job/t__a")
    assert row["cost_usd"] == pytest.approx(expected, nan_ok=True)
    assert row["tokens"] == 10_500
