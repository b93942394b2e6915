"""Executors keep their workers busy and record each trial as it lands (issue 27).

Synchronisation is by barriers and events (their timeouts only guard against a hang):
an executor that keeps fewer trials in flight than its workers, or waits for a batch's
slowest trial, leaves a barrier or an event unmet, and the trials waiting on it fail.
"""

import concurrent.futures as cf
import threading

import pandas as pd
import pytest

from gsme import evolve, measure, plugins, scoring, sim
from gsme.agents.base import TaskAgent, Trajectory, TrialSpec
from gsme.cli import main
from gsme.config import load
from gsme.executors import Snapshot
from gsme.executors.pool import DaskExecutor, ProcessExecutor, ThreadExecutor
from gsme.run import Run
from gsme.settings import ConfigError, GateConfig, RunConfig

GUARD = 20  # seconds: a hang fails the test instead of blocking it


class Memory:
    """A sink that keeps the rows it is given, in order."""

    def __init__(self, on_record=None):
        self.rows, self.marked = [], []
        self.on_record = on_record

    def record_trials(self, rows):
        self.rows += rows
        if self.on_record is not None:
            self.on_record(self)

    def mark_infra_failed(self, keys, error):
        self.marked += keys


class Gathering(TaskAgent):
    """Each trial waits at a barrier of ``parties``: it passes only when that many trials
    are in flight at once. ``peak`` is the most seen in flight."""

    name = "gathering"

    def __init__(self, n_tasks, parties, hold=None):
        self.n_tasks = n_tasks
        self.barrier = threading.Barrier(parties)
        self.lock = threading.Lock()
        self.flying = self.peak = 0
        self.hold = hold  # (task id, event): that trial waits for the event

    def tasks(self):
        return pd.DataFrame({"task_id": [f"t{i:02d}" for i in range(self.n_tasks)],
                             "split": "train"})

    def run(self, harness_dir, task, *, repeat, attempt, run_seed):
        if self.hold is not None:
            held = task["task_id"] == self.hold[0]
            ok = self.hold[1].wait(timeout=GUARD) if held else True
            return Trajectory(passed=ok, infra_ok=ok, error=None if ok else "never released")
        with self.lock:
            self.flying += 1
            self.peak = max(self.peak, self.flying)
        try:
            self.barrier.wait(timeout=GUARD)
        finally:
            with self.lock:
                self.flying -= 1
        return Trajectory(passed=True)


def _execute(agent, executor, sink=None, **config):
    tasks = agent.tasks()
    specs = [TrialSpec("baseline", t, "train", 0) for t in tasks["task_id"]]
    sink = sink or Memory()
    try:
        scoring.execute(specs, agent=agent, harness=lambda c: Snapshot({"a.md": "a"}),
                        sink=sink, run_config=RunConfig(**config), tasks=tasks, executor=executor,
                        progress=False)
    finally:
        if isinstance(executor, ThreadExecutor):
            executor.close()
    return sink


@pytest.mark.parametrize("kind", ["threads", "plain concurrent.futures pool"])
def test_streaming_keeps_workers_trials_in_flight(kind):
    agent = Gathering(n_tasks=12, parties=4)
    with cf.ThreadPoolExecutor(4) as plain:
        executor = ThreadExecutor(workers=4) if kind == "threads" else plain
        sink = _execute(agent, executor, workers=4)
    trials = pd.DataFrame([row for row, _ in sink.rows])
    assert len(trials) == 12 and trials["infra_ok"].all(), trials["error"].dropna().tolist()
    assert agent.peak == 4  # every worker busy, never more in flight than workers


def test_each_trial_is_recorded_as_it_lands_while_the_slowest_still_runs():
    released = threading.Event()

    def release(sink):  # the held trial ends once every other one is recorded
        if len(sink.rows) == 11:
            released.set()

    agent = Gathering(n_tasks=12, parties=1, hold=("t00", released))
    sink = _execute(agent, ThreadExecutor(workers=2), Memory(on_record=release), workers=2,
                    batch_size=4, flush_trials=1, flush_seconds=0.01)
    trials = pd.DataFrame([row for row, _ in sink.rows])
    assert trials["infra_ok"].all(), "the batch waited for its slowest trial"
    assert trials["task_id"].iloc[-1] == "t00" and sink.marked == []


class Crashing(TaskAgent):
    name = "crashing"

    def tasks(self):
        return pd.DataFrame({"task_id": ["t0", "t1", "t2", "t3"], "split": "train"})

    def run(self, harness_dir, task, *, repeat, attempt, run_seed):
        if task["task_id"] == "t1":
            raise RuntimeError("container died")
        if task["task_id"] == "t2":
            return "passed, trust me"  # a hostile agent's answer
        return Trajectory(passed=True)


def test_a_crashing_trial_is_an_infrastructure_failure_the_others_score():
    sink = _execute(Crashing(), ThreadExecutor(workers=2))
    trials = pd.DataFrame([row for row, _ in sink.rows]).set_index("task_id").sort_index()
    assert trials.loc["t1", "error"] == "RuntimeError: container died"
    assert trials.loc["t2", "error"] == "TypeError: Crashing.run returned str, not a Trajectory"
    assert list(trials["infra_ok"]) == [True, False, False, True]
    assert list(trials["passed"]) == [True, False, False, True]


