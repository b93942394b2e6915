"""The Inspect executor against real inspect_ai: ``mockllm/model`` and the ``local`` sandbox.

The Inspect task (tests/data/inspect_sim_task.py) runs gsme's simulator on the harness folder
its solver is handed, so a pass through Inspect must give each slot what the in-process
simulator gives it. An Inspect eval costs seconds to start: the pass's tests share one eval
(``inspect_pass``), and every test that starts one is in conftest.py's SLOW.
"""

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("inspect_ai")

from gsme import gates, measure, sim
from gsme.agents.base import TrialSpec
from gsme.config import load
from gsme.executors.inspect_eval import InspectExecutor, _read_new
from gsme.patches import FileChange, Patch
from gsme.plugins import build_executor
from gsme.run import Run
from gsme.settings import ConfigError, GateConfig, RunConfig
from tests.faults.faultkit import within

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TASK_FILE = Path(__file__).parent / "data" / "inspect_sim_task.py"
SIMULATED = f"{TASK_FILE}@simulated"
SEED = 5


def _executor(**settings) -> InspectExecutor:
    return InspectExecutor(task=settings.pop("task", SIMULATED), model="mockllm/model",
                           sandbox="local", **settings)


def _stream(executor, run, specs, release: Path | None = None) -> list:
    """The pass's ``(spec, trajectory)`` pairs; ``release`` is created once one is read."""
    got = []
    for done in executor.stream(specs, agent=run.agent,
                                snapshots={"baseline": run.snapshot("baseline")},
                                tasks={}, run_seed=SEED, patience=lambda: 5.0):
        if done and release is not None:
            release.touch()
        got += done
    return got


@pytest.fixture(scope="module")
def inspect_pass(tmp_path_factory):
    """One pass through Inspect: three tasks at two repeats, a re-run's second attempt; a
    float scorer (0.75 pass, 0.25 fail) with threshold 0.5; every sample of ``fail`` errors;
    those of ``hold`` wait until gsme has read a trial."""
    root = tmp_path_factory.mktemp("inspect")
    with Run.create(root / "run", agent=sim.preset("tiny", infra_fault_rate=0.0),
                    run_config=RunConfig(run_seed=SEED)) as run:
        train = run.tasks("train")["task_id"].tolist()
        specs = ([TrialSpec("baseline", t, "train", r) for t in train[:3] for r in range(2)]
                 + [TrialSpec("baseline", train[3], "train", 2, attempt=1)])
        release = root / "release"
        executor = _executor(task_args={"graded": True, "fail": train[2], "hold": train[0],
                                        "release": str(release)},
                             threshold=0.5, log_dir=root / "logs", max_samples=4)
        got = _stream(executor, run, specs, release)
        records = run.tasks().set_index("task_id", drop=False)
        truth = run.agent.run_many(
            run.snapshot("baseline").files,
            [(records.loc[s.task_id].to_dict(), s.repeat, s.attempt) for s, _ in got],
            run_seed=SEED)
        yield {"specs": specs, "got": got, "truth": truth, "failing": train[2],
               "logs": root / "logs", "held": train[0]}


def test_each_slot_of_a_pass_comes_back_once_as_the_simulator_decides(inspect_pass):
    got, truth = inspect_pass["got"], inspect_pass["truth"]
    assert Counter(s for s, _ in got) == Counter(inspect_pass["specs"])
    ran = [(traj, real) for (spec, traj), real in zip(got, truth)
           if spec.task_id != inspect_pass["failing"]]
    assert len(ran) == 5
    assert [t.passed for t, _ in ran] == [r.passed for _, r in ran]
    assert [t.beacons for t, _ in ran] == [r.beacons for _, r in ran]
    assert [t.tokens for t, _ in ran] == [int(r.tokens) for _, r in ran]  # model_usage
    assert all(r.transcript in t.transcript for t, r in ran)
    assert all(t.seconds > 0 and t.infra_ok and t.error is None for t, _ in ran)


def test_samples_are_read_back_while_the_eval_runs(inspect_pass):
    # the held task's samples finish only after gsme has read another sample
    order = [spec.task_id for spec, _ in inspect_pass["got"]]
    assert order[0] != inspect_pass["held"]
    assert all(traj.infra_ok for spec, traj in inspect_pass["got"]
               if spec.task_id == inspect_pass["held"])


