"""Scoring: the two ways trials run (one at a time in fresh copies, or many per call in
process, which must give exactly the same trials), batched recording, health checks and
crashes."""

import shutil
import threading

import pandas as pd
import pytest

from gsme import measure, scoring, sim
from gsme.agents import TaskAgent, Trajectory, TrialSpec
from gsme.ledger import Ledger
from gsme.patches import FileChange, Patch, apply_patch, harness_files
from gsme.resources import SEED_HARNESS
from gsme.run import Run
from gsme.scoring import InfraError, Snapshot
from gsme.settings import GateConfig, RunConfig
from gsme.sim.agent import SimAgent

KEY = ["candidate", "task_id", "split", "repeat", "attempt"]


class Memory:
    """A sink that keeps every call it gets, in order."""

    def __init__(self):
        self.calls = []

    def record_trials(self, rows):
        self.calls.append(("record", list(rows)))

    def mark_infra_failed(self, keys, error):
        self.calls.append(("mark", list(keys)))

    def rows(self):
        return sorted((r for kind, rows in self.calls if kind == "record" for r in rows),
                      key=lambda pair: tuple(pair[0][c] for c in KEY))


class OneAtATime(SimAgent):
    """The simulator made to take the per-trial path (a checked copy of each harness)."""

    runs_many = False


def _snapshot(tmp_path, name, *patches, crlf=False) -> Snapshot:
    """The seed harness with ``patches`` (mechanism, why, env_gate, named tasks) applied."""
    root = tmp_path / name
    shutil.copytree(SEED_HARNESS, root)
    for i, (mechanism, why, gate, tasks) in enumerate(patches):
        apply_patch(root, Patch(
            id=f"p{i}", where="knowledge", why=why, mechanism=mechanism, beacon=f"b{i}",
            env_gate=gate, changes=(FileChange(f"knowledge/p{i}.md", f"{mechanism}\n"),),
            predicted_tasks=tuple(tasks)))
    files = harness_files(root)
    if crlf:  # written as bytes by the per-trial copy, read back in text mode
        files = {p: t.replace("\n", "\r\n") if p.startswith("patches/") else t
                 for p, t in files.items()}
    return Snapshot(files)


@pytest.mark.parametrize("preset", ["tiny", "tb2", "swe-bench"])
def test_run_many_gives_exactly_the_trials_of_one_at_a_time(tmp_path, preset):
    agent = sim.preset(preset, infra_fault_rate=0.2)
    tasks = agent.tasks()
    named = tasks["task_id"].iloc[:3].tolist()
    snapshots = {
        "baseline": _snapshot(tmp_path, "seed"),
        "gated": _snapshot(tmp_path, "gated",
                           ("submit-verify", "careless-submit", "has_tests", ()),
                           ("runaway-recovery", "thinking-runaway", "not hard", ())),
        "crlf": _snapshot(tmp_path, "crlf",
                          ("submit-verify", "careless-submit", "needs_tools", ()), crlf=True),
        "hint": _snapshot(tmp_path, "hint", ("tool-schema-hints", "tool-misuse", "", named)),
    }
    specs = [TrialSpec(c, t, s, r, a, "b0,b1") for c in snapshots
             for t, s in zip(tasks["task_id"], tasks["split"], strict=True)
             for r in range(2) for a in range(2)]
    config = RunConfig(run_seed=7, batch_size=16)
    in_process, per_trial = Memory(), Memory()
    for sink, runner in ((in_process, agent), (per_trial, OneAtATime(preset, infra_fault_rate=0.2))):
        scoring.execute(specs, agent=runner, harness=snapshots.__getitem__, sink=sink,
                        run_config=config, tasks=tasks, progress=False)
    assert agent.runs_many and not OneAtATime("tiny").runs_many
    many, one = in_process.rows(), per_trial.rows()
    assert len(many) == len(specs) and many == one  # every field and every transcript
    trials = pd.DataFrame([row for row, _ in many])
    assert 0 < (~trials["infra_ok"]).sum() < len(trials)  # infrastructure faults included
    gated = trials[trials["candidate"] == "gated"]
    assert gated["activated"].any() and not gated["activated"].all()  # env gates act
    assert trials["pathology"].notna().any()