def test_a_broken_pool_is_an_infrastructure_failure_of_every_trial():
    broken = cf.ThreadPoolExecutor(2)
    broken.shutdown()
    agent = Gathering(n_tasks=6, parties=1)
    sink = Memory()
    with pytest.raises(scoring.InfraError, match="all 6 first attempts .*after shutdown"):
        _execute(agent, broken, sink)
    assert len(sink.rows) == 6 and not any(row["infra_ok"] for row, _ in sink.rows)


def _outcomes(run):
    trials = run.trials()
    return trials.sort_values(["candidate", "task_id", "repeat", "attempt"])[
        ["candidate", "task_id", "repeat", "attempt", "passed", "infra_ok"]
    ].reset_index(drop=True)


def _sim_run(path, fault=0.1):
    return Run.create(path, agent=sim.preset("tiny", infra_fault_rate=fault),
                      run_config=RunConfig(gate=GateConfig(k=2, k_max=2)))


@pytest.mark.parametrize("kind", ["processes", "plain pool"])
def test_processes_and_a_plain_pool_give_the_trials_of_the_default(tmp_path, kind):
    with _sim_run(tmp_path / "default") as default:
        measure.measure(default, "baseline", progress=False)
        expected = _outcomes(default)
    with _sim_run(tmp_path / kind) as run, (
            ProcessExecutor(workers=2) if kind == "processes" else
            cf.ThreadPoolExecutor(3)) as executor:
        measure.measure(run, "baseline", executor=executor, progress=False)
        pd.testing.assert_frame_equal(_outcomes(run), expected)


def test_a_dask_local_cluster_decides_as_the_default(tmp_path):
    pytest.importorskip("distributed")
    decided = []
    for name, executor in (("default", None), ("dask", DaskExecutor(workers=2, chunk=8,
                                                                   processes=False))):
        evolver = plugins.build_evolver({"kind": "rule", "seed": 0})
        with Run.create(tmp_path / name, agent=sim.preset("tiny"), evolver=evolver) as run:
            try:
                evolve.run_round(run, children=2, recombinations=0, executor=executor,
                                 progress=False)
                measure.finalize(run, executor=executor, progress=False)
            finally:
                if executor is not None:
                    executor.close()
            decided.append((run.decisions()[["child", "decision", "kept"]],
                            run.sealed_result, _outcomes(run)))
    (d1, s1, t1), (d2, s2, t2) = decided
    pd.testing.assert_frame_equal(d1, d2)
    pd.testing.assert_frame_equal(t1, t2)
    pd.testing.assert_frame_equal(s1, s2)
    assert len(d1) == 2


@pytest.mark.parametrize("table, says", [
    ('kind = "ray"', "[executor] kind = 'ray': must be one of ['threads', 'processes', "
                     "'dask'"),
    ('kind = "threads"\nwokers = 2', "[executor] wokers = 2: Extra inputs are not permitted"),
    ('kind = "threads"\nworkers = 0', "workers = 0: must be a whole number of at least 1"),
    ('kind = "dask"\naddress = "localhost"', "address = 'localhost': needs scheme://"),
    ('kind = "processes"\nchunk = "big"', "[executor] chunk = 'big': Input should be a valid"),
])
def test_a_bad_executor_setting_is_one_line_naming_its_key(tmp_path, capsys, table, says):
    config = tmp_path / "run.toml"
    config.write_text(f'[run]\ndir = "runs/a"\n\n[executor]\n{table}\n')
    with pytest.raises(ConfigError) as err:
        load(config)
    assert says in str(err.value) and "\n" not in str(err.value)
    assert main(["run", str(config), "--quiet"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0]
    assert not (tmp_path / "runs").exists()


def test_executor_flags_choose_the_executor_and_resume_rebuilds_it(tmp_path, capsys,
                                                                   monkeypatch):
    built = []
    real = plugins.build_executor
    monkeypatch.setattr(plugins, "build_executor", lambda spec: built.append(spec) or real(spec))
    config = tmp_path / "run.toml"
    config.write_text('[run]\ndir = "runs/a"\nrounds = 1\n\n[executor]\nkind = "processes"\n')
    assert main(["run", str(config), "--quiet", "--executor", "threads",
                 "--executor-opt", "workers=2"]) == 0
    with Run.open(tmp_path / "runs" / "a", read_only=True) as run:
        assert run.executor_spec == {"kind": "threads", "workers": 2}
        assert len(run.trials()) > 0
    assert built[-1] == {"kind": "threads", "workers": 2}
    assert main(["resume", str(tmp_path / "runs" / "a"), "--quiet"]) == 0
    assert built[-1] == {"kind": "threads", "workers": 2}  # rebuilt from the run
    assert main(["resume", str(tmp_path / "runs" / "a"), "--quiet",
                 "--executor-opt", "workers=3"]) == 0
    assert built[-1] == {"kind": "threads", "workers": 3}
    capsys.readouterr()
    assert main(["resume", str(tmp_path / "runs" / "a"), "--executor", "ray"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "[executor] kind = 'ray'" in err[0]
