"""Growing benchmarks: new train tasks, borrowing from ancestors, re-gated decisions, the
sealed test split untouched, bad input refused, a killed grow resumed. SIMULATED."""

import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from gsme import evolve, gates, measure, parent_trials, scoring, sim
from gsme import run as run_module
from gsme.cli import main
from gsme.evolvers.rule import RuleEvolver
from gsme.grow import grow, grown_tasks, regate
from gsme.run import Run, RunError, SealedError
from gsme.schema import BASELINE
from gsme.settings import RunConfig, Schedule

SPEC = {"kind": "sim", "preset": "tiny", "suite_seed": 1, "breadth": 0.33,
        "infra_fault_rate": 0.0}
GROWN = {**SPEC, "grown": 10}
KEY = ["candidate", "task_id", "split", "repeat", "attempt"]


def agent(spec):
    return sim.SimAgent(**{k: v for k, v in spec.items() if k != "kind"})


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A closed tiny run at breadth 0.33, two rounds; and the same run sealed."""
    root = tmp_path_factory.mktemp("grow")
    with Run.create(root / "open", agent=agent(SPEC), evolver=RuleEvolver(seed=2),
                    run_config=RunConfig(run_seed=2), schedule=Schedule(rounds=2),
                    agent_spec=SPEC, evolver_spec={"kind": "rule", "seed": 2}) as run:
        evolve.evolve(run, progress=False)
    shutil.copytree(root / "open", root / "sealed")
    with Run.open(root / "sealed") as run:
        measure.finalize(run, progress=False)
    return root


@pytest.fixture
def copy(base, tmp_path):
    def make(name="open"):
        shutil.copytree(base / name, tmp_path / name)
        return tmp_path / name
    return make


def grown_agent():
    return agent(GROWN)


def new_rows():
    tasks = grown_agent().tasks()
    return tasks[~tasks["task_id"].isin(agent(SPEC).tasks()["task_id"])]


def test_growing_borrows_from_ancestors_and_runs_only_where_gates_fire(copy):
    with Run.open(copy(), agent=grown_agent()) as run:
        before = run.trials()
        grow(run, grown_agent().tasks(), agent_spec=GROWN, progress=False)
        trials, candidates = run.trials(split="train"), run.candidates()
        new_ids = set(new_rows()["task_id"])
        on_new = trials[trials["task_id"].isin(new_ids)]
        acting = scoring.behaviour(candidates, run.tasks()).set_index(["candidate", "task_id"])
    assert len(new_ids) == 10
    # every trial that was there is untouched (the adaptive design may want more repeats
    # of an old task on the grown split, never a slot again); nothing is scored twice
    kept = before[before["split"] == "train"].merge(trials, on=KEY, how="left",
                                                    suffixes=("", "_after"))
    assert (kept["passed"] == kept["passed_after"]).all()
    assert not trials.duplicated(KEY).any()
    # the baseline runs every new task itself
    base = on_new[on_new["candidate"] == BASELINE]
    assert set(base["task_id"]) == new_ids and base["borrowed_from"].isna().all()
    parent = {c: p.split(",")[0] for c, p in zip(candidates["candidate"], candidates["parents"])}
    own = on_new["repeat"] < parent_trials.stride(run.config.gate)  # the rest: fresh blocks
    assert (~own).any() and on_new.loc[~own, "borrowed_from"].isna().all()
    ran = borrowed = 0
    for (cand, task), rows in on_new[own & (on_new["candidate"] != BASELINE)].groupby(
            ["candidate", "task_id"]):
        same = acting.loc[(cand, task), "acting"] == acting.loc[(parent[cand], task), "acting"]
        if same:  # its own patch's gate rejects the task: an ancestor's trials stand in
            assert rows["borrowed_from"].notna().all(), (cand, task)
            borrowed += 1
        else:  # its gate fires there: run, unless another candidate acts identically
            donors = acting.xs(task, level="task_id")["acting"]
            twins = set(donors.index[donors == acting.loc[(cand, task), "acting"]]) - {cand}
            assert rows["borrowed_from"].isna().all() or set(rows["borrowed_from"]) <= twins
            ran += int(rows["borrowed_from"].isna().any())
    print(f"SIMULATED grow: {borrowed} (child, new task) pairs borrowed, {ran} run")
    assert borrowed > 0 and ran > 0


def test_decisions_are_regated_on_the_grown_split_and_the_changed_ones_listed(copy):
    with Run.open(copy(), agent=grown_agent()) as run:
        recorded = run.decisions()
        table = grow(run, grown_agent().tasks(), agent_spec=GROWN, progress=False)
        decided = run.candidates()
        decided = decided[decided["candidate"].isin(recorded["child"])]
        direct = gates.credit(run.trials(split="train"), decided, split="train",
                              gate=run.config.gate)
        pd.testing.assert_frame_equal(regate(run), table)
        assert run.decisions().equals(recorded)  # the run's own record stays
    assert table["child"].tolist() == direct["child"].tolist()
    assert table["decision"].tolist() == direct["decision"].tolist()
    assert table["decision_before"].tolist() == recorded.set_index("child").loc[
        table["child"], "decision"].tolist()
    assert (table["changed"] == (table["decision"] != table["decision_before"])).all()
    valid = table["decision"] != "invalid"
    assert (table.loc[valid, "n_tasks"] > 16).all()  # the grown split: 16 + 10 train tasks
    # the same comparison on the original tasks alone reproduces the recorded decisions
    original = run_trials_on(copy, set(agent(SPEC).tasks()["task_id"]))
    assert original == recorded.set_index("child")["decision"].to_dict()


def run_trials_on(copy, ids):
    with Run.open(copy("sealed"), read_only=True) as run:
        trials = run.trials(split="train")
        decided = run.candidates()
        decided = decided[decided["candidate"].isin(run.decisions()["child"])]
        out = gates.credit(trials[trials["task_id"].isin(ids)], decided, split="train",
                           gate=run.config.gate)
    return dict(zip(out["child"], out["decision"]))


def test_the_test_split_and_its_commitment_never_change(copy):
    path = copy()
    with Run.open(path, agent=grown_agent()) as run:
        test_before = run.tasks("test")
        promised = run.events("created")["payload"].iloc[0]["test_commitment"]
        grow(run, grown_agent().tasks(), agent_spec=GROWN, progress=False)
        assert run.tasks("test").equals(test_before)
        assert run_module.test_commitment(run.tasks()) == promised
        assert run.trials(split="test").empty
        assert set(run.tasks("train")["task_id"]) >= set(new_rows()["task_id"])
    # reopened from its stored spec, the run rebuilds the grown agent
    with Run.open(path) as run:
        assert run.agent.name.endswith("/grown10")
        assert run.events("tasks_added")["payload"].iloc[0]["task_ids"] == list(
            new_rows()["task_id"])


def test_a_sealed_run_stays_sealed(copy):
    with Run.open(copy("sealed"), agent=grown_agent()) as run:
        sealed, test_trials = run.sealed_result, run.trials(split="test")
        candidates = run.candidates()
        table = grow(run, grown_agent().tasks(), agent_spec=GROWN, progress=False)
        assert len(table) and run.sealed
        pd.testing.assert_frame_equal(run.sealed_result, sealed)
        pd.testing.assert_frame_equal(run.trials(split="test"), test_trials)
        assert run.candidates().equals(candidates)
        assert measure.finalize(run).equals(sealed)  # stored, never re-run
        with pytest.raises(SealedError):
            measure.measure(run, [BASELINE])
        with pytest.raises(SealedError):
            evolve.run_round(run, progress=False)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.drop(columns="task_id"), r"lacks column\(s\) \['task_id'\]"),
    (lambda t: t.drop(columns="split"), r"lacks column\(s\) \['split'\]"),
    (lambda t: pd.concat([t, t.tail(1)]), r"repeats task_id 'tiny-033' \(rows \[10, 11\]\)"),
    (lambda t: t.assign(split="test"), r"row 1: new task 'tiny-024' is in the test split"),
    (lambda t: t.assign(area="a9"), r"row 1 \('tiny-024'\): area is 'a9', but"),
    (lambda t: t.assign(task_id=[f"x{i}" for i in range(len(t))]),
     r"row 1: 'x0' is not a task of the run's agent"),
    (lambda t: t.assign(extra=1), r"column\(s\) \['extra'\] the run's tasks do not"),
])
def test_bad_tasks_are_refused_naming_the_fault_and_nothing_is_written(copy, edit, message):
    path = copy()
    with Run.open(path, agent=grown_agent()) as run:
        tasks, trials, events = run.tasks(), run.trials(), run.events()
        with pytest.raises(RunError, match=message) as err:
            grow(run, edit(new_rows().drop(columns="content")), progress=False)
        assert len(str(err.value).splitlines()) == 1
        assert run.tasks().equals(tasks) and len(run.trials()) == len(trials)
        assert run.events().equals(events)
    with Run.open(path, read_only=True) as run:
        assert run.tasks().equals(tasks)


def test_a_row_that_contradicts_the_run_is_refused(copy):
    with Run.open(copy(), agent=grown_agent()) as run:
        table = grown_agent().tasks()
        table.loc[2, "category"] = "nope"
        with pytest.raises(RunError, match=r"tasks row 3 \('tiny-002'\): category is 'nope'"):
            grown_tasks(run, table)


KILLER = """
import os, signal, sys
from gsme import sim
from gsme.grow import grow
from gsme.run import Run
spec = {spec}
class Dying(sim.SimAgent):
    budget = {budget}
    def run_many(self, harness, trials, *, run_seed):
        out = super().run_many(harness, trials, run_seed=run_seed)
        Dying.budget -= len(out)
        if Dying.budget <= 0:
            os.kill(os.getpid(), signal.SIGKILL)
        return out