def test_run_many_on_the_crlf_harness_equals_the_same_harness_written_with_lf(tmp_path):
    agent = sim.preset("tiny", infra_fault_rate=0.0)
    lf = _snapshot(tmp_path, "lf", ("submit-verify", "careless-submit", "has_tests", ()))
    crlf = _snapshot(tmp_path, "crlf", ("submit-verify", "careless-submit", "has_tests", ()),
                     crlf=True)
    trials = [(row, r, 0) for row in agent.tasks().to_dict("records") for r in range(3)]
    assert lf.files != crlf.files
    assert (agent.run_many(lf.files, trials, run_seed=1)
            == agent.run_many(crlf.files, trials, run_seed=1))


class NoOp(TaskAgent):
    """Passes at once; ``release`` (an event) is set by whoever waits for a trial."""

    name = "no-op"

    def __init__(self, n_tasks=12, hold=None):
        self._tasks = pd.DataFrame({"task_id": [f"t{i:02d}" for i in range(n_tasks)],
                                    "split": ["train"] * (n_tasks - 2) + ["test"] * 2})
        self.hold = hold

    def tasks(self):
        return self._tasks

    def run(self, harness_dir, task, *, repeat, attempt, run_seed):
        if self.hold is not None and task["task_id"] == self.hold[0]:
            released = self.hold[1].wait(timeout=60)  # a guard against hanging, not a sleep
            return Trajectory(passed=released, infra_ok=released, transcript="held",
                              error=None if released else "never released")
        return Trajectory(passed=True, transcript="done")


def _specs(agent, k=1):
    tasks = agent.tasks()
    return [TrialSpec("baseline", t, "train", r) for t in tasks.loc[tasks["split"] == "train",
                                                                    "task_id"]
            for r in range(k)]


def test_completed_trials_reach_the_sink_in_groups_of_flush_trials(tmp_path):
    agent = NoOp(n_tasks=37)
    sink = Memory()
    config = RunConfig(flush_trials=10, flush_seconds=3600.0, workers=2)
    n = scoring.execute(_specs(agent), agent=agent, harness=lambda c: Snapshot({"a.md": "a"}),
                        sink=sink, run_config=config, tasks=agent.tasks(), progress=False)
    sizes = [len(rows) for kind, rows in sink.calls]
    assert n == 35 and sizes == [10, 10, 10, 5]  # the rest when scoring stops
    assert len({tuple(r[c] for c in KEY) for r, _ in sink.rows()}) == 35


def test_a_waiting_trial_is_written_within_flush_seconds_without_more_completing(tmp_path):
    released = threading.Event()

    class Releasing(Memory):
        def record_trials(self, rows):
            super().record_trials(rows)
            released.set()  # the held trial may finish once the others are written

    agent = NoOp(n_tasks=4, hold=("t00", released))
    sink = Releasing()
    config = RunConfig(flush_trials=1000, flush_seconds=0.01, workers=2)
    scoring.execute(_specs(agent), agent=agent, harness=lambda c: Snapshot({"a.md": "a"}),
                    sink=sink, run_config=config, tasks=agent.tasks(), progress=False)
    trials = pd.DataFrame([row for row, _ in sink.rows()])
    assert trials["infra_ok"].all(), "the held trial waited for a write that never came"
    assert sink.calls[0][1][0][0]["task_id"] == "t01"  # written while t00 still ran


class SickAfterFirstBatch:
    """Its health check fails once: right after the first batch."""

    checks = 0

    def health_check(self):
        self.checks += 1
        return self.checks != 2


class SickNoOp(SickAfterFirstBatch, NoOp):
    pass


class SickSim(SickAfterFirstBatch, SimAgent):
    pass


@pytest.mark.parametrize("agent", [SickNoOp(n_tasks=8), SickSim("tiny", infra_fault_rate=0.0)],
                         ids=["one-at-a-time", "run_many"])
def test_a_failed_health_check_marks_its_batch_after_writing_it(tmp_path, agent):
    config = RunConfig(batch_size=5, flush_trials=1000, flush_seconds=3600.0,
                       gate=GateConfig(k=1, k_max=1))
    with Run.create(tmp_path / "r", agent=agent, run_config=config) as run:
        measure.measure(run, "baseline", progress=False)
        trials = run.trials()
        events = run.events("health_failed_after_batch")
    failed = trials[~trials["infra_ok"]]
    assert len(failed) == 5 and (failed["attempt"] == 0).all()
    assert (failed["error"] == "health check failed after the batch").all()
    rerun = trials.merge(failed[["task_id", "repeat"]], on=["task_id", "repeat"])
    assert (rerun.groupby("task_id")["attempt"].max() == 1).all()  # re-run, never scored
    assert len(events) == 1 and events["payload"].iloc[0]["trials"] == 5