def test_an_eval_killed_halfway_leaves_every_other_slot_an_infrastructure_failure(tmp_path):
    with Run.create(tmp_path / "run", agent=sim.preset("tiny", infra_fault_rate=0.0)) as run:
        train = run.tasks("train")["task_id"].tolist()
        specs = [TrialSpec("baseline", t, "train", 0) for t in train[:3]]
        executor = _executor(task_args={"hold": train[0], "release": str(tmp_path / "never")},
                             max_samples=3)
        got = []
        for done in executor.stream(specs, agent=run.agent,
                                    snapshots={"baseline": run.snapshot("baseline")},
                                    tasks={}, run_seed=SEED, patience=lambda: 5.0):
            if done and len(got) == 0:  # the attacker: the eval dies with a sample held
                os.killpg(executor._process.pid, signal.SIGKILL)
            got += done
    assert Counter(spec for spec, _ in got) == Counter(specs)
    held = [traj for spec, traj in got if spec.task_id == train[0]]
    assert len(held) == 1 and not held[0].infra_ok
    assert held[0].error.startswith("inspect eval ended without this sample (exit code -9)")


GSME_KILLED = """
import sys
from gsme import sim
from gsme.agents.base import TrialSpec
from gsme.executors.inspect_eval import InspectExecutor
from gsme.run import Run

run = Run.create(sys.argv[1], agent=sim.preset("tiny", infra_fault_rate=0.0))
train = run.tasks("train")["task_id"].tolist()
executor = InspectExecutor(task=sys.argv[2], model="mockllm/model", sandbox="local",
                           task_args={"hold": train[0], "release": sys.argv[3]})
for done in executor.stream([TrialSpec("baseline", t, "train", 0) for t in train[:2]],
                            agent=run.agent, snapshots={"baseline": run.snapshot("baseline")},
                            tasks={}, run_seed=0, patience=lambda: 1.0):
    if done:
        print(executor._process.pid, flush=True)
"""


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_the_eval_ends_when_gsme_is_killed(tmp_path):
    gsme = subprocess.Popen([sys.executable, "-c", GSME_KILLED, str(tmp_path / "run"), SIMULATED,
                             str(tmp_path / "never")], stdout=subprocess.PIPE, text=True)
    eval_pid = int(gsme.stdout.readline())  # a trial read, one still held by the eval
    assert not _gone(eval_pid)
    gsme.kill()
    gsme.wait()
    assert within(15, lambda: _gone(eval_pid))


def test_a_float_scorer_becomes_score_and_threshold_decides_passed(inspect_pass):
    scored = [traj for spec, traj in inspect_pass["got"] if traj.infra_ok]
    assert {traj.score for traj in scored} == {0.25, 0.75}
    assert all(traj.passed == (traj.score >= 0.5) for traj in scored)


def test_an_errored_sample_is_an_infrastructure_failure(inspect_pass):
    failed = [(spec, traj) for spec, traj in inspect_pass["got"] if not traj.infra_ok]
    assert sorted(spec.task_id for spec, _ in failed) == [inspect_pass["failing"]] * 2
    assert all(not traj.passed and traj.score is None for _, traj in failed)
    assert all(traj.error.startswith("sample_error: RuntimeError(") for _, traj in failed)


def test_samples_gsme_did_not_ask_for_are_dropped(inspect_pass):
    logs = list(inspect_pass["logs"].glob("pass-*"))
    assert len(logs) == 1 and list(logs[0].glob("*.eval"))  # log_dir keeps the pass's logs
    spec = inspect_pass["specs"][0]
    asked = {("gsme0_baseline", spec.task_id, 1): spec,  # one slot of the logged samples
             ("gsme0_baseline", "not-a-task", 1): spec, ("other_task", spec.task_id, 1): spec}
    done = _read_new(logs[0], asked, {}, {"scorer": None, "score_key": None,
                                          "threshold": 0.5})
    assert [s for s, _ in done] == [spec]
    assert sorted(asked) == [("gsme0_baseline", "not-a-task", 1),
                             ("other_task", spec.task_id, 1)]  # never filled