agent = Dying(**{{k: v for k, v in spec.items() if k != "kind"}})
with Run.open(sys.argv[1], agent=agent) as run:
    grow(run, agent.tasks(), agent_spec=spec, progress=False)
"""


def test_a_grow_killed_with_sigkill_resumes_to_the_uninterrupted_result(copy, tmp_path):
    whole, killed = copy(), tmp_path / "killed"
    shutil.copytree(whole, killed)
    with Run.open(whole, agent=grown_agent()) as run:
        expected = grow(run, grown_agent().tasks(), agent_spec=GROWN, progress=False)
        want = run.trials()
    proc = subprocess.run([sys.executable, "-c", KILLER.format(spec=GROWN, budget=40),
                           str(killed)], capture_output=True, text=True, check=False)
    assert proc.returncode == -9, proc.stderr
    with Run.open(killed, agent=grown_agent()) as run:
        partial = len(run.trials())
        again = grow(run, grown_agent().tasks(), agent_spec=GROWN, progress=False)
        got = run.trials()
    assert len(want) > partial > 0  # killed half way
    assert not got.duplicated(KEY).any()
    cols = KEY + ["passed", "infra_ok", "activated", "borrowed_from"]
    pd.testing.assert_frame_equal(got[cols].sort_values(KEY, ignore_index=True),
                                  want[cols].sort_values(KEY, ignore_index=True))
    pd.testing.assert_frame_equal(again, expected)


# ------------------------------------------------------------------------------ the CLI

def test_gsme_grow_grows_a_simulated_run_and_prints_the_regated_decisions(copy, tmp_path,
                                                                          capsys):
    path = copy("sealed")
    csv = tmp_path / "new.csv"
    new_rows().to_csv(csv, index=False)
    assert main(["grow", str(path), "--tasks", str(csv), "--agent", "grown=10",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("SIMULATED")
    assert "has 26 train tasks, 10 added by growing" in out and "decisions changed" in out
    # again: nothing new to run, the same decisions, as JSON
    assert main(["grow", str(path), "--tasks", str(csv), "--json", "--quiet"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert {"child", "decision_before", "decision", "changed"} <= set(records[0])
    with Run.open(path, read_only=True) as run:
        assert run.sealed_result is not None and len(run.tasks("train")) == 26


@pytest.mark.parametrize(("argv", "message"), [
    (["grow", "{missing}", "--tasks", "{csv}"], "is not a gsme run directory"),
    (["grow", "{run}", "--tasks", "{nowhere}"], "cannot read the tasks file"),
    (["grow", "{run}", "--tasks", "{csv}", "--agent", "grown"], "--agent expects KEY=VALUE"),
    (["grow", "{run}", "--tasks", "{csv}", "--agent", "grown=-1"], "grown must be a whole"),
    (["grow", "{run}", "--tasks", "{csv}"], "is not a task of the run's agent"),
])
def test_gsme_grow_errors_are_one_line_and_exit_2(copy, tmp_path, capsys, argv, message):
    csv = tmp_path / "new.csv"
    new_rows().to_csv(csv, index=False)
    names = {"missing": tmp_path / "nope", "csv": csv, "nowhere": tmp_path / "none.csv",
             "run": copy()}
    assert main([a.format(**names) for a in argv]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gsme: error: ") and message in lines[0]
    with pytest.raises(SystemExit) as exc:
        main(["grow", str(names["run"])])  # --tasks is required
    assert exc.value.code == 2