class Broken(SimAgent):
    """A simulator whose ``run_many`` breaks: raising, or losing a trajectory."""

    def __init__(self, how):
        super().__init__("tiny", infra_fault_rate=0.0)
        self.how = how

    def run_many(self, harness, trials, *, run_seed):
        if self.how == "raises":
            raise RuntimeError("simulator down")
        return super().run_many(harness, trials, run_seed=run_seed)[1:]


@pytest.mark.parametrize(("how", "says"), [("raises", "RuntimeError: simulator down"),
                                           ("short", "ValueError: run_many returned 4 trajectories")])
def test_a_broken_run_many_is_an_infrastructure_failure_of_each_trial(tmp_path, how, says):
    config = RunConfig(batch_size=5, flush_trials=1000, flush_seconds=3600.0)
    with Run.create(tmp_path / "r", agent=Broken(how), run_config=config) as run:
        with pytest.raises(InfraError, match="all 5 first attempts of a batch failed"):
            measure.measure(run, "baseline", progress=False)
        trials = run.trials()
    assert len(trials) == 5 and not trials["infra_ok"].any()  # written before the stop
    assert trials["error"].str.startswith(says).all()


@pytest.mark.parametrize("one_at_a_time", [False, True], ids=["run_many", "one-at-a-time"])
def test_trials_lost_with_the_process_are_run_again_and_nothing_twice(tmp_path, monkeypatch,
                                                                       one_at_a_time):
    agent = (OneAtATime if one_at_a_time else SimAgent)("tiny", infra_fault_rate=0.1)
    config = RunConfig(run_seed=3, batch_size=8, flush_trials=8, flush_seconds=3600.0)
    with Run.create(tmp_path / "whole", agent=agent, run_config=config) as whole:
        expected = measure.measure(whole, "baseline", progress=False)
    writes = []
    real = Ledger.add_trials

    def dies_on_the_third_write(self, rows):
        writes.append(len(rows))
        if len(writes) == 3:
            raise SystemExit("killed")  # the rows of this write are lost with the process
        real(self, rows)

    monkeypatch.setattr(Ledger, "add_trials", dies_on_the_third_write)
    with Run.create(tmp_path / "killed", agent=agent, run_config=config) as run:
        with pytest.raises(SystemExit):
            measure.measure(run, "baseline", progress=False)
        kept = run.trials()
    monkeypatch.setattr(Ledger, "add_trials", real)
    assert 0 < len(kept) < len(expected)
    with Run.open(tmp_path / "killed", agent=agent) as resumed:
        again = measure.measure(resumed, "baseline", progress=False)
    assert not again.duplicated(KEY).any()
    pd.testing.assert_frame_equal(expected.drop(columns="seconds"),
                                  again.drop(columns="seconds"))


def test_a_run_borrows_outside_env_gates_only_for_agents_that_honour_them(tmp_path):
    from gsme import evolve, sim
    from gsme.evolvers.rule import RuleEvolver
    from gsme.run import Run
    from gsme.settings import RunConfig

    def borrowed(honours: bool, folder: str) -> tuple[int, int]:
        agent = sim.preset("tb2", suite_seed=0, breadth=0.1)
        agent.honours_env_gates = honours
        with Run.create(tmp_path / folder, agent=agent, evolver=RuleEvolver(seed=0),
                        run_config=RunConfig(run_seed=0)) as run:
            evolve.run_round(run, progress=False)
            trials = run.trials(split="train")
            gated = run.candidates()["env_gate"].fillna("").ne("").any()
            return int(trials["borrowed_from"].notna().sum()), int(gated)

    honoured, gated = borrowed(True, "honoured")
    assert gated and honoured > 0  # narrow gates: children borrow outside them
    assert borrowed(False, "ignored")[0] == 0  # every patch acts everywhere: nothing to borrow


def test_plan_is_now_plan_trials_and_the_old_name_still_answers():
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert scoring.plan is scoring.plan_trials
    assert "scoring.plan is now gsme.scoring.plan_trials" in str(caught[0].message)
    assert "plan" not in scoring.__all__  # compare.plan is the one public plan