@pytest.mark.parametrize("settings, message", [
    ({"task": "tasks.py"}, "[executor] task must be"),
    ({"task": "missing.py@simulated"}, "[executor] task: no file 'missing.py'"),
    ({"solver": "a b:c"}, "[executor] solver must be"),
    ({"max_samples": 0}, "[executor] max_samples must be an integer >= 1, got 0"),
    ({"threshold": "high"}, "[executor] threshold must be a number"),
    ({"task_args": {"harness_dir": "/tmp"}}, "[executor] task_args may not set 'harness_dir'"),
    ({"eval_args": {"epochs": 3}}, "[executor] eval_args may not set ['epochs']"),
    ({"eval_args": ["time_limit"]}, "[executor] eval_args must be a table"),
])
def test_a_bad_setting_is_one_line_naming_the_key(settings, message):
    with pytest.raises(ConfigError) as err:
        _executor(**settings)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@pytest.mark.parametrize("spec, message", [
    ({"max_samples": "many"}, "[executor] max_samples = 'many': "),
    ({"sandbx": "local"}, "[executor] sandbx = 'local': "),
    ({"task": "evals.py"}, "[executor] task must be"),
])
def test_a_bad_executor_table_is_one_line_naming_the_key(spec, message):
    assert isinstance(build_executor({"kind": "inspect", "task": SIMULATED}), InspectExecutor)
    with pytest.raises(ConfigError) as err:
        build_executor({"kind": "inspect", "task": SIMULATED, **spec})
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_configs_inspect_files_are_relative_to_it_and_its_logs_outside_the_run(tmp_path):
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "task.py").write_text(TASK_FILE.read_text())
    config = tmp_path / "run.toml"
    table = '[executor]\nkind = "inspect"\ntask = "evals/task.py@simulated"\n'
    config.write_text(f'[run]\ndir = "runs/a"\n{table}log_dir = "inspect-logs"\n')
    spec = load(config)
    assert spec.executor["task"] == f"{tmp_path / 'evals' / 'task.py'}@simulated"
    assert spec.executor["log_dir"] == str(tmp_path / "inspect-logs")
    config.write_text(f'[run]\ndir = "runs/a"\n{table}log_dir = "runs/a/logs"\n')
    with pytest.raises(ConfigError, match=r"\[executor\] log_dir = 'runs/a/logs' is or lies "
                                          "inside the run directory"):
        load(config)


def test_a_task_that_takes_no_harness_is_one_line_before_any_trial(tmp_path):
    with Run.create(tmp_path / "run", agent=sim.preset("tiny")) as run:
        task_id = run.tasks("train")["task_id"].iloc[0]
        with pytest.raises(ConfigError) as err:
            _stream(_executor(task=f"{TASK_FILE}@unharnessed"), run,
                    [TrialSpec("baseline", task_id, "train", 0)])
    assert str(err.value).startswith("[executor] task: ") and "harness_dir" in str(err.value)
    assert "\n" not in str(err.value)


PATCH = Patch(id="p-verify", where="runtime", why="careless-submit", mechanism="submit-verify",
              beacon="p-verify-fired", rationale="check before submitting",
              changes=(FileChange("runtime/p-verify.toml",
                                  'name = "submit-verify"\nbeacon = "p-verify-fired"\n[params]\n'),))


def _measured(path: Path, executor) -> tuple[pd.DataFrame, pd.DataFrame]:
    config = RunConfig(run_seed=SEED, gate=GateConfig(design="fixed"))  # one look: 2 passes
    with Run.create(path, agent=sim.preset("tiny"), run_config=config) as run:
        child, reason = run.add_candidate(["baseline"], patch=PATCH, round=1)
        assert reason is None
        measure.measure(run, ["baseline", child], executor=executor, progress=False)
        trials = run.trials(split="train")
        decided = gates.credit(trials, run.candidates(), gate=run.config.gate)
    keys = ["candidate", "task_id", "repeat", "attempt"]
    trials = trials.sort_values(keys).reset_index(drop=True)
    return trials[keys + ["passed", "infra_ok", "beacons", "activated", "borrowed_from"]], decided


def test_measuring_through_inspect_decides_as_the_in_process_path(tmp_path):
    local, local_decided = _measured(tmp_path / "local", None)
    through, through_decided = _measured(  # the harness through a solver factory
        tmp_path / "inspect", _executor(task=f"{TASK_FILE}@unharnessed",
                                        solver=f"{TASK_FILE}@solver_for", max_samples=8))
    assert (~local["infra_ok"]).any() and (local["attempt"] > 0).any()  # a fault, re-run
    pd.testing.assert_frame_equal(through, local)
    pd.testing.assert_frame_equal(through_decided, local_decided)
